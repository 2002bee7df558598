/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A program built against the system's rdma-core (linked with its
 * libibverbs and libmlx5), as any rdma-core application: lists the devices,
 * and for each mlx5 device opens it and prints "NAME LID STATE".  Run with
 * the emulation's libraries first in LD_LIBRARY_PATH, it shows the
 * emulated devices (test_emu_abi.cc); run without, whatever the machine
 * has.  Exit status 0 when the list could be read.
 */
#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

int main(void)
{
    struct ibv_device **list;
    struct ibv_port_attr port;
    struct ibv_context *ctx;
    int i, num = 0;

    list = ibv_get_device_list(&num);
    if (list == NULL) {
        printf("no device list: %s\n", strerror(errno));
        return 1;
    }
    printf("%d devices\n", num);
    for (i = 0; i < num; ++i) {
        if (!mlx5dv_is_supported(list[i])) {
            printf("%s not mlx5\n", ibv_get_device_name(list[i]));
            continue;
        }
        ctx = ibv_open_device(list[i]);
        if ((ctx == NULL) || (ibv_query_port(ctx, 1, &port) != 0)) {
            printf("%s cannot be opened or queried\n",
                   ibv_get_device_name(list[i]));
            continue;
        }
        printf("%s %u %s\n", ibv_get_device_name(list[i]), port.lid,
               ibv_port_state_str(port.state));
        ibv_close_device(ctx);
    }
    ibv_free_device_list(list);
    return 0;
}
