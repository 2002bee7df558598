/*
 * Soft device post side: the counter-based clock of a post.
 */
#include "soft_fixture.h"

extern "C" {
#include "soft/soft.h"
}

#include <unistd.h>
#include <vector>

using namespace soft_test;

/* The clock of a post (soft_dev_now: the time-stamp counter converted to
 * CLOCK_MONOTONIC nanoseconds) reads what soft_now_ns() reads, to well
 * under the prod and ack timers, right after its base pair was taken and
 * long after it (a new pair then). */
TEST_F(soft, post_clock_follows_monotonic)
{
    const uint64_t tolerance = 20000;   /* ns; timers are >= 25 us */
    node a;

    ASSERT_EQ(0, a.open(fabric.c_str()));
    soft_dev_t *dev = soft_dev(a.dev);
    for (int k = 0; k < 8; ++k) {
        soft_lock(&dev->lock);
        uint64_t t0 = soft_now_ns();
        uint64_t x  = soft_dev_now(dev);
        uint64_t t1 = soft_now_ns();
        soft_unlock(&dev->lock);
        EXPECT_LE(t0, x + tolerance) << "look " << k;
        EXPECT_LE(x, t1 + tolerance) << "look " << k;
        usleep((k % 2) ? 20000 : 500);   /* past a rebase, or within */
    }
}
