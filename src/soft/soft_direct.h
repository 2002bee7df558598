/*
 * Soft device: one-sided operations executed by the initiator
 * (soft_direct.c).  The layout of the tables a port publishes at the end
 * of its segment, and the hooks the rest of the device calls.
 */
#ifndef DCX_SOFT_DIRECT_H_
#define DCX_SOFT_DIRECT_H_

#include "soft.h"

#define SOFT_DIRECT_VERSION  1u
#define SOFT_DIRECT_MRS      4096u   /* keys with index below are published */
#define SOFT_DIRECT_DCTS     256u    /* DCTs with qpn - base below */
#define SOFT_DIRECT_SLOTS    64u     /* writers' in-flight markers */
#define SOFT_DIRECT_CHUNK    (512u * 1024u)  /* bytes per marked copy */

/* A published MR: seqlock-protected copy of what the responder checks.
 * key 0: nothing published (no key, a strided key, or invalidated). */
typedef struct soft_dmr {
    uint32_t  seq;      /* odd while being changed */
    uint32_t  key;
    uint32_t  access;
    uint32_t  pad;
    uint64_t  start;
    uint64_t  end;
} soft_dmr_t;

/* A published DCT; ok 0: absent or in error. */
typedef struct soft_ddct {
    uint32_t  seq;
    uint32_t  qpn;
    uint32_t  access;
    uint32_t  ok;
    uint64_t  dc_key;
    uint64_t  pad;
} soft_ddct_t;

/* A writer's in-flight marker, one cache line. */
typedef struct soft_dslot {
    uint64_t  owner;    /* claiming device's token; 0: free */
    uint32_t  pid;      /* claiming process */
    uint32_t  key;      /* rkey being accessed right now; 0: between chunks */
    uint64_t  start;    /* claiming process's start time (liveness) */
    uint64_t  gen;      /* bumped at the end of every marked copy */
    uint8_t   pad[32];
} soft_dslot_t;

typedef struct soft_direct_area {
    uint32_t      version;
    uint32_t      enabled;  /* the owner accepts initiator-side access */
    uint8_t       pad[56];
    soft_ddct_t   dcts[SOFT_DIRECT_DCTS];
    soft_dmr_t    mrs[SOFT_DIRECT_MRS];
    soft_dslot_t  slots[SOFT_DIRECT_SLOTS];
} soft_direct_area_t;

/* Bytes the port segment reserves for the tables (0 when disabled). */
size_t   soft_direct_area_size(const soft_dev_t *dev);
/* Sets up our tables at 'offset' of the fresh segment and chooses the
 * device's one-sided function (probe of cross-memory attach). */
void     soft_direct_init(soft_dev_t *dev, soft_port_hdr_t *hdr,
                          uint64_t offset);
void     soft_direct_mr_publish(soft_dev_t *dev, soft_mr_t *mr);
/* Unpublishes and waits (bounded) until no initiator copies into it. */
void     soft_direct_mr_withdraw(soft_dev_t *dev, soft_mr_t *mr);
/* Unpublishes only (mr_lock held); soft_direct_quiesce() waits after. */
void     soft_direct_mr_unpublish(soft_dev_t *dev, soft_mr_t *mr);
void     soft_direct_quiesce(soft_dev_t *dev, uint32_t key);
void     soft_direct_dct_publish(soft_dev_t *dev, soft_qp_t *dct, int ok);
void     soft_direct_fault_changed(soft_dev_t *dev);
/* Held in-flight markers in our tables (tests). */
unsigned soft_direct_inflight(soft_dev_t *dev);

#endif
