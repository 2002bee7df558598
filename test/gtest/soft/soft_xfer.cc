/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the soft device's one-sided transfer tests (soft_xfer.h).
 */
#include "soft_xfer.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace soft_test {

dcx_soft_limits_t xfer_limits(bool direct)
{
    dcx_soft_limits_t l = soft::default_limits();

    l.direct = direct;
    return l;
}

bool wait_at_least(volatile uint32_t *v, uint32_t n, double timeout_s)
{
    double end = now_s() + timeout_s;

    while (__atomic_load_n(v, __ATOMIC_ACQUIRE) < n) {
        if (now_s() > end) {
            return false;
        }
        usleep(200);
    }
    return true;
}

dcx_send_wr_t rdma_wr(const node &n, uint32_t dctn, uint64_t dc_key,
                      dcx_wr_opcode_t op, const dcx_sge_t *sge, uint64_t raddr,
                      uint32_t rkey)
{
    dcx_send_wr_t wr;

    memset(&wr, 0, sizeof(wr));
    wr.opcode      = op;
    wr.flags       = DCX_SEND_SIGNALED;
    wr.num_sge     = (sge != nullptr) ? 1 : 0;
    wr.sg_list     = sge;
    wr.dest.ah     = n.ah;
    wr.dest.dctn   = dctn;
    wr.dest.dc_key = dc_key;
    wr.rkey        = rkey;
    wr.remote_addr = raddr;
    return wr;
}

int post_now(node &n, const dcx_send_wr_t &wr)
{
    dcx_send_wr_t w = wr;

    w.flags |= DCX_SEND_NOW;
    return dcx_qp_post_send(n.dci, &w);
}

int run_one(node &n, const dcx_send_wr_t &wr)
{
    dcx_wc_t wc;

    if (dcx_qp_post_send(n.dci, &wr) != 0) {
        fprintf(stderr, "post failed\n");
        return -1;
    }
    if (n.poll(&wc, 1, 30.0) != 1) {
        fprintf(stderr, "no completion\n");
        return -1;
    }
    return (int)wc.status;
}

int write_until_error(node &n, size_t len, dcx_send_wr_t wr,
                      volatile uint32_t *progress, volatile uint32_t *status)
{
    local_buf lb;
    dcx_sge_t s;
    int st;

    if (lb.reg(n, len) != 0) {
        return 11;
    }
    memset(lb.v.data(), 0xab, len);
    s          = lb.sge(0, len);
    wr.sg_list = &s;
    wr.num_sge = 1;
    for (;;) {
        st = run_one(n, wr);
        if (st != DCX_WC_SUCCESS) {
            __atomic_store_n(status, (uint32_t)st, __ATOMIC_RELEASE);
            return 0;
        }
        __atomic_add_fetch(progress, 1, __ATOMIC_RELEASE);
    }
}

int renew_dci(node &n)
{
    dcx_qp_destroy(n.dci);
    n.dci = nullptr;
    return n.make_dci();
}

bool refuse_syscalls(const std::vector<int> &nrs, int err)
{
    std::vector<struct sock_filter> f;
    size_t count = nrs.size(), i;

    f.push_back((struct sock_filter)BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
                                             offsetof(struct seccomp_data,
                                                      nr)));
    for (i = 0; i < count; ++i) {
        /* a match jumps over the rest of the list and the ALLOW */
        f.push_back((struct sock_filter)BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K,
                                                 (uint32_t)nrs[i],
                                                 (uint8_t)(count - i), 0));
    }
    f.push_back((struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
                                             SECCOMP_RET_ALLOW));
    f.push_back((struct sock_filter)BPF_STMT(BPF_RET | BPF_K,
                                             SECCOMP_RET_ERRNO |
                                                 (err & 0xffff)));
    struct sock_fprog prog = {(unsigned short)f.size(), f.data()};

    return (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0) &&
           (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
                    SECCOMP_FILTER_FLAG_TSYNC, &prog) == 0);
}

int local_buf::reg(node &n, size_t size)
{
    v.assign(size, 0);
    return n.reg(v.data(), size, DCX_ACCESS_LOCAL_WRITE, &mr);
}

dcx_sge_t local_buf::sge(size_t off, size_t len)
{
    dcx_sge_t s = {(uint64_t)(uintptr_t)(v.data() + off), (uint32_t)len,
                   mr->lkey};
    return s;
}

} // namespace soft_test
