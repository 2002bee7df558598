/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: counters of the strided-layout key cache of one interface
 * (docs/strided.md).  Plain C, no UCX internals, so that tests and
 * diagnostics can read them through the loaded module.
 */
#ifndef UCT_DCX_STRIDED_STATS_H_
#define UCT_DCX_STRIDED_STATS_H_

#include <uct/api/uct_def.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct dcx_strided_stats {
    uint64_t hits;          /* layout found in the cache: no configure */
    uint64_t misses;        /* layout not cached: a key was configured */
    uint64_t configures;    /* configure work requests posted */
    uint64_t evictions;     /* cached layouts dropped to make room */
    uint64_t invalidations; /* cached layouts dropped by a deregistration */
    uint64_t exhausted;     /* every key in use: UCS_ERR_NO_RESOURCE */
    uint64_t sge_expanded;  /* operations sent as one sge per element */
    uint64_t cfg_done;      /* configures completed (the key is ready) */
    uint64_t cfg_failed;    /* configures that completed with an error */
    uint64_t cfg_waits;     /* operations refused (UCS_ERR_NO_RESOURCE)
                               until a configure completes */
    uint32_t keys_created;  /* keys of the pool created so far */
    uint32_t keys_max;      /* UCX_DCX_STRIDED_KEYS */
    uint32_t key_entries;   /* translation entries of one key */
    uint32_t sge_max;       /* elements expanded to sges at most */
    uint32_t own_queue;     /* 1: configures go on a queue of their own
                               (UCX_DCX_STRIDED_KEY_QUEUE), 0: on the
                               DCI of the operation */
} dcx_strided_stats_t;

/* Fills *stats with the counters of a dcx interface.  Returns 0, or -1 if
 * iface is not a dcx interface. */
int dcx_strided_iface_stats(uct_iface_h iface, dcx_strided_stats_t *stats);

#ifdef __cplusplus
}
#endif

#endif /* UCT_DCX_STRIDED_STATS_H_ */
