/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * How the emulated fabric names ports and queue pairs when a port goes
 * away and another takes its LID, as a subnet manager and an HCA name
 * them: an address handle leads to whoever holds its LID when a request
 * is sent, and the new holder's QP and DCT numbers are not the old one's,
 * so a request still addressed to the old DCT is dropped (its sender's
 * retries run out) and never reaches the new owner.
 *
 * The port that goes away is this process's second device (mlx5_1),
 * closed and opened again: its LID is freed and taken by the next port
 * registered on the fabric, which is that device again.
 */
#include "emu_qp_fixture.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef __SANITIZE_ADDRESS__
#include <sanitizer/lsan_interface.h>
#endif

/* A DCT of its own on mlx5_1: a context, PD, CQ, SRQ with receives posted
 * into a registered buffer. */
struct emu_far_port {
    struct ibv_context *ctx = nullptr;
    struct ibv_pd *pd       = nullptr;
    struct ibv_cq_ex *cq    = nullptr;
    struct ibv_srq *srq     = nullptr;
    struct ibv_mr *mr       = nullptr;
    struct ibv_qp *dct      = nullptr;
    uint16_t lid            = 0;
    std::vector<char> buf;

    /* Returns an empty string on success, else what failed */
    std::string open(struct ibv_device *dev)
    {
        struct ibv_cq_init_attr_ex cattr;
        struct ibv_srq_init_attr sattr;
        struct ibv_port_attr port;
        struct ibv_recv_wr wr, *bad;
        struct ibv_sge sge;

        ctx = ibv_open_device(dev);
        if (ctx == nullptr) {
            return "open";
        }
        pd = ibv_alloc_pd(ctx);
        buf.assign(4096, 0);
        mr = (pd == nullptr) ?
                 nullptr :
                 ibv_reg_mr(pd, buf.data(), buf.size(), IBV_ACCESS_LOCAL_WRITE);
        if (mr == nullptr) {
            return "pd/mr";
        }
        memset(&cattr, 0, sizeof(cattr));
        cattr.cqe      = 64;
        cattr.wc_flags = IBV_WC_STANDARD_FLAGS;
        cq             = ibv_create_cq_ex(ctx, &cattr);
        memset(&sattr, 0, sizeof(sattr));
        sattr.attr.max_wr  = 16;
        sattr.attr.max_sge = 1;
        srq                = ibv_create_srq(pd, &sattr);
        if ((cq == nullptr) || (srq == nullptr)) {
            return "cq/srq";
        }
        for (unsigned i = 0; i < 4; ++i) {
            sge.addr   = (uintptr_t)buf.data() + i * 256;
            sge.length = 256;
            sge.lkey   = mr->lkey;
            memset(&wr, 0, sizeof(wr));
            wr.wr_id   = i;
            wr.sg_list = &sge;
            wr.num_sge = 1;
            if (ibv_post_srq_recv(srq, &wr, &bad) != 0) {
                return "post_srq_recv";
            }
        }
        dct = emu_dct_create(ctx, pd, ibv_cq_ex_to_cq(cq), srq, EMU_DCT_KEY);
        if (dct == nullptr) {
            return "create DCT";
        }
        if (emu_dct_connect(dct, 0) != 0) {
            return "DCT to RTR";
        }
        if (ibv_query_port(ctx, 1, &port) != 0) {
            return "query_port";
        }
        lid = port.lid;
        return "";
    }

    /* Receive completions waiting on the CQ */
    unsigned received()
    {
        struct ibv_poll_cq_attr attr = {0};
        unsigned n                   = 0;

        if (ibv_start_poll(cq, &attr) != 0) {
            return 0;
        }
        do {
            ++n;
        } while (ibv_next_poll(cq) == 0);
        ibv_end_poll(cq);
        return n;
    }

    void close()
    {
        if (dct != nullptr) {
            EXPECT_EQ(0, ibv_destroy_qp(dct));
        }
        if (srq != nullptr) {
            EXPECT_EQ(0, ibv_destroy_srq(srq));
        }
        if (cq != nullptr) {
            EXPECT_EQ(0, ibv_destroy_cq(ibv_cq_ex_to_cq(cq)));
        }
        if (mr != nullptr) {
            EXPECT_EQ(0, ibv_dereg_mr(mr));
        }
        if (pd != nullptr) {
            EXPECT_EQ(0, ibv_dealloc_pd(pd));
        }
        if (ctx != nullptr) {
            EXPECT_EQ(0, ibv_close_device(ctx));
        }
        ctx = nullptr;
        pd  = nullptr;
        cq  = nullptr;
        srq = nullptr;
        mr  = nullptr;
        dct = nullptr;
        lid = 0;
    }

    ~emu_far_port() { close(); }
};

class emu_names_test : public emu_qp_test {
protected:
    /* A SEND of 8 bytes from a new DCI (retry count 1: a request nobody
     * answers fails in a few hundred milliseconds) to dctn through ah;
     * returns the sender's completion status. */
    enum ibv_wc_status send_to(struct ibv_ah *ah, uint32_t dctn)
    {
        struct ibv_qp *dci = make_dci(14, 1, 7);
        emu_wc wc;

        if (dci == nullptr) {
            ADD_FAILURE() << "no DCI";
            return IBV_WC_GENERAL_ERR;
        }
        memcpy(m_buf.data(), "names", 6);
        if (post(dci, 7, IBV_WR_SEND, m_buf.data(), 8, m_mr->lkey, 0, 0,
                 EMU_DCT_KEY, false, ah, dctn) != 0) {
            ADD_FAILURE() << "post refused";
            return IBV_WC_GENERAL_ERR;
        }
        if (!poll_one(m_tx_cq, &wc)) {
            ADD_FAILURE() << "no send completion";
            return IBV_WC_GENERAL_ERR;
        }
        return wc.status;
    }
};

/* The old DCT's number through an AH made for the port that held the LID
 * before: dropped, never delivered to the new owner's DCT; the new DCT
 * through the same AH: delivered. */
TEST_F(emu_names_test, lid_taken_over_old_dct_dropped_new_reached_bad_flow)
{
    emu_far_port far;
    uint32_t old_dctn;
    uint16_t old_lid;
    struct ibv_ah *ah;

    ASSERT_GE(m_num, 2);
    ASSERT_EQ("", far.open(m_list[1]));
    ah = make_ah(far.lid);
    ASSERT_NE(nullptr, ah);
    EXPECT_EQ(IBV_WC_SUCCESS, send_to(ah, far.dct->qp_num));
    EXPECT_EQ(1u, far.received());

    old_lid  = far.lid;
    old_dctn = far.dct->qp_num;
    far.close();
    ASSERT_EQ("", far.open(m_list[1]));
    ASSERT_EQ(old_lid, far.lid) << "the freed LID went to another port";
    EXPECT_NE(old_dctn, far.dct->qp_num);

    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, send_to(ah, old_dctn));
    EXPECT_EQ(0u, far.received());
    EXPECT_EQ(IBV_WC_SUCCESS, send_to(ah, far.dct->qp_num));
    EXPECT_EQ(1u, far.received());
    EXPECT_EQ(0, ibv_destroy_ah(ah));
}

/* A DCT is reached by the number the program sees, which is its port's
 * soft device's own: through an AH to the far port its DCT's number is
 * delivered.  A number of the far port's window below its first QP's, one
 * of another port's window (this port's DCT) and the largest number name
 * no DCT there: dropped, the sender's retries run out, and the far port
 * still takes its own number afterwards. */
TEST_F(emu_names_test, dct_reached_by_its_number_others_dropped_bad_flow)
{
    const uint32_t span = 8192; /* numbers of a port's window */
    emu_far_port far;
    struct ibv_ah *ah;
    uint32_t below;

    ASSERT_GE(m_num, 2);
    ASSERT_EQ("", far.open(m_list[1]));
    ah = make_ah(far.lid);
    ASSERT_NE(nullptr, ah);
    EXPECT_EQ(IBV_WC_SUCCESS, send_to(ah, far.dct->qp_num));
    EXPECT_EQ(1u, far.received());

    below = (far.dct->qp_num & ~(span - 1)) + 0xffu;
    ASSERT_LT(below, far.dct->qp_num);
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, send_to(ah, below));
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, send_to(ah, m_dct->qp_num));
    EXPECT_EQ(IBV_WC_RETRY_EXC_ERR, send_to(ah, 0xffffffu));
    EXPECT_EQ(0u, far.received());

    EXPECT_EQ(IBV_WC_SUCCESS, send_to(ah, far.dct->qp_num));
    EXPECT_EQ(1u, far.received());
    EXPECT_EQ(0, ibv_destroy_ah(ah));
}

/* An AH made while no port held its LID reaches the port that takes the
 * LID later. */
TEST_F(emu_names_test, ah_to_free_lid_reaches_later_owner)
{
    emu_far_port far;
    struct ibv_ah *ah;
    uint16_t lid;

    ASSERT_GE(m_num, 2);
    ASSERT_EQ("", far.open(m_list[1]));
    lid = far.lid;
    far.close();
    ah = make_ah(lid);
    ASSERT_NE(nullptr, ah);
    ASSERT_EQ("", far.open(m_list[1]));
    ASSERT_EQ(lid, far.lid) << "the freed LID went to another port";
    EXPECT_EQ(IBV_WC_SUCCESS, send_to(ah, far.dct->qp_num));
    EXPECT_EQ(1u, far.received());
    EXPECT_EQ(0, ibv_destroy_ah(ah));
}

/* Numbers a port hands out: nonzero, 24-bit, its QPs' all different, and
 * not those of the port before it on the same device */
TEST_F(emu_names_test, qp_numbers_not_reused_by_next_port)
{
    emu_far_port far;
    struct ibv_qp *dci = make_dci();
    uint32_t first;

    ASSERT_NE(nullptr, dci);
    EXPECT_NE(0u, dci->qp_num);
    EXPECT_EQ(0u, dci->qp_num >> 24);
    EXPECT_NE(dci->qp_num, m_dct->qp_num);
    ASSERT_EQ("", far.open(m_list[1]));
    first = far.dct->qp_num;
    EXPECT_EQ(0u, first >> 24);
    EXPECT_NE(first, m_dct->qp_num);
    EXPECT_NE(first, dci->qp_num);
    far.close();
    ASSERT_EQ("", far.open(m_list[1]));
    EXPECT_NE(first, far.dct->qp_num);
}

/* The fabric's LID directory exists while a port of the fabric is open
 * and is removed when the last one closes (nothing is left in /dev/shm) */
TEST(emu_names, directory_removed_by_last_user)
{
    std::string path = "/dev/shm/dcx-emu." + std::to_string(getuid()) + "." +
                       emu_test_fabric();
    struct ibv_device **list;
    struct ibv_context *ctx;
    struct stat st;
    int num = 0;

    list = ibv_get_device_list(&num);
    ASSERT_NE(nullptr, list);
    ASSERT_GE(num, 1);
    ctx = ibv_open_device(list[0]);
    ASSERT_NE(nullptr, ctx);
    EXPECT_EQ(0, stat(path.c_str(), &st)) << path;
    EXPECT_EQ(0, ibv_close_device(ctx));
    ibv_free_device_list(list);
    EXPECT_NE(0, stat(path.c_str(), &st)) << path << " left behind";
}

/* A process that exits with its port still open (a tool's error path
 * that never closes its device) leaves nothing either: its entries go,
 * and the directory with them when no other process holds it, as a real
 * device's objects go with the process that made them */
TEST(emu_names, directory_removed_by_last_user_exiting_open)
{
    std::string path = "/dev/shm/dcx-emu." + std::to_string(getuid()) + "." +
                       emu_test_fabric();
    struct stat st;
    int status = 0;
    pid_t pid;

    ASSERT_NE(0, stat(path.c_str(), &st)) << path << " there before";
    pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        struct ibv_device **list;
        int num = 0;

#ifdef __SANITIZE_ADDRESS__
        __lsan_disable(); /* what the child leaves open is the point */
#endif
        list = ibv_get_device_list(&num);
        if ((list == nullptr) || (num < 1) ||
            (ibv_open_device(list[0]) == nullptr) ||
            (stat(path.c_str(), &st) != 0)) {
            _exit(2);
        }
        exit(0); /* the device left open; the destructors run */
    }
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    ASSERT_TRUE(WIFEXITED(status));
    ASSERT_EQ(0, WEXITSTATUS(status)) << "the child could not open a port";
    EXPECT_NE(0, stat(path.c_str(), &st)) << path << " left behind";
}

/* SRQ numbers (ibv_get_srq_num, which perftest exchanges for DC): one for
 * any SRQ, nonzero, 24-bit, different for two SRQs */
TEST_F(emu_names_test, srq_numbers)
{
    struct ibv_srq_init_attr attr;
    struct ibv_srq *srq2;
    uint32_t n1 = 0, n2 = 0;

    memset(&attr, 0, sizeof(attr));
    attr.attr.max_wr  = 4;
    attr.attr.max_sge = 1;
    srq2              = ibv_create_srq(m_pd, &attr);
    ASSERT_NE(nullptr, srq2);
    EXPECT_EQ(0, ibv_get_srq_num(m_srq, &n1));
    EXPECT_EQ(0, ibv_get_srq_num(srq2, &n2));
    EXPECT_NE(0u, n1);
    EXPECT_EQ(0u, n1 >> 24);
    EXPECT_NE(n1, n2);
    EXPECT_EQ(0, ibv_destroy_srq(srq2));
}
