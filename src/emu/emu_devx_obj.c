/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the list of DEVX objects, user memory, UAR pages and
 * event channels (emu_devx.h); the object commands are emu_devx_cmd.c's.
 *
 *  - the objects created: their list, which events and the calls naming
 *    an object find it in;
 *  - mlx5dv_devx_umem_reg: remembers [addr, addr + size) under a umem id
 *    that commands name (a send queue, a doorbell record); the memory
 *    stays the application's and must outlive the objects using it, as
 *    the kernel's pin of it does on hardware;
 *  - mlx5dv_devx_alloc_uar: the context's UAR page (emu_raw.h), whose
 *    stores are doorbells; BlueFlame and non-cached allocations both give
 *    it, its page id 1;
 *  - event channels: a pipe whose read end is the channel's fd.  Events are
 *    delivered without their data (MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_
 *    OMIT_DATA, the only mode modelled): each is the 8-byte cookie of the
 *    subscription, read by mlx5dv_devx_get_event.  Modelled event: an
 *    SRQ-attached QP's last WQE reached (type 0x13), raised when the QP is
 *    moved to the error state.
 */
#include "emu/emu_devx.h"
#include "emu/emu_dv.h"
#include "emu/emu_raw.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define EMU_UAR_PAGE_ID 1u

/* what the calls that carry no command show emu_devx_ctx */
static const uint8_t emu_no_cmd[EMU_CMD_HDR];

/* --- umem --------------------------------------------------------------- */

typedef struct emu_umem {
    struct mlx5dv_devx_umem umem; /* first: the application's handle */
    emu_ctx_t *ctx;
    uint8_t *addr;
    size_t size;
    struct emu_umem *next;
} emu_umem_t;

/* umems, objects and channels: every list and subscription below */
static pthread_mutex_t emu_devx_lock = PTHREAD_MUTEX_INITIALIZER;
static emu_umem_t *emu_umems;
static uint32_t emu_umem_ids;
static struct mlx5dv_devx_obj *emu_objs;

struct mlx5dv_devx_umem *dcx_emu_mlx5dv_devx_umem_reg(struct ibv_context *ctx,
                                                      void *addr, size_t size,
                                                      uint32_t access)
{
    emu_ctx_t *ectx;
    emu_umem_t *u;

    ectx = emu_devx_ctx(ctx, "mlx5dv_devx_umem_reg", emu_no_cmd, EMU_CMD_HDR,
                        emu_no_cmd, EMU_CMD_HDR);
    if (ectx == NULL) {
        return NULL;
    }
    if ((addr == NULL) || (size == 0) ||
        ((uintptr_t)addr + size < (uintptr_t)addr)) {
        emu_error("%s: mlx5dv_devx_umem_reg: no memory at %p, %zu bytes",
                  ctx->device->name, addr, size);
        errno = EINVAL;
        return NULL;
    }
    (void)access; /* the emulation reads and writes it as the HCA may */
    u = calloc(1, sizeof(*u));
    if (u == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    u->ctx  = ectx;
    u->addr = addr;
    u->size = size;
    pthread_mutex_lock(&emu_devx_lock);
    u->umem.umem_id = ++emu_umem_ids;
    u->next         = emu_umems;
    emu_umems       = u;
    pthread_mutex_unlock(&emu_devx_lock);
    return &u->umem;
}

int dcx_emu_mlx5dv_devx_umem_dereg(struct mlx5dv_devx_umem *umem)
{
    emu_umem_t **p, *u;

    pthread_mutex_lock(&emu_devx_lock);
    for (p = &emu_umems; (u = *p) != NULL; p = &u->next) {
        if (&u->umem == umem) {
            *p = u->next;
            break;
        }
    }
    pthread_mutex_unlock(&emu_devx_lock);
    if (u == NULL) {
        emu_error("mlx5dv_devx_umem_dereg: %p is not a umem of the emulation",
                  (void *)umem);
        errno = EINVAL;
        return EINVAL;
    }
    free(u);
    return 0;
}

int emu_devx_umem_find(emu_ctx_t *ctx, uint32_t id, uint64_t off, uint64_t len,
                       uint8_t **addr_p)
{
    emu_umem_t *u;
    int ret = ENOENT;

    pthread_mutex_lock(&emu_devx_lock);
    for (u = emu_umems; u != NULL; u = u->next) {
        if ((u->umem.umem_id == id) && (u->ctx == ctx)) {
            ret = ((off <= u->size) && (len <= u->size - off)) ? 0 : ERANGE;
            if (ret == 0) {
                *addr_p = u->addr + off;
            }
            break;
        }
    }
    pthread_mutex_unlock(&emu_devx_lock);
    return ret;
}

/* --- UAR ---------------------------------------------------------------- */

struct mlx5dv_devx_uar *dcx_emu_mlx5dv_devx_alloc_uar(struct ibv_context *ctx,
                                                      uint32_t flags)
{
    struct mlx5dv_devx_uar *uar;
    emu_ctx_t *ectx;
    uint8_t *page;

    ectx = emu_devx_ctx(ctx, "mlx5dv_devx_alloc_uar", emu_no_cmd, EMU_CMD_HDR,
                        emu_no_cmd, EMU_CMD_HDR);
    if (ectx == NULL) {
        return NULL;
    }
    if ((flags != MLX5DV_UAR_ALLOC_TYPE_BF) &&
        (flags != MLX5DV_UAR_ALLOC_TYPE_NC)) {
        emu_error("%s: mlx5dv_devx_alloc_uar: flags 0x%x (BF 0x%x or NC "
                  "0x%x)",
                  ctx->device->name, flags, MLX5DV_UAR_ALLOC_TYPE_BF,
                  MLX5DV_UAR_ALLOC_TYPE_NC);
        errno = EINVAL;
        return NULL;
    }
    pthread_mutex_lock(&emu_raw_lock);
    page = emu_raw_uar(ectx);
    pthread_mutex_unlock(&emu_raw_lock);
    uar = calloc(1, sizeof(*uar));
    if ((page == NULL) || (uar == NULL)) {
        free(uar);
        errno = ENOMEM;
        return NULL;
    }
    uar->reg_addr  = page + EMU_RAW_BF_OFF;
    uar->base_addr = page;
    uar->page_id   = EMU_UAR_PAGE_ID;
    uar->mmap_off  = 0;
    return uar;
}

void dcx_emu_mlx5dv_devx_free_uar(struct mlx5dv_devx_uar *uar)
{
    free(uar); /* the page stays the context's */
}

/* --- event channels ----------------------------------------------------- */

struct emu_devx_channel {
    struct mlx5dv_devx_event_channel ch; /* first: the application's */
    emu_ctx_t *ctx;
    int wfd;
};

struct mlx5dv_devx_event_channel *
dcx_emu_mlx5dv_devx_create_event_channel(struct ibv_context *context, int flags)
{
    struct emu_devx_channel *c;
    emu_ctx_t *ectx;
    int fds[2];

    ectx = emu_devx_ctx(context, "mlx5dv_devx_create_event_channel", emu_no_cmd,
                        EMU_CMD_HDR, emu_no_cmd, EMU_CMD_HDR);
    if (ectx == NULL) {
        return NULL;
    }
    if (flags != MLX5DV_DEVX_CREATE_EVENT_CHANNEL_FLAGS_OMIT_EV_DATA) {
        emu_error("%s: mlx5dv_devx_create_event_channel: flags 0x%x: events "
                  "with their data are not modelled (OMIT_DATA only)",
                  context->device->name, flags);
        errno = EOPNOTSUPP;
        return NULL;
    }
    c = calloc(1, sizeof(*c));
    if (c == NULL) {
        errno = ENOMEM;
        return NULL;
    }
    if (pipe2(fds, O_CLOEXEC) != 0) {
        emu_error("%s: mlx5dv_devx_create_event_channel: pipe: %m",
                  context->device->name);
        free(c);
        return NULL;
    }
    /* a full channel drops events rather than block the device */
    (void)fcntl(fds[1], F_SETFL, O_NONBLOCK);
    c->ch.fd = fds[0];
    c->wfd   = fds[1];
    c->ctx   = ectx;
    return &c->ch;
}

void dcx_emu_mlx5dv_devx_destroy_event_channel(struct mlx5dv_devx_event_channel
                                                   *ch)
{
    struct emu_devx_channel *c = (struct emu_devx_channel *)ch;
    struct mlx5dv_devx_obj *o;
    unsigned i;

    if (c == NULL) {
        return;
    }
    pthread_mutex_lock(&emu_devx_lock);
    for (o = emu_objs; o != NULL; o = o->next) {
        for (i = 0; i < EMU_DEVX_MAX_SUBS; ++i) {
            if (o->subs[i].ch == c) {
                o->subs[i].ch = NULL;
            }
        }
    }
    pthread_mutex_unlock(&emu_devx_lock);
    close(c->ch.fd);
    close(c->wfd);
    free(c);
}

int dcx_emu_mlx5dv_devx_subscribe_devx_event(
    struct mlx5dv_devx_event_channel *ch, struct mlx5dv_devx_obj *obj,
    uint16_t events_sz, uint16_t events_num[], uint64_t cookie)
{
    struct emu_devx_channel *c = (struct emu_devx_channel *)ch;
    unsigned i, n = events_sz / sizeof(uint16_t), slot;

    if ((c == NULL) || (obj == NULL) || (events_num == NULL) || (n == 0)) {
        emu_error("mlx5dv_devx_subscribe_devx_event: no channel, object or "
                  "event (unaffiliated events are not modelled)");
        errno = EINVAL;
        return EINVAL;
    }
    if (emu_devx_obj_check(obj, "mlx5dv_devx_subscribe_devx_event") == NULL) {
        return EINVAL;
    }
    for (i = 0; i < n; ++i) {
        if (events_num[i] != EMU_DEVX_EV_SRQ_LAST_WQE) {
            emu_error("mlx5dv_devx_subscribe_devx_event: event type 0x%x is "
                      "not modelled (0x%x, an SRQ-attached QP's last WQE)",
                      events_num[i], EMU_DEVX_EV_SRQ_LAST_WQE);
            errno = EINVAL;
            return EINVAL;
        }
    }
    pthread_mutex_lock(&emu_devx_lock);
    for (i = 0; i < n; ++i) {
        for (slot = 0;
             (slot < EMU_DEVX_MAX_SUBS) && (obj->subs[slot].ch != NULL);
             ++slot) {
        }
        if (slot == EMU_DEVX_MAX_SUBS) {
            pthread_mutex_unlock(&emu_devx_lock);
            emu_error("mlx5dv_devx_subscribe_devx_event: object 0x%x has %u "
                      "subscriptions already",
                      obj->id, EMU_DEVX_MAX_SUBS);
            errno = ENOSPC;
            return ENOSPC;
        }
        obj->subs[slot].ch     = c;
        obj->subs[slot].event  = events_num[i];
        obj->subs[slot].cookie = cookie;
    }
    pthread_mutex_unlock(&emu_devx_lock);
    return 0;
}

ssize_t dcx_emu_mlx5dv_devx_get_event(struct mlx5dv_devx_event_channel *ch,
                                      struct mlx5dv_devx_async_event_hdr *data,
                                      size_t len)
{
    ssize_t n;

    if ((ch == NULL) || (data == NULL) || (len < sizeof(*data))) {
        emu_error("mlx5dv_devx_get_event: no channel, or room for %zu bytes "
                  "(an event takes %zu)",
                  len, sizeof(*data));
        errno = EINVAL;
        return -1;
    }
    n = read(ch->fd, data, sizeof(*data));
    if ((n >= 0) && (n != (ssize_t)sizeof(*data))) {
        errno = EIO; /* the writer writes whole events */
        return -1;
    }
    return n;
}

/* emu_devx_lock held */
static void emu_devx_event_locked(struct mlx5dv_devx_obj *obj, uint16_t event)
{
    unsigned i;
    ssize_t n;

    for (i = 0; i < EMU_DEVX_MAX_SUBS; ++i) {
        if ((obj->subs[i].ch != NULL) && (obj->subs[i].event == event)) {
            n = write(obj->subs[i].ch->wfd, &obj->subs[i].cookie,
                      sizeof(obj->subs[i].cookie));
            if (n != (ssize_t)sizeof(obj->subs[i].cookie)) {
                emu_warn("DEVX event 0x%x of object 0x%x lost: its channel "
                         "is full",
                         event, obj->id);
            }
        }
    }
}

void emu_devx_event(struct mlx5dv_devx_obj *obj, uint16_t event)
{
    pthread_mutex_lock(&emu_devx_lock);
    emu_devx_event_locked(obj, event);
    pthread_mutex_unlock(&emu_devx_lock);
}

/* --- objects ------------------------------------------------------------ */

void emu_devx_obj_link(struct mlx5dv_devx_obj *obj)
{
    pthread_mutex_lock(&emu_devx_lock);
    obj->next = emu_objs;
    emu_objs  = obj;
    pthread_mutex_unlock(&emu_devx_lock);
}

void emu_devx_obj_unlink(struct mlx5dv_devx_obj *obj)
{
    struct mlx5dv_devx_obj **p;

    pthread_mutex_lock(&emu_devx_lock);
    for (p = &emu_objs; *p != obj; p = &(*p)->next) {
    }
    *p = obj->next;
    pthread_mutex_unlock(&emu_devx_lock);
}

struct mlx5dv_devx_obj *emu_devx_obj_check(struct mlx5dv_devx_obj *obj,
                                           const char *call)
{
    struct mlx5dv_devx_obj *o;

    pthread_mutex_lock(&emu_devx_lock);
    for (o = emu_objs; (o != NULL) && (o != obj); o = o->next) {
    }
    pthread_mutex_unlock(&emu_devx_lock);
    if (o == NULL) {
        emu_error("%s: %p is not a DEVX object of the emulation", call,
                  (void *)obj);
        errno = EINVAL;
    }
    return o;
}

void emu_devx_qp_event(emu_qp_t *qp, uint16_t event)
{
    struct mlx5dv_devx_obj *o;

    pthread_mutex_lock(&emu_devx_lock);
    for (o = emu_objs; (o != NULL) && (o->qp != qp); o = o->next) {
    }
    if (o != NULL) {
        emu_devx_event_locked(o, event);
    }
    pthread_mutex_unlock(&emu_devx_lock);
}
