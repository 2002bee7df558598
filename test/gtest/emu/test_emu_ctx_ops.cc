/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs rdma-core's headers define inline, which reach the provider
 * through the ops of the context (struct verbs_context, struct
 * ibv_context_ops): those the emulation does not model fail as on a
 * context without the op, EOPNOTSUPP, and say so in one line naming the
 * verb; device memory, which programs probe on every device, in a line at
 * debug level only, the device reporting max_dm_size 0.
 */
#include "emu_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <string>

namespace {

/* The emulation logs at debug level when DCX_LOG_LEVEL asks for it (its
 * logger reads the variable when the library loads) */
bool emu_logs_debug()
{
    const char *env = getenv("DCX_LOG_LEVEL");

    return (env != nullptr) &&
           (!strcasecmp(env, "debug") || !strcasecmp(env, "trace"));
}

/* The one line a refused verb logged: at 'level', naming the device and
 * the verb as not modelled */
void expect_one_line(log_capture &log, const char *verb,
                     const char *level = "warn")
{
    std::vector<std::string> lines = log.lines();
    std::string tag                = std::string("[dcx ") + level + "]";

    ASSERT_EQ(1u, lines.size()) << verb;
    EXPECT_NE(std::string::npos, lines[0].find(tag)) << lines[0];
    EXPECT_NE(std::string::npos, lines[0].find("mlx5_0: ")) << lines[0];
    EXPECT_NE(std::string::npos,
              lines[0].find(std::string(verb) + " is not modelled"))
        << lines[0];
}

/* A verb refused as on a context without its op, with one warning */
#define EMU_REFUSED_PTR(_verb, _call)        \
    do {                                     \
        log_capture log;                     \
        errno = 0;                           \
        EXPECT_EQ(nullptr, (void *)(_call)); \
        EXPECT_EQ(EOPNOTSUPP, errno);        \
        expect_one_line(log, _verb);         \
    } while (0)
#define EMU_REFUSED_INT(_verb, _call)   \
    do {                                \
        log_capture log;                \
        EXPECT_EQ(EOPNOTSUPP, (_call)); \
        expect_one_line(log, _verb);    \
    } while (0)

std::string self_exe()
{
    char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

    if (n <= 0) {
        return "";
    }
    path[n] = '\0';
    return path;
}

} // namespace

class emu_ctx_ops_test : public emu_test {
protected:
    void SetUp() override
    {
        struct ibv_srq_init_attr sattr;
        struct ibv_qp_init_attr qattr;

        emu_test::SetUp();
        if (HasFatalFailure()) {
            return;
        }
        m_cq = ibv_create_cq(m_ctx, 16, nullptr, nullptr, 0);
        ASSERT_NE(nullptr, m_cq) << strerror(errno);
        memset(&sattr, 0, sizeof(sattr));
        sattr.attr.max_wr  = 16;
        sattr.attr.max_sge = 1;
        m_srq              = ibv_create_srq(m_pd, &sattr);
        ASSERT_NE(nullptr, m_srq) << strerror(errno);
        memset(&qattr, 0, sizeof(qattr));
        qattr.send_cq          = m_cq;
        qattr.recv_cq          = m_cq;
        qattr.srq              = m_srq;
        qattr.qp_type          = IBV_QPT_RC;
        qattr.cap.max_send_wr  = 16;
        qattr.cap.max_send_sge = 1;
        m_qp                   = ibv_create_qp(m_pd, &qattr);
        ASSERT_NE(nullptr, m_qp) << strerror(errno);
    }

    void TearDown() override
    {
        if (m_qp != nullptr) {
            EXPECT_EQ(0, ibv_destroy_qp(m_qp));
        }
        if (m_srq != nullptr) {
            EXPECT_EQ(0, ibv_destroy_srq(m_srq));
        }
        if (m_cq != nullptr) {
            EXPECT_EQ(0, ibv_destroy_cq(m_cq));
        }
        emu_test::TearDown();
    }

    struct ibv_cq *m_cq   = nullptr;
    struct ibv_srq *m_srq = nullptr;
    struct ibv_qp *m_qp   = nullptr;
};

/* Every op an inline verb of rdma-core 44's headers calls is set, so that
 * none of them fails without the emulation's word; the untyped _compat_
 * slots of ibv_context_ops hold provider ops of rdma-core's private
 * interface, which no verb calls */
TEST_F(emu_test, every_context_op_set)
{
    struct verbs_context *v         = verbs_get_ctx(m_ctx);
    const struct ibv_context_ops &o = m_ctx->ops;

    ASSERT_NE(nullptr, v);
    EXPECT_EQ(sizeof(*v), v->sz);
#define EMU_EXPECT_OP(_p) EXPECT_NE(nullptr, (void *)(_p)) << #_p
    EMU_EXPECT_OP(v->query_port);
    EMU_EXPECT_OP(v->advise_mr);
    EMU_EXPECT_OP(v->alloc_null_mr);
    EMU_EXPECT_OP(v->read_counters);
    EMU_EXPECT_OP(v->attach_counters_point_flow);
    EMU_EXPECT_OP(v->create_counters);
    EMU_EXPECT_OP(v->destroy_counters);
    EMU_EXPECT_OP(v->reg_dm_mr);
    EMU_EXPECT_OP(v->alloc_dm);
    EMU_EXPECT_OP(v->free_dm);
    EMU_EXPECT_OP(v->modify_flow_action_esp);
    EMU_EXPECT_OP(v->destroy_flow_action);
    EMU_EXPECT_OP(v->create_flow_action_esp);
    EMU_EXPECT_OP(v->modify_qp_rate_limit);
    EMU_EXPECT_OP(v->alloc_parent_domain);
    EMU_EXPECT_OP(v->dealloc_td);
    EMU_EXPECT_OP(v->alloc_td);
    EMU_EXPECT_OP(v->modify_cq);
    EMU_EXPECT_OP(v->post_srq_ops);
    EMU_EXPECT_OP(v->destroy_rwq_ind_table);
    EMU_EXPECT_OP(v->create_rwq_ind_table);
    EMU_EXPECT_OP(v->destroy_wq);
    EMU_EXPECT_OP(v->modify_wq);
    EMU_EXPECT_OP(v->create_wq);
    EMU_EXPECT_OP(v->query_rt_values);
    EMU_EXPECT_OP(v->create_cq_ex);
    EMU_EXPECT_OP(v->query_device_ex);
    EMU_EXPECT_OP(v->ibv_destroy_flow);
    EMU_EXPECT_OP(v->ABI_placeholder2);
    EMU_EXPECT_OP(v->ibv_create_flow);
    EMU_EXPECT_OP(v->ABI_placeholder1);
    EMU_EXPECT_OP(v->open_qp);
    EMU_EXPECT_OP(v->create_qp_ex);
    EMU_EXPECT_OP(v->get_srq_num);
    EMU_EXPECT_OP(v->create_srq_ex);
    EMU_EXPECT_OP(v->open_xrcd);
    EMU_EXPECT_OP(v->close_xrcd);
    EMU_EXPECT_OP(o._compat_query_device);
    EMU_EXPECT_OP(o._compat_query_port);
    EMU_EXPECT_OP(o.alloc_mw);
    EMU_EXPECT_OP(o.bind_mw);
    EMU_EXPECT_OP(o.dealloc_mw);
    EMU_EXPECT_OP(o.poll_cq);
    EMU_EXPECT_OP(o.req_notify_cq);
    EMU_EXPECT_OP(o.post_srq_recv);
    EMU_EXPECT_OP(o.post_send);
    EMU_EXPECT_OP(o.post_recv);
#undef EMU_EXPECT_OP
}

/* The compat query ops answer as the exported verbs do */
TEST_F(emu_test, compat_query_ops)
{
    typedef int (*query_device_t)(struct ibv_context *,
                                  struct ibv_device_attr *);
    struct ibv_device_attr a, b;
    struct ibv_port_attr pa;

    ASSERT_NE(nullptr, (void *)m_ctx->ops._compat_query_device);
    ASSERT_NE(nullptr, (void *)m_ctx->ops._compat_query_port);
    ASSERT_EQ(0, ((query_device_t)m_ctx->ops._compat_query_device)(m_ctx, &a));
    ASSERT_EQ(0, ibv_query_device(m_ctx, &b));
    EXPECT_EQ(0, memcmp(&a, &b, sizeof(a)));
    memset(&pa, 0, sizeof(pa));
    ASSERT_EQ(0, m_ctx->ops._compat_query_port(
                     m_ctx, 1, (struct _compat_ibv_port_attr *)&pa));
    EXPECT_EQ(IBV_PORT_ACTIVE, pa.state);
}

/* The verbs on the context and on the objects the emulation makes (PD,
 * CQ, SRQ, QP): refused with EOPNOTSUPP, NULL and errno where the verb
 * returns an object, and one warning naming the verb */
TEST_F(emu_ctx_ops_test, refused_with_a_line_bad_flow)
{
    struct ibv_xrcd_init_attr xrcd_attr;
    struct ibv_qp_open_attr open_attr;
    struct ibv_td_init_attr td_attr;
    struct ibv_parent_domain_init_attr pd_attr;
    struct ibv_wq_init_attr wq_attr;
    struct ibv_rwq_ind_table_init_attr ind_attr;
    struct ibv_counters_init_attr cnt_attr;
    struct ibv_flow_action_esp_attr esp;
    struct ibv_values_ex values;
    struct ibv_modify_cq_attr cq_attr;
    struct ibv_qp_rate_limit_attr rl;
    struct ibv_ops_wr op, *bad_op = nullptr;
    struct ibv_flow_attr flow;
    struct ibv_sge sge;
    char buf[64];

    memset(&xrcd_attr, 0, sizeof(xrcd_attr));
    xrcd_attr.comp_mask = IBV_XRCD_INIT_ATTR_FD | IBV_XRCD_INIT_ATTR_OFLAGS;
    xrcd_attr.fd        = -1;
    xrcd_attr.oflags    = O_CREAT;
    EMU_REFUSED_PTR("ibv_open_xrcd", ibv_open_xrcd(m_ctx, &xrcd_attr));
    memset(&open_attr, 0, sizeof(open_attr));
    open_attr.qp_num  = m_qp->qp_num;
    open_attr.qp_type = IBV_QPT_XRC_RECV;
    EMU_REFUSED_PTR("ibv_open_qp", ibv_open_qp(m_ctx, &open_attr));
    memset(&td_attr, 0, sizeof(td_attr));
    EMU_REFUSED_PTR("ibv_alloc_td", ibv_alloc_td(m_ctx, &td_attr));
    memset(&pd_attr, 0, sizeof(pd_attr));
    pd_attr.pd = m_pd;
    EMU_REFUSED_PTR("ibv_alloc_parent_domain",
                    ibv_alloc_parent_domain(m_ctx, &pd_attr));
    EMU_REFUSED_PTR("ibv_alloc_mw", ibv_alloc_mw(m_pd, IBV_MW_TYPE_2));
    EMU_REFUSED_PTR("ibv_alloc_null_mr", ibv_alloc_null_mr(m_pd));
    sge.addr   = (uintptr_t)buf;
    sge.length = sizeof(buf);
    sge.lkey   = 0;
    EMU_REFUSED_INT("ibv_advise_mr",
                    ibv_advise_mr(m_pd, IBV_ADVISE_MR_ADVICE_PREFETCH,
                                  IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1));
    memset(&wq_attr, 0, sizeof(wq_attr));
    wq_attr.wq_type = IBV_WQT_RQ;
    wq_attr.max_wr  = 16;
    wq_attr.max_sge = 1;
    wq_attr.pd      = m_pd;
    wq_attr.cq      = m_cq;
    EMU_REFUSED_PTR("ibv_create_wq", ibv_create_wq(m_ctx, &wq_attr));
    memset(&ind_attr, 0, sizeof(ind_attr));
    EMU_REFUSED_PTR("ibv_create_rwq_ind_table",
                    ibv_create_rwq_ind_table(m_ctx, &ind_attr));
    memset(&flow, 0, sizeof(flow));
    flow.size = sizeof(flow);
    flow.type = IBV_FLOW_ATTR_NORMAL;
    flow.port = 1;
    EMU_REFUSED_PTR("ibv_create_flow", ibv_create_flow(m_qp, &flow));
    memset(&esp, 0, sizeof(esp));
    EMU_REFUSED_PTR("ibv_create_flow_action_esp",
                    ibv_create_flow_action_esp(m_ctx, &esp));
    memset(&cnt_attr, 0, sizeof(cnt_attr));
    EMU_REFUSED_PTR("ibv_create_counters",
                    ibv_create_counters(m_ctx, &cnt_attr));
    memset(&values, 0, sizeof(values));
    values.comp_mask = IBV_VALUES_MASK_RAW_CLOCK;
    EMU_REFUSED_INT("ibv_query_rt_values_ex",
                    ibv_query_rt_values_ex(m_ctx, &values));
    memset(&cq_attr, 0, sizeof(cq_attr));
    cq_attr.attr_mask         = IBV_CQ_ATTR_MODERATE;
    cq_attr.moderate.cq_count = 4;
    EMU_REFUSED_INT("ibv_modify_cq", ibv_modify_cq(m_cq, &cq_attr));
    memset(&rl, 0, sizeof(rl));
    rl.rate_limit = 1000;
    EMU_REFUSED_INT("ibv_modify_qp_rate_limit",
                    ibv_modify_qp_rate_limit(m_qp, &rl));
    memset(&op, 0, sizeof(op));
    op.opcode = IBV_WR_TAG_SYNC;
    EMU_REFUSED_INT("ibv_post_srq_ops", ibv_post_srq_ops(m_srq, &op, &bad_op));
    EXPECT_EQ(&op, bad_op);
}

/* The verbs on objects of kinds the emulation never makes reach it only
 * with an object made elsewhere on one of its contexts: refused the same
 * way, nothing of the object read but its context */
TEST_F(emu_ctx_ops_test, foreign_objects_refused_bad_flow)
{
    struct ibv_dm dm;
    struct ibv_td td;
    struct ibv_xrcd xrcd;
    struct ibv_wq wq;
    struct ibv_wq_attr wq_mod;
    struct ibv_rwq_ind_table ind;
    struct ibv_flow flow;
    struct ibv_flow_action action;
    struct ibv_flow_action_esp_attr esp;
    struct ibv_counters cnt;
    struct ibv_counter_attach_attr cnt_attach;
    struct ibv_mw mw;
    struct ibv_mw_bind bind;
    uint64_t value = 0;

    memset(&dm, 0, sizeof(dm));
    dm.context = m_ctx;
    EMU_REFUSED_INT("ibv_free_dm", ibv_free_dm(&dm));
    EMU_REFUSED_PTR("ibv_reg_dm_mr", ibv_reg_dm_mr(m_pd, &dm, 0, 64,
                                                   IBV_ACCESS_ZERO_BASED |
                                                       IBV_ACCESS_LOCAL_WRITE));
    memset(&td, 0, sizeof(td));
    td.context = m_ctx;
    EMU_REFUSED_INT("ibv_dealloc_td", ibv_dealloc_td(&td));
    memset(&xrcd, 0, sizeof(xrcd));
    xrcd.context = m_ctx;
    EMU_REFUSED_INT("ibv_close_xrcd", ibv_close_xrcd(&xrcd));
    memset(&wq, 0, sizeof(wq));
    wq.context = m_ctx;
    memset(&wq_mod, 0, sizeof(wq_mod));
    wq_mod.attr_mask = IBV_WQ_ATTR_STATE;
    wq_mod.wq_state  = IBV_WQS_RDY;
    EMU_REFUSED_INT("ibv_modify_wq", ibv_modify_wq(&wq, &wq_mod));
    EMU_REFUSED_INT("ibv_destroy_wq", ibv_destroy_wq(&wq));
    memset(&ind, 0, sizeof(ind));
    ind.context = m_ctx;
    EMU_REFUSED_INT("ibv_destroy_rwq_ind_table",
                    ibv_destroy_rwq_ind_table(&ind));
    memset(&flow, 0, sizeof(flow));
    flow.context = m_ctx;
    EMU_REFUSED_INT("ibv_destroy_flow", ibv_destroy_flow(&flow));
    memset(&action, 0, sizeof(action));
    action.context = m_ctx;
    memset(&esp, 0, sizeof(esp));
    EMU_REFUSED_INT("ibv_modify_flow_action_esp",
                    ibv_modify_flow_action_esp(&action, &esp));
    EMU_REFUSED_INT("ibv_destroy_flow_action",
                    ibv_destroy_flow_action(&action));
    memset(&cnt, 0, sizeof(cnt));
    cnt.context = m_ctx;
    memset(&cnt_attach, 0, sizeof(cnt_attach));
    EMU_REFUSED_INT("ibv_attach_counters_point_flow",
                    ibv_attach_counters_point_flow(&cnt, &cnt_attach, &flow));
    EMU_REFUSED_INT("ibv_read_counters", ibv_read_counters(&cnt, &value, 1, 0));
    EMU_REFUSED_INT("ibv_destroy_counters", ibv_destroy_counters(&cnt));
    memset(&mw, 0, sizeof(mw));
    mw.context = m_ctx;
    mw.pd      = m_pd;
    mw.type    = IBV_MW_TYPE_1;
    memset(&bind, 0, sizeof(bind));
    EMU_REFUSED_INT("ibv_bind_mw", ibv_bind_mw(m_qp, &mw, &bind));
    EMU_REFUSED_INT("ibv_dealloc_mw", ibv_dealloc_mw(&mw));
}

/* Device memory: the device reports none (max_dm_size 0), and
 * ibv_alloc_dm is refused as libibverbs refuses it on a context without
 * the op, in a line at debug level only, since programs probe it on every
 * device (UCX's rc_mlx5 at each interface it opens) */
TEST_F(emu_test, alloc_dm_refused_quietly_bad_flow)
{
    struct ibv_device_attr_ex attr;
    struct ibv_alloc_dm_attr dm;

    memset(&attr, 0, sizeof(attr));
    ASSERT_EQ(0, ibv_query_device_ex(m_ctx, nullptr, &attr));
    EXPECT_EQ(0u, attr.max_dm_size);

    memset(&dm, 0, sizeof(dm));
    dm.length = 4096;
    {
        log_capture log;

        errno = 0;
        EXPECT_EQ(nullptr, ibv_alloc_dm(m_ctx, &dm));
        EXPECT_EQ(EOPNOTSUPP, errno);
        if (emu_logs_debug()) {
            expect_one_line(log, "ibv_alloc_dm", "debug");
        } else {
            EXPECT_EQ(0u, log.count());
        }
    }
}

/* The debug line itself: the test above again, in a process whose
 * emulation logs at debug level */
TEST(emu_ctx_ops, alloc_dm_line_at_debug_level_bad_flow)
{
    std::string exe = self_exe(), out;
    std::string cmd = "env DCX_LOG_LEVEL=debug GTEST_OUTPUT= '" + exe +
                      "' --gtest_filter=emu_test.alloc_dm_refused_quietly_"
                      "bad_flow 2>&1";
    char line[1024];
    FILE *p;

    ASSERT_FALSE(exe.empty());
    if (emu_logs_debug()) {
        GTEST_SKIP() << "DCX_LOG_LEVEL already asks for debug lines: "
                        "alloc_dm_refused_quietly_bad_flow checked them";
    }
    p = popen(cmd.c_str(), "r");
    ASSERT_NE(nullptr, p);
    while (fgets(line, sizeof(line), p) != nullptr) {
        out += line;
    }
    EXPECT_EQ(0, pclose(p)) << out;
    EXPECT_NE(std::string::npos, out.find("[  PASSED  ] 1 test.")) << out;
    EXPECT_NE(std::string::npos, out.find("[dcx debug]")) << out;
}
