/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the device engine of raw queues (emu_raw.h).
 *
 * A ConnectX learns of new send WQEs when software writes the UAR page
 * (a doorbell, or a BlueFlame copy of the WQE) after updating the doorbell
 * record.  Here a context's UAR page is ordinary memory mapped read-only,
 * so that every store to it faults.  The SIGSEGV handler serves the
 * doorbell in the faulting thread (emu_raw_serve_here): one engine pass
 * takes what the doorbell records announce, and the store is stepped over
 * (emu_raw_store.c), the page still a trap for the next one.  A NIC
 * starts on a doorbell at once, on its own silicon; a thread woken per
 * doorbell instead waits for a CPU, which on a machine whose application
 * threads busy-poll every core comes at the scheduler's tick.  Where the
 * store is not one it can step over, the handler makes the page writable,
 * wakes the engine thread and returns, so that the store completes; the
 * engine takes every WQE the records announce, and before it sleeps makes
 * the pages read-only again and looks at the records once more (a store
 * made while a page was writable had its record written first, so the
 * look finds it).  A BlueFlame copy is several stores; those after the
 * first are stepped over with it where the handler decodes their
 * addresses, so that a copy costs one trap.  A fault not on a UAR page
 * goes to the handler installed before ours.
 *
 * The engine thread sleeps on an epoll set over an eventfd (doorbells,
 * and the soft SRQs' watches: a message that found no receive) and the
 * soft completion channels of the devices' raw CQs (armed before it
 * sleeps: a completion wakes it; while doorbells are served in their
 * threads, only those of devices that hear from other processes, and a
 * look every millisecond stands in for the rest).  It never spins: with
 * nothing to do it sleeps until one of those says there is.  One engine
 * serves every raw object of the process, under emu_raw_lock.
 *
 * A child made by fork() has no engine thread: it starts its own at its
 * first raw object, with fds of its own, and leaves the parent's queues
 * (copies in its memory, which the parent's engine never sees) alone.
 */
#include "emu/emu_raw.h"
#include "soft/dcx_soft.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#define EMU_RAW_MAX_UARS 1024
#define EMU_RAW_LOOK_NS  20000 /* between looks while requests are out */
/* between looks while doorbells are served in their threads */
#define EMU_RAW_HOT_NS 1000000
/* passes a doorbell served in its thread runs at most, while they find
 * work (a bound: other threads may keep a pass busy) */
#define EMU_RAW_HERE_PASSES 2
/* stores to the page after the trapped one stepped over at most (a
 * BlueFlame copy of 256 bytes in 16-byte stores is 16) */
#define EMU_RAW_RUN_MAX 16

/* error-checking: a doorbell served in its thread (emu_raw_serve_here)
 * learns that the thread already holds it, where a plain mutex would
 * deadlock */
pthread_mutex_t emu_raw_lock = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;

static struct {
    bool started;
    pthread_t thread;
    int efd;  /* doorbells and watches */
    int epfd; /* efd and the raw CQ channels */
    struct emu_raw_sq *sqs;
    struct emu_raw_rq *rqs;
    struct emu_raw_cq *cqs;
    /* the UAR pages, read by the signal handler without a lock: a slot is
     * written before the count that covers it */
    uint8_t *uars[EMU_RAW_MAX_UARS];
    volatile int uar_open[EMU_RAW_MAX_UARS];
    unsigned num_uars;
    /* a context holds the page (emu_raw_lock): a page a closed context
     * gave back stays mapped, a trap page still, for the next context */
    bool uar_held[EMU_RAW_MAX_UARS];
    struct sigaction old_segv;
    bool segv_taken; /* our handler installed (a forked child inherits it) */
    /* the devices' channels in the epoll set: an event the engine got
     * before it took the lock may name one destroyed since */
    dcx_comp_channel_t *chans[EMU_MAX_DEVICES];
    /* the engine sleeps until woken, not for a look of EMU_RAW_LOOK_NS
     * (emu_raw_lock) */
    bool sleeps_long;
    /* doorbells served in the threads that rang them, and their count
     * when the engine last went to sleep (emu_raw_lock) */
    unsigned long served_here;
    unsigned long served_seen;
} emu_raw;

static unsigned emu_raw_pass(void);
static bool emu_raw_waiting(void);
static void emu_raw_arm(bool remote_only);

/* ch is a channel of the epoll set (emu_raw_lock held) */
static bool emu_raw_chan_live(const dcx_comp_channel_t *ch)
{
    unsigned i;

    for (i = 0; i < EMU_MAX_DEVICES; ++i) {
        if (emu_raw.chans[i] == ch) {
            return true;
        }
    }
    return false;
}

static void emu_raw_chan_set(dcx_comp_channel_t *old, dcx_comp_channel_t *ch)
{
    unsigned i;

    for (i = 0; i < EMU_MAX_DEVICES; ++i) {
        if (emu_raw.chans[i] == old) {
            emu_raw.chans[i] = ch;
            return;
        }
    }
}

static void emu_raw_wake(void)
{
    uint64_t one = 1;

    /* nothing to do about a failure: the counter cannot overflow here */
    (void)!write(emu_raw.efd, &one, sizeof(one));
}

/* Whether a doorbell record announces what the engine has not taken: a
 * send queue's WQEs, or a CQ's arm (emu_raw_lock held) */
static bool emu_raw_rung(void)
{
    struct emu_raw_sq *sq;
    struct emu_raw_cq *cq;

    for (sq = emu_raw.sqs; sq != NULL; sq = sq->next) {
        if ((uint16_t)be32toh(sq->dbrec[MLX5_SND_DBR]) != sq->ci) {
            return true;
        }
    }
    for (cq = emu_raw.cqs; cq != NULL; cq = cq->next) {
        if (be32toh(cq->dbrec[EMU_RAW_CQ_ARM]) != cq->arm_seen) {
            return true;
        }
    }
    return false;
}

/* A doorbell served in the thread that rang it (the signal handler's
 * frame uc, a store to page): when the store is one this can step over
 * (emu_raw_store.h), passes under the engine's lock take what the
 * doorbell records announce, and the store is skipped with the stores to
 * the page that follow it at once (the rest of a BlueFlame copy, each of
 * which would trap otherwise), the page still a trap.  The fault is
 * synchronous: the thread was at a store in application code, so it
 * holds none of the emulation's locks, and the lock's holder (the
 * engine, or another thread) lets it go without waiting for this one; a
 * thread that made the store while holding it learns so from the
 * error-checking lock.  A store that finds no record announcing anything
 * new (a copy's store past the decoded run) is only stepped over.  Where
 * the engine thread sleeps, the CQs are armed again after the passes,
 * and it is woken only when it sleeps without looking and the passes
 * left requests in flight.  false: nothing done. */
static bool emu_raw_serve_here(ucontext_t *uc, const uint8_t *page)
{
#if defined(__x86_64__)
    const uint8_t *ip = (const uint8_t *)uc->uc_mcontext.gregs[REG_RIP];
    struct emu_store st;
    bool kick = false;
    unsigned i;

    if (!emu_raw_store_decode(ip, NULL, &st) || !emu_raw.started ||
        (pthread_mutex_lock(&emu_raw_lock) != 0)) {
        return false;
    }
    /* a store finding nothing new (a later store of a BlueFlame copy
     * whose doorbell was served) is only stepped over */
    if (emu_raw_rung()) {
        ++emu_raw.served_here;
        /* again while a pass finds work: what one queue's work made for
         * another of the process (an answer to a request just sent) is
         * taken now, not when the engine thread gets a CPU */
        for (i = 0; (i < EMU_RAW_HERE_PASSES) && (emu_raw_pass() != 0); ++i) {
        }
        if (emu_raw.sleeps_long) {
            /* the passes polled the soft CQs, which tells the soft
             * devices that their application is awake: armed again, as
             * the engine left them, so that what other processes send
             * wakes the engine (which otherwise looks within
             * EMU_RAW_LOOK_NS anyway) */
            emu_raw_arm(true);
            kick = emu_raw_waiting();
        }
    }
    pthread_mutex_unlock(&emu_raw_lock);
    if (kick) {
        emu_raw_wake();
    }
    /* the rest of a BlueFlame copy: the stores to the page that follow
     * at once, stepped over with this one (none writes a register) */
    for (i = 0; i < EMU_RAW_RUN_MAX; ++i) {
        ip += st.len;
        if (!emu_raw_store_decode(ip, uc, &st) || !st.has_addr ||
            ((st.addr & ~(uint64_t)(EMU_RAW_PAGE - 1)) != (uintptr_t)page) ||
            ((st.addr & (EMU_RAW_PAGE - 1)) > EMU_RAW_PAGE - 64)) {
            break;
        }
    }
    uc->uc_mcontext.gregs[REG_RIP] = (greg_t)(uintptr_t)ip;
    return true;
#else
    (void)uc; /* stores are decoded for x86-64 only */
    (void)page;
    return false;
#endif
}

/* A store to a UAR page: served here, or the page made writable (the
 * store then completes) and the engine woken */
static void emu_raw_segv(int sig, siginfo_t *si, void *uc)
{
    uint8_t *page = (uint8_t *)((uintptr_t)si->si_addr & ~(uintptr_t)4095);
    unsigned i, n = __atomic_load_n(&emu_raw.num_uars, __ATOMIC_ACQUIRE);
    int saved_errno;

    for (i = 0; i < n; ++i) {
        if (emu_raw.uars[i] == page) {
            /* the interrupted code may be about to read errno */
            saved_errno = errno;
            if (!emu_raw_serve_here(uc, page)) {
                mprotect(page, EMU_RAW_PAGE, PROT_READ | PROT_WRITE);
                emu_raw.uar_open[i] = 1;
                emu_raw_wake();
            }
            errno = saved_errno;
            return;
        }
    }
    if (emu_raw.old_segv.sa_flags & SA_SIGINFO) {
        emu_raw.old_segv.sa_sigaction(sig, si, uc);
    } else if ((emu_raw.old_segv.sa_handler == SIG_DFL) ||
               (emu_raw.old_segv.sa_handler == SIG_IGN)) {
        signal(sig, SIG_DFL); /* the store faults again, as it would have */
    } else {
        emu_raw.old_segv.sa_handler(sig);
    }
}

/* Makes the open UAR pages read-only again; 1 if one was open */
static int emu_raw_close_uars(void)
{
    unsigned i;
    int any = 0;

    for (i = 0; i < emu_raw.num_uars; ++i) {
        if (emu_raw.uar_open[i]) {
            emu_raw.uar_open[i] = 0;
            mprotect(emu_raw.uars[i], EMU_RAW_PAGE, PROT_READ);
            any = 1;
        }
    }
    return any;
}

/* One look at everything, each queue through the pass its maker set
 * (emu_raw_sq.c, emu_raw_rq.c, emu_raw_cq.c); how much was done
 * (emu_raw_lock held) */
static unsigned emu_raw_pass(void)
{
    struct emu_raw_sq *sq;
    struct emu_raw_rq *rq;
    struct emu_raw_cq *cq;
    unsigned n = 0;

    for (rq = emu_raw.rqs; rq != NULL; rq = rq->next) {
        n += rq->run(rq);
    }
    for (sq = emu_raw.sqs; sq != NULL; sq = sq->next) {
        n += sq->run(sq->qp);
    }
    for (cq = emu_raw.cqs; cq != NULL; cq = cq->next) {
        n += cq->run(cq->cq);
    }
    return n;
}

/* Every raw CQ's soft CQ armed on its device's channel (a completion, or
 * one held now, wakes the engine): before the engine sleeps with no
 * doorbell served in a thread since it last slept, all of them
 * (remote_only false).  Otherwise (after passes run in a doorbell's
 * thread, or before the engine sleeps while doorbells are served so),
 * only those whose soft devices have exchanged packets with other
 * processes (remote_only): a device that talks only within this process
 * gets packets only from its doorbells, whose passes serve them, and
 * arming it would have each of them wake the engine for nothing. */
static void emu_raw_arm(bool remote_only)
{
    struct emu_raw_cq *cq;

    for (cq = emu_raw.cqs; cq != NULL; cq = cq->next) {
        if (!remote_only ||
            dcx_soft_dev_remote_peers(emu_ctx(cq->cq->cq.context)->dev->soft)) {
            dcx_cq_req_notify(cq->cq->soft);
        }
    }
}

/* The events of the channels that woke us, collected (their CQs are
 * drained by the next pass anyway) */
static void emu_raw_collect(struct epoll_event *ev, int n)
{
    dcx_comp_channel_t *ch;
    uint64_t count;
    dcx_cq_t *cq;
    int i;

    for (i = 0; i < n; ++i) {
        if (ev[i].data.ptr == NULL) {
            (void)!read(emu_raw.efd, &count, sizeof(count));
            continue;
        }
        ch = ev[i].data.ptr;
        if (!emu_raw_chan_live(ch)) {
            continue; /* its device closed meanwhile */
        }
        while (dcx_comp_channel_get_event(ch, &cq) == 0) {
            /* collected (and acknowledged): the pass drains its CQ */
        }
    }
}

/* Whether a send queue waits for a completion the soft device gives
 * when polled (its requests are in flight), or for room in its soft
 * queue, or a device of a raw CQ has device rendezvous under way (their
 * READs and FINs move while the device is polled) */
static bool emu_raw_waiting(void)
{
    struct emu_raw_cq *cq;
    struct emu_raw_sq *sq;

    for (cq = emu_raw.cqs; cq != NULL; cq = cq->next) {
        if (dcx_soft_dev_rndv_live(emu_ctx(cq->cq->cq.context)->dev->soft)) {
            return true;
        }
    }

    for (sq = emu_raw.sqs; sq != NULL; sq = sq->next) {
        if ((sq->waiting || sq->blocked) &&
            (sq->qp->soft->state != DCX_QPS_ERR)) {
            return true;
        }
    }
    return false;
}

/* epoll_pwait2 where the kernel (5.11 on) has it; elsewhere (and under
 * valgrind) epoll_wait, whose timeout is in milliseconds */
static int emu_raw_sleep(struct epoll_event *ev, const struct timespec *look)
{
    static bool no_pwait2;
    int n;

    if (!no_pwait2) {
        n = epoll_pwait2(emu_raw.epfd, ev, 8, look, NULL);
        if ((n >= 0) || (errno != ENOSYS)) {
            return n;
        }
        no_pwait2 = true;
    }
    return epoll_wait(emu_raw.epfd, ev, 8, (look != NULL) ? 1 : -1);
}

static void *emu_raw_thread(void *arg)
{
    const struct timespec look     = {0, EMU_RAW_LOOK_NS};
    const struct timespec hot_look = {0, EMU_RAW_HOT_NS};
    struct epoll_event ev[8];
    bool waiting, hot;
    int n;

    (void)arg;
    pthread_mutex_lock(&emu_raw_lock);
    for (;;) {
        if (emu_raw_pass() != 0) {
            continue;
        }

        /* doorbells from here on fault again; one that came before is
         * in its record, which the pass below finds */
        if (emu_raw_close_uars() && (emu_raw_pass() != 0)) {
            continue;
        }
        /* while doorbells are served in the threads that ring them,
         * whose passes serve what devices within the process send each
         * other, only devices that hear from other processes are armed:
         * arming the others would have nearly every packet wake the
         * engine for nothing, on a core the application wants.  What
         * else comes to those (a retry timer's completion, a QP's
         * flush) is found by a look every EMU_RAW_HOT_NS meanwhile, and
         * once no doorbell came for a look they are armed again. */
        hot                 = (emu_raw.served_here != emu_raw.served_seen);
        emu_raw.served_seen = emu_raw.served_here;
        emu_raw_arm(hot);
        /* with requests in flight, a look every EMU_RAW_LOOK_NS: their
         * acknowledgement may come without a wake-up (the soft device
         * completes them when polled); with none, until woken */
        waiting             = emu_raw_waiting();
        emu_raw.sleeps_long = !waiting;
        pthread_mutex_unlock(&emu_raw_lock);
        n = emu_raw_sleep(ev, waiting ? &look : hot ? &hot_look : NULL);
        pthread_mutex_lock(&emu_raw_lock);
        emu_raw.sleeps_long = false;
        if (n > 0) {
            emu_raw_collect(ev, n);
        } else if ((n < 0) && (errno != EINTR)) {
            emu_error("raw queues: epoll_wait failed: %s; the engine stops",
                      strerror(errno));
            break;
        }
    }
    pthread_mutex_unlock(&emu_raw_lock);
    return NULL;
}

void emu_raw_fork_prepare(void)
{
    pthread_mutex_lock(&emu_raw_lock);
}

void emu_raw_fork_parent(void)
{
    pthread_mutex_unlock(&emu_raw_lock);
}

void emu_raw_fork_child(void)
{
    pthread_mutexattr_t attr;
    unsigned i;

    if (emu_raw.started) {
        /* the parent's eventfd and epoll set stay the parent's */
        close(emu_raw.efd);
        close(emu_raw.epfd);
    }
    memset(emu_raw.chans, 0, sizeof(emu_raw.chans));
    emu_raw.started = false;
    emu_raw.sqs     = NULL;
    emu_raw.rqs     = NULL;
    emu_raw.cqs     = NULL;
    for (i = 0; i < emu_raw.num_uars; ++i) {
        /* a trap page again, whatever the parent's engine had left open */
        mprotect(emu_raw.uars[i], EMU_RAW_PAGE, PROT_READ);
        emu_raw.uar_held[i] = false;
        emu_raw.uar_open[i] = 0;
    }
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&emu_raw_lock, &attr);
    pthread_mutexattr_destroy(&attr);
}

/* The engine, started at the first raw object (emu_raw_lock held) */
static int emu_raw_start(void)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
    struct sigaction sa;
    sigset_t all, old;
    int ret;

    if (emu_raw.started) {
        return 0;
    }
    emu_raw.efd  = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    emu_raw.epfd = epoll_create1(EPOLL_CLOEXEC);
    if ((emu_raw.efd < 0) || (emu_raw.epfd < 0) ||
        (epoll_ctl(emu_raw.epfd, EPOLL_CTL_ADD, emu_raw.efd, &ev) != 0)) {
        ret = errno;
        emu_error("raw queues: cannot make the engine's fds: %s",
                  strerror(ret));
        return ret;
    }
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = emu_raw_segv;
    sa.sa_flags     = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (!emu_raw.segv_taken &&
        (sigaction(SIGSEGV, &sa, &emu_raw.old_segv) != 0)) {
        ret = errno;
        emu_error("raw queues: cannot take SIGSEGV for doorbells: %s",
                  strerror(ret));
        return ret;
    }
    emu_raw.segv_taken = true;
    /* the engine takes no signal of the application's; a fault of its own
     * goes to the process's handlers (blocked, the kernel would kill the
     * process without one word) */
    sigfillset(&all);
    sigdelset(&all, SIGSEGV);
    sigdelset(&all, SIGBUS);
    sigdelset(&all, SIGFPE);
    sigdelset(&all, SIGILL);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    ret = pthread_create(&emu_raw.thread, NULL, emu_raw_thread, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (ret != 0) {
        emu_error("raw queues: cannot start the engine thread: %s",
                  strerror(ret));
        return ret;
    }
    pthread_detach(emu_raw.thread);
    emu_raw.started = true;
    return 0;
}

int emu_raw_wake_fd(void)
{
    return emu_raw.efd;
}

void emu_raw_kick(void)
{
    if (emu_raw.started) {
        emu_raw_wake();
    }
}

uint8_t *emu_raw_uar(emu_ctx_t *ctx)
{
    uint8_t *page;
    unsigned i;

    if (ctx->uar != NULL) {
        return ctx->uar;
    }
    for (i = 0; i < emu_raw.num_uars; ++i) {
        if (!emu_raw.uar_held[i]) {
            emu_raw.uar_held[i] = true;
            ctx->uar            = emu_raw.uars[i];
            return ctx->uar;
        }
    }
    if (emu_raw.num_uars == EMU_RAW_MAX_UARS) {
        emu_error("%s: raw queues: %u UAR pages in use, no more",
                  ctx->dev->ibdev.name, EMU_RAW_MAX_UARS);
        errno = ENOMEM;
        return NULL;
    }
    page = mmap(NULL, EMU_RAW_PAGE, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                0);
    if (page == MAP_FAILED) {
        emu_error("%s: raw queues: cannot map a UAR page: %s",
                  ctx->dev->ibdev.name, strerror(errno));
        return NULL;
    }
    emu_raw.uars[emu_raw.num_uars]     = page;
    emu_raw.uar_held[emu_raw.num_uars] = true;
    __atomic_store_n(&emu_raw.num_uars, emu_raw.num_uars + 1, __ATOMIC_RELEASE);
    ctx->uar = page;
    return page;
}

void emu_raw_uar_put(emu_ctx_t *ctx)
{
    unsigned i;

    pthread_mutex_lock(&emu_raw_lock);
    for (i = 0; (ctx->uar != NULL) && (i < emu_raw.num_uars); ++i) {
        if (emu_raw.uars[i] == ctx->uar) {
            emu_raw.uar_held[i] = false;
        }
    }
    ctx->uar = NULL;
    pthread_mutex_unlock(&emu_raw_lock);
}

/* The soft device's look before it serves an inbound packet: whether a
 * command QP of the device has list operations rung and not run.  A
 * ConnectX runs them within microseconds of the doorbell, long before a
 * message a peer sends once the application told it the receive was
 * posted can come back; the engine thread here may not have run yet, and
 * the message would find the list without the receive.  Under the soft
 * device's engine lock: reads the records and the QPs' consumer indexes
 * only. */
static int emu_raw_cmd_hold(void *arg)
{
    emu_dev_t *dev = arg;
    struct emu_raw_sq *sq;
    int hold = 0;

    if (__atomic_load_n(&dev->num_cmds, __ATOMIC_ACQUIRE) == 0) {
        return 0;
    }
    pthread_mutex_lock(&dev->cmd_lock);
    for (sq = dev->cmds; (sq != NULL) && !hold; sq = sq->next_cmd) {
        hold = (sq->qp->soft->state == DCX_QPS_RTS) &&
               ((uint16_t)be32toh(sq->dbrec[MLX5_SND_DBR]) !=
                __atomic_load_n(&sq->ci, __ATOMIC_RELAXED));
    }
    pthread_mutex_unlock(&dev->cmd_lock);
    return hold;
}

/* A QP whose receives are an XRQ's: its send queue takes the list
 * operations (emu_raw_lock held) */
static bool emu_raw_is_cmd(const emu_qp_t *qp)
{
    return (qp->srq != NULL) && (qp->srq->xrq != NULL);
}

static int emu_raw_add_cmd(emu_qp_t *qp)
{
    emu_dev_t *dev = qp->ctx->dev;
    int ret;

    /* the same hold for every command QP of the device: setting it again
     * is one taking of the engine lock, at a QP's creation */
    ret = dcx_soft_dev_set_rx_hold(dev->soft, emu_raw_cmd_hold, dev);
    if (ret != 0) {
        return ret;
    }
    pthread_mutex_lock(&dev->cmd_lock);
    qp->raw_sq->next_cmd = dev->cmds;
    dev->cmds            = qp->raw_sq;
    __atomic_add_fetch(&dev->num_cmds, 1, __ATOMIC_RELEASE);
    pthread_mutex_unlock(&dev->cmd_lock);
    return 0;
}

int emu_raw_add_sq(emu_qp_t *qp)
{
    int ret = emu_raw_start();

    qp->raw_sq->qp = qp;
    if ((ret == 0) && emu_raw_is_cmd(qp)) {
        ret = emu_raw_add_cmd(qp);
    }
    if (ret == 0) {
        qp->raw_sq->next = emu_raw.sqs;
        emu_raw.sqs      = qp->raw_sq;
        emu_raw_wake();
    }
    return ret;
}

int emu_raw_add_rq(emu_srq_t *srq)
{
    int ret = emu_raw_start();

    if (ret == 0) {
        ret = dcx_soft_srq_watch(srq->soft, emu_raw.efd);
    }
    if (ret == 0) {
        srq->raw->srq  = srq;
        srq->raw->next = emu_raw.rqs;
        emu_raw.rqs    = srq->raw;
        emu_raw_wake();
    }
    return ret;
}

int emu_raw_add_cq(emu_cq_t *cq)
{
    emu_dev_t *dev = emu_ctx(cq->cq.context)->dev;
    struct epoll_event ev;
    int ret = emu_raw_start();

    if ((ret == 0) && (dev->raw_ch == NULL)) {
        ret = dcx_comp_channel_create(dev->soft, &dev->raw_ch);
        if (ret == 0) {
            ev.events   = EPOLLIN;
            ev.data.ptr = dev->raw_ch;
            if (epoll_ctl(emu_raw.epfd, EPOLL_CTL_ADD, dev->raw_ch->fd, &ev) !=
                0) {
                ret = errno;
            } else {
                emu_raw_chan_set(NULL, dev->raw_ch);
            }
        }
    }
    if (ret == 0) {
        /* its notifications are the engine's from now on; the
         * application's arms are forwarded (emu_raw_cq.c) */
        ret = dcx_soft_cq_move_channel(cq->soft, dev->raw_ch);
    }
    if (ret != 0) {
        emu_error("%s: raw CQ: the engine cannot watch it (%s)",
                  dev->ibdev.name, strerror(ret));
        return ret;
    }
    cq->raw->cq   = cq;
    cq->raw->next = emu_raw.cqs;
    emu_raw.cqs   = cq->raw;
    emu_raw_wake();
    return 0;
}

void emu_raw_dev_close(emu_dev_t *dev)
{
    if (dev->raw_ch == NULL) {
        return;
    }
    pthread_mutex_lock(&emu_raw_lock);
    epoll_ctl(emu_raw.epfd, EPOLL_CTL_DEL, dev->raw_ch->fd, NULL);
    emu_raw_chan_set(dev->raw_ch, NULL);
    if (dcx_comp_channel_destroy(dev->raw_ch) != 0) {
        emu_warn("%s: raw queues: the engine's channel still has CQs",
                 dev->ibdev.name);
    }
    dev->raw_ch = NULL;
    pthread_mutex_unlock(&emu_raw_lock);
}

#define EMU_RAW_UNLINK(_head, _obj)                               \
    do {                                                          \
        __typeof__(_obj) *pp_;                                    \
        for (pp_ = &(_head); *pp_ != NULL; pp_ = &(*pp_)->next) { \
            if (*pp_ == (_obj)) {                                 \
                *pp_ = (_obj)->next;                              \
                break;                                            \
            }                                                     \
        }                                                         \
    } while (0)

void emu_raw_del_sq(emu_qp_t *qp)
{
    emu_dev_t *dev = qp->ctx->dev;
    struct emu_raw_sq **pp;

    EMU_RAW_UNLINK(emu_raw.sqs, qp->raw_sq);
    pthread_mutex_lock(&dev->cmd_lock);
    for (pp = &dev->cmds; *pp != NULL; pp = &(*pp)->next_cmd) {
        if (*pp == qp->raw_sq) {
            *pp = qp->raw_sq->next_cmd;
            __atomic_sub_fetch(&dev->num_cmds, 1, __ATOMIC_RELEASE);
            break;
        }
    }
    pthread_mutex_unlock(&dev->cmd_lock);
}

void emu_raw_del_rq(emu_srq_t *srq)
{
    dcx_soft_srq_watch(srq->soft, -1);
    EMU_RAW_UNLINK(emu_raw.rqs, srq->raw);
}

void emu_raw_del_cq(emu_cq_t *cq)
{
    EMU_RAW_UNLINK(emu_raw.cqs, cq->raw);
}
