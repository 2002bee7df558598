/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: contexts, opened and closed.  A context holds its
 * device's soft device (emu_dev.c) from open to close, and its ops are
 * those of every object file, installed here at open, and for what is
 * not modelled those of emu_ctx_unsup.c, so that no op a verb of
 * rdma-core's headers calls is NULL: the top of the emulation, above
 * every object it hands the context's calls to.
 */
#include "emu/emu_raw.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

struct ibv_context *emu_open(struct ibv_device *ibdev, bool devx)
{
    emu_dev_t *dev = emu_dev_of(ibdev);
    struct ibv_context *ctx;
    emu_ctx_t *ectx;
    int ret;

    if (dev == NULL) {
        emu_error("open: %p is not a device of the emulation", (void *)ibdev);
        errno = EINVAL;
        return NULL;
    }
    ectx = calloc(1, sizeof(*ectx));
    if (ectx == NULL) {
        emu_error("%s: open: out of memory", ibdev->name);
        errno = ENOMEM;
        return NULL;
    }
    ctx           = &ectx->vctx.context;
    ctx->cmd_fd   = eventfd(0, EFD_CLOEXEC);
    ctx->async_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE); /* emu_async.c */
    if ((ctx->cmd_fd < 0) || (ctx->async_fd < 0)) {
        ret = errno;
        emu_error("%s: open: no file descriptors (%s)", ibdev->name,
                  strerror(ret));
        goto err_fds;
    }

    ret = emu_dev_acquire(dev);
    if (ret != 0) {
        goto err_fds;
    }

    emu_async_init(ectx);
    ectx->dev             = dev;
    ectx->devx            = devx;
    ectx->vctx.sz         = sizeof(ectx->vctx);
    ctx->device           = ibdev;
    ctx->abi_compat       = __VERBS_ABI_IS_EXTENDED;
    ctx->num_comp_vectors = 1;
    emu_ctx_set_post_ops(ctx);
    pthread_mutex_init(&ctx->mutex, NULL);
    emu_ctx_set_query_ops(&ectx->vctx);
    emu_ctx_set_cq_ops(&ectx->vctx);
    emu_ctx_set_srq_ops(&ectx->vctx);
    emu_ctx_set_qp_ops(&ectx->vctx);
    emu_ctx_set_unsup_ops(&ectx->vctx);
    return ctx;

err_fds:
    if (ctx->cmd_fd >= 0) {
        close(ctx->cmd_fd);
    }
    if (ctx->async_fd >= 0) {
        close(ctx->async_fd);
    }
    free(ectx);
    errno = ret;
    return NULL;
}

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
    /* rdma-core 44's mlx5 asks for a DEVX context first; the emulation
     * always grants one */
    return emu_open(device, true);
}

int ibv_close_device(struct ibv_context *context)
{
    emu_ctx_t *ectx = emu_ctx_check(context, "ibv_close_device");

    if (ectx == NULL) {
        return 0; /* rdma-core's close always returns 0 */
    }
    emu_raw_uar_put(ectx);
    emu_dev_release(ectx->dev);
    close(context->cmd_fd);
    close(context->async_fd);
    emu_async_fini(ectx);
    pthread_mutex_destroy(&context->mutex);
    free(ectx);
    return 0;
}
