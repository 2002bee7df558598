/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: queue memory placed as libmlx5 places it (emu_qbuf.h).
 *
 * libmlx5 reads <prefix>_ALLOC_TYPE at each creation (prefix MLX_QP,
 * MLX_CQ or MLX_SRQ), its value compared without case:
 *   ANON           the heap (the default)
 *   HUGE           a SHM_HUGETLB segment of 2 MiB pages; without one the
 *                  creation fails with shmget's errno (ENOMEM when no huge
 *                  page is reserved)
 *   PREFER_HUGE    huge pages, else the heap
 *   CONTIG         physically contiguous pages the kernel maps through the
 *                  device file; mlx5_ib has refused that mapping for years
 *                  (ENOSYS), so the creation fails with ENOSYS
 *   PREFER_CONTIG  contiguous pages, else the heap: the heap
 *   ALL            huge pages, else contiguous ones, else the heap
 * Any other value leaves the default, as does an unset variable.  The
 * default is HUGE instead for a CQ with HUGE_CQ=y and for a QP with
 * HUGE_<type>=y (RC, UC, UD, RAW_ETH; NA for other types).
 *
 * libmlx5 packs the queues of a context into shared segments in 32 KiB
 * chunks; here each object has a segment of its own, rounded up to 2 MiB,
 * so an object may take a huge page more than there.  The segment is
 * marked for removal as soon as it is attached, so that it goes with the
 * last detach (the object's destruction) even if the process dies: the
 * machine keeps no SysV segment of the emulation's.
 */
#include "emu/emu_qbuf.h"
#include "emu/emu.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ipc.h>
#include <sys/shm.h>

#define EMU_QBUF_HPAGE (2ul << 20)
#define EMU_QBUF_PAGE  4096ul

typedef enum {
    EMU_QBUF_ANON,
    EMU_QBUF_HUGE,
    EMU_QBUF_CONTIG,
    EMU_QBUF_PREFER_HUGE,
    EMU_QBUF_PREFER_CONTIG,
    EMU_QBUF_ALL
} emu_qbuf_type_t;

static const struct {
    const char *name;
    emu_qbuf_type_t type;
} emu_qbuf_types[] = {
    {"ANON", EMU_QBUF_ANON},
    {"HUGE", EMU_QBUF_HUGE},
    {"CONTIG", EMU_QBUF_CONTIG},
    {"PREFER_CONTIG", EMU_QBUF_PREFER_CONTIG},
    {"PREFER_HUGE", EMU_QBUF_PREFER_HUGE},
    {"ALL", EMU_QBUF_ALL},
};

static const char *const emu_qbuf_prefix[] = {
    [EMU_QBUF_QP]  = "MLX_QP",
    [EMU_QBUF_CQ]  = "MLX_CQ",
    [EMU_QBUF_SRQ] = "MLX_SRQ",
};

/* The older switch that makes huge pages the default, NULL for none */
static const char *emu_qbuf_huge_key(emu_qbuf_kind_t kind, int qp_type)
{
    if (kind == EMU_QBUF_CQ) {
        return "HUGE_CQ";
    }
    if (kind != EMU_QBUF_QP) {
        return NULL;
    }
    switch (qp_type) {
    case IBV_QPT_RC:
        return "HUGE_RC";
    case IBV_QPT_UC:
        return "HUGE_UC";
    case IBV_QPT_UD:
        return "HUGE_UD";
    case IBV_QPT_RAW_PACKET:
        return "HUGE_RAW_ETH";
    default:
        return "HUGE_NA";
    }
}

static emu_qbuf_type_t emu_qbuf_type(const char *dev, const char *verb,
                                     emu_qbuf_kind_t kind, int qp_type)
{
    const char *key      = emu_qbuf_huge_key(kind, qp_type);
    emu_qbuf_type_t type = EMU_QBUF_ANON;
    const char *env;
    char var[32];
    size_t i;

    env = (key != NULL) ? getenv(key) : NULL;
    if ((env != NULL) && (strcmp(env, "y") == 0)) {
        type = EMU_QBUF_HUGE;
    }
    snprintf(var, sizeof(var), "%s_ALLOC_TYPE", emu_qbuf_prefix[kind]);
    env = getenv(var);
    if (env == NULL) {
        return type;
    }
    for (i = 0; i < sizeof(emu_qbuf_types) / sizeof(emu_qbuf_types[0]); ++i) {
        if (strcasecmp(env, emu_qbuf_types[i].name) == 0) {
            return emu_qbuf_types[i].type;
        }
    }
    emu_warn("%s: %s: %s=%s is none of ANON, HUGE, CONTIG, PREFER_HUGE, "
             "PREFER_CONTIG, ALL; the default placement is kept, as libmlx5 "
             "keeps it",
             dev, verb, var, env);
    return type;
}

/* A segment of 2 MiB pages holding need bytes: 0, or shmget's or shmat's
 * errno */
static int emu_qbuf_huge(size_t need, emu_qbuf_t **out)
{
    size_t len = (need + EMU_QBUF_HPAGE - 1) & ~(EMU_QBUF_HPAGE - 1);
    emu_qbuf_t *qb;
    void *addr;
    int id, ret;

    id = shmget(IPC_PRIVATE, len, SHM_HUGETLB | 0600);
    if (id < 0) {
        return errno;
    }
    addr = shmat(id, NULL, 0);
    ret  = (addr == (void *)-1) ? errno : 0;
    shmctl(id, IPC_RMID, NULL); /* goes with the last detach */
    if (ret != 0) {
        return ret;
    }
    qb = calloc(1, sizeof(*qb));
    if (qb == NULL) {
        shmdt(addr);
        return ENOMEM;
    }
    qb->base = addr;
    qb->len  = len;
    *out     = qb;
    return 0;
}

int emu_qbuf_open(const char *dev, const char *verb, emu_qbuf_kind_t kind,
                  int qp_type, size_t need, emu_qbuf_t **out)
{
    emu_qbuf_type_t type = emu_qbuf_type(dev, verb, kind, qp_type);
    const char *prefix   = emu_qbuf_prefix[kind];
    int ret;

    *out = NULL;
    switch (type) {
    case EMU_QBUF_CONTIG:
        emu_error("%s: %s: %s_ALLOC_TYPE=CONTIG: the kernel maps no "
                  "physically contiguous pages (%s)",
                  dev, verb, prefix, strerror(ENOSYS));
        return ENOSYS;
    case EMU_QBUF_HUGE:
    case EMU_QBUF_PREFER_HUGE:
    case EMU_QBUF_ALL:
        break;
    default:
        return 0; /* the heap */
    }
    if (need == 0) {
        return 0; /* no queue to place */
    }
    ret = emu_qbuf_huge(need, out);
    if (ret == 0) {
        return 0;
    }
    if (type == EMU_QBUF_HUGE) {
        emu_error("%s: %s: %s_ALLOC_TYPE=HUGE: no segment of 2 MiB huge "
                  "pages for %zu bytes (%s)",
                  dev, verb, prefix, need, strerror(ret));
        return ret;
    }
    emu_debug("%s: %s: no 2 MiB huge pages for %zu bytes (%s), the queues "
              "go on the heap",
              dev, verb, need, strerror(ret));
    return 0;
}

void *emu_qbuf_take(emu_qbuf_t *qb, size_t len)
{
    size_t at;

    if (qb == NULL) {
        return NULL;
    }
    at = (qb->used + EMU_QBUF_PAGE - 1) & ~(EMU_QBUF_PAGE - 1);
    if ((at > qb->len) || (len > qb->len - at)) {
        return NULL;
    }
    qb->used = at + len;
    memset(qb->base + at, 0, len);
    return qb->base + at;
}

bool emu_qbuf_owns(const emu_qbuf_t *qb, const void *p)
{
    const uint8_t *b = p;

    return (qb != NULL) && (b >= qb->base) && (b < qb->base + qb->len);
}

void emu_qbuf_reset(emu_qbuf_t *qb)
{
    if (qb != NULL) {
        qb->used = 0;
    }
}

void emu_qbuf_close(emu_qbuf_t *qb)
{
    if (qb == NULL) {
        return;
    }
    if (shmdt(qb->base) != 0) {
        emu_warn("shmdt of a queue segment at %p: %s", (void *)qb->base,
                 strerror(errno));
    }
    free(qb);
}
