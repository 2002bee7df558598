/* SPDX-License-Identifier: BSD-3-Clause */
#include "soft_fixture.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

namespace soft_test {

double now_s()
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

dcx_soft_stats_t dev_stats(node &n)
{
    dcx_soft_stats_t st;

    memset(&st, 0, sizeof(st));
    EXPECT_EQ(0, dcx_soft_stats(n.dev, &st));
    return st;
}

uint8_t *shm_attach(size_t len, void *at, bool rmid, int *id_p)
{
    int id = shmget(IPC_PRIVATE, len, IPC_CREAT | 0600);
    void *p;
    int err;

    if (id < 0) {
        return nullptr;
    }
    p   = shmat(id, at, (at != nullptr) ? SHM_REMAP : 0);
    err = errno;
    if (rmid || (p == (void *)-1)) {
        shmctl(id, IPC_RMID, nullptr);
    }
    if (id_p != nullptr) {
        *id_p = id;
    }
    errno = err;
    return (p == (void *)-1) ? nullptr : (uint8_t *)p;
}

int shm_alloc(size_t *len_p, void **addr_p)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    size_t len  = (*len_p + page - 1) & ~(page - 1);
    uint8_t *p  = shm_attach(len, nullptr, true);

    if (p == nullptr) {
        int err = errno;

        fprintf(stderr, "a SysV segment of %zu bytes: %s\n", len,
                strerror(err));
        return err;
    }
    *len_p  = len;
    *addr_p = p;
    return 0;
}

int shm_free(dcx_dev_t *dev, void *addr, size_t len)
{
    dcx_dev_mem_unmapped(dev, addr, len);
    if (shmdt(addr) != 0) {
        int err = errno;

        fprintf(stderr, "shmdt of %p: %s\n", addr, strerror(err));
        return err;
    }
    return 0;
}

std::vector<std::string> seg_names(const std::string &fabric)
{
    std::vector<std::string> out;
    std::string prefix = "dcx-soft." + std::to_string(getuid()) + "." + fabric +
                         ".";
    DIR *d = opendir("/dev/shm");
    if (d == nullptr) {
        return out;
    }
    while (struct dirent *de = readdir(d)) {
        if (strncmp(de->d_name, prefix.c_str(), prefix.size()) == 0) {
            out.push_back(std::string("/") + de->d_name);
        }
    }
    closedir(d);
    return out;
}

bool wait_flag(volatile uint32_t *flag, uint32_t value, double timeout_s)
{
    double end = now_s() + timeout_s;

    while (__atomic_load_n(flag, __ATOMIC_ACQUIRE) != value) {
        if (now_s() > end) {
            return false;
        }
        usleep(200);
    }
    return true;
}

int node::open(const char *fabric, const dcx_soft_limits_t *limits)
{
    dcx_soft_params_t params;
    dcx_dev_info_t *list;
    unsigned count;
    int ret;

    memset(&params, 0, sizeof(params));
    params.count  = 1;
    params.fabric = fabric;
    if (limits != nullptr) {
        params.limits = *limits;
    }
    ret = dcx_soft_list(&params, &list, &count);
    if (ret != 0) {
        return ret;
    }
    if (count != 1) {
        dcx_dev_list_free(list);
        return ENODEV;
    }
    ret = dcx_dev_open(&list[0], &dev);
    dcx_dev_list_free(list);
    if (ret != 0) {
        return ret;
    }
    return dcx_pd_alloc(dev, &pd);
}

int node::make_cq(uint32_t cqe)
{
    return dcx_cq_create(dev, cqe, &cq);
}

int node::make_target(uint64_t key, uint32_t access, uint32_t srq_wr,
                      uint8_t min_rnr_timer, uint32_t srq_flags)
{
    dcx_srq_attr_t sattr;
    dcx_qp_attr_t qattr;
    int ret;

    if ((cq == nullptr) && ((ret = make_cq()) != 0)) {
        return ret;
    }
    memset(&sattr, 0, sizeof(sattr));
    sattr.type    = DCX_SRQ_BASIC;
    sattr.max_wr  = srq_wr;
    sattr.max_sge = 2;
    sattr.cq      = cq;
    sattr.flags   = srq_flags;
    ret           = dcx_srq_create(pd, &sattr, &srq);
    if (ret != 0) {
        return ret;
    }
    memset(&qattr, 0, sizeof(qattr));
    qattr.type          = DCX_QPT_DCT;
    qattr.recv_cq       = cq;
    qattr.srq           = srq;
    qattr.dc_key        = key;
    qattr.access        = access;
    qattr.min_rnr_timer = min_rnr_timer;
    return dcx_qp_create(pd, &qattr, &dct);
}

int node::make_dci(uint32_t max_wr, uint32_t max_inline, uint8_t retry_cnt,
                   uint8_t rnr_retry, uint32_t max_sge)
{
    dcx_qp_attr_t qattr;
    int ret;

    if ((cq == nullptr) && ((ret = make_cq()) != 0)) {
        return ret;
    }
    memset(&qattr, 0, sizeof(qattr));
    qattr.type          = DCX_QPT_DCI;
    qattr.send_cq       = cq;
    qattr.max_send_wr   = max_wr;
    qattr.max_send_sge  = max_sge;
    qattr.max_inline    = max_inline;
    qattr.max_rd_atomic = 4;
    qattr.retry_cnt     = retry_cnt;
    qattr.rnr_retry     = rnr_retry;
    /* explicit transport parameters need a timeout: 4.096us << 15 = 134ms */
    qattr.timeout       = (retry_cnt || rnr_retry) ? 15 : 0;
    return dcx_qp_create(pd, &qattr, &dci);
}

int node::reg(void *addr, size_t len, uint32_t access, dcx_mr_t **mr_p)
{
    dcx_mr_t *mr;
    int ret = dcx_mr_reg(pd, addr, len, access, &mr);

    if (ret == 0) {
        mrs.push_back(mr);
        if (mr_p != nullptr) {
            *mr_p = mr;
        }
    }
    return ret;
}

int post_inline_value(const node &from, dcx_qp_t *dci, uint32_t dctn,
                      uint64_t key, dcx_wr_opcode_t op, uint64_t value,
                      uint32_t rkey, uint64_t raddr)
{
    return post_inline_value_ah(from.ah, dci, dctn, key, op, value, rkey,
                                raddr);
}

int post_inline_value_ah(dcx_ah_t *ah, dcx_qp_t *dci, uint32_t dctn,
                         uint64_t key, dcx_wr_opcode_t op, uint64_t value,
                         uint32_t rkey, uint64_t raddr)
{
    dcx_sge_t s = {(uint64_t)(uintptr_t)&value, sizeof(value), 0};
    dcx_send_wr_t wr;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id       = value;
    wr.opcode      = op;
    wr.flags       = DCX_SEND_SIGNALED | DCX_SEND_INLINE;
    wr.num_sge     = 1;
    wr.sg_list     = &s;
    wr.dest.ah     = ah;
    wr.dest.dctn   = dctn;
    wr.dest.dc_key = key;
    wr.rkey        = rkey;
    wr.remote_addr = raddr;
    return dcx_qp_post_send(dci, &wr); /* inline: s is copied here */
}

int open_sender_target(node &a, node &b, const std::string &fabric,
                       uint64_t key, uint32_t access, uint32_t srq_wr,
                       std::vector<uint8_t> &buf, dcx_mr_t **mr_p)
{
    uint8_t addr[DCX_DEV_ADDR_MAX];
    size_t len = sizeof(addr);
    int ret;

    if (((ret = a.open(fabric.c_str())) != 0) ||
        ((ret = b.open(fabric.c_str())) != 0) || ((ret = a.make_dci()) != 0) ||
        ((ret = b.make_target(key, access, srq_wr)) != 0) ||
        ((ret = b.reg(buf.data(), buf.size(), DCX_ACCESS_LOCAL_WRITE, mr_p)) !=
         0) ||
        ((ret = dcx_dev_port_addr(b.dev, addr, &len)) != 0)) {
        return ret;
    }
    return a.connect(addr, len);
}

int open_loopback(node &n, const std::string &fabric, uint64_t key,
                  std::vector<uint8_t> &buf, dcx_mr_t **mr_p)
{
    int ret;

    if (((ret = n.open(fabric.c_str())) != 0) ||
        ((ret = n.make_loopback(key, DCX_ACCESS_REMOTE_WRITE)) != 0)) {
        return ret;
    }
    return n.reg(buf.data(), buf.size(), DCX_ACCESS_LOCAL_WRITE, mr_p);
}

std::vector<dcx_recv_t> recv_list(const std::vector<uint8_t> &buf,
                                  const dcx_mr_t *mr, uint64_t first,
                                  unsigned count, uint32_t slot)
{
    std::vector<dcx_recv_t> list(count);

    for (unsigned i = 0; i < count; ++i) {
        list[i].wr_id = first + i;
        list[i].addr  = (uintptr_t)buf.data() + (first + i) * slot;
        list[i].lkey  = mr->lkey;
    }
    return list;
}

int node::connect(const void *addr, size_t len)
{
    return dcx_ah_create(pd, addr, len, &ah);
}

int node::make_loopback(uint64_t key, uint32_t access)
{
    uint8_t addr[DCX_DEV_ADDR_MAX];
    size_t len = sizeof(addr);
    int ret;

    if (((ret = make_cq(256)) != 0) ||
        ((ret = make_target(key, access)) != 0) || ((ret = make_dci()) != 0) ||
        ((ret = dcx_dev_port_addr(dev, addr, &len)) != 0)) {
        return ret;
    }
    return connect(addr, len);
}

dcx_send_wr_t node::loop_wr(dcx_wr_opcode_t op, uint64_t key,
                            const dcx_sge_t *sge, uint32_t rkey,
                            uint64_t raddr) const
{
    dcx_send_wr_t w;

    memset(&w, 0, sizeof(w));
    w.opcode      = op;
    w.flags       = DCX_SEND_SIGNALED;
    w.num_sge     = 1;
    w.sg_list     = sge;
    w.dest.ah     = ah;
    w.dest.dctn   = dct->qp_num;
    w.dest.dc_key = key;
    w.rkey        = rkey;
    w.remote_addr = raddr;
    w.compare_add = 1;
    return w;
}

uint8_t node::run(const dcx_send_wr_t &w)
{
    dcx_wc_t wc;

    memset(&wc, 0xff, sizeof(wc));
    EXPECT_EQ(0, dcx_qp_post_send(dci, &w));
    EXPECT_EQ(1, poll(&wc, 1, 20.0));
    if (wc.status != DCX_WC_SUCCESS) {
        EXPECT_EQ(0, dcx_qp_recover(dci));
    }
    return wc.status;
}

int node::poll(dcx_wc_t *wc, int n, double timeout_s)
{
    double end = now_s() + timeout_s;
    int got    = 0;

    while (got < n) {
        int r = dcx_cq_poll(cq, n - got, wc + got);
        if (r < 0) {
            return r;
        }
        got += r;
        if ((r == 0) && (now_s() > end)) {
            break;
        }
    }
    return got;
}

void node::close()
{
    if (dev == nullptr) {
        return;
    }
    if (ah != nullptr) {
        dcx_ah_destroy(ah);
    }
    if (dci != nullptr) {
        dcx_qp_destroy(dci);
    }
    if (dct != nullptr) {
        dcx_qp_destroy(dct);
    }
    if (srq != nullptr) {
        dcx_srq_destroy(srq);
    }
    if (cq != nullptr) {
        dcx_cq_destroy(cq);
    }
    for (dcx_mr_t *mr : mrs) {
        dcx_mr_dereg(mr);
    }
    mrs.clear();
    if (pd != nullptr) {
        dcx_pd_free(pd);
    }
    dcx_dev_close(dev);
    dev = nullptr;
    pd  = nullptr;
    cq  = nullptr;
    srq = nullptr;
    dct = dci = nullptr;
    ah        = nullptr;
}

dcx_send_wr_t make_wr(dcx_wr_opcode_t op, uint64_t wr_id, const dcx_sge_t *sge,
                      unsigned num_sge, const node &n, const shared_area *sh)
{
    dcx_send_wr_t wr;

    memset(&wr, 0, sizeof(wr));
    wr.wr_id       = wr_id;
    wr.opcode      = op;
    wr.flags       = DCX_SEND_SIGNALED;
    wr.num_sge     = (uint8_t)num_sge;
    wr.sg_list     = sge;
    wr.dest.ah     = n.ah;
    wr.dest.dctn   = sh->dctn;
    wr.dest.dc_key = sh->tp.dc_key;
    wr.rkey        = sh->rkey;
    wr.remote_addr = sh->raddr;
    return wr;
}

uint8_t *recv_buf(shared_area *sh, uint64_t wr_id)
{
    size_t slots = (BUF_SIZE - RECV_OFF) / sh->tp.recv_size;

    return sh->buf + RECV_OFF + (size_t)(wr_id % slots) * sh->tp.recv_size;
}

static int target_post_recvs(node &n, shared_area *sh, uint32_t first,
                             uint32_t count)
{
    for (uint32_t i = first; i < first + count; ++i) {
        dcx_sge_t sge;

        sge.addr   = (uint64_t)(uintptr_t)recv_buf(sh, i);
        sge.length = sh->tp.recv_size;
        sge.lkey   = n.mrs[0]->lkey ^ sh->tp.recv_lkey_xor;
        int ret    = dcx_srq_post_recv(n.srq, i, &sge, 1);
        if (ret != 0) {
            fprintf(stderr, "target: post recv %u: %d\n", i, ret);
            return ret;
        }
    }
    return 0;
}

static void target_poll(node &n, shared_area *sh)
{
    dcx_wc_t wc[16];
    int r = dcx_cq_poll(n.cq, 16, wc);

    for (int i = 0; i < r; ++i) {
        uint32_t k = sh->n_wc;
        if (k < MAX_WC) {
            sh->wc[k] = wc[i];
            __atomic_store_n(&sh->n_wc, k + 1, __ATOMIC_RELEASE);
        }
    }
}

int target_main(shared_area *sh)
{
    node n;
    dcx_mr_t *mr, *mr_ro;
    size_t len = sizeof(sh->addr);
    int ret;

    ret = n.open(sh->fabric, &sh->tp.limits);
    if (ret == 0) {
        ret = n.reg(sh->buf, BUF_SIZE, sh->tp.mr_access, &mr);
    }
    if (ret == 0) {
        ret = n.reg(sh->buf, BUF_SIZE, DCX_ACCESS_REMOTE_READ, &mr_ro);
    }
    if (ret == 0) {
        ret = n.make_target(sh->tp.dc_key, sh->tp.dct_access, 256,
                            sh->tp.min_rnr_timer);
    }
    if (ret == 0) {
        ret = target_post_recvs(n, sh, 0, sh->tp.nrecv);
    }
    if (ret == 0) {
        ret = dcx_dev_port_addr(n.dev, sh->addr, &len);
    }
    if (ret != 0) {
        fprintf(stderr, "target setup failed: %d\n", ret);
        return 1;
    }
    sh->addr_len = (uint32_t)len;
    sh->dctn     = n.dct->qp_num;
    sh->rkey     = mr->rkey;
    sh->rkey_ro  = mr_ro->rkey;
    sh->raddr    = (uint64_t)(uintptr_t)sh->buf;
    __atomic_store_n(&sh->ready, 1, __ATOMIC_RELEASE);

    while (!__atomic_load_n(&sh->stop, __ATOMIC_ACQUIRE)) {
        if (__atomic_load_n(&sh->post_more, __ATOMIC_ACQUIRE) !=
            sh->posted_more) {
            uint32_t want = sh->post_more;
            ret = target_post_recvs(n, sh, sh->tp.nrecv + sh->posted_more,
                                    want - sh->posted_more);
            if (ret != 0) {
                return 1;
            }
            __atomic_store_n(&sh->posted_more, want, __ATOMIC_RELEASE);
        }
        if (sh->kill_port && !sh->port_killed) {
            dcx_soft_fault_t f;
            memset(&f, 0, sizeof(f));
            f.type   = DCX_SOFT_FAULT_KILL_PORT;
            f.opcode = -1;
            if (dcx_soft_fault_inject(n.dev, &f) != 0) {
                return 1;
            }
            __atomic_store_n(&sh->port_killed, 1, __ATOMIC_RELEASE);
        }
        if (sh->tp.mode == TARGET_POLL) {
            target_poll(n, sh);
        } else if (sh->tp.mode == TARGET_COMPUTE) {
            /* busy elsewhere: spin on arithmetic, poll now and then */
            uint32_t every = __atomic_load_n(&sh->tp.compute_poll_us,
                                             __ATOMIC_RELAXED);
            double end     = now_s() + (every ? every * 1e-6 : 1e-3);
            uint64_t x     = 1;
            while (now_s() < end) {
                for (int k = 0; k < 100; ++k) {
                    x = x * 6364136223846793005ull + 1442695040888963407ull;
                }
            }
            volatile uint64_t sink = x;
            (void)sink;
            if (every != 0) {
                target_poll(n, sh);
            }
        } else {
            struct timespec ts = {0, 2000000};
            nanosleep(&ts, nullptr);
        }
    }
    target_poll(n, sh);
    dcx_soft_stats(n.dev, &sh->stats);
    n.close();
    return 0;
}

static int g_log_lines;

static void count_log(dcx_log_level_t, const char *, int, const char *msg)
{
    __atomic_fetch_add(&g_log_lines, 1, __ATOMIC_RELAXED);
    if (getenv("SOFT_TEST_SHOW_LOG") != nullptr) {
        fprintf(stderr, "[captured] %s\n", msg);
    }
}

log_counter::log_counter()
{
    __atomic_store_n(&g_log_lines, 0, __ATOMIC_RELAXED);
    dcx_log_set_handler(count_log, DCX_LOG_WARN);
}

log_counter::~log_counter()
{
    dcx_log_set_handler(nullptr, DCX_LOG_WARN);
}

int log_counter::lines() const
{
    return __atomic_load_n(&g_log_lines, __ATOMIC_RELAXED);
}

static unsigned test_counter;

void soft::SetUp()
{
    char name[40];

    sh = (shared_area *)mmap(nullptr, sizeof(shared_area),
                             PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                             -1, 0);
    ASSERT_NE(MAP_FAILED, (void *)sh);
    snprintf(name, sizeof(name), "gt%u_%u", (unsigned)getpid(), ++test_counter);
    fabric = name;
    snprintf(sh->fabric, sizeof(sh->fabric), "%s", name);
    sh->tp.dc_key     = 0x1234abcdull;
    sh->tp.dct_access = DCX_ACCESS_REMOTE_WRITE | DCX_ACCESS_REMOTE_READ |
                        DCX_ACCESS_REMOTE_ATOMIC;
    sh->tp.mr_access = DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                       DCX_ACCESS_REMOTE_READ | DCX_ACCESS_REMOTE_ATOMIC;
    sh->tp.nrecv     = 32;
    sh->tp.recv_size = 65536;
    sh->tp.mode      = TARGET_POLL;
    sh->tp.limits    = default_limits();
}

dcx_soft_limits_t soft::default_limits()
{
    dcx_soft_limits_t l;

    memset(&l, 0, sizeof(l));
    /* 8 x 100 ms without an answer before RETRY_EXC: enough for a target
     * starved on a loaded 2-core machine */
    l.ack_timeout_us = 100000;
    l.retry_cnt      = 7;
    l.rnr_timer_us   = 1000;
    return l;
}

int soft::open_initiator(node &n, const dcx_soft_limits_t *limits)
{
    dcx_soft_limits_t l = (limits != nullptr) ? *limits : sh->tp.limits;
    int ret             = n.open(fabric.c_str(), &l);

    if (ret == 0) {
        ret = n.make_dci();
    }
    if (ret == 0) {
        ret = n.connect(sh->addr, sh->addr_len);
    }
    return ret;
}

pid_t soft::spawn(std::function<int()> fn)
{
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        int rc = 1;
        try {
            rc = fn();
        } catch (...) {
            rc = 2;
        }
        _exit(rc);
    }
    if (pid > 0) {
        children.push_back(pid);
    }
    return pid;
}

pid_t soft::start_target()
{
    shared_area *s = sh;
    pid_t pid      = spawn([s]() { return target_main(s); });

    EXPECT_GT(pid, 0);
    EXPECT_TRUE(wait_flag(&sh->ready, 1, 20.0)) << "target did not start";
    return pid;
}

void soft::kill_child(pid_t pid)
{
    kill(pid, SIGKILL);
    killed.push_back(pid);
}

void soft::stop_child(pid_t pid)
{
    int status = 0;

    ASSERT_EQ(0, kill(pid, SIGSTOP));
    ASSERT_EQ(pid, waitpid(pid, &status, WUNTRACED));
    ASSERT_TRUE(WIFSTOPPED(status));
}

void soft::continue_child(pid_t pid)
{
    ASSERT_EQ(0, kill(pid, SIGCONT));
}

bool soft::stop_children()
{
    bool ok = true;

    __atomic_store_n(&sh->stop, 1, __ATOMIC_RELEASE);
    for (pid_t pid : children) {
        double end = now_s() + 30.0;
        int status = 0;
        pid_t r;

        while ((r = waitpid(pid, &status, WNOHANG)) == 0) {
            if (now_s() > end) {
                kill(pid, SIGKILL);
                waitpid(pid, &status, 0);
                ADD_FAILURE() << "child " << pid << " hung";
                ok = false;
                r  = pid;
                break;
            }
            usleep(1000);
        }
        bool was_killed = false;
        for (pid_t k : killed) {
            was_killed |= (k == pid);
        }
        if (!was_killed && (r == pid) &&
            !(WIFEXITED(status) && (WEXITSTATUS(status) == 0))) {
            ADD_FAILURE() << "child " << pid << " failed, status 0x" << std::hex
                          << status;
            ok = false;
        }
    }
    children.clear();
    killed.clear();
    return ok;
}

void soft::TearDown()
{
    stop_children();
    if (sh != nullptr) {
        munmap(sh, sizeof(shared_area));
        sh = nullptr;
    }
}

} // namespace soft_test
