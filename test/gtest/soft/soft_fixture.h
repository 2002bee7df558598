/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device test fixture: a "node" wrapper (device + PD + CQ + SRQ + DCT +
 * DCI) usable in the test process and in forked children, a shared mapping
 * set up before fork to exchange addresses and results, and child process
 * management (children _exit, always reaped, killed if they hang).
 */
#ifndef SOFT_FIXTURE_H_
#define SOFT_FIXTURE_H_

#include <gtest/gtest.h>

extern "C" {
#include "dcx_dev.h"
#include "soft/dcx_soft.h"
}

#include <functional>
#include <string>
#include <vector>
#include <sys/types.h>
#include <string.h>
#include <unistd.h>

namespace soft_test {

static const size_t BUF_SIZE = 12u << 20; /* target memory in the mapping */
static const size_t RECV_OFF = 6u << 20;  /* receives start here */
static const unsigned MAX_WC = 512;

enum {
    TARGET_POLL    = 0,
    TARGET_SLEEP   = 1,
    TARGET_COMPUTE = 2
};

/* What a target child should set up. */
struct target_params {
    uint64_t dc_key;
    uint32_t dct_access;
    uint32_t mr_access;
    uint32_t nrecv;
    uint32_t recv_size;
    uint32_t mode; /* TARGET_POLL / TARGET_SLEEP / TARGET_COMPUTE */
    /* TARGET_COMPUTE: the target computes and polls its CQ every this many
     * us (0: never); the test may change it while the target runs */
    volatile uint32_t compute_poll_us;
    uint8_t min_rnr_timer;
    uint32_t recv_lkey_xor; /* != 0: receives posted with a bad lkey */
    dcx_soft_limits_t limits;
};

/* Shared between the test process and its children (MAP_SHARED). */
struct shared_area {
    volatile uint32_t ready;     /* target published its info */
    volatile uint32_t stop;      /* test asks children to finish */
    volatile uint32_t go;        /* generic start signal */
    volatile uint32_t post_more; /* ask the target to post receives */
    volatile uint32_t posted_more;
    volatile uint32_t kill_port; /* target kills its port (fault) */
    volatile uint32_t port_killed;
    volatile uint32_t child_done[8];
    uint8_t addr[DCX_DEV_ADDR_MAX];
    uint32_t addr_len;
    uint32_t dctn;
    uint32_t rkey;
    uint32_t rkey_ro;                /* MR with remote read only */
    uint8_t addr2[DCX_DEV_ADDR_MAX]; /* test process's port */
    uint32_t dctn2;
    volatile uint32_t ready2;
    uint64_t raddr; /* base of buf in the target */
    target_params tp;
    volatile uint32_t n_wc;
    dcx_wc_t wc[MAX_WC];
    dcx_soft_stats_t stats; /* target's counters at exit */
    char fabric[40];
    alignas(4096) uint8_t buf[BUF_SIZE];
};

struct node {
    dcx_dev_t *dev = nullptr;
    dcx_pd_t *pd   = nullptr;
    dcx_cq_t *cq   = nullptr;
    dcx_srq_t *srq = nullptr;
    dcx_qp_t *dct  = nullptr;
    dcx_qp_t *dci  = nullptr;
    dcx_ah_t *ah   = nullptr;
    std::vector<dcx_mr_t *> mrs;

    int open(const char *fabric, const dcx_soft_limits_t *limits = nullptr);
    int make_cq(uint32_t cqe = 1024);
    int make_target(uint64_t key, uint32_t access, uint32_t srq_wr = 256,
                    uint8_t min_rnr_timer = 0, uint32_t srq_flags = 0);
    int make_dci(uint32_t max_wr = 128, uint32_t max_inline = 256,
                 uint8_t retry_cnt = 0, uint8_t rnr_retry = 0,
                 uint32_t max_sge = 4);
    int reg(void *addr, size_t len, uint32_t access, dcx_mr_t **mr_p);
    int connect(const void *addr, size_t len);
    /* A node that targets itself: a CQ, a DCT with this key and access, a
     * DCI, and an address handle of its own port */
    int make_loopback(uint64_t key, uint32_t access);
    /* One signalled WR to its own DCT (make_loopback) from one sge; atomics
     * add 1 */
    dcx_send_wr_t loop_wr(dcx_wr_opcode_t op, uint64_t key,
                          const dcx_sge_t *sge, uint32_t rkey,
                          uint64_t raddr) const;
    /* Posts w, waits for its completion and recovers the DCI from an error;
     * returns the completion status */
    uint8_t run(const dcx_send_wr_t &w);
    /* polls until n completions arrived or timeout; returns the count */
    int poll(dcx_wc_t *wc, int n, double timeout_s = 10.0);
    void close();
    ~node() { close(); }
};

/* Posts one signalled inline WR (op: SEND, SEND_IMM or RDMA_WRITE) of the
 * 8 bytes of value, with wr_id value, on dci through from's address handle
 * to DCT dctn under key (rkey/raddr for a WRITE); dcx_qp_post_send's result */
int post_inline_value(const node &from, dcx_qp_t *dci, uint32_t dctn,
                      uint64_t key, dcx_wr_opcode_t op, uint64_t value,
                      uint32_t rkey = 0, uint64_t raddr = 0);
/* The same through address handle ah */
int post_inline_value_ah(dcx_ah_t *ah, dcx_qp_t *dci, uint32_t dctn,
                         uint64_t key, dcx_wr_opcode_t op, uint64_t value,
                         uint32_t rkey = 0, uint64_t raddr = 0);

/* Opens a and b on fabric: a with a DCI and an address handle of b's port,
 * b a target (DCT key and access, an SRQ of srq_wr receives) with buf
 * registered for local write in *mr_p; 0 or the first error. */
int open_sender_target(node &a, node &b, const std::string &fabric,
                       uint64_t key, uint32_t access, uint32_t srq_wr,
                       std::vector<uint8_t> &buf, dcx_mr_t **mr_p);

/* Opens n on fabric as a node that targets itself (make_loopback: key,
 * DCX_ACCESS_REMOTE_WRITE), with buf registered for local write in *mr_p;
 * 0 or the first error. */
int open_loopback(node &n, const std::string &fabric, uint64_t key,
                  std::vector<uint8_t> &buf, dcx_mr_t **mr_p);

/* bytes per receive buffer of recv_list, unless told */
static const uint32_t RECV_SLOT = 64;

/* count single-buffer receives with wr_ids first.., each at slot index
 * wr_id of buf, under mr's lkey, for dcx_srq_post_recv_list with length
 * slot. */
std::vector<dcx_recv_t> recv_list(const std::vector<uint8_t> &buf,
                                  const dcx_mr_t *mr, uint64_t first,
                                  unsigned count, uint32_t slot = RECV_SLOT);

/* Posts a single WR; helpers to build the common ones. */
dcx_send_wr_t make_wr(dcx_wr_opcode_t op, uint64_t wr_id, const dcx_sge_t *sge,
                      unsigned num_sge, const node &n, const shared_area *sh);

/* Child body for a target: opens on sh->fabric with sh->tp, publishes, then
 * serves until sh->stop. */
int target_main(shared_area *sh);

/* where the target's receive number wr_id lands */
uint8_t *recv_buf(shared_area *sh, uint64_t wr_id);

double now_s();

/* the device's counters (dcx_soft_stats), zeroed if the call fails */
dcx_soft_stats_t dev_stats(node &n);

/* A private System V segment of len bytes attached at 'at' (NULL:
 * anywhere, else over what is mapped there) and, with rmid, removed at
 * once as UCX's allocator and the dcx md do; its id in *id_p if not NULL;
 * NULL if it cannot be made (errno says why) */
uint8_t *shm_attach(size_t len, void *at, bool rmid, int *id_p = nullptr);

/* Memory peers of a soft device attach (DCX_CAP_SHM_PEERS) once it is
 * registered: a System V segment of *len_p bytes rounded up to whole
 * pages, zeroed, attached at *addr_p and removed at once (IPC_RMID), as
 * the dcx md allocates (dcx_md_alloc.c).  0 or an errno (said on stderr).
 * shm_free gives it back as the md does: dev hears of the unmap
 * (dcx_dev_mem_unmapped), then the segment is detached. */
int shm_alloc(size_t *len_p, void **addr_p);
int shm_free(dcx_dev_t *dev, void *addr, size_t len);

/* the shared-memory segments of a fabric of ours ("/dcx-soft.<uid>...") */
std::vector<std::string> seg_names(const std::string &fabric);
bool wait_flag(volatile uint32_t *flag, uint32_t value, double timeout_s);

class soft : public ::testing::Test {
public:
    /* 8 x 100 ms ack timeouts, 1 ms RNR timer */
    static dcx_soft_limits_t default_limits();

protected:
    void SetUp() override;
    void TearDown() override;

    pid_t spawn(std::function<int()> fn);
    /* starts a target child with the current sh->tp and waits for it */
    pid_t start_target();
    /* asks children to stop and reaps them; returns false if one failed */
    bool stop_children();
    void kill_child(pid_t pid);
    /* SIGSTOP a child and wait until it has stopped (kill() returns
     * before); SIGCONT it */
    void stop_child(pid_t pid);
    void continue_child(pid_t pid);
    int open_initiator(node &n, const dcx_soft_limits_t *limits = nullptr);

    shared_area *sh = nullptr;
    std::string fabric;
    std::vector<pid_t> children;
    std::vector<pid_t> killed;
};


/* Counts log lines while alive: bad flows check that one line was logged. */
struct log_counter {
    log_counter();
    ~log_counter();
    int lines() const;
};

/* A target child and an initiator in the test process. */
class soft_xproc : public soft {
protected:
    void start()
    {
        target = start_target();
        ASSERT_EQ(0, open_initiator(ini));
        ASSERT_EQ(0, ini.reg(lbuf.data(), lbuf.size(), DCX_ACCESS_LOCAL_WRITE,
                             &lmr));
    }

    /* posts one WR and waits for its completion */
    dcx_wc_t run(dcx_send_wr_t wr)
    {
        dcx_wc_t wc;
        memset(&wc, 0xff, sizeof(wc));
        int ret = dcx_qp_post_send(ini.dci, &wr);
        EXPECT_EQ(0, ret);
        if (ret == 0) {
            EXPECT_EQ(1, ini.poll(&wc, 1, 20.0));
        }
        return wc;
    }

    dcx_sge_t lsge(size_t off, uint32_t len)
    {
        dcx_sge_t s;
        s.addr   = (uint64_t)(uintptr_t)(lbuf.data() + off);
        s.length = len;
        s.lkey   = lmr->lkey;
        return s;
    }

    /* waits until the target recorded n receive completions */
    bool wait_recv(uint32_t n, double timeout = 20.0)
    {
        double end = now_s() + timeout;
        while (__atomic_load_n(&sh->n_wc, __ATOMIC_ACQUIRE) < n) {
            if (now_s() > end) {
                return false;
            }
            usleep(100);
        }
        return true;
    }

    node ini;
    pid_t target              = -1; /* start(): the target child */
    dcx_mr_t *lmr             = nullptr;
    std::vector<uint8_t> lbuf = std::vector<uint8_t>(8u << 20);
};

} // namespace soft_test

#endif
