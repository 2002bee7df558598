/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where the emulation places a QP's, CQ's or SRQ's queues: as libmlx5 does
 * from MLX_QP_ALLOC_TYPE, MLX_CQ_ALLOC_TYPE and MLX_SRQ_ALLOC_TYPE (HUGE
 * needs 2 MiB huge pages, PREFER_HUGE falls back to the heap, CONTIG is
 * refused by the kernel, PREFER_CONTIG and unknown values keep the heap).
 * Huge pages are probed as libmlx5 would meet them, through shmget: the
 * tests needing them or their absence skip on the other kind of machine.
 * A queue on huge pages lives in a SysV segment of the process, seen in
 * /proc/self/maps, and gone when its object is destroyed.
 */
#include "emu_fixture.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/shm.h>

#include <fstream>
#include <string>

/* 0 when a 2 MiB huge-page segment can be had, else shmget's errno */
static int huge_probe()
{
    int id = shmget(IPC_PRIVATE, 2ul << 20, SHM_HUGETLB | 0600);

    if (id < 0) {
        return errno;
    }
    shmctl(id, IPC_RMID, nullptr);
    return 0;
}

/* The SysV segments attached to this process */
static int sysv_maps()
{
    std::ifstream maps("/proc/self/maps");
    std::string line;
    int n = 0;

    while (std::getline(maps, line)) {
        n += (line.find("/SYSV") != std::string::npos) ? 1 : 0;
    }
    return n;
}

/* p lies in a SysV segment of this process */
static bool in_sysv(const void *p)
{
    std::ifstream maps("/proc/self/maps");
    unsigned long lo, hi, at = (unsigned long)p;
    std::string line;

    while (std::getline(maps, line)) {
        if ((sscanf(line.c_str(), "%lx-%lx", &lo, &hi) == 2) && (at >= lo) &&
            (at < hi)) {
            return line.find("/SYSV") != std::string::npos;
        }
    }
    return false;
}

class emu_qbuf_test : public emu_test {
protected:
    void TearDown() override
    {
        unsetenv("MLX_QP_ALLOC_TYPE");
        unsetenv("MLX_CQ_ALLOC_TYPE");
        unsetenv("MLX_SRQ_ALLOC_TYPE");
        unsetenv("HUGE_CQ");
        EXPECT_EQ(m_maps, sysv_maps()) << "a segment outlived its object";
        emu_test::TearDown();
    }

    void SetUp() override
    {
        emu_test::SetUp();
        m_maps = sysv_maps();
    }

    static void set_all(const char *type)
    {
        setenv("MLX_QP_ALLOC_TYPE", type, 1);
        setenv("MLX_CQ_ALLOC_TYPE", type, 1);
        setenv("MLX_SRQ_ALLOC_TYPE", type, 1);
    }

    struct ibv_srq *create_srq()
    {
        struct ibv_srq_init_attr attr;

        memset(&attr, 0, sizeof(attr));
        attr.attr.max_wr  = 100;
        attr.attr.max_sge = 1;
        return ibv_create_srq(m_pd, &attr);
    }

    struct ibv_qp *create_qp(struct ibv_cq *cq)
    {
        struct ibv_qp_init_attr attr;

        memset(&attr, 0, sizeof(attr));
        attr.send_cq          = cq;
        attr.recv_cq          = cq;
        attr.qp_type          = IBV_QPT_RC;
        attr.cap.max_send_wr  = 100;
        attr.cap.max_recv_wr  = 100;
        attr.cap.max_send_sge = 1;
        attr.cap.max_recv_sge = 1;
        return ibv_create_qp(m_pd, &attr);
    }

    /* A CQ, a QP on cq and an SRQ are each refused with errno err and
     * one log line */
    void expect_refused(struct ibv_cq *cq, int err)
    {
        {
            log_capture log;

            errno = 0;
            EXPECT_EQ(nullptr, ibv_create_cq(m_ctx, 100, nullptr, nullptr, 0));
            EXPECT_EQ(err, errno);
            EXPECT_EQ(1u, log.count());
        }
        {
            log_capture log;

            errno = 0;
            EXPECT_EQ(nullptr, create_qp(cq));
            EXPECT_EQ(err, errno);
            EXPECT_EQ(1u, log.count());
        }
        {
            log_capture log;

            errno = 0;
            EXPECT_EQ(nullptr, create_srq());
            EXPECT_EQ(err, errno);
            EXPECT_EQ(1u, log.count());
        }
    }

    /* Creates a CQ, a QP on it and an SRQ, takes their queues through
     * mlx5dv_init_obj and checks where they lie; destroys them all */
    void objects(bool huge)
    {
        struct mlx5dv_obj obj;
        struct mlx5dv_srq dsrq;
        struct mlx5dv_cq dcq;
        struct mlx5dv_qp dqp;
        struct ibv_srq *srq;
        struct ibv_qp *qp;
        struct ibv_cq *cq;

        cq = ibv_create_cq(m_ctx, 100, nullptr, nullptr, 0);
        ASSERT_NE(nullptr, cq) << strerror(errno);
        qp = create_qp(cq);
        ASSERT_NE(nullptr, qp) << strerror(errno);
        srq = create_srq();
        ASSERT_NE(nullptr, srq) << strerror(errno);
        EXPECT_EQ(m_maps + (huge ? 3 : 0), sysv_maps());

        memset(&obj, 0, sizeof(obj));
        memset(&dsrq, 0, sizeof(dsrq));
        obj.cq.in   = cq;
        obj.cq.out  = &dcq;
        obj.qp.in   = qp;
        obj.qp.out  = &dqp;
        obj.srq.in  = srq;
        obj.srq.out = &dsrq;
        ASSERT_EQ(0, mlx5dv_init_obj(&obj, MLX5DV_OBJ_CQ | MLX5DV_OBJ_QP |
                                               MLX5DV_OBJ_SRQ));
        EXPECT_EQ(huge, in_sysv(dcq.buf));
        EXPECT_EQ(huge, in_sysv(dqp.sq.buf));
        EXPECT_EQ(huge, in_sysv(dqp.rq.buf));
        EXPECT_EQ(huge, in_sysv(dsrq.buf));
        /* the queues do not overlap: the receive queue's first WQE and
         * the send queue's last block are both writable */
        memset(dqp.rq.buf, 0xa5, dqp.rq.stride);
        memset((char *)dqp.sq.buf + (dqp.sq.wqe_cnt - 1) * dqp.sq.stride, 0x5a,
               dqp.sq.stride);
        EXPECT_EQ(0xa5, *(unsigned char *)dqp.rq.buf);

        EXPECT_EQ(0, ibv_destroy_srq(srq));
        EXPECT_EQ(0, ibv_destroy_qp(qp));
        EXPECT_EQ(0, ibv_destroy_cq(cq));
        EXPECT_EQ(m_maps, sysv_maps());
    }

    int m_maps = 0;
};

TEST_F(emu_qbuf_test, huge_refused_without_huge_pages)
{
    struct ibv_cq *cq;
    int err = huge_probe();

    if (err == 0) {
        GTEST_SKIP() << "2 MiB huge pages are reserved on this machine";
    }
    cq = ibv_create_cq(m_ctx, 100, nullptr, nullptr, 0);
    ASSERT_NE(nullptr, cq);
    set_all("HUGE");
    expect_refused(cq, err);
    /* libmlx5's older switch makes huge pages a CQ's default */
    unsetenv("MLX_CQ_ALLOC_TYPE");
    setenv("HUGE_CQ", "y", 1);
    {
        log_capture log;

        errno = 0;
        EXPECT_EQ(nullptr, ibv_create_cq(m_ctx, 100, nullptr, nullptr, 0));
        EXPECT_EQ(err, errno);
        EXPECT_EQ(1u, log.count());
    }
    /* nothing was left half made: the PD and CQ go */
    EXPECT_EQ(0, ibv_destroy_cq(cq));
}

TEST_F(emu_qbuf_test, huge_placed_on_huge_pages)
{
    if (huge_probe() != 0) {
        GTEST_SKIP() << "no 2 MiB huge pages reserved on this machine";
    }
    set_all("HUGE");
    log_capture log;
    objects(true);
    EXPECT_EQ(0u, log.count());
}

TEST_F(emu_qbuf_test, prefer_huge_falls_back)
{
    bool huge = (huge_probe() == 0);

    /* compared without case, as libmlx5 compares */
    for (const char *type : {"PREFER_HUGE", "prefer_huge", "ALL"}) {
        SCOPED_TRACE(type);
        set_all(type);
        log_capture log;
        objects(huge);
        EXPECT_EQ(0u, log.count());
    }
}

TEST_F(emu_qbuf_test, heap_types)
{
    for (const char *type : {"ANON", "PREFER_CONTIG", "anon"}) {
        SCOPED_TRACE(type);
        set_all(type);
        log_capture log;
        objects(false);
        EXPECT_EQ(0u, log.count());
    }
}

TEST_F(emu_qbuf_test, unknown_type_keeps_the_default)
{
    struct ibv_cq *cq;

    set_all("BOGUS");
    {
        log_capture log;

        cq = ibv_create_cq(m_ctx, 100, nullptr, nullptr, 0);
        ASSERT_NE(nullptr, cq) << strerror(errno);
        EXPECT_EQ(1u, log.count()); /* the value is not one libmlx5 knows */
    }
    EXPECT_EQ(0, ibv_destroy_cq(cq));
    EXPECT_EQ(m_maps, sysv_maps());
}

TEST_F(emu_qbuf_test, contig_refused)
{
    struct ibv_cq *cq;

    cq = ibv_create_cq(m_ctx, 100, nullptr, nullptr, 0);
    ASSERT_NE(nullptr, cq);
    set_all("CONTIG");
    expect_refused(cq, ENOSYS);
    EXPECT_EQ(0, ibv_destroy_cq(cq));
}
