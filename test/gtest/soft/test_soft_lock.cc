/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine lock's bias (soft_lock.h, soft_lock.c): the thread it is
 * biased to takes it with no locked instruction, and every other taker
 * still excludes it -- the helper by waiting it out, another application
 * thread too, until it has taken the lock often enough to end the bias.
 */
#include "soft_fixture.h"

extern "C" {
#include "soft/soft.h"
}

#include <linux/membarrier.h>
#include <sys/syscall.h>
#include <thread>
#include <unistd.h>

using namespace soft_test;

namespace {

/* A lock biased to the calling thread, as a biasing operation leaves it;
 * false where the process cannot register for the fence (no bias then). */
bool bias_here(soft_lock_t *l)
{
    soft_lock_init(l);
    soft_lock(l);
    soft_lock_bias(l);
    soft_unlock(l);
    return __atomic_load_n(&l->bias, __ATOMIC_RELAXED) == soft_lock_self();
}

bool fences_available()
{
    long q = syscall(__NR_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

    return (q > 0) && (q & MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

#define SKIP_WITHOUT_BIAS(_l)                                              \
    do {                                                                   \
        if (!bias_here(_l)) {                                              \
            ASSERT_FALSE(fences_available()) << "no bias with membarrier"; \
            EXPECT_EQ(SOFT_BIAS_OFF, (_l)->bias);                          \
            GTEST_SKIP() << "membarrier private expedited unavailable";    \
        }                                                                  \
    } while (0)

unsigned yields_seen; /* sched_yield calls of the process */

} // namespace

/* Interposes libc's: counts the calls, and still yields */
extern "C" int sched_yield(void)
{
    __atomic_fetch_add(&yields_seen, 1, __ATOMIC_RELAXED);
    return (int)syscall(SYS_sched_yield);
}

/* The first thread to take the lock in a biasing operation gets the bias:
 * it then takes the lock without setting the word, another thread cannot,
 * and a second biasing take by another thread does not move it. */
TEST(soft_lock, bias_to_first_biasing_thread)
{
    soft_lock_t l;

    SKIP_WITHOUT_BIAS(&l);
    ASSERT_EQ(1, soft_lock_fast(&l));
    EXPECT_EQ(0u, l.v) << "the biased take sets the lock word";
    EXPECT_EQ(1u, l.busy);
    soft_unlock_fast(&l);
    EXPECT_EQ(0u, l.busy);

    int other = -1;
    std::thread t([&]() {
        other = soft_lock_fast(&l);
        soft_lock(&l);
        soft_lock_bias(&l);
        soft_unlock(&l);
    });
    t.join();
    EXPECT_EQ(0, other) << "a thread the lock is not biased to took it fast";
    EXPECT_EQ(soft_lock_self(), l.bias) << "the bias moved";
    /* held the plain way: the biased thread takes it the plain way too */
    soft_lock(&l);
    std::thread u([&]() { other = soft_trylock(&l); });
    u.join();
    EXPECT_EQ(0, other);
    soft_unlock(&l);
}

/* The helper takes the word while the biased thread holds the lock fast:
 * its take returns only once the biased thread let go, and while the
 * helper holds it the biased thread's fast take declines. */
TEST(soft_lock, helper_waits_for_biased_holder)
{
    soft_lock_t l;
    volatile int taken = 0;

    SKIP_WITHOUT_BIAS(&l);
    ASSERT_EQ(1, soft_lock_fast(&l));
    std::thread h([&]() {
        while (!soft_trylock_helper(&l)) {
        }
        __atomic_store_n(&taken, 1, __ATOMIC_RELEASE);
        while (__atomic_load_n(&taken, __ATOMIC_ACQUIRE) != 2) {
            usleep(100);
        }
        soft_unlock(&l);
    });
    usleep(50000);
    EXPECT_EQ(0, __atomic_load_n(&taken, __ATOMIC_ACQUIRE))
        << "the helper took the lock from its biased holder";
    soft_unlock_fast(&l);
    while (__atomic_load_n(&taken, __ATOMIC_ACQUIRE) != 1) {
        usleep(100);
    }
    EXPECT_EQ(0, soft_lock_fast(&l)) << "fast take while the helper holds it";
    EXPECT_EQ(0u, l.busy);
    __atomic_store_n(&taken, 2, __ATOMIC_RELEASE);
    h.join();
    /* the helper cleared the bias; the next biasing take brings it back */
    EXPECT_EQ(0u, l.bias);
    EXPECT_EQ(0, soft_lock_fast(&l));
    soft_lock(&l);
    soft_lock_bias(&l);
    soft_unlock(&l);
    EXPECT_EQ(1, soft_lock_fast(&l));
    soft_unlock_fast(&l);
}

/* A helper that waits out a biased holder for long gives up its CPU
 * between looks rather than spinning: a holder preempted on the helper's
 * own CPU (a process bound to one core) could otherwise end its hold only
 * once the helper's time slice ran out. */
TEST(soft_lock, helper_yields_while_biased_holder_holds)
{
    soft_lock_t l;
    volatile int taken = 0;

    SKIP_WITHOUT_BIAS(&l);
    ASSERT_EQ(1, soft_lock_fast(&l));
    unsigned before = __atomic_load_n(&yields_seen, __ATOMIC_RELAXED);
    std::thread h([&]() {
        while (!soft_trylock_helper(&l)) {
        }
        __atomic_store_n(&taken, 1, __ATOMIC_RELEASE);
        soft_unlock(&l);
    });
    usleep(50000);
    EXPECT_EQ(0, __atomic_load_n(&taken, __ATOMIC_ACQUIRE));
    soft_unlock_fast(&l);
    h.join();
    EXPECT_EQ(1, taken);
    EXPECT_GT(__atomic_load_n(&yields_seen, __ATOMIC_RELAXED), before)
        << "the helper spun through the holder's hold without yielding";
}

/* A helper that passes while the application computes (takes nothing)
 * fences once: after its first take the bias is cleared, and later takes
 * find no bias to wait out, however long they hold the lock. */
TEST(soft_lock, helper_fences_once_while_application_idle)
{
    soft_lock_t l;

    SKIP_WITHOUT_BIAS(&l);
    std::thread h([&]() {
        for (int i = 0; i < 100; ++i) {
            ASSERT_EQ(1, soft_trylock_helper(&l));
            EXPECT_EQ(0u, l.bias) << "take " << i;
            soft_unlock(&l);
        }
    });
    h.join();
    EXPECT_EQ(0u, l.foreign) << "the helper counted as a foreign thread";
}

/* Exclusion under load: the biased thread (fast takes, plain ones when
 * they decline) and the helper (try-takes) each increment a counter by a
 * read, a pause and a write, and mark the critical section; neither ever
 * finds the other inside, and no increment is lost. */
TEST(soft_lock, biased_and_helper_exclude_each_other)
{
    const unsigned N_BIASED = 200000, N_HELPER = 5000;
    soft_lock_t l;
    volatile uint64_t counter = 0;
    volatile int inside       = 0;
    volatile int overlaps     = 0;

    SKIP_WITHOUT_BIAS(&l);
    /* long: a pause the other side's fence cannot outlast */
    auto section = [&](bool long_one) {
        if (__atomic_exchange_n(&inside, 1, __ATOMIC_RELAXED)) {
            __atomic_fetch_add(&overlaps, 1, __ATOMIC_RELAXED);
        }
        uint64_t c = counter;
        if (long_one) {
            usleep(20);
        }
        counter = c + 1;
        __atomic_store_n(&inside, 0, __ATOMIC_RELAXED);
    };
    std::thread h([&]() {
        for (unsigned n = 0; n < N_HELPER;) {
            if (soft_trylock_helper(&l)) {
                section(false);
                soft_unlock(&l);
                ++n;
            }
        }
    });
    unsigned fast = 0;
    for (unsigned n = 0; n < N_BIASED; ++n) {
        if (soft_lock_fast(&l)) {
            section((n % 256) == 0);
            soft_unlock_fast(&l);
            ++fast;
        } else {
            soft_lock(&l);
            soft_lock_bias(&l); /* as a biasing operation does */
            section(false);
            soft_unlock(&l);
        }
    }
    h.join();
    EXPECT_EQ(0, overlaps);
    EXPECT_EQ((uint64_t)N_BIASED + N_HELPER, counter);
    EXPECT_GT(fast, N_BIASED / 2) << "the biased thread rarely went fast";
    EXPECT_NE(SOFT_BIAS_OFF, l.bias) << "the helper ended the bias";
}

/* Another application thread taking the lock SOFT_BIAS_FOREIGN times ends
 * the bias for good: the lock is then taken the plain way by everyone and
 * no biasing take brings a bias back. */
TEST(soft_lock, foreign_thread_ends_bias)
{
    soft_lock_t l;

    SKIP_WITHOUT_BIAS(&l);
    std::thread t([&]() {
        for (unsigned i = 0; i + 1 < SOFT_BIAS_FOREIGN; ++i) {
            soft_lock(&l);
            soft_unlock(&l);
        }
    });
    t.join();
    EXPECT_EQ(soft_lock_self(), l.bias) << "ended too soon";
    std::thread u([&]() {
        soft_lock(&l);
        soft_lock_bias(&l);
        soft_unlock(&l);
    });
    u.join();
    EXPECT_EQ(SOFT_BIAS_OFF, l.bias);
    EXPECT_EQ(0, soft_lock_fast(&l));
    soft_lock(&l);
    soft_lock_bias(&l);
    soft_unlock(&l);
    EXPECT_EQ(SOFT_BIAS_OFF, l.bias) << "a bias came back";
    EXPECT_EQ(0, soft_lock_fast(&l));
}

/* A thread that waits for the lock goes before the helper: the helper's
 * take is refused from the moment the thread queues until it has had the
 * lock, though the lock is free in between (a helper that took it again
 * then, pass after pass, starved the thread it stands in for). */
TEST(soft_lock, helper_stands_aside_for_a_waiter)
{
    soft_lock_t l;
    int got = 0, release = 0;

    soft_lock_init(&l);
    soft_lock(&l);
    std::thread t([&]() {
        soft_lock(&l);
        __atomic_store_n(&got, 1, __ATOMIC_RELEASE);
        while (!__atomic_load_n(&release, __ATOMIC_ACQUIRE)) {
            usleep(100);
        }
        soft_unlock(&l);
    });
    while (__atomic_load_n(&l.queued, __ATOMIC_ACQUIRE) == 0) {
        usleep(100);
    }
    soft_unlock(&l);
    int helper = soft_trylock_helper(&l);
    if (helper) {
        soft_unlock(&l); /* the waiter must still get it, to end the test */
    }
    EXPECT_EQ(0, helper) << "the helper went before a waiter";
    while (!__atomic_load_n(&got, __ATOMIC_ACQUIRE)) {
        usleep(100);
    }
    EXPECT_EQ(0u, __atomic_load_n(&l.queued, __ATOMIC_ACQUIRE));
    EXPECT_EQ(0, soft_trylock_helper(&l)); /* the waiter holds it */
    __atomic_store_n(&release, 1, __ATOMIC_RELEASE);
    t.join();
    ASSERT_EQ(1, soft_trylock_helper(&l));
    soft_unlock(&l);
}
