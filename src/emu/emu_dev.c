/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the device list, the soft device behind each emulated
 * device, and the lookups of devices, contexts and QPs by number that the
 * objects above make.  Contexts are opened and closed in emu_ctx.c.
 *
 * DCX_EMU_DEVICES (default 1) devices mlx5_0.. are offered, each a soft
 * device of the fabric DCX_EMU_FABRIC (default "mlx5emu").  A process opens
 * a device's soft port once, at its first context, registers the port's
 * address in the fabric's LID directory (emu_sm.c) and keeps it until its
 * last context is closed.
 */
#include "emu/emu_raw.h"
#include "soft/dcx_soft.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_mutex_t emu_dev_lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_once_t emu_devs_once = PTHREAD_ONCE_INIT;
static emu_dev_t *emu_devs;
static unsigned emu_num_devs;
static int emu_devs_err; /* why the list could not be made */
static char emu_fabric[40];

static void emu_devs_fork_prepare(void)
{
    pthread_mutex_lock(&emu_dev_lock);
    emu_raw_fork_prepare();
}

static void emu_devs_fork_parent(void)
{
    emu_raw_fork_parent();
    pthread_mutex_unlock(&emu_dev_lock);
}

static void emu_devs_fork_child(void)
{
    emu_dev_t *dev;
    unsigned i;

    emu_raw_fork_child();
    /* a NIC gives a child's new context a context of its own: the next
     * open here opens a soft device of this process, with its own port
     * and LID; the parent's objects, copied in this memory, are never
     * used (their fds stay open here, unused) */
    for (i = 0; i < emu_num_devs; ++i) {
        dev           = &emu_devs[i];
        dev->refs     = 0;
        dev->soft     = NULL;
        dev->pd       = NULL;
        dev->srq_cq   = NULL;
        dev->lid      = 0;
        dev->sm_word  = 0;
        dev->qpn_base = 0;
        dev->raw_ch   = NULL;
        memset(dev->qp_map, 0, sizeof(dev->qp_map));
        pthread_mutex_init(&dev->qp_lock, NULL);
        pthread_mutex_init(&dev->cmd_lock, NULL);
        dev->cmds     = NULL;
        dev->num_cmds = 0;
    }
    pthread_mutex_init(&emu_dev_lock, NULL);
}

/* Reads the environment and lists the soft devices once per process. */
static void emu_devs_init(void)
{
    dcx_dev_config_t *config;
    const char *env       = getenv(EMU_ENV_DEVICES);
    dcx_dev_info_t *infos = NULL;
    unsigned count = 0, i, n = 1, umr_late = 0;
    char *end;
    int ret;

    if (env != NULL) {
        unsigned long v = strtoul(env, &end, 10);

        if ((*env == '\0') || (*end != '\0') || (v > EMU_MAX_DEVICES)) {
            emu_error("%s=%s is not a number of devices in 0..%u",
                      EMU_ENV_DEVICES, env, EMU_MAX_DEVICES);
            emu_devs_err = EINVAL;
            return;
        }
        n = (unsigned)v;
    }
    env = getenv(EMU_ENV_UMR_LATE);
    if ((env != NULL) && (*env != '\0')) {
        if (strcmp(env, "0") && strcmp(env, "1")) {
            emu_error("%s=%s is not 0 or 1", EMU_ENV_UMR_LATE, env);
            emu_devs_err = EINVAL;
            return;
        }
        umr_late = (env[0] == '1');
    }
    env = getenv(EMU_ENV_FABRIC);
    snprintf(emu_fabric, sizeof(emu_fabric), "%s",
             ((env != NULL) && (*env != '\0')) ? env : EMU_DEFAULT_FABRIC);
    if (n == 0) {
        return;
    }

    /* the soft backend's knobs: n devices on our fabric, registrations
     * that pin their pages as a ConnectX's do, UMRs run late if asked
     * (DCX_EMU_UMR_LATE, as SOFT_MKEY_LATE), limits at their defaults (a
     * refused value is logged under its DCX_EMU_ name) */
    ret = dcx_dev_config_create("DCX_EMU_", &config);
    if (ret == 0) {
        ret = dcx_dev_config_set_num(config, "SOFT_DEVICES", n);
        if (ret == 0) {
            ret = dcx_dev_config_set_str(config, "SOFT_FABRIC", emu_fabric);
        }
        if (ret == 0) {
            ret = dcx_dev_config_set_num(config, "SOFT_PINNED", 1);
        }
        if (ret == 0) {
            ret = dcx_dev_config_set_num(config, "SOFT_MKEY_LATE", umr_late);
        }
        if (ret == 0) {
            ret = dcx_dev_list(config, &infos, &count);
        }
        dcx_dev_config_destroy(config);
    }
    if (ret != 0) {
        emu_error("no devices: the soft fabric '%s' refused the list (%s)",
                  emu_fabric, strerror(ret));
        emu_devs_err = ret;
        return;
    }
    emu_devs = calloc(count, sizeof(*emu_devs));
    if (emu_devs == NULL) {
        dcx_dev_list_free(infos);
        emu_error("no devices: out of memory");
        emu_devs_err = ENOMEM;
        return;
    }
    for (i = 0; i < count; ++i) {
        emu_dev_t *dev = &emu_devs[i];

        dev->index  = i;
        dev->info   = infos[i];
        dev->fabric = emu_fabric;
        pthread_mutex_init(&dev->qp_lock, NULL);
        pthread_mutex_init(&dev->cmd_lock, NULL);
        snprintf(dev->ibdev.name, sizeof(dev->ibdev.name), "mlx5_%u", i);
        snprintf(dev->ibdev.dev_name, sizeof(dev->ibdev.dev_name), "uverbs%u",
                 i);
        dev->ibdev.node_type      = IBV_NODE_CA;
        dev->ibdev.transport_type = IBV_TRANSPORT_IB;
    }
    emu_sysfs_publish(emu_devs, count); /* dev_path, ibdev_path */
    emu_num_devs = count;
    pthread_atfork(emu_devs_fork_prepare, emu_devs_fork_parent,
                   emu_devs_fork_child);
    dcx_dev_list_free(infos);
}

struct ibv_device **ibv_get_device_list(int *num_devices)
{
    struct ibv_device **list;
    unsigned i;

    pthread_once(&emu_devs_once, emu_devs_init);
    if (num_devices != NULL) {
        *num_devices = 0;
    }
    if (emu_devs_err != 0) {
        errno = emu_devs_err;
        return NULL;
    }
    list = calloc(emu_num_devs + 1, sizeof(*list));
    if (list == NULL) {
        emu_error("ibv_get_device_list: out of memory");
        errno = ENOMEM;
        return NULL;
    }
    for (i = 0; i < emu_num_devs; ++i) {
        list[i] = &emu_devs[i].ibdev;
    }
    if (num_devices != NULL) {
        *num_devices = (int)emu_num_devs;
    }
    return list;
}

/* Devices live as long as the process: a device pointer stays valid after
 * the list is freed (rdma-core keeps opened ones; here all). */
void ibv_free_device_list(struct ibv_device **list)
{
    free(list);
}

emu_dev_t *emu_dev_of(struct ibv_device *ibdev)
{
    uintptr_t p = (uintptr_t)ibdev;

    if ((emu_devs == NULL) || (p < (uintptr_t)emu_devs) ||
        (p >= (uintptr_t)(emu_devs + emu_num_devs)) ||
        (((p - (uintptr_t)emu_devs) % sizeof(emu_dev_t)) != 0)) {
        return NULL;
    }
    return (emu_dev_t *)ibdev;
}

const char *ibv_get_device_name(struct ibv_device *device)
{
    return device->name;
}

uint64_t emu_dev_guid(const emu_dev_t *dev)
{
    return EMU_GUID_BASE | ((uint64_t)dev->lid << 8) | dev->index;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
    emu_dev_t *dev = emu_dev_of(device);

    if (dev == NULL) {
        emu_error("ibv_get_device_guid: %p is not a device of the "
                  "emulation",
                  (void *)device);
        errno = EINVAL;
        return 0;
    }
    /* the node GUID does not depend on the LID the port gets at open */
    return htobe64(EMU_GUID_BASE | dev->index);
}

int ibv_get_device_index(struct ibv_device *device)
{
    emu_dev_t *dev = emu_dev_of(device);

    return (dev != NULL) ? (int)dev->index : -1;
}

/* ------------------------------------------------------------------------
 * The soft device of an emulated device
 * ------------------------------------------------------------------------ */
static void emu_dev_release_locked(emu_dev_t *dev)
{
    if (--dev->refs > 0) {
        return;
    }
    if (dev->lid != 0) {
        emu_sm_unregister(emu_fabric, dev->lid, dev->sm_word);
        dev->lid      = 0;
        dev->qpn_base = 0;
    }
    emu_raw_dev_close(dev); /* the engine's channel of the device */
    if (dev->srq_cq != NULL) {
        dcx_cq_destroy(dev->srq_cq);
        dev->srq_cq = NULL;
    }
    if (dev->pd != NULL) {
        dcx_pd_free(dev->pd);
        dev->pd = NULL;
    }
    if (dev->soft != NULL) {
        dcx_dev_close(dev->soft);
        dev->soft = NULL;
    }
}

static int emu_dev_acquire_locked(emu_dev_t *dev)
{
    const char *name = dev->ibdev.name;
    int ret;

    if (dev->refs++ > 0) {
        return 0;
    }
    ret = dcx_dev_open(&dev->info, &dev->soft);
    if (ret != 0) {
        emu_error("%s: open: the soft device %s refused (%s)", name,
                  dev->info.name, strerror(ret));
        goto err;
    }
    dev->addr_len = sizeof(dev->addr);
    ret           = dcx_dev_port_addr(dev->soft, dev->addr, &dev->addr_len);
    if (ret == 0) {
        ret = dcx_pd_alloc(dev->soft, &dev->pd);
    }
    if (ret == 0) {
        ret = dcx_cq_create(dev->soft, 1, &dev->srq_cq);
    }
    if (ret != 0) {
        emu_error("%s: open: setting up the soft device failed (%s)", name,
                  strerror(ret));
        goto err;
    }
    ret = emu_sm_register(emu_fabric, dev->addr, dev->addr_len, &dev->lid,
                          &dev->sm_word);
    if (ret != 0) {
        emu_error("%s: open: no LID on fabric '%s' (%s)", name, emu_fabric,
                  strerror(ret));
        goto err;
    }
    /* the soft device has no QP yet: its numbers can still be placed in
     * the window of this registration */
    dev->qpn_base = emu_sm_qpn_base(dev->sm_word);
    ret = dcx_soft_dev_set_qpn_base(dev->soft, dev->qpn_base + EMU_QPN_FIRST);
    if (ret != 0) {
        emu_error("%s: open: the soft device refused QP numbers from 0x%x "
                  "(%s)",
                  name, dev->qpn_base + EMU_QPN_FIRST, strerror(ret));
        goto err;
    }
    /* what this port sends arrives with this LID as its source */
    dcx_soft_dev_set_lid(dev->soft, dev->lid);
    return 0;

err:
    emu_dev_release_locked(dev);
    return ret;
}

int emu_dev_acquire(emu_dev_t *dev)
{
    int ret;

    pthread_mutex_lock(&emu_dev_lock);
    ret = emu_dev_acquire_locked(dev);
    pthread_mutex_unlock(&emu_dev_lock);
    return ret;
}

void emu_dev_release(emu_dev_t *dev)
{
    pthread_mutex_lock(&emu_dev_lock);
    emu_dev_release_locked(dev);
    pthread_mutex_unlock(&emu_dev_lock);
}

/* ------------------------------------------------------------------------
 * Contexts of the devices
 * ------------------------------------------------------------------------ */
emu_ctx_t *emu_ctx_check(struct ibv_context *ctx, const char *what)
{
    if ((ctx == NULL) || (emu_dev_of(ctx->device) == NULL) ||
        (ctx->abi_compat != __VERBS_ABI_IS_EXTENDED)) {
        emu_error("%s: context %p is not one of the emulation", what,
                  (void *)ctx);
        errno = EINVAL;
        return NULL;
    }
    return emu_ctx(ctx);
}

/* ------------------------------------------------------------------------
 * The device's QP map (completions name QPs by number)
 * ------------------------------------------------------------------------ */
void emu_qp_map_add(emu_dev_t *dev, emu_qp_t *qp)
{
    unsigned b = qp->send_num % EMU_QP_MAP_SIZE;

    pthread_mutex_lock(&dev->qp_lock);
    qp->map_next   = dev->qp_map[b];
    dev->qp_map[b] = qp;
    pthread_mutex_unlock(&dev->qp_lock);
}

void emu_qp_map_del(emu_dev_t *dev, emu_qp_t *qp)
{
    unsigned b = qp->send_num % EMU_QP_MAP_SIZE;
    emu_qp_t **pp;

    pthread_mutex_lock(&dev->qp_lock);
    for (pp = &dev->qp_map[b]; *pp != NULL; pp = &(*pp)->map_next) {
        if (*pp == qp) {
            *pp = qp->map_next;
            break;
        }
    }
    pthread_mutex_unlock(&dev->qp_lock);
}

emu_qp_t *emu_qp_find(emu_dev_t *dev, uint32_t qp_num)
{
    emu_qp_t *qp;

    pthread_mutex_lock(&dev->qp_lock);
    for (qp = dev->qp_map[qp_num % EMU_QP_MAP_SIZE]; qp != NULL;
         qp = qp->map_next) {
        if (qp->send_num == qp_num) {
            break;
        }
    }
    pthread_mutex_unlock(&dev->qp_lock);
    return qp;
}
