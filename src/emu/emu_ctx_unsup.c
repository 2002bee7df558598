/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the operations of a context that the emulation does
 * not model.  rdma-core's inline verbs (infiniband/verbs.h: ibv_alloc_dm,
 * ibv_open_xrcd, ibv_create_wq, ibv_alloc_mw, ...) call the provider
 * through the ops of struct verbs_context and struct ibv_context_ops, and
 * fail without a word when an op is NULL.  So every op the emulation does
 * not model is set here to a function that logs one line naming the verb
 * and the device, and fails as the inline verb fails on a context without
 * that op: NULL with errno EOPNOTSUPP where the verb returns an object,
 * EOPNOTSUPP (errno untouched) where it returns an errno.
 *
 * The line is a warning, as for the library's entry points not modelled
 * (emu_str.c), but for ibv_alloc_dm, which programs probe on every device
 * (emu_ctx_unsup_quiet).  Where the device attributes have a field for a
 * feature here they say it is absent (emu_query.c): no XRC, memory-window
 * or flow-steering flag, no ODP, RSS, packet-pacing or CQ-moderation
 * caps, max_dm_size 0, no core clock.
 *
 * The verbs that take an object of a kind the emulation never makes (a
 * DM, a WQ, a flow, an XRC domain, ...) reach these ops only with an
 * object made elsewhere whose context is one of the emulation's; they
 * read nothing of it but that context.
 */
#include "emu/emu.h"

#include <errno.h>

static void emu_ctx_unsup(struct ibv_context *ctx, const char *verb)
{
    emu_warn("%s: %s is not modelled by the emulation; failing the call",
             ctx->device->name, verb);
}

/* A debug line only, for a verb that programs probe on every device
 * without first reading the attribute that says the feature is there: a
 * ConnectX without the feature refuses it without a word from libmlx5,
 * and UCX 1.13's rc_mlx5 asks for device memory at each interface it
 * opens (its DM_COUNT is 1 by default) and goes on without it silently.
 * The emulation's lines go to stderr through its own copy of dcx's logger
 * (DCX_LOG_LEVEL), never through UCX's, so UCX would not count a warning
 * here; it would still print one line per interface, saying nothing the
 * attributes (max_dm_size 0) do not. */
static void emu_ctx_unsup_quiet(struct ibv_context *ctx, const char *verb)
{
    emu_debug("%s: %s is not modelled by the emulation; failing the call",
              ctx->device->name, verb);
}

/* Memory: device memory, null MRs, advice (ODP prefetch) */

static struct ibv_dm *emu_alloc_dm(struct ibv_context *context,
                                   struct ibv_alloc_dm_attr *attr)
{
    (void)attr;
    emu_ctx_unsup_quiet(context, "ibv_alloc_dm");
    errno = EOPNOTSUPP;
    return NULL;
}

static int emu_free_dm(struct ibv_dm *dm)
{
    emu_ctx_unsup(dm->context, "ibv_free_dm");
    return EOPNOTSUPP;
}

static struct ibv_mr *emu_reg_dm_mr(struct ibv_pd *pd, struct ibv_dm *dm,
                                    uint64_t dm_offset, size_t length,
                                    unsigned int access)
{
    (void)dm;
    (void)dm_offset;
    (void)length;
    (void)access;
    emu_ctx_unsup(pd->context, "ibv_reg_dm_mr");
    errno = EOPNOTSUPP;
    return NULL;
}

static struct ibv_mr *emu_alloc_null_mr(struct ibv_pd *pd)
{
    emu_ctx_unsup(pd->context, "ibv_alloc_null_mr");
    errno = EOPNOTSUPP;
    return NULL;
}

static int emu_advise_mr(struct ibv_pd *pd, enum ibv_advise_mr_advice advice,
                         uint32_t flags, struct ibv_sge *sg_list,
                         uint32_t num_sges)
{
    (void)advice;
    (void)flags;
    (void)sg_list;
    (void)num_sges;
    emu_ctx_unsup(pd->context, "ibv_advise_mr");
    return EOPNOTSUPP;
}

/* Memory windows (struct ibv_context_ops) */

static struct ibv_mw *emu_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type)
{
    (void)type;
    emu_ctx_unsup(pd->context, "ibv_alloc_mw");
    errno = EOPNOTSUPP;
    return NULL;
}

static int emu_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
                       struct ibv_mw_bind *mw_bind)
{
    (void)qp;
    (void)mw_bind;
    emu_ctx_unsup(mw->context, "ibv_bind_mw");
    return EOPNOTSUPP;
}

static int emu_dealloc_mw(struct ibv_mw *mw)
{
    emu_ctx_unsup(mw->context, "ibv_dealloc_mw");
    return EOPNOTSUPP;
}

/* Thread and parent domains */

static struct ibv_td *emu_alloc_td(struct ibv_context *context,
                                   struct ibv_td_init_attr *init_attr)
{
    (void)init_attr;
    emu_ctx_unsup(context, "ibv_alloc_td");
    errno = EOPNOTSUPP;
    return NULL;
}

static int emu_dealloc_td(struct ibv_td *td)
{
    emu_ctx_unsup(td->context, "ibv_dealloc_td");
    return EOPNOTSUPP;
}

static struct ibv_pd *
emu_alloc_parent_domain(struct ibv_context *context,
                        struct ibv_parent_domain_init_attr *attr)
{
    (void)attr;
    emu_ctx_unsup(context, "ibv_alloc_parent_domain");
    errno = EOPNOTSUPP;
    return NULL;
}

/* XRC domains and shared QPs */

static struct ibv_xrcd *emu_open_xrcd(struct ibv_context *context,
                                      struct ibv_xrcd_init_attr *init_attr)
{
    (void)init_attr;
    emu_ctx_unsup(context, "ibv_open_xrcd");
    errno = EOPNOTSUPP;
    return NULL;
}

static int emu_close_xrcd(struct ibv_xrcd *xrcd)
{
    emu_ctx_unsup(xrcd->context, "ibv_close_xrcd");
    return EOPNOTSUPP;
}

static struct ibv_qp *emu_open_qp(struct ibv_context *context,
                                  struct ibv_qp_open_attr *attr)
{
    (void)attr;
    emu_ctx_unsup(context, "ibv_open_qp");
    errno = EOPNOTSUPP;
    return NULL;
}

/* Modifiers of the objects the emulation does make */

static int emu_modify_qp_rate_limit(struct ibv_qp *qp,
                                    struct ibv_qp_rate_limit_attr *attr)
{
    (void)attr;
    emu_ctx_unsup(qp->context, "ibv_modify_qp_rate_limit");
    return EOPNOTSUPP;
}

static int emu_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr)
{
    (void)attr;
    emu_ctx_unsup(cq->context, "ibv_modify_cq");
    return EOPNOTSUPP;
}

/* Tag matching is modelled through DEVX XRQs only; as the inline verb
 * does for a context without the op, the first operation is the bad one */
static int emu_post_srq_ops(struct ibv_srq *srq, struct ibv_ops_wr *op,
                            struct ibv_ops_wr **bad_op)
{
    emu_ctx_unsup(srq->context, "ibv_post_srq_ops");
    *bad_op = op;
    return EOPNOTSUPP;
}

static int emu_query_rt_values(struct ibv_context *context,
                               struct ibv_values_ex *values)
{
    (void)values;
    emu_ctx_unsup(context, "ibv_query_rt_values_ex");
    return EOPNOTSUPP;
}

/* Work queues and RSS indirection tables */

static struct ibv_wq *emu_create_wq(struct ibv_context *context,
                                    struct ibv_wq_init_attr *init_attr)
{
    (void)init_attr;
    emu_ctx_unsup(context, "ibv_create_wq");
    errno = EOPNOTSUPP;
    return NULL;
}

static int emu_modify_wq(struct ibv_wq *wq, struct ibv_wq_attr *attr)
{
    (void)attr;
    emu_ctx_unsup(wq->context, "ibv_modify_wq");
    return EOPNOTSUPP;
}

static int emu_destroy_wq(struct ibv_wq *wq)
{
    emu_ctx_unsup(wq->context, "ibv_destroy_wq");
    return EOPNOTSUPP;
}

static struct ibv_rwq_ind_table *
emu_create_rwq_ind_table(struct ibv_context *context,
                         struct ibv_rwq_ind_table_init_attr *init_attr)
{
    (void)init_attr;
    emu_ctx_unsup(context, "ibv_create_rwq_ind_table");
    errno = EOPNOTSUPP;
    return NULL;
}

static int emu_destroy_rwq_ind_table(struct ibv_rwq_ind_table *table)
{
    emu_ctx_unsup(table->context, "ibv_destroy_rwq_ind_table");
    return EOPNOTSUPP;
}

/* Flow steering and its actions */

static struct ibv_flow *emu_create_flow(struct ibv_qp *qp,
                                        struct ibv_flow_attr *flow_attr)
{
    (void)flow_attr;
    emu_ctx_unsup(qp->context, "ibv_create_flow");
    errno = EOPNOTSUPP;
    return NULL;
}

static int emu_destroy_flow(struct ibv_flow *flow)
{
    emu_ctx_unsup(flow->context, "ibv_destroy_flow");
    return EOPNOTSUPP;
}

static struct ibv_flow_action *
emu_create_flow_action_esp(struct ibv_context *context,
                           struct ibv_flow_action_esp_attr *attr)
{
    (void)attr;
    emu_ctx_unsup(context, "ibv_create_flow_action_esp");
    errno = EOPNOTSUPP;
    return NULL;
}

static int emu_modify_flow_action_esp(struct ibv_flow_action *action,
                                      struct ibv_flow_action_esp_attr *attr)
{
    (void)attr;
    emu_ctx_unsup(action->context, "ibv_modify_flow_action_esp");
    return EOPNOTSUPP;
}

static int emu_destroy_flow_action(struct ibv_flow_action *action)
{
    emu_ctx_unsup(action->context, "ibv_destroy_flow_action");
    return EOPNOTSUPP;
}

/* Counters */

static struct ibv_counters *
emu_create_counters(struct ibv_context *context,
                    struct ibv_counters_init_attr *init_attr)
{
    (void)init_attr;
    emu_ctx_unsup(context, "ibv_create_counters");
    errno = EOPNOTSUPP;
    return NULL;
}

static int emu_destroy_counters(struct ibv_counters *counters)
{
    emu_ctx_unsup(counters->context, "ibv_destroy_counters");
    return EOPNOTSUPP;
}

static int emu_attach_counters_point_flow(struct ibv_counters *counters,
                                          struct ibv_counter_attach_attr *attr,
                                          struct ibv_flow *flow)
{
    (void)attr;
    (void)flow;
    emu_ctx_unsup(counters->context, "ibv_attach_counters_point_flow");
    return EOPNOTSUPP;
}

static int emu_read_counters(struct ibv_counters *counters, uint64_t *values,
                             uint32_t ncounters, uint32_t flags)
{
    (void)values;
    (void)ncounters;
    (void)flags;
    emu_ctx_unsup(counters->context, "ibv_read_counters");
    return EOPNOTSUPP;
}

void emu_ctx_set_unsup_ops(struct verbs_context *vctx)
{
    struct ibv_context_ops *ops = &vctx->context.ops;

    vctx->alloc_dm                   = emu_alloc_dm;
    vctx->free_dm                    = emu_free_dm;
    vctx->reg_dm_mr                  = emu_reg_dm_mr;
    vctx->alloc_null_mr              = emu_alloc_null_mr;
    vctx->advise_mr                  = emu_advise_mr;
    ops->alloc_mw                    = emu_alloc_mw;
    ops->bind_mw                     = emu_bind_mw;
    ops->dealloc_mw                  = emu_dealloc_mw;
    vctx->alloc_td                   = emu_alloc_td;
    vctx->dealloc_td                 = emu_dealloc_td;
    vctx->alloc_parent_domain        = emu_alloc_parent_domain;
    vctx->open_xrcd                  = emu_open_xrcd;
    vctx->close_xrcd                 = emu_close_xrcd;
    vctx->open_qp                    = emu_open_qp;
    vctx->modify_qp_rate_limit       = emu_modify_qp_rate_limit;
    vctx->modify_cq                  = emu_modify_cq;
    vctx->post_srq_ops               = emu_post_srq_ops;
    vctx->query_rt_values            = emu_query_rt_values;
    vctx->create_wq                  = emu_create_wq;
    vctx->modify_wq                  = emu_modify_wq;
    vctx->destroy_wq                 = emu_destroy_wq;
    vctx->create_rwq_ind_table       = emu_create_rwq_ind_table;
    vctx->destroy_rwq_ind_table      = emu_destroy_rwq_ind_table;
    vctx->ibv_create_flow            = emu_create_flow;
    vctx->ibv_destroy_flow           = emu_destroy_flow;
    vctx->create_flow_action_esp     = emu_create_flow_action_esp;
    vctx->modify_flow_action_esp     = emu_modify_flow_action_esp;
    vctx->destroy_flow_action        = emu_destroy_flow_action;
    vctx->create_counters            = emu_create_counters;
    vctx->destroy_counters           = emu_destroy_counters;
    vctx->attach_counters_point_flow = emu_attach_counters_point_flow;
    vctx->read_counters              = emu_read_counters;
    /* Programs built against libibverbs 1.1.8 inline ibv_create_flow and
     * ibv_destroy_flow with the ops at these two places; rdma-core keeps
     * them there for that reason */
    vctx->ABI_placeholder1           = (void (*)(void))emu_create_flow;
    vctx->ABI_placeholder2           = (void (*)(void))emu_destroy_flow;
}
