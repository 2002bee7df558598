/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A preload for benchmarks (bench/small-onesided.sh): when a soft device
 * closes, appends its counters (dcx_soft_stats) to the file named by
 * DCX_BENCH_STATS_FILE, one line per device:
 *   <pid> <name>=<value> ...
 * It interposes dcx_dev_close(), so it goes before libuct_dcx.so in
 * LD_PRELOAD.  Nothing here is part of the transport.
 */
#define _GNU_SOURCE
#include "dcx_soft.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

void dcx_dev_close(dcx_dev_t *dev)
{
    static void (*next)(dcx_dev_t * dev);
    const char *path = getenv("DCX_BENCH_STATS_FILE");
    dcx_soft_stats_t s;
    FILE *f;

    if (next == NULL) {
        next = (void (*)(dcx_dev_t *))dlsym(RTLD_NEXT, "dcx_dev_close");
    }
    if ((path != NULL) && dcx_dev_is_soft(dev) &&
        (dcx_soft_stats(dev, &s) == 0) && ((f = fopen(path, "a")) != NULL)) {
        fprintf(f,
                "%d tx_packets=%llu rx_packets=%llu direct_writes=%llu "
                "direct_reads=%llu direct_mapped=%llu direct_fallbacks=%llu "
                "futex_wakes=%llu prods=%llu locked_polls=%llu "
                "helper_passes=%llu acks_in_table=%llu light_posts=%llu "
                "recv_in_place=%llu resp_fast=%llu\n",
                (int)getpid(), (unsigned long long)s.tx_packets,
                (unsigned long long)s.rx_packets,
                (unsigned long long)s.direct_writes,
                (unsigned long long)s.direct_reads,
                (unsigned long long)s.direct_mapped,
                (unsigned long long)s.direct_fallbacks,
                (unsigned long long)s.futex_wakes, (unsigned long long)s.prods,
                (unsigned long long)s.locked_polls,
                (unsigned long long)s.helper_passes,
                (unsigned long long)s.acks_in_table,
                (unsigned long long)s.light_posts,
                (unsigned long long)s.recv_in_place,
                (unsigned long long)s.resp_fast);
        fclose(f);
    }
    if (next != NULL) {
        next(dev);
    }
}
