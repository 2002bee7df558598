/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx benchmark: one column of an N x N matrix of doubles (N elements of 8
 * bytes at a stride of 8N) moved between two processes over dcx, three
 * ways side by side in one run:
 *
 *   key   one put_zcopy of a contiguous vector into the peer's strided
 *         registration of its column (uct_dcx_md_mem_reg_strided): the
 *         layout is handled by the key at the target; the sender posts one
 *         work request of one entry.
 *   pack  the sender packs its column into a contiguous buffer (a loop of
 *         N loads/stores), then one put_zcopy into a contiguous buffer of
 *         the peer.
 *   iov   the sender gathers its column with one uct_iov_t entry per
 *         element: put_zcopy calls of at most max_iov entries each
 *         (ceil(N / max_iov) puts: dcx's max_iov is far below N).
 *
 * The strided side is the target in "key" and the source in "pack"/"iov":
 * either way one end of the transfer is the strided column.  (A strided
 * LOCAL key at the source -- uct_iov_t stride/count -- belongs to the
 * transport's zcopy ops; when they honour it, DCX_BENCH_IOV_STRIDE=1 adds a
 * fourth method "stride": one put_zcopy of one iov {stride 8N, count N}.)
 *
 * Each transfer is posted and waited for (completion + flush); methods
 * alternate within every round; the time printed is the median over the
 * rounds.  The posting code of each method is in its own non-inlined
 * function (bench_post_key, bench_post_pack, bench_post_iov,
 * bench_post_stride), so that valgrind --tool=callgrind
 * --toggle-collect=bench_post_* counts the sender's instructions per
 * transfer (bench/strided.sh does that).
 *
 *   strided [-n N[,N...]] [-r rounds] [-m key,pack,iov] [-c] [-q] [-a]
 *     -m  run only these methods (callgrind counts one method per run)
 *     -a  the target's matrix is device memory (uct_iface_mem_alloc), not
 *         the heap: the soft device's target then copies through it with
 *         memcpy instead of cross-memory calls
 *     -c  counting mode for callgrind: no timing table
 *     -q  one line per N and method, machine readable
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>
#include <uct/dcx/dcx_strided.h>
#include <ucs/async/async_fwd.h>

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_SIZES 16
#define NMETHODS  4

#define DIE(...)                                  \
    do {                                          \
        fprintf(stderr, "strided[%d]: ", g_rank); \
        fprintf(stderr, __VA_ARGS__);             \
        fprintf(stderr, "\n");                    \
        exit(1);                                  \
    } while (0)
#define CHECK_OK(_s, _what)                               \
    do {                                                  \
        ucs_status_t _st = (_s);                          \
        if (_st != UCS_OK) {                              \
            DIE("%s: %s", _what, ucs_status_string(_st)); \
        }                                                 \
    } while (0)

enum {
    M_KEY,
    M_PACK,
    M_IOV,
    M_STRIDE
};
static const char *method_name[NMETHODS] = {"key", "pack", "iov", "stride"};

static int g_rank, g_sock;
static int g_dev_mem; /* -a: the target's matrix is device memory */

typedef struct {
    ucs_async_context_t *async;
    uct_component_h comp;
    uct_md_h md;
    uct_worker_h worker;
    uct_iface_h iface;
    uct_ep_h ep;
    size_t max_iov;
} ctx_t;

/* What the target publishes for one N */
typedef struct {
    char key_rkey[64]; /* strided registration of its column */
    char buf_rkey[64]; /* contiguous buffer of N doubles */
    uint64_t buf_addr; /* its address */
} target_keys_t;

static void xfer(void *buf, size_t len, int send)
{
    char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = send ? write(g_sock, p, len) : read(g_sock, p, len);
        if (n <= 0) {
            DIE("socket: %s", (n == 0) ? "peer closed" : strerror(errno));
        }
        p += n;
        len -= n;
    }
}

static void open_dcx(ctx_t *c)
{
    uct_component_h *comps;
    uct_component_attr_t cattr;
    uct_md_config_t *mcfg;
    uct_iface_config_t *icfg;
    uct_iface_params_t params;
    uct_iface_attr_t attr;
    unsigned n, i;

    CHECK_OK(uct_query_components(&comps, &n), "components");
    c->comp = NULL;
    for (i = 0; i < n; ++i) {
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        CHECK_OK(uct_component_query(comps[i], &cattr), "component query");
        if (!strcmp(cattr.name, "dcx")) {
            c->comp = comps[i];
        }
    }
    uct_release_component_list(comps);
    if (c->comp == NULL) {
        DIE("no dcx component");
    }
    CHECK_OK(uct_md_config_read(c->comp, NULL, NULL, &mcfg), "md config");
    CHECK_OK(uct_md_open(c->comp, "soft0", mcfg, &c->md), "md open");
    uct_config_release(mcfg);
    CHECK_OK(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                      &c->async),
             "async");
    CHECK_OK(uct_worker_create(c->async, UCS_THREAD_MODE_SINGLE, &c->worker),
             "worker");
    CHECK_OK(uct_md_iface_config_read(c->md, "dcx", NULL, NULL, &icfg),
             "iface config");
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                        UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "dcx";
    params.mode.device.dev_name = "soft0:1";
    CHECK_OK(uct_iface_open(c->md, c->worker, &params, icfg, &c->iface),
             "iface open");
    uct_config_release(icfg);
    uct_iface_progress_enable(c->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    CHECK_OK(uct_iface_query(c->iface, &attr), "iface query");
    c->max_iov = attr.cap.put.max_iov;
}

static void connect_peer(ctx_t *c)
{
    char mine[2][64], peer[2][64];
    uct_ep_params_t params;

    CHECK_OK(uct_iface_get_device_address(c->iface,
                                          (uct_device_addr_t *)mine[0]),
             "dev addr");
    CHECK_OK(uct_iface_get_address(c->iface, (uct_iface_addr_t *)mine[1]),
             "iface addr");
    xfer(mine, sizeof(mine), 1);
    xfer(peer, sizeof(peer), 0);
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = c->iface;
    params.dev_addr   = (uct_device_addr_t *)peer[0];
    params.iface_addr = (uct_iface_addr_t *)peer[1];
    CHECK_OK(uct_ep_create(&params, &c->ep), "ep create");
}

typedef struct {
    uct_completion_t uct;
    ucs_status_t status;
} comp_t;

static void comp_cb(uct_completion_t *self)
{
    ((comp_t *)self)->status = self->status;
}

static void post_one(ctx_t *c, const uct_iov_t *iov, size_t iovcnt,
                     uint64_t raddr, uct_rkey_t rkey, comp_t *comp)
{
    ucs_status_t status;

    while ((status = uct_ep_put_zcopy(c->ep, iov, iovcnt, raddr, rkey,
                                      &comp->uct)) == UCS_ERR_NO_RESOURCE) {
        uct_worker_progress(c->worker);
    }
    if (status == UCS_INPROGRESS) {
        comp->uct.count++;
    } else if (status != UCS_OK) {
        DIE("put_zcopy: %s", ucs_status_string(status));
    }
}

/* The posting code of each method (what callgrind counts) */
__attribute__((noinline)) void bench_post_key(ctx_t *c, double *vec,
                                              uct_mem_h memh, size_t n,
                                              uct_rkey_t rkey, comp_t *comp)
{
    uct_iov_t iov = {vec, n * sizeof(double), memh, 0, 1};

    post_one(c, &iov, 1, 0, rkey, comp);
}

__attribute__((noinline)) void bench_post_pack(ctx_t *c, const double *mat,
                                               size_t col, double *buf,
                                               uct_mem_h memh, size_t n,
                                               uint64_t raddr, uct_rkey_t rkey,
                                               comp_t *comp)
{
    uct_iov_t iov = {buf, n * sizeof(double), memh, 0, 1};
    size_t i;

    for (i = 0; i < n; ++i) {
        buf[i] = mat[i * n + col];
    }
    post_one(c, &iov, 1, raddr, rkey, comp);
}

__attribute__((noinline)) void bench_post_iov(ctx_t *c, double *mat, size_t col,
                                              uct_mem_h memh, size_t n,
                                              uint64_t raddr, uct_rkey_t rkey,
                                              uct_iov_t *iov, comp_t *comp)
{
    size_t i, k, chunk;

    for (i = 0; i < n; i += chunk) {
        chunk = (n - i < c->max_iov) ? n - i : c->max_iov;
        for (k = 0; k < chunk; ++k) {
            iov[k].buffer = &mat[(i + k) * n + col];
            iov[k].length = sizeof(double);
            iov[k].memh   = memh;
            iov[k].stride = 0;
            iov[k].count  = 1;
        }
        post_one(c, iov, chunk, raddr + i * sizeof(double), rkey, comp);
    }
}

__attribute__((noinline)) void bench_post_stride(ctx_t *c, double *mat,
                                                 size_t col, uct_mem_h memh,
                                                 size_t n, uint64_t raddr,
                                                 uct_rkey_t rkey, comp_t *comp)
{
    uct_iov_t iov = {&mat[col], sizeof(double), memh, n * sizeof(double), n};

    post_one(c, &iov, 1, raddr, rkey, comp);
}

static void wait_done(ctx_t *c, comp_t *comp)
{
    ucs_status_t status;

    while (comp->uct.count > 1) {
        uct_worker_progress(c->worker);
    }
    /* count stays above 0, so func is never called: UCT records an error
     * in uct.status */
    if (comp->uct.status != UCS_OK) {
        DIE("transfer failed: %s", ucs_status_string(comp->uct.status));
    }
    while ((status = uct_ep_flush(c->ep, 0, NULL)) != UCS_OK) {
        if ((status != UCS_INPROGRESS) && (status != UCS_ERR_NO_RESOURCE)) {
            DIE("flush: %s", ucs_status_string(status));
        }
        uct_worker_progress(c->worker);
    }
}

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x < y) ? -1 : (x > y);
}

/* Target side of one N: registers, publishes the keys, waits for the
 * sender's "done" and checks the last transfers landed */
static void target(ctx_t *c, size_t n)
{
    double *mat = NULL;
    double *buf = calloc(n, sizeof(double));
    uct_mem_h mat_memh, buf_memh, key;
    uct_allocated_memory_t am;
    uct_dcx_strided_desc_t d;
    target_keys_t keys;
    struct pollfd pfd = {.fd = g_sock, .events = POLLIN};
    unsigned spin;
    char done;
    size_t i, col = n / 2;

    if (g_dev_mem) {
        /* allocated and registered by the device: the soft device copies
         * into it with memcpy, not with cross-memory calls */
        CHECK_OK(uct_iface_mem_alloc(c->iface, n * n * sizeof(double),
                                     UCT_MD_MEM_ACCESS_ALL, "strided matrix",
                                     &am),
                 "matrix alloc");
        if (am.method != UCT_ALLOC_METHOD_MD) {
            DIE("N = %zu: the matrix is not device memory", n);
        }
        mat      = am.address;
        mat_memh = am.memh;
        memset(mat, 0, n * n * sizeof(double));
    } else {
        mat = calloc(n * n, sizeof(double));
    }
    if ((mat == NULL) || (buf == NULL)) {
        DIE("out of memory for N = %zu", n);
    }
    if (!g_dev_mem) {
        CHECK_OK(uct_md_mem_reg(c->md, mat, n * n * sizeof(double),
                                UCT_MD_MEM_ACCESS_ALL, &mat_memh),
                 "reg matrix");
    }
    CHECK_OK(uct_md_mem_reg(c->md, buf, n * sizeof(double),
                            UCT_MD_MEM_ACCESS_ALL, &buf_memh),
             "reg buffer");
    memset(&d, 0, sizeof(d));
    d.base      = &mat[col];
    d.elem_size = sizeof(double);
    d.stride    = n * sizeof(double);
    d.count     = n;
    CHECK_OK(uct_dcx_md_mem_reg_strided(c->md, &d, mat_memh,
                                        UCT_MD_MEM_ACCESS_REMOTE_PUT, &key),
             "strided registration");
    CHECK_OK(uct_md_mkey_pack(c->md, key, keys.key_rkey), "pack");
    CHECK_OK(uct_md_mkey_pack(c->md, buf_memh, keys.buf_rkey), "pack");
    keys.buf_addr = (uintptr_t)buf;
    xfer(&keys, sizeof(keys), 1);

    /* progress as an application waiting for data does; the socket that
     * says the sender is done is looked at once per 256 progress calls (a
     * system call per call kept the transfers that need this CPU, the
     * key's, waiting behind it) */
    do {
        for (spin = 0; spin < 256; ++spin) {
            uct_worker_progress(c->worker);
        }
    } while (poll(&pfd, 1, 0) == 0);
    xfer(&done, 1, 0); /* the methods that ran, a bit each */
    /* the last round wrote i + 1 through the key, i + 0.5 into the buffer */
    for (i = 0; i < n; ++i) {
        if (((done & (1u << M_KEY)) && (mat[i * n + col] != i + 1.0)) ||
            ((done & ~(1u << M_KEY)) && (buf[i] != i + 0.5)) ||
            ((col > 0) && (mat[i * n + col - 1] != 0.0))) {
            DIE("N = %zu: element %zu is %g / %g, expected %g / %g", n, i,
                mat[i * n + col], buf[i], i + 1.0, i + 0.5);
        }
    }
    xfer(&done, 1, 1);
    CHECK_OK(uct_md_mem_dereg(c->md, key), "dereg key");
    CHECK_OK(uct_md_mem_dereg(c->md, buf_memh), "dereg buffer");
    if (g_dev_mem) {
        uct_iface_mem_free(&am);
    } else {
        CHECK_OK(uct_md_mem_dereg(c->md, mat_memh), "dereg matrix");
        free(mat);
    }
    free(buf);
}

static void sender(ctx_t *c, size_t n, int rounds, int counting, int quiet,
                   int with_stride, unsigned mask)
{
    double *mat    = malloc(n * n * sizeof(double));
    double *vec    = malloc(n * sizeof(double));
    double *pk     = malloc(n * sizeof(double));
    uct_iov_t *iov = malloc(c->max_iov * sizeof(*iov));
    double *t[NMETHODS], med[NMETHODS], t0;
    uct_mem_h mat_memh, vec_memh, pk_memh;
    uct_rkey_bundle_t key_rkb, buf_rkb;
    target_keys_t keys;
    int r, m, nm = with_stride ? 4 : 3;
    size_t i, col = n / 3;
    comp_t comp;
    char done;

    if ((mat == NULL) || (vec == NULL) || (pk == NULL) || (iov == NULL)) {
        DIE("out of memory for N = %zu", n);
    }
    for (i = 0; i < n * n; ++i) {
        mat[i] = -1.0;
    }
    for (i = 0; i < n; ++i) {
        mat[i * n + col] = i + 0.5; /* the column "pack"/"iov" move */
        vec[i]           = i + 1.0; /* the vector "key" moves */
    }
    CHECK_OK(uct_md_mem_reg(c->md, mat, n * n * sizeof(double),
                            UCT_MD_MEM_ACCESS_ALL, &mat_memh),
             "reg");
    CHECK_OK(uct_md_mem_reg(c->md, vec, n * sizeof(double),
                            UCT_MD_MEM_ACCESS_ALL, &vec_memh),
             "reg");
    CHECK_OK(uct_md_mem_reg(c->md, pk, n * sizeof(double),
                            UCT_MD_MEM_ACCESS_ALL, &pk_memh),
             "reg");
    xfer(&keys, sizeof(keys), 0);
    CHECK_OK(uct_rkey_unpack(c->comp, keys.key_rkey, &key_rkb), "unpack");
    CHECK_OK(uct_rkey_unpack(c->comp, keys.buf_rkey, &buf_rkb), "unpack");
    for (m = 0; m < NMETHODS; ++m) {
        t[m] = calloc(rounds, sizeof(double));
    }

    /* rounds, methods alternating within each; the first round warms up */
    for (r = -1; r < rounds; ++r) {
        for (m = 0; m < nm; ++m) {
            if (!(mask & (1u << m))) {
                continue;
            }
            comp.uct.func   = comp_cb;
            comp.uct.count  = 1;
            comp.uct.status = UCS_OK;
            comp.status     = UCS_OK;
            t0              = now_us();
            switch (m) {
            case M_KEY:
                bench_post_key(c, vec, vec_memh, n, key_rkb.rkey, &comp);
                break;
            case M_PACK:
                bench_post_pack(c, mat, col, pk, pk_memh, n, keys.buf_addr,
                                buf_rkb.rkey, &comp);
                break;
            case M_IOV:
                bench_post_iov(c, mat, col, mat_memh, n, keys.buf_addr,
                               buf_rkb.rkey, iov, &comp);
                break;
            default:
                bench_post_stride(c, mat, col, mat_memh, n, keys.buf_addr,
                                  buf_rkb.rkey, &comp);
                break;
            }
            wait_done(c, &comp);
            if (r >= 0) {
                t[m][r] = now_us() - t0;
            }
        }
    }

    done = (char)(mask & ((1u << nm) - 1));
    xfer(&done, 1, 1);
    xfer(&done, 1, 0); /* the target checked the data */

    for (m = 0; m < nm; ++m) {
        qsort(t[m], rounds, sizeof(double), cmp_double);
        med[m] = t[m][rounds / 2];
    }
    if (quiet) {
        for (m = 0; m < nm; ++m) {
            if (!(mask & (1u << m))) {
                continue;
            }
            printf("N=%zu method=%s median_us=%.2f posts=%zu\n", n,
                   method_name[m], med[m],
                   (m == M_IOV) ? (n + c->max_iov - 1) / c->max_iov : 1);
        }
    } else if (!counting) {
        printf("%6zu  %10.2f  %10.2f  %10.2f  %4zu x %-3zu  %8.2f  %8.2f\n", n,
               med[M_KEY], med[M_PACK], med[M_IOV],
               (n + c->max_iov - 1) / c->max_iov, c->max_iov,
               med[M_PACK] / med[M_KEY], med[M_IOV] / med[M_KEY]);
    }
    fflush(stdout);

    uct_rkey_release(c->comp, &key_rkb);
    uct_rkey_release(c->comp, &buf_rkb);
    CHECK_OK(uct_md_mem_dereg(c->md, pk_memh), "dereg");
    CHECK_OK(uct_md_mem_dereg(c->md, vec_memh), "dereg");
    CHECK_OK(uct_md_mem_dereg(c->md, mat_memh), "dereg");
    for (m = 0; m < NMETHODS; ++m) {
        free(t[m]);
    }
    free(mat);
    free(vec);
    free(pk);
    free(iov);
}

int main(int argc, char **argv)
{
    size_t sizes[MAX_SIZES] = {256, 512, 1024, 2048, 4096, 8192};
    int nsizes = 6, rounds = 51, counting = 0, quiet = 0, opt, sv[2], st, s;
    unsigned mask   = ~0u;
    int with_stride = (getenv("DCX_BENCH_IOV_STRIDE") != NULL) &&
                      !strcmp(getenv("DCX_BENCH_IOV_STRIDE"), "1");
    char fabric[32], *tok, *save;
    ctx_t c;
    pid_t pid;

    while ((opt = getopt(argc, argv, "n:r:m:cqa")) != -1) {
        switch (opt) {
        case 'a':
            g_dev_mem = 1;
            break;
        case 'n':
            nsizes = 0;
            for (tok = strtok_r(optarg, ",", &save);
                 (tok != NULL) && (nsizes < MAX_SIZES);
                 tok = strtok_r(NULL, ",", &save)) {
                sizes[nsizes++] = strtoul(tok, NULL, 0);
            }
            break;
        case 'r':
            rounds = atoi(optarg);
            break;
        case 'm':
            mask = 0;
            for (tok = strtok_r(optarg, ",", &save); tok != NULL;
                 tok = strtok_r(NULL, ",", &save)) {
                for (s = 0; s < NMETHODS; ++s) {
                    if (!strcmp(tok, method_name[s])) {
                        mask |= 1u << s;
                    }
                }
            }
            break;
        case 'c':
            counting = 1;
            break;
        case 'q':
            quiet = 1;
            break;
        default:
            fprintf(stderr,
                    "usage: %s [-n N[,N...]] [-r rounds] "
                    "[-m key,pack,iov,stride] [-c] [-q] [-a]\n",
                    argv[0]);
            return 2;
        }
    }
    if (rounds < 1) {
        rounds = 1;
    }
    for (s = 0; s < nsizes; ++s) {
        if ((sizes[s] < 4) || (sizes[s] > 16384)) {
            fprintf(stderr, "N must be in 4..16384\n");
            return 2;
        }
    }

    snprintf(fabric, sizeof(fabric), "bs%d", (int)getpid());
    setenv("UCX_DCX_SOFT_DEVICES", "1", 1);
    setenv("UCX_DCX_SOFT_FABRIC", fabric, 1);
    /* a column of N = 8192 at a stride of 64 KiB is past the 16-bit
     * interleaved stride: one list entry per element */
    setenv("UCX_DCX_SOFT_MKEY_MAX_ENTRIES", "16384", 0);
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) {
        DIE("socketpair: %s", strerror(errno));
    }
    pid = fork();
    if (pid < 0) {
        DIE("fork: %s", strerror(errno));
    }
    g_rank = (pid == 0) ? 1 : 0;
    g_sock = sv[g_rank];
    close(sv[1 - g_rank]);
    open_dcx(&c);
    connect_peer(&c);

    if ((g_rank == 0) && !counting && !quiet) {
        printf("one column of an N x N matrix of doubles, median of %d "
               "transfers (us), methods alternating\n",
               rounds);
        printf("%6s  %10s  %10s  %10s  %10s  %8s  %8s\n", "N", "key", "pack",
               "iov", "iov puts", "pack/key", "iov/key");
    }
    for (s = 0; s < nsizes; ++s) {
        if (g_rank == 0) {
            sender(&c, sizes[s], rounds, counting, quiet, with_stride, mask);
        } else {
            target(&c, sizes[s]);
        }
    }

    uct_ep_destroy(c.ep);
    uct_iface_close(c.iface);
    uct_worker_destroy(c.worker);
    uct_md_close(c.md);
    ucs_async_context_destroy(c.async);
    if (g_rank == 1) {
        return 0;
    }
    if ((waitpid(pid, &st, 0) != pid) || !WIFEXITED(st) ||
        (WEXITSTATUS(st) != 0)) {
        DIE("the target process failed (status 0x%x)", st);
    }
    return 0;
}
