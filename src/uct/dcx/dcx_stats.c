/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: the counters of an interface (uct_dcx_counters_t: DCI
 * pool, flow control, failures, tag matching, the arm's looks), and the
 * live counters file of UCX_DCX_STATS_DIR.
 *
 * The counters live in the interface; with UCX_DCX_STATS_DIR they live in
 * <dir>/dcx.<pid>.<dct>[.<n>], a file mapped shared that the transport updates
 * in place and any process may read while the job runs (contrib/dcx-stat).
 * The file describes itself, so a reader needs no copy of the layout:
 *
 *   char     magic[8]       "DCXSTAT"
 *   uint32_t version        1
 *   uint32_t pid, dctn
 *   uint32_t count          counters that follow
 *   char     dev[32], policy[16]
 *   char     names[count][32]
 *   uint64_t values[count]  (native byte order)
 *
 * Counters only grow; the gauges of the DCI pool (num_dci .. sig_period)
 * are as of the pool's last change.  The file stays after the interface
 * closes, with the final figures.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define UCT_DCX_STATS_MAGIC    "DCXSTAT"
#define UCT_DCX_STATS_VERSION  1
#define UCT_DCX_STATS_NAME_LEN 32
#define UCT_DCX_STATS_COUNT    (sizeof(uct_dcx_counters_t) / sizeof(uint64_t))

/* in the order of uct_dcx_counters_t */
static const char *uct_dcx_stats_names[] = {
    /* dcx_dci_stats_t */
    "dci.gets", "dci.take_backs", "dci.releases", "dci.waits", "dci.wait_ns",
    "dci.drains", "dci.creates", "dci.destroys", "dci.errors",
    "dci.ep_failures", "dci.shared_wrs", "dci.num_dci", "dci.created",
    "dci.in_use", "dci.high_water", "dci.free", "dci.kept", "dci.waiters",
    "dci.sig_period", "dci.sq_len", "dci.stream_resets",
    /* dcx_fc_stats_t */
    "fc.reqs_sent", "fc.grants_sent", "fc.bufs_sent", "fc.grants_recvd",
    "fc.stalls",
    /* uct_dcx_tm_stats_t */
    "tm.posted", "tm.matched", "tm.unexp_eager", "tm.unexp_rndv", "tm.rndv_hw",
    "tm.rndv_sw", "tm.syncs", "tm.cancels",
    /* uct_dcx_arm_stats_t */
    "arm.looks", "arm.found"};

typedef struct uct_dcx_stats_file {
    char magic[8];
    uint32_t version;
    uint32_t pid;
    uint32_t dctn;
    uint32_t count;
    char dev[32];
    char policy[16];
    char names[UCT_DCX_STATS_COUNT][UCT_DCX_STATS_NAME_LEN];
    uct_dcx_counters_t values;
} uct_dcx_stats_file_t;

_Static_assert(sizeof(uct_dcx_counters_t) % sizeof(uint64_t) == 0,
               "counters are 64-bit each");
_Static_assert(ucs_static_array_size(uct_dcx_stats_names) ==
                   UCT_DCX_STATS_COUNT,
               "a name for each counter");
_Static_assert(ucs_offsetof(uct_dcx_stats_file_t, values) % sizeof(uint64_t) ==
                   0,
               "values aligned");

void uct_dcx_stats_init(uct_dcx_iface_t *iface)
{
    memset(&iface->own_cnt, 0, sizeof(iface->own_cnt));
    iface->cnt      = &iface->own_cnt;
    iface->cnt_file = NULL;
}

/* The counters move into <dir>/dcx.<pid>.<dct>; failing to create it is
 * logged and costs only the file.  DCT numbers are unique only within one
 * open of a device (two devices, or two UCP workers on one, may both have
 * DCT 0x104), so every file of the process after its first carries the
 * sequence number of its opening too: dcx.<pid>.<dct>.<n>. */
void uct_dcx_stats_open(uct_dcx_iface_t *iface, const char *dir)
{
    static unsigned opened; /* files this process opened */
    uct_dcx_stats_file_t *f;
    char path[PATH_MAX];
    unsigned i, n;
    int fd;

    if ((dir == NULL) || (dir[0] == '\0')) {
        return;
    }
    n = __atomic_fetch_add(&opened, 1, __ATOMIC_RELAXED);
    if (n == 0) {
        snprintf(path, sizeof(path), "%s/dcx.%d.%x", dir, (int)getpid(),
                 iface->config.dctn);
    } else {
        snprintf(path, sizeof(path), "%s/dcx.%d.%x.%u", dir, (int)getpid(),
                 iface->config.dctn, n);
    }
    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        ucs_warn("dcx: %s: cannot create the counters file %s: %m",
                 dcx_dev_name(iface->dev), path);
        return;
    }
    if (ftruncate(fd, sizeof(*f)) != 0) {
        ucs_warn("dcx: %s: cannot size the counters file %s: %m",
                 dcx_dev_name(iface->dev), path);
        close(fd);
        return;
    }
    f = mmap(NULL, sizeof(*f), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (f == MAP_FAILED) {
        ucs_warn("dcx: %s: cannot map the counters file %s: %m",
                 dcx_dev_name(iface->dev), path);
        return;
    }

    f->version = UCT_DCX_STATS_VERSION;
    f->pid     = getpid();
    f->dctn    = iface->config.dctn;
    f->count   = UCT_DCX_STATS_COUNT;
    ucs_strncpy_zero(f->dev, dcx_dev_name(iface->dev), sizeof(f->dev));
    ucs_strncpy_zero(f->policy, iface->policy->name, sizeof(f->policy));
    for (i = 0; i < UCT_DCX_STATS_COUNT; ++i) {
        ucs_strncpy_zero(f->names[i], uct_dcx_stats_names[i],
                         sizeof(f->names[i]));
    }
    f->values = *iface->cnt;
    /* the magic last: a reader that sees it sees the rest */
    __atomic_thread_fence(__ATOMIC_RELEASE);
    memcpy(f->magic, UCT_DCX_STATS_MAGIC, sizeof(f->magic));
    iface->cnt      = &f->values;
    iface->cnt_file = f;
}

void uct_dcx_stats_close(uct_dcx_iface_t *iface)
{
    if (iface->cnt_file == NULL) {
        return;
    }
    iface->own_cnt = *iface->cnt;
    iface->cnt     = &iface->own_cnt;
    munmap(iface->cnt_file, sizeof(uct_dcx_stats_file_t));
    iface->cnt_file = NULL;
}
