/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * UCX's own "ib" module next to dcx on the emulated ConnectX, in one
 * process: opens dcx's memory domain and the ib module's on the same
 * emulated device (mlx5_0 unless argv[1] names another), in both orders,
 * lists the ib module's transports on it, opens and closes an interface of
 * each (the first round) and closes everything.  The ib
 * module lists a device only where its /dev/infiniband node exists
 * (dcx-run --uverbs-ns makes it), so the domain is opened by name, which
 * works without the node.  Run by test_dcx_run_emu.sh under
 * "dcx-run --mlx5-emu"; prints one line a step, exits 0 when every step
 * worked, 77 when this UCX has no ib module, 1 otherwise.
 */
#include <uct/api/uct.h>
#include <ucs/async/async_fwd.h>

#include <stdio.h>
#include <string.h>

static uct_component_h find_component(uct_component_h *comps, unsigned n,
                                      const char *name)
{
    uct_component_attr_t attr;
    unsigned i;

    for (i = 0; i < n; ++i) {
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if ((uct_component_query(comps[i], &attr) == UCS_OK) &&
            (strcmp(attr.name, name) == 0)) {
            return comps[i];
        }
    }
    return NULL;
}

static uct_md_h open_md(uct_component_h comp, const char *comp_name,
                        const char *dev)
{
    uct_md_config_t *config;
    ucs_status_t status;
    uct_md_h md = NULL;

    status = uct_md_config_read(comp, NULL, NULL, &config);
    if (status == UCS_OK) {
        status = uct_md_open(comp, dev, config, &md);
        uct_config_release(config);
    }
    printf("%s md %s: open %s\n", comp_name, dev, ucs_status_string(status));
    return (status == UCS_OK) ? md : NULL;
}

/* An interface of one of the ib module's transports opened and closed:
 * one line with the outcome */
static void open_ib_iface(uct_md_h md, uct_worker_h worker,
                          const uct_tl_resource_desc_t *res)
{
    uct_iface_config_t *config;
    uct_iface_params_t params;
    uct_iface_h iface = NULL;
    ucs_status_t status;

    status = uct_md_iface_config_read(md, res->tl_name, NULL, NULL, &config);
    if (status == UCS_OK) {
        memset(&params, 0, sizeof(params));
        params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                            UCT_IFACE_PARAM_FIELD_DEVICE;
        params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
        params.mode.device.tl_name  = res->tl_name;
        params.mode.device.dev_name = res->dev_name;
        status = uct_iface_open(md, worker, &params, config, &iface);
        uct_config_release(config);
    }
    printf("ib iface %s on %s: open %s\n", res->tl_name, res->dev_name,
           ucs_status_string(status));
    if (iface != NULL) {
        uct_iface_close(iface);
    }
}

/* the ib module's transports on its domain, one line each, and an
 * interface of each opened */
static int list_ib_transports(uct_md_h md, uct_worker_h worker)
{
    uct_tl_resource_desc_t *res;
    unsigned n, i;
    ucs_status_t status;

    status = uct_md_query_tl_resources(md, &res, &n);
    if (status != UCS_OK) {
        printf("ib md: transports: %s\n", ucs_status_string(status));
        return 0;
    }
    for (i = 0; i < n; ++i) {
        printf("ib md: transport %s on %s\n", res[i].tl_name, res[i].dev_name);
        if (worker != NULL) {
            open_ib_iface(md, worker, &res[i]);
        }
    }
    uct_release_tl_resource_list(res);
    return 1;
}

int main(int argc, char **argv)
{
    const char *dev            = (argc > 1) ? argv[1] : "mlx5_0";
    ucs_async_context_t *async = NULL;
    uct_worker_h worker        = NULL;
    uct_component_h *comps, dcx, ib;
    uct_md_h dcx_md, ib_md;
    unsigned n, round;
    int ok = 1;

    if (uct_query_components(&comps, &n) != UCS_OK) {
        printf("uct_query_components failed\n");
        return 1;
    }
    dcx = find_component(comps, n, "dcx");
    ib  = find_component(comps, n, "ib");
    if (dcx == NULL) {
        printf("no dcx component (is libuct_dcx.so preloaded?)\n");
        uct_release_component_list(comps);
        return 1;
    }
    if (ib == NULL) {
        printf("this UCX has no ib module\n");
        uct_release_component_list(comps);
        return 77;
    }
    if ((ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK, &async) !=
         UCS_OK) ||
        (uct_worker_create(async, UCS_THREAD_MODE_SINGLE, &worker) != UCS_OK)) {
        printf("no UCT worker\n");
        ok = 0;
    }
    /* round 0: dcx first, closed first; round 1: ib first, closed first
     * (the interfaces of round 0 only) */
    for (round = 0; round < 2; ++round) {
        if (round == 0) {
            dcx_md = open_md(dcx, "dcx", dev);
            ib_md  = open_md(ib, "ib", dev);
        } else {
            ib_md  = open_md(ib, "ib", dev);
            dcx_md = open_md(dcx, "dcx", dev);
        }
        ok = ok && (dcx_md != NULL) && (ib_md != NULL);
        if (ib_md != NULL) {
            ok = list_ib_transports(ib_md, (round == 0) ? worker : NULL) && ok;
        }
        if ((round == 0) && (dcx_md != NULL)) {
            uct_md_close(dcx_md);
        }
        if (ib_md != NULL) {
            uct_md_close(ib_md);
        }
        if ((round == 1) && (dcx_md != NULL)) {
            uct_md_close(dcx_md);
        }
        printf("round %u: closed\n", round);
    }
    if (worker != NULL) {
        uct_worker_destroy(worker);
    }
    if (async != NULL) {
        ucs_async_context_destroy(async);
    }
    uct_release_component_list(comps);
    return ok ? 0 : 1;
}
