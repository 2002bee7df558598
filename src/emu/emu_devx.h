/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: DEVX, the firmware command interface of a context
 * opened with MLX5DV_CONTEXT_FLAGS_DEVX.
 *
 * Who does what:
 *  - emu_devx.c: object-less commands (mlx5dv_devx_general_cmd): the
 *    capability queries and QUERY_LAG, and the answer every command gets
 *    when it is refused;
 *  - emu_devx_obj.c: objects (mlx5dv_devx_obj_create/modify/query/
 *    destroy), user memory (umem), UAR pages and event channels;
 *  - emu_devx_qp.c: the QP and DCT commands, on the QPs of emu_qp.c with
 *    their queues in the application's umem, served by the raw-queue
 *    engine (emu_raw.h);
 *  - emu_devx_mkey.c: CREATE_MKEY of indirect (KSM, KLM) keys;
 *  - emu_devx_rmp.c: CREATE_RMP and CREATE_XRQ, shared receive queues in
 *    the application's umem (an XRQ's tag list: emu_raw_tm.c).
 *
 * Commands and answers are the PRM's mailboxes: big-endian bit fields
 * addressed here by their bit offset from the start of the mailbox.  A
 * command the emulation refuses answers status and syndrome in the output
 * and fails with EREMOTEIO, as the kernel reports a firmware failure.
 */
#ifndef DCX_EMU_DEVX_H_
#define DCX_EMU_DEVX_H_

#include "emu/emu.h"

/* Mailbox header: opcode, op_mod, status, syndrome, object number */
#define EMU_CMD_HDR    16u /* bytes of a command's in/out header */
#define EMU_PRM_OPCODE 0u, 16u
#define EMU_PRM_OPMOD  48u, 16u
#define EMU_PRM_OBJ_ID 72u, 24u /* in: an object's number; out: created */

/* Opcodes */
#define EMU_CMD_QUERY_HCA_CAP     0x100u
#define EMU_CMD_QUERY_HCA_VPORT   0x762u
#define EMU_CMD_QUERY_LAG         0x842u
#define EMU_CMD_CREATE_MKEY       0x200u
#define EMU_CMD_CREATE_QP         0x500u
#define EMU_CMD_DESTROY_QP        0x501u
#define EMU_CMD_RST2INIT_QP       0x502u
#define EMU_CMD_INIT2RTR_QP       0x503u
#define EMU_CMD_RTR2RTS_QP        0x504u
#define EMU_CMD_RTS2RTS_QP        0x505u
#define EMU_CMD_2ERR_QP           0x507u
#define EMU_CMD_2RST_QP           0x50au
#define EMU_CMD_QUERY_QP          0x50bu
#define EMU_CMD_CREATE_DCT        0x710u
#define EMU_CMD_DESTROY_DCT       0x711u
#define EMU_CMD_QUERY_DCT         0x713u
#define EMU_CMD_CREATE_RMP        0x90cu
#define EMU_CMD_CREATE_XRQ        0x717u
#define EMU_CMD_SET_XRQ_DC_PARAMS 0x726u

/* Command statuses (the output's first byte) */
#define EMU_STAT_BAD_OP    0x02u
#define EMU_STAT_BAD_PARAM 0x03u
#define EMU_STAT_BAD_RES   0x05u
#define EMU_STAT_LIM       0x08u
#define EMU_STAT_BAD_STATE 0x09u
#define EMU_STAT_BAD_INLEN 0x50u

/* Asynchronous event types of subscribe_devx_event */
#define EMU_DEVX_EV_SRQ_LAST_WQE 0x13u

/* Big-endian bit field of 'width' (1..32) bits at bit offset 'bit' */
uint32_t emu_prm_get(const void *buf, uint32_t bit, uint32_t width);
void emu_prm_set(void *buf, uint32_t bit, uint32_t width, uint32_t val);
uint64_t emu_prm_get64(const void *buf, uint32_t bit);
/* floor(log2(v)), 0 for v <= 1 */
uint32_t emu_log2(uint32_t v);
#define EMU_PRM_GET(_buf, _field)       emu_prm_get(_buf, _field)
#define EMU_PRM_SET(_buf, _field, _val) emu_prm_set(_buf, _field, _val)

/* Refuses a command: status and syndrome into out (when it has room for
 * them), one log line naming the command and why, errno EREMOTEIO;
 * returns EREMOTEIO.  'syndrome' tells refusals apart in the log, as the
 * firmware's do. */
int emu_devx_refuse(const char *name, const char *call, uint16_t opcode,
                    void *out, size_t outlen, uint8_t status, uint32_t syndrome,
                    const char *fmt, ...) __attribute__((format(printf, 8, 9)));

/* As emu_devx_refuse, for a refusal whose reason the call that failed
 * has logged already: no second line */
int emu_devx_answer(void *out, size_t outlen, uint8_t status,
                    uint32_t syndrome);

/* The checks every DEVX entry point makes: the context is of the
 * emulation and opened with DEVX, and the mailboxes have a header.  NULL
 * with errno set (EOPNOTSUPP, EINVAL) and one log line otherwise. */
emu_ctx_t *emu_devx_ctx(struct ibv_context *context, const char *call,
                        const void *in, size_t inlen, const void *out,
                        size_t outlen);

/* A DEVX object: what mlx5dv_devx_obj_create hands out */
typedef enum {
    EMU_DEVX_QP,
    EMU_DEVX_DCT,
    EMU_DEVX_MKEY,
    EMU_DEVX_RMP,
    EMU_DEVX_XRQ
} emu_devx_kind_t;

#define EMU_DEVX_MAX_SUBS 4

struct emu_devx_channel;

struct mlx5dv_devx_obj {
    emu_ctx_t *ctx;
    emu_devx_kind_t kind;
    uint32_t id;      /* the QP's or DCT's number */
    emu_qp_t *qp;     /* its QP (a DCT's too) */
    dcx_mkey_t *mkey; /* an mkey's soft key, on pd */
    emu_srq_t *srq;   /* an RMP's or XRQ's SRQ */
    emu_pd_t *pd;
    /* subscriptions to its events (the channel's lock) */
    struct {
        struct emu_devx_channel *ch;
        uint16_t event;
        uint64_t cookie;
    } subs[EMU_DEVX_MAX_SUBS];
    struct mlx5dv_devx_obj *next; /* every object (emu_devx_obj.c) */
};

/* A umem of the context: the memory at [addr, addr + size) */
int emu_devx_umem_find(emu_ctx_t *ctx, uint32_t id, uint64_t off, uint64_t len,
                       uint8_t **addr_p);

/* The QP, DCT, CQ, SRQ and PD numbers of the device (emu_num.c):
 * the objects a command names by number */
typedef enum {
    EMU_NUM_PD,
    EMU_NUM_CQ,
    EMU_NUM_SRQ
} emu_num_kind_t;

void emu_num_add(emu_dev_t *dev, emu_num_kind_t kind, uint32_t num, void *obj);
void emu_num_del(emu_dev_t *dev, emu_num_kind_t kind, uint32_t num, void *obj);
void *emu_num_find(emu_dev_t *dev, emu_num_kind_t kind, uint32_t num);

/* The list of DEVX objects (emu_devx_obj.c): an object joins it once
 * created and leaves it when destroyed; emu_devx_obj_check gives obj if
 * it is one of the list (NULL, logged, otherwise) */
void emu_devx_obj_link(struct mlx5dv_devx_obj *obj);
void emu_devx_obj_unlink(struct mlx5dv_devx_obj *obj);
struct mlx5dv_devx_obj *emu_devx_obj_check(struct mlx5dv_devx_obj *obj,
                                           const char *call);

/* Raises 'event' of obj on the channels subscribed to it */
void emu_devx_event(struct mlx5dv_devx_obj *obj, uint16_t event);
/* The DEVX object of a QP, if it has one (for its events) */
void emu_devx_qp_event(emu_qp_t *qp, uint16_t event);

/* emu_devx_qp.c: the commands on QPs and DCTs; 0 or the errno (output
 * filled either way) */
int emu_devx_qp_create(emu_ctx_t *ctx, const uint8_t *in, size_t inlen,
                       uint8_t *out, size_t outlen,
                       struct mlx5dv_devx_obj *obj);
int emu_devx_dct_create(emu_ctx_t *ctx, const uint8_t *in, size_t inlen,
                        uint8_t *out, size_t outlen,
                        struct mlx5dv_devx_obj *obj);
int emu_devx_qp_cmd(emu_qp_t *qp, const uint8_t *in, size_t inlen, uint8_t *out,
                    size_t outlen, const char *call);
int emu_devx_obj_free(struct mlx5dv_devx_obj *obj);

/* emu_devx_mkey.c */
int emu_devx_mkey_create(emu_ctx_t *ctx, const uint8_t *in, size_t inlen,
                         uint8_t *out, size_t outlen,
                         struct mlx5dv_devx_obj *obj);
int emu_devx_mkey_free(struct mlx5dv_devx_obj *obj);

/* emu_devx_rmp.c: CREATE_RMP, CREATE_XRQ and the commands on an XRQ */
int emu_devx_rmp_create(emu_ctx_t *ctx, const uint8_t *in, size_t inlen,
                        uint8_t *out, size_t outlen,
                        struct mlx5dv_devx_obj *obj);
int emu_devx_xrq_create(emu_ctx_t *ctx, const uint8_t *in, size_t inlen,
                        uint8_t *out, size_t outlen,
                        struct mlx5dv_devx_obj *obj);
int emu_devx_xrq_cmd(struct mlx5dv_devx_obj *obj, const uint8_t *in,
                     size_t inlen, uint8_t *out, size_t outlen,
                     const char *call);

#endif /* DCX_EMU_DEVX_H_ */
