/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Heap cost of a UCT interface and of its endpoints (bench/mem.sh).
 *
 *   mem_eps TL MD DEV [N...]
 *
 * Opens TL on DEV of memory domain MD (e.g. "dcx soft0 soft0:1", "posix
 * posix memory"), prints the heap the interface open took, then creates
 * endpoints to the interface itself up to each N and prints the heap per
 * endpoint.  Heap = malloc'd bytes, small and mmap'd chunks (mallinfo2);
 * shared-memory segments are not heap and are not counted.
 */
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ucs/async/async_fwd.h>
#include <uct/api/uct.h>

static size_t heap_now(void)
{
    struct mallinfo2 mi = mallinfo2();

    return mi.uordblks + mi.hblkhd;
}

static int die(const char *what, ucs_status_t status)
{
    fprintf(stderr, "mem_eps: %s: %s\n", what, ucs_status_string(status));
    return 1;
}

int main(int argc, char **argv)
{
    uct_component_h *comps, comp = NULL;
    uct_component_attr_t cattr;
    uct_md_resource_desc_t *mds;
    uct_tl_resource_desc_t *tls;
    uct_iface_config_t *icfg;
    uct_md_config_t *mcfg;
    uct_iface_params_t ip;
    uct_iface_attr_t ia;
    ucs_async_context_t *async;
    uct_worker_h worker;
    uct_iface_h iface;
    uct_ep_h *eps;
    uct_md_h md;
    unsigned nc, i, j, nt, created = 0;
    ucs_status_t st;
    size_t before;
    void *iaddr, *daddr;

    if (argc < 4) {
        fprintf(stderr, "usage: %s TL MD DEV [N...]\n", argv[0]);
        return 2;
    }
    st = uct_query_components(&comps, &nc);
    if (st != UCS_OK) {
        return die("query components", st);
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
            if (!strcmp(mds[j].md_name, argv[2])) {
                comp = comps[i];
            }
        }
        free(mds);
    }
    if (comp == NULL) {
        fprintf(stderr, "mem_eps: no memory domain %s\n", argv[2]);
        return 1;
    }
    if (((st = ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                        &async)) != UCS_OK) ||
        ((st = uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker)) !=
         UCS_OK) ||
        ((st = uct_md_config_read(comp, NULL, NULL, &mcfg)) != UCS_OK) ||
        ((st = uct_md_open(comp, argv[2], mcfg, &md)) != UCS_OK) ||
        ((st = uct_md_query_tl_resources(md, &tls, &nt)) != UCS_OK) ||
        ((st = uct_md_iface_config_read(md, argv[1], NULL, NULL, &icfg)) !=
         UCS_OK)) {
        return die("setup", st);
    }
    memset(&ip, 0, sizeof(ip));
    ip.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                    UCT_IFACE_PARAM_FIELD_DEVICE;
    ip.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    ip.mode.device.tl_name  = argv[1];
    ip.mode.device.dev_name = argv[3];

    before = heap_now();
    st     = uct_iface_open(md, worker, &ip, icfg, &iface);
    if (st != UCS_OK) {
        return die("iface open", st);
    }
    printf("iface_heap %zu\n", heap_now() - before);
    fflush(stdout);

    if ((st = uct_iface_query(iface, &ia)) != UCS_OK) {
        return die("iface query", st);
    }
    iaddr = calloc(1, ia.iface_addr_len + 1);
    daddr = calloc(1, ia.device_addr_len + 1);
    if (((st = uct_iface_get_address(iface, iaddr)) != UCS_OK) ||
        ((st = uct_iface_get_device_address(iface, daddr)) != UCS_OK)) {
        return die("address", st);
    }
    eps = calloc(100000, sizeof(*eps)); /* before measuring */
    for (i = 4; i < (unsigned)argc; ++i) {
        unsigned n = (unsigned)atoi(argv[i]);
        uct_ep_params_t ep;

        if ((n == 0) || (n > 100000) || (n < created)) {
            continue;
        }
        before = heap_now();
        /* measured from scratch for each count */
        for (j = 0; j < n; ++j) {
            memset(&ep, 0, sizeof(ep));
            ep.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                            UCT_EP_PARAM_FIELD_DEV_ADDR |
                            UCT_EP_PARAM_FIELD_IFACE_ADDR;
            ep.iface      = iface;
            ep.dev_addr   = daddr;
            ep.iface_addr = iaddr;
            st            = uct_ep_create(&ep, &eps[j]);
            if (st != UCS_OK) {
                return die("ep create", st);
            }
        }
        printf("eps %u heap %zu per_ep %.1f\n", n, heap_now() - before,
               (double)(heap_now() - before) / n);
        fflush(stdout);
        for (j = 0; j < n; ++j) {
            uct_ep_destroy(eps[j]);
        }
    }
    uct_iface_close(iface);
    uct_config_release(icfg);
    uct_release_tl_resource_list(tls);
    uct_md_close(md);
    uct_config_release(mcfg);
    uct_worker_destroy(worker);
    ucs_async_context_destroy(async);
    uct_release_component_list(comps);
    return 0;
}
