/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The writers' in-flight markers (soft_dslot.c): a grant keeps its marker
 * between copies and gives it back when another writer finds none free or
 * its device closes; a dead holder's marker is taken over; intents are
 * plain stores where the target fences for them, and a deregistration
 * racing copies made within the call still leaves nothing written after
 * it returns.  Devices of this process: a (and c) write into b.
 */
#include "soft_xfer.h"

extern "C" {
#include "soft/soft.h"
#include "soft/soft_direct.h"
}

#include <algorithm>
#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

using namespace soft_test;

namespace {

const uint64_t KEY        = 0xd510;
const size_t TLEN         = 1u << 20;
const uint64_t FAKE_TOKEN = 0xfa4e0000f00dull;
const uint32_t ALL_REMOTE = DCX_ACCESS_LOCAL_WRITE | DCX_ACCESS_REMOTE_WRITE |
                            DCX_ACCESS_REMOTE_READ;

/* b: a target with TLEN bytes registered for remote access; writers
 * connect to it with writer(). */
struct target {
    node b;
    std::vector<uint8_t> mem = std::vector<uint8_t>(TLEN, 0);
    dcx_mr_t *mr             = nullptr;
    uint8_t addr[DCX_DEV_ADDR_MAX];
    size_t alen = sizeof(addr);

    int open(const std::string &fabric, const dcx_soft_limits_t *l)
    {
        int ret;

        if (((ret = b.open(fabric.c_str(), l)) != 0) ||
            ((ret = b.make_target(KEY, DCX_ACCESS_REMOTE_WRITE |
                                           DCX_ACCESS_REMOTE_READ)) != 0) ||
            ((ret = b.reg(mem.data(), TLEN, ALL_REMOTE, &mr)) != 0)) {
            return ret;
        }
        return dcx_dev_port_addr(b.dev, addr, &alen);
    }

    int writer(node &n, const std::string &fabric, const dcx_soft_limits_t *l)
    {
        int ret;

        if (((ret = n.open(fabric.c_str(), l)) != 0) ||
            ((ret = n.make_dci()) != 0)) {
            return ret;
        }
        return n.connect(addr, alen);
    }

    soft_direct_area_t *area() { return soft_dev(b.dev)->direct; }

    /* markers owned by token; of those, how many have an intent set */
    unsigned owned(uint64_t token, unsigned *busy = nullptr)
    {
        unsigned n = 0, k = 0;

        for (unsigned i = 0; i < SOFT_DIRECT_SLOTS; ++i) {
            soft_dslot_t *s = &area()->slots[i];
            if (__atomic_load_n(&s->owner, __ATOMIC_ACQUIRE) == token) {
                ++n;
                k += (__atomic_load_n(&s->key, __ATOMIC_ACQUIRE) != 0);
            }
        }
        if (busy != nullptr) {
            *busy = k;
        }
        return n;
    }

    /* every free marker taken by a fake writer of process pid */
    void fill(uint32_t pid, uint64_t start)
    {
        for (unsigned i = 0; i < SOFT_DIRECT_SLOTS; ++i) {
            soft_dslot_t *s = &area()->slots[i];
            uint64_t zero   = 0;
            if (__atomic_compare_exchange_n(&s->owner, &zero, FAKE_TOKEN, 0,
                                            __ATOMIC_ACQ_REL,
                                            __ATOMIC_RELAXED)) {
                s->pid   = pid;
                s->start = start;
            }
        }
    }

    /* a signalled WRITE of len bytes of src at off, through n; its status */
    int write(node &n, local_buf &src, uint64_t off, uint32_t len)
    {
        dcx_sge_t s = src.sge(0, len);
        return run_one(n, rdma_wr(n, b.dct->qp_num, KEY, DCX_WR_RDMA_WRITE, &s,
                                  (uintptr_t)mem.data() + off, mr->rkey));
    }
};

bool global_fences()
{
    long q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

    return (q > 0) && (q & MEMBARRIER_CMD_GLOBAL_EXPEDITED);
}

/* a pid no process has: a child's, reaped */
uint32_t dead_pid()
{
    pid_t pid = fork();

    if (pid == 0) {
        _exit(0);
    }
    waitpid(pid, nullptr, 0);
    return (uint32_t)pid;
}

} // namespace

class soft_markers : public soft {
protected:
    void SetUp() override
    {
        soft::SetUp();
        l = xfer_limits(true);
        ASSERT_EQ(0, t.open(fabric, &l));
        ASSERT_NE(nullptr, t.area());
        ASSERT_EQ(0, t.writer(a, fabric, &l));
        ASSERT_EQ(0, src.reg(a, 4096));
        memset(src.v.data(), 0x3c, src.v.size());
    }

    /* a's copies: the first makes the grant, the second holds a marker */
    void a_holds()
    {
        ASSERT_EQ(DCX_WC_SUCCESS, t.write(a, src, 0, 64));
        ASSERT_EQ(DCX_WC_SUCCESS, t.write(a, src, 64, 64));
        ASSERT_EQ(1u, t.owned(soft_dev(a.dev)->token));
    }

    /* A thread of a's writing 256 bytes of src within the call
     * (DCX_SEND_NOW) again and again at moving offsets of the target's len
     * bytes at base under rkey (posting what is declined), until a WRITE
     * fails (its status kept) or it is stopped.  With 'put': 32 bytes at a
     * time, inline (the common case of work within the call). */
    struct now_writer {
        volatile uint32_t done = 0, progress = 0, now_done = 0, stop = 0;
        int status = -1;
        std::thread th;

        void start(node &a, target &t, local_buf &src)
        {
            start(a, t, src, t.mem.data(), TLEN, t.mr->rkey, false);
        }

        void start(node &a, target &t, local_buf &src, uint8_t *base,
                   size_t len, uint32_t rkey, bool put)
        {
            th = std::thread([=, &a, &t, &src]() {
                uint32_t n = put ? 32 : 256;
                for (uint64_t i = 0; !__atomic_load_n(&stop, __ATOMIC_ACQUIRE);
                     ++i) {
                    dcx_sge_t s = src.sge(0, n);
                    dcx_send_wr_t wr =
                        rdma_wr(a, t.b.dct->qp_num, KEY, DCX_WR_RDMA_WRITE, &s,
                                (uintptr_t)base + (i * n) % (len - n), rkey);
                    wr.flags |= put ? DCX_SEND_INLINE : 0;
                    if (post_now(a, wr) == 0) {
                        now_done = now_done + 1;
                    } else if ((status = run_one(a, wr)) != DCX_WC_SUCCESS) {
                        break;
                    }
                    __atomic_add_fetch(&progress, 1, __ATOMIC_RELEASE);
                }
                __atomic_store_n(&done, 1, __ATOMIC_RELEASE);
            });
        }

        /* a writer never refused stops after 10 s */
        void finish()
        {
            wait_flag(&done, 1, 10.0);
            __atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
            th.join();
        }
    };

    /* a SysV segment of t's (dlen bytes at dmem, zeroed), registered for
     * remote access (dmr): a's copies go through its attachment of it */
    void alloc_target()
    {
        ASSERT_EQ(0, shm_alloc(&dlen, (void **)&dmem));
        ASSERT_EQ(0, t.b.reg(dmem, dlen, ALL_REMOTE, &dmr));
        /* the grants then know the target's liveness lock (the common
         * case of work within the call needs that) */
        double end = now_s() + 20.0;
        while (!dcx_soft_direct_alive_lock(t.b.dev)) {
            ASSERT_LT(now_s(), end) << "the target's liveness lock not held";
            usleep(100);
        }
    }

    /* n's grant towards t: made after a check of t's liveness lock, through
     * a mapping, with a marker held, its lock biased to this thread --
     * every condition of the common case of work within the call (a small
     * WRITE flagged DCX_SEND_NOW) */
    static bool common_case(node &n)
    {
        const soft_dgrant_t &g = ((soft_ah_t *)n.ah)->peer->grant;

        return (g.area != nullptr) && (g.life != 0) && (g.map != nullptr) &&
               (g.held != nullptr) &&
               (__atomic_load_n(&soft_dev(n.dev)->lock.bias,
                                __ATOMIC_RELAXED) == soft_lock_self());
    }

    /* puts of len bytes at off by n until one finds the common case ready
     * for the next (the helper thread may have taken the lock's bias back
     * meanwhile); 0 or the failing put's return */
    int put_until_common(node &n, local_buf &from, uint64_t off, uint32_t len)
    {
        for (int i = 0; i < 1000; ++i) {
            int ret = put(n, from, off, len);
            if ((ret != 0) || common_case(n)) {
                return ret;
            }
        }
        return ETIMEDOUT;
    }

    void TearDown() override
    {
        if (dmem != nullptr) {
            for (dcx_mr_t *mr : t.b.mrs) {
                dcx_mr_dereg(mr);
            }
            t.b.mrs.clear();
            EXPECT_EQ(0, shm_free(t.b.dev, dmem, dlen));
        }
        soft::TearDown();
    }

    /* len bytes of n's src into dmem + off by an inline WRITE flagged
     * DCX_SEND_NOW; the post's return */
    int put(node &n, local_buf &from, uint64_t off, uint32_t len)
    {
        dcx_sge_t s      = from.sge(0, len);
        dcx_send_wr_t wr = rdma_wr(n, t.b.dct->qp_num, KEY, DCX_WR_RDMA_WRITE,
                                   &s, (uintptr_t)dmem + off, dmr->rkey);

        wr.flags |= DCX_SEND_INLINE;
        return post_now(n, wr);
    }

    /* the same WRITE posted, signalled; its status */
    int put_posted(node &n, local_buf &from, uint64_t off, uint32_t len)
    {
        dcx_sge_t s = from.sge(0, len);
        return run_one(n, rdma_wr(n, t.b.dct->qp_num, KEY, DCX_WR_RDMA_WRITE,
                                  &s, (uintptr_t)dmem + off, dmr->rkey));
    }

    dcx_soft_limits_t l;
    target t;
    node a;
    local_buf src;
    size_t dlen   = TLEN;
    uint8_t *dmem = nullptr;
    dcx_mr_t *dmr = nullptr;
};

/* After a copy under the grant, its writer keeps the marker with no intent
 * set: the target's deregistration does not wait for it (no warning, at
 * once), and the writer's device gives it back when it closes.  The
 * target's area says whether it fences for plain intents. */
TEST_F(soft_markers, grant_holds_marker_between_copies)
{
    uint64_t token = soft_dev(a.dev)->token;
    unsigned busy  = 1;

    EXPECT_EQ(global_fences() ? 1u : 0u, t.area()->asym);
    ASSERT_NO_FATAL_FAILURE(a_holds());
    EXPECT_EQ(1u, t.owned(token, &busy));
    EXPECT_EQ(0u, busy) << "an intent left set between copies";
    EXPECT_EQ(0u, dcx_soft_direct_inflight(t.b.dev));
    for (int i = 0; i < 8; ++i) {
        ASSERT_EQ(DCX_WC_SUCCESS, t.write(a, src, 128 + 64 * i, 64));
    }
    EXPECT_EQ(1u, t.owned(token)) << "one marker per grant";
    for (size_t i = 0; i < 128 + 64 * 8; ++i) {
        ASSERT_EQ(0x3c, t.mem[i]) << "byte " << i;
    }

    log_counter lc;
    double start = now_s();
    ASSERT_EQ(0, dcx_mr_dereg(t.mr));
    t.b.mrs.erase(std::find(t.b.mrs.begin(), t.b.mrs.end(), t.mr));
    EXPECT_LT(now_s() - start, 1.0) << "the deregistration waited";
    EXPECT_EQ(0, lc.lines());
    EXPECT_EQ(1u, t.owned(token));
    a.close();
    EXPECT_EQ(0u, t.owned(token)) << "a closed device still holds a marker";
}

/* With every other marker held by a live writer, a new writer finds none
 * free: its copies go by packets, and the holder gives its marker back
 * after its next copy, which the new writer then takes. */
TEST_F(soft_markers, holders_give_back_when_short)
{
    node c;

    ASSERT_NO_FATAL_FAILURE(a_holds());
    t.fill((uint32_t)getpid(), soft_dev(t.b.dev)->direct_start);
    ASSERT_EQ(SOFT_DIRECT_SLOTS - 1, t.owned(FAKE_TOKEN));
    ASSERT_EQ(0, t.writer(c, fabric, &l));
    local_buf csrc;
    ASSERT_EQ(0, csrc.reg(c, 4096));
    memset(csrc.v.data(), 0x4d, csrc.v.size());

    uint32_t short_gen = t.area()->short_gen;
    ASSERT_EQ(DCX_WC_SUCCESS, t.write(c, csrc, 4096, 64));
    EXPECT_EQ(0u, dev_stats(c).direct_writes) << "copied with no marker";
    EXPECT_GT(dev_stats(c).tx_packets, 0u);
    EXPECT_NE(short_gen, t.area()->short_gen) << "the shortage not said";

    ASSERT_EQ(DCX_WC_SUCCESS, t.write(a, src, 8192, 64));
    EXPECT_EQ(0u, t.owned(soft_dev(a.dev)->token)) << "the holder kept it";
    ASSERT_EQ(DCX_WC_SUCCESS, t.write(c, csrc, 4096 + 64, 64));
    EXPECT_EQ(1u, dev_stats(c).direct_writes);
    for (size_t i = 4096; i < 4096 + 128; ++i) {
        ASSERT_EQ(0x4d, t.mem[i]) << "byte " << i;
    }
    EXPECT_EQ(0x3c, t.mem[8192]);
}

/* The same through the common case of work within the call, which makes
 * no call (the lock biased to the writer, the grant through a mapping, a
 * marker held): the holder's next put gives its marker back.  The shortage is said (as a
 * writer finding none free says it) right between two of a's puts, so
 * that the second is that case. */
TEST_F(soft_markers, now_holder_gives_back_when_short)
{
    uint64_t token = soft_dev(a.dev)->token;

    ASSERT_NO_FATAL_FAILURE(alloc_target());
    ASSERT_EQ(DCX_WC_SUCCESS, put_posted(a, src, 0, 32)); /* the grant */
    for (uint64_t off = 32; off < 256; off += 32) {
        ASSERT_EQ(0, put(a, src, off, 32)) << "offset " << off;
    }
    ASSERT_EQ(1u, t.owned(token));
    EXPECT_EQ(8u, dev_stats(a).direct_mapped);
    ASSERT_EQ(0, put_until_common(a, src, 256, 32));
    __atomic_fetch_add(&t.area()->short_gen, 1, __ATOMIC_RELAXED);
    ASSERT_EQ(0, put(a, src, 288, 32));
    EXPECT_EQ(0u, t.owned(token)) << "the holder kept it";
    for (size_t i = 0; i < 4096; ++i) {
        ASSERT_EQ((i < 320) ? 0x3c : 0, dmem[i]) << "byte " << i;
    }
}

/* An inline WRITE within the call is no post: a writer whose DCI takes 16
 * bytes inline has puts of 17, 24 and 32 bytes done by the common case and
 * one of 100 by the full path, each within the call, with exactly their
 * bytes written. */
TEST_F(soft_markers, inline_now_past_max_inline)
{
    const struct {
        uint32_t off, len;
    } puts[] = {{64, 17}, {128, 24}, {192, 32}, {256, 100}};
    node d;

    ASSERT_NO_FATAL_FAILURE(alloc_target());
    ASSERT_EQ(0, d.open(fabric.c_str(), &l));
    ASSERT_EQ(0, d.make_dci(128, 16));
    ASSERT_EQ(0, d.connect(t.addr, t.alen));
    local_buf dsrc;
    ASSERT_EQ(0, dsrc.reg(d, 4096));
    memset(dsrc.v.data(), 0x3c, dsrc.v.size());
    ASSERT_EQ(DCX_WC_SUCCESS, put_posted(d, dsrc, 0, 16)); /* the grant */
    ASSERT_EQ(0, put(d, dsrc, 16, 16));                    /* holds */
    ASSERT_EQ(0, put_until_common(d, dsrc, 32, 16));
    for (auto &p : puts) {
        EXPECT_EQ(0, put(d, dsrc, p.off, p.len)) << p.len << " bytes";
    }
    for (size_t i = 0; i < 4096; ++i) {
        bool w = (i < 48);
        for (auto &p : puts) {
            w |= (i >= p.off) && (i < p.off + p.len);
        }
        ASSERT_EQ(w ? 0x3c : 0, dmem[i]) << "byte " << i;
    }
}

/* A holder that died between copies (its intent not set, so the target's
 * deregistration never looks at it) leaves its marker owned: a writer that
 * finds no free one takes that one over and copies directly. */
TEST_F(soft_markers, dead_holder_marker_taken_over)
{
    node c;

    t.fill(dead_pid(), 1);
    ASSERT_EQ(SOFT_DIRECT_SLOTS, t.owned(FAKE_TOKEN));
    ASSERT_EQ(0, t.writer(c, fabric, &l));
    local_buf csrc;
    ASSERT_EQ(0, csrc.reg(c, 4096));
    memset(csrc.v.data(), 0x4d, csrc.v.size());
    ASSERT_EQ(DCX_WC_SUCCESS, t.write(c, csrc, 0, 64));
    ASSERT_EQ(DCX_WC_SUCCESS, t.write(c, csrc, 64, 64));
    EXPECT_EQ(2u, dev_stats(c).direct_writes);
    EXPECT_EQ(SOFT_DIRECT_SLOTS - 1, t.owned(FAKE_TOKEN));
    EXPECT_EQ(1u, t.owned(soft_dev(c.dev)->token));
    EXPECT_EQ(0x4d, t.mem[127]);
}

/* A thread writing within the call (DCX_SEND_NOW: the lock's bias, the
 * held marker, plain intents) races the target's deregistration: once
 * mr_dereg returned nothing more is written, and the writer's next WRITE
 * is declined and then fails as a posted one. */
TEST_F(soft_markers, dereg_races_writes_within_the_call)
{
    for (int round = 0; round < 5; ++round) {
        now_writer w;

        std::fill(t.mem.begin(), t.mem.end(), 0);
        w.start(a, t, src);
        ASSERT_TRUE(wait_at_least(&w.progress, 2000, 60.0));
        ASSERT_EQ(0, dcx_mr_dereg(t.mr));
        t.b.mrs.erase(std::find(t.b.mrs.begin(), t.b.mrs.end(), t.mr));
        std::fill(t.mem.begin(), t.mem.end(), 0);
        w.finish();
        for (size_t i = 0; i < TLEN; ++i) {
            ASSERT_EQ(0, t.mem[i]) << "round " << round << ": byte " << i
                                   << " written after mr_dereg returned";
        }
        EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, w.status);
        EXPECT_GT(w.now_done, 1000u) << "few copies within the call";
        ASSERT_EQ(0, renew_dci(a));
        ASSERT_EQ(0, t.b.reg(t.mem.data(), TLEN, ALL_REMOTE, &t.mr));
    }
}

/* The same race with puts through the common case of work within the
 * call (an attachment of the target's SysV segment, no call): nothing is
 * written after mr_dereg returned. */
TEST_F(soft_markers, dereg_races_puts_within_the_call)
{
    ASSERT_NO_FATAL_FAILURE(alloc_target());
    for (int round = 0; round < 5; ++round) {
        now_writer w;

        memset(dmem, 0, dlen);
        w.start(a, t, src, dmem, dlen, dmr->rkey, true);
        ASSERT_TRUE(wait_at_least(&w.progress, 2000, 60.0));
        ASSERT_EQ(0, dcx_mr_dereg(dmr));
        t.b.mrs.erase(std::find(t.b.mrs.begin(), t.b.mrs.end(), dmr));
        memset(dmem, 0, dlen);
        w.finish();
        for (size_t i = 0; i < dlen; ++i) {
            ASSERT_EQ(0, dmem[i]) << "round " << round << ": byte " << i
                                  << " written after mr_dereg returned";
        }
        EXPECT_EQ(DCX_WC_REM_ACCESS_ERR, w.status);
        EXPECT_GT(w.now_done, 1000u) << "few puts within the call";
        ASSERT_EQ(0, renew_dci(a));
        ASSERT_EQ(0, t.b.reg(dmem, dlen, ALL_REMOTE, &dmr));
    }
}

/* The same race on the writer's own side: the unmap hook invalidates the
 * source region while a thread writes from it within the call (its mark
 * of the copy a plain store, the hook's fence the heavy one).  Once the
 * hook returned nothing is read from the region: bytes written into it
 * afterwards never reach the target, and the writer's next WRITE fails. */
TEST_F(soft_markers, unmap_races_writes_within_the_call)
{
    const uint8_t LATE = 0xee;
    now_writer w;

    w.start(a, t, src);
    ASSERT_TRUE(wait_at_least(&w.progress, 2000, 60.0));
    dcx_dev_mem_unmapped(a.dev, src.v.data(), src.v.size());
    memset(src.v.data(), LATE, src.v.size());
    w.finish();
    for (size_t i = 0; i < TLEN; ++i) {
        ASSERT_NE(LATE, t.mem[i])
            << "byte " << i << " read after the unmap hook returned";
    }
    EXPECT_EQ(DCX_WC_LOC_PROT_ERR, w.status);
}

/* A target whose global barrier fails in its deregistration wait asks
 * writers for locked intents again (its area's asym cleared): a grant made
 * while it fenced for plain intents is not taken again as it was, but
 * remade, with locked intents.  In a child process, whose membarrier(2)
 * fails once the target's devices are open (seccomp). */
TEST_F(soft_markers, grant_follows_plain_intents_withdrawn)
{
    if (!global_fences() || !t.area()->asym || !soft_dev(a.dev)->plain_intent) {
        GTEST_SKIP() << "no plain intents here";
    }
    std::string fab       = fabric;
    dcx_soft_limits_t lim = l;
    pid_t pid             = spawn([fab, lim]() -> int {
        target t2;
        node a2;
        local_buf s2;
        dcx_soft_stats_t before, after;
        dcx_mr_t *other;

        if ((t2.open(fab, &lim) != 0) || (t2.writer(a2, fab, &lim) != 0) ||
            (s2.reg(a2, 4096) != 0) ||
            (t2.b.reg(t2.mem.data(), 4096, ALL_REMOTE, &other) != 0) ||
            (t2.write(a2, s2, 0, 64) != DCX_WC_SUCCESS) ||
            (t2.write(a2, s2, 64, 64) != DCX_WC_SUCCESS)) {
            return 10;
        }
        /* a2's one peer with a grant: t2's port (its area as a2 maps it) */
        soft_peer_t *p = soft_dev(a2.dev)->peers;
        while ((p != nullptr) && (p->grant.area == nullptr)) {
            p = p->next;
        }
        if ((p == nullptr) || !p->grant.plain) {
            return 11; /* no grant with plain intents to begin with */
        }
        if (!refuse_syscalls({__NR_membarrier}, EPERM)) {
            return 12;
        }
        /* the deregistration's wait: its barrier fails, asym cleared */
        if ((dcx_mr_dereg(other) != 0) || t2.area()->asym) {
            return 13;
        }
        t2.b.mrs.erase(std::find(t2.b.mrs.begin(), t2.b.mrs.end(), other));
        dcx_soft_stats(a2.dev, &before);
        if (t2.write(a2, s2, 128, 64) != DCX_WC_SUCCESS) {
            return 14;
        }
        dcx_soft_stats(a2.dev, &after);
        if (after.direct_grants != before.direct_grants + 1) {
            fprintf(stderr, "the grant was taken again, not remade\n");
            return 15;
        }
        if ((p->grant.area == nullptr) || p->grant.plain) {
            fprintf(stderr, "the grant still sets plain intents\n");
            return 16;
        }
        return 0;
    });
    ASSERT_GT(pid, 0);
    int st = -1;
    ASSERT_EQ(pid, waitpid(pid, &st, 0));
    children.erase(std::find(children.begin(), children.end(), pid));
    EXPECT_TRUE(WIFEXITED(st));
    EXPECT_EQ(0, WEXITSTATUS(st));
}
