/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DC curve of one transport configuration (bench/dc-curve.sh): message
 * rate and 8-byte latency as the number of destinations grows.
 *
 *   dc_curve TL MD DEV N...
 *
 * Opens one sending interface and 16 receiving interfaces of TL on DEV of
 * memory domain MD, all in this process and progressed by this one thread
 * (the same 16 for every N: what a progress call costs does not change
 * with N); for each N creates N endpoints spread round-robin over the
 * receivers (the heap they took, per endpoint, by mallinfo2), then
 *   - rate: 8-byte active messages (am_short, an 8-byte header) sent
 *     round-robin over the N endpoints, retried while refused, until all
 *     arrived: messages per second;
 *   - latency: one 8-byte active message at a time, round-robin, from the
 *     send until its handler runs: the median and the 99th percentile.
 * One line per N:
 *   n N heap_per_ep B rate_mps R lat_us L lat99_us P
 * The DCI policy and pool come from the environment (UCX_DCX_*).
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ucs/async/async_fwd.h>
#include <uct/api/uct.h>

#define MAX_RX    16
#define AM_ID     5
#define RATE_MSGS 200000
#define LAT_MSGS  4000

static uint64_t rx_count;

static size_t heap_now(void)
{
    struct mallinfo2 mi = mallinfo2();

    return mi.uordblks + mi.hblkhd;
}

static double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "dc_curve: %s: %s\n", what, ucs_status_string(status));
    return 1;
}

static ucs_status_t am_cb(void *arg, void *data, size_t length, unsigned flags)
{
    (void)arg;
    (void)data;
    (void)length;
    (void)flags;
    rx_count++;
    return UCS_OK;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

struct rx_iface {
    uct_iface_h iface;
    void *iaddr;
    void *daddr;
};

static uct_worker_h worker;

static void progress(void)
{
    uct_worker_progress(worker);
}

static uct_component_h find_component(const char *md_name)
{
    uct_component_h *comps, comp = NULL;
    uct_md_resource_desc_t *mds;
    uct_component_attr_t cattr;
    unsigned nc, i, j;

    if (uct_query_components(&comps, &nc) != UCS_OK) {
        return NULL;
    }
    for (i = 0; (i < nc) && (comp == NULL); ++i) {
        memset(&cattr, 0, sizeof(cattr));
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        uct_component_query(comps[i], &cattr);
        mds                = calloc(cattr.md_resource_count + 1, sizeof(*mds));
        cattr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        cattr.md_resources = mds;
        uct_component_query(comps[i], &cattr);
        for (j = 0; j < cattr.md_resource_count; ++j) {
            if (!strcmp(mds[j].md_name, md_name)) {
                comp = comps[i];
            }
        }
        free(mds);
    }
    /* the component handles stay valid: the list is not released */
    return comp;
}

static ucs_status_t open_iface(uct_md_h md, uct_iface_config_t *icfg,
                               const char *tl, const char *dev,
                               uct_iface_h *iface_p)
{
    uct_iface_params_t ip;
    ucs_status_t status;

    memset(&ip, 0, sizeof(ip));
    ip.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                    UCT_IFACE_PARAM_FIELD_DEVICE;
    ip.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    ip.mode.device.tl_name  = tl;
    ip.mode.device.dev_name = dev;
    status                  = uct_iface_open(md, worker, &ip, icfg, iface_p);
    if (status == UCS_OK) {
        uct_iface_progress_enable(*iface_p,
                                  UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    }
    return status;
}

/* One 8-byte AM on ep, retried while refused */
static ucs_status_t send8(uct_ep_h ep, uint64_t v)
{
    ucs_status_t st;

    while ((st = uct_ep_am_short(ep, AM_ID, v, NULL, 0)) ==
           UCS_ERR_NO_RESOURCE) {
        progress();
    }
    return st;
}

static int measure(uct_iface_h tx, struct rx_iface *rx, unsigned nrx,
                   unsigned n, uct_ep_h *eps, double *lat)
{
    uct_ep_params_t ep;
    size_t before, heap;
    ucs_status_t st;
    uint64_t target;
    unsigned i, k;
    double t0, rate;

    before = heap_now();
    for (i = 0; i < n; ++i) {
        memset(&ep, 0, sizeof(ep));
        ep.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
        ep.iface      = tx;
        ep.dev_addr   = rx[i % nrx].daddr;
        ep.iface_addr = rx[i % nrx].iaddr;
        st            = uct_ep_create(&ep, &eps[i]);
        if (st != UCS_OK) {
            return die("ep create", st);
        }
    }
    heap = heap_now() - before;

    /* a warm-up pass over every ep (first sends create what they need) */
    target = rx_count;
    for (i = 0; i < n; ++i) {
        if ((st = send8(eps[i], i)) != UCS_OK) {
            return die("send", st);
        }
        target++;
    }
    while (rx_count < target) {
        progress();
    }

    target = rx_count + RATE_MSGS;
    t0     = now();
    for (i = 0; i < RATE_MSGS; ++i) {
        if ((st = send8(eps[i % n], i)) != UCS_OK) {
            return die("send", st);
        }
    }
    while (rx_count < target) {
        progress();
    }
    rate = RATE_MSGS / (now() - t0);

    for (k = 0; k < LAT_MSGS; ++k) {
        target = rx_count + 1;
        t0     = now();
        if ((st = send8(eps[k % n], k)) != UCS_OK) {
            return die("send", st);
        }
        while (rx_count < target) {
            progress();
        }
        lat[k] = (now() - t0) * 1e6;
    }
    qsort(lat, LAT_MSGS, sizeof(*lat), cmp_double);

    while (uct_iface_flush(tx, 0, NULL) == UCS_INPROGRESS) {
        progress();
    }
    for (i = 0; i < n; ++i) {
        uct_ep_destroy(eps[i]);
    }
    printf("n %u heap_per_ep %.1f rate_mps %.4f lat_us %.3f lat99_us %.3f\n", n,
           (double)heap / n, rate / 1e6, lat[LAT_MSGS / 2],
           lat[LAT_MSGS * 99 / 100]);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    struct rx_iface rx[MAX_RX];
    uct_component_h comp;
    uct_iface_config_t *icfg;
    uct_md_config_t *mcfg;
    uct_iface_attr_t ia;
    ucs_async_context_t *async;
    uct_iface_h tx;
    uct_ep_h *eps;
    uct_md_h md;
    unsigned i, nmax = 0, nrx = MAX_RX;
    ucs_status_t st;
    double *lat;

    if (argc < 5) {
        fprintf(stderr, "usage: %s TL MD DEV N...\n", argv[0]);
        return 2;
    }
    for (i = 4; i < (unsigned)argc; ++i) {
        unsigned n = (unsigned)atoi(argv[i]);
        if ((n == 0) || (n > 1000000)) {
            fprintf(stderr, "dc_curve: bad endpoint count '%s'\n", argv[i]);
            return 2;
        }
        nmax = (n > nmax) ? n : nmax;
    }
    comp = find_component(argv[2]);
    if (comp == NULL) {
        fprintf(stderr, "dc_curve: no memory domain %s\n", argv[2]);
        return 1;
    }
    if (((st = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                        &async)) != UCS_OK) ||
        ((st = uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker)) !=
         UCS_OK) ||
        ((st = uct_md_config_read(comp, NULL, NULL, &mcfg)) != UCS_OK) ||
        ((st = uct_md_open(comp, argv[2], mcfg, &md)) != UCS_OK) ||
        ((st = uct_md_iface_config_read(md, argv[1], NULL, NULL, &icfg)) !=
         UCS_OK)) {
        return die("setup", st);
    }
    if ((st = open_iface(md, icfg, argv[1], argv[3], &tx)) != UCS_OK) {
        return die("iface open", st);
    }
    if ((st = uct_iface_query(tx, &ia)) != UCS_OK) {
        return die("iface query", st);
    }
    if (!(ia.cap.flags & UCT_IFACE_FLAG_AM_SHORT) ||
        !(ia.cap.flags & UCT_IFACE_FLAG_CONNECT_TO_IFACE)) {
        fprintf(stderr, "dc_curve: %s has no am_short to an interface\n",
                argv[1]);
        return 1;
    }
    for (i = 0; i < nrx; ++i) {
        if ((st = open_iface(md, icfg, argv[1], argv[3], &rx[i].iface)) !=
            UCS_OK) {
            return die("receiver iface open", st);
        }
        rx[i].iaddr = calloc(1, ia.iface_addr_len + 1);
        rx[i].daddr = calloc(1, ia.device_addr_len + 1);
        if (((st = uct_iface_get_address(rx[i].iface, rx[i].iaddr)) !=
             UCS_OK) ||
            ((st = uct_iface_get_device_address(rx[i].iface, rx[i].daddr)) !=
             UCS_OK) ||
            ((st = uct_iface_set_am_handler(rx[i].iface, AM_ID, am_cb, NULL,
                                            0)) != UCS_OK)) {
            return die("receiver setup", st);
        }
    }
    eps = calloc(nmax, sizeof(*eps));
    lat = calloc(LAT_MSGS, sizeof(*lat));
    for (i = 4; i < (unsigned)argc; ++i) {
        if (measure(tx, rx, nrx, (unsigned)atoi(argv[i]), eps, lat) != 0) {
            return 1;
        }
    }
    free(lat);
    free(eps);
    for (i = 0; i < nrx; ++i) {
        uct_iface_close(rx[i].iface);
        free(rx[i].iaddr);
        free(rx[i].daddr);
    }
    uct_iface_close(tx);
    uct_config_release(icfg);
    uct_md_close(md);
    uct_config_release(mcfg);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    return 0;
}
