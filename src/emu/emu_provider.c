/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the entry points of libibverbs' private node
 * (IBVERBS_PRIVATE_34) that the emulation models.  That node is the
 * interface between libibverbs and its providers; rdma-core 44's tools
 * link it directly (ibv_devinfo calls ibv_query_gid_type there), and a
 * provider library linked by a program (libefa, which perftest links)
 * registers itself through it when it is loaded.
 *
 * The emulation presents its own devices only, so a provider that
 * registers is accepted and remembered by name for the debug log, and
 * never matches a device.  The other functions of the node serve
 * providers bound to a device (the ibv_cmd_* kernel commands, context
 * set-up): no provider is ever bound here, and they fail as not modelled
 * (emu_unsup_verbs.c).
 */
#include "emu/emu.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

/* The first member of rdma-core's struct verbs_device_ops (driver.h, not
 * installed): the provider's name. */
struct emu_provider_ops {
    const char *name;
};

/* rdma-core's enum ibv_gid_type_sysfs (driver.h) */
enum {
    EMU_GID_TYPE_SYSFS_IB_ROCE_V1 = 0,
    EMU_GID_TYPE_SYSFS_ROCE_V2    = 1
};

/* rdma-core's verbs log levels (driver.h) */
enum {
    EMU_VERBS_LOG_ERR  = 1,
    EMU_VERBS_LOG_WARN = 2
};

void verbs_register_driver_34(const struct emu_provider_ops *ops);
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
                       unsigned int index, int *type);
void __verbs_log(struct verbs_context *ctx, uint32_t level, char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

void verbs_register_driver_34(const struct emu_provider_ops *ops)
{
    emu_debug("provider '%s' registered; it matches no emulated device",
              ((ops != NULL) && (ops->name != NULL)) ? ops->name : "?");
}

/* As rdma-core: the type of GID index on the port, from the GID entry; an
 * empty entry reads as IB/RoCE v1; any other failure -1 with errno. */
int ibv_query_gid_type(struct ibv_context *context, uint8_t port_num,
                       unsigned int index, int *type)
{
    struct ibv_gid_entry entry = {0};
    int ret;

    ret = _ibv_query_gid_ex(context, port_num, index, &entry, 0, sizeof(entry));
    if (ret == ENODATA) {
        *type = EMU_GID_TYPE_SYSFS_IB_ROCE_V1;
        return 0;
    }
    if (ret != 0) {
        errno = ret;
        return -1;
    }
    *type = ((entry.gid_type == IBV_GID_TYPE_IB) ||
             (entry.gid_type == IBV_GID_TYPE_ROCE_V1)) ?
                EMU_GID_TYPE_SYSFS_IB_ROCE_V1 :
                EMU_GID_TYPE_SYSFS_ROCE_V2;
    return 0;
}

/* A provider's log line, through the emulation's logger */
void __verbs_log(struct verbs_context *ctx, uint32_t level, char *fmt, ...)
{
    char line[256];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    emu_log((level == EMU_VERBS_LOG_ERR)  ? DCX_LOG_ERROR :
            (level == EMU_VERBS_LOG_WARN) ? DCX_LOG_WARN :
                                            DCX_LOG_DEBUG,
            "%s: %s", (ctx != NULL) ? ctx->context.device->name : "provider",
            line);
}
