/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx example: two processes exchange a matrix column and a 3-D halo face
 * through strided registrations (include/uct/dcx/dcx_strided.h), with the
 * UCT API over dcx, on the first device its component lists: the soft
 * device soft0 by default, mlx5_0 under "dcx-run --mlx5-emu" (dcx's mlx5
 * backend on the emulated ConnectX, docs/mlx5-emulation.md) or on a host
 * with a ConnectX and UCX_DCX_SOFT_DEVICES=0.
 *
 * Each process owns an N x N matrix of doubles (row-major: a column is N
 * elements of 8 bytes at a stride of 8N) and an NX x NY x NZ array (x
 * fastest: the face x = const is NY x NZ elements, NY at a stride of 8 NX
 * repeated NZ times at a stride of 8 NX NY).  It registers
 *   - its "receive" column and its ghost face x = 0 as strided keys that
 *     the peer PUTs into (one put_zcopy scatters a contiguous buffer), and
 *   - its "send" column and its boundary face x = NX - 2 as strided keys
 *     that the peer GETs from (one get_zcopy gathers them),
 * sends the packed rkeys to the peer, and moves the data in both
 * directions.  Every element is checked, and so is every element next to
 * them that must not change.  Exit status 0 only if all is right.
 *
 * Bootstrapping: the program forks before touching UCX; the two processes
 * swap addresses and rkeys over a socketpair.  The symbols come from
 * linking libuct_dcx.so (-luct_dcx), which also registers the transport
 * with UCX; a program that gets the module from LD_PRELOAD or dlopen()
 * would look them up with dlsym (UCT_DCX_MD_MEM_REG_STRIDED_SYMBOL) -- this
 * one does that too, to show that it works.
 *
 *   strided_exchange [N]      (default 64; NX = NY = NZ = 16)
 *
 * On a ConnectX (and its emulation) a regular pattern's stride is a 16-bit
 * field: N up to 8191 (a column at a stride of 8N < 64 KiB) there; beyond,
 * one entry per element exceeds the device's entries and the registration
 * is refused.
 */
#define _GNU_SOURCE
#include <uct/api/uct.h>
#include <uct/dcx/dcx_strided.h>
#include <ucs/async/async_fwd.h>

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define NX 16
#define NY 16
#define NZ 16

#define CHECK(_cond, ...) \
    do { \
        if (!(_cond)) { \
            fprintf(stderr, "[rank %d] %s:%d: ", g_rank, __FILE__, __LINE__); \
            fprintf(stderr, __VA_ARGS__); \
            fprintf(stderr, "\n"); \
            exit(1); \
        } \
    } while (0)
#define CHECK_OK(_status, _what) \
    CHECK((_status) == UCS_OK, "%s: %s", _what, ucs_status_string(_status))

static int g_rank;
static int g_sock;

/* what each process sends the other */
typedef struct {
    uint32_t dev_len, iface_len;
    char     dev[64], iface[64];
    char     rkey[4][64];   /* recv column, send column, ghost, boundary */
} exchange_t;

typedef struct {
    uct_component_h comp;
    uct_md_h        md;
    ucs_async_context_t *async;
    uct_worker_h    worker;
    uct_iface_h     iface;
    uct_ep_h        ep;
    size_t          rkey_size;
} ctx_t;

static void xfer(void *buf, size_t len, int send)
{
    char *p = buf;
    ssize_t n;

    while (len > 0) {
        n = send ? write(g_sock, p, len) : read(g_sock, p, len);
        CHECK(n > 0, "socket %s: %s", send ? "write" : "read",
              (n == 0) ? "peer closed" : strerror(errno));
        p   += n;
        len -= n;
    }
}

/* Both processes reach this point; progresses while waiting (the soft
 * device's helper serves one-sided operations anyway) */
static void barrier(ctx_t *c)
{
    struct pollfd pfd = { .fd = g_sock, .events = POLLIN };
    char b = 'b';

    xfer(&b, 1, 1);
    while (poll(&pfd, 1, 0) == 0) {
        uct_worker_progress(c->worker);
    }
    xfer(&b, 1, 0);
}

static void open_dcx(ctx_t *c)
{
    uct_component_h *comps;
    unsigned n, i;
    uct_component_attr_t cattr;
    uct_md_config_t *md_config;
    uct_iface_config_t *if_config;
    uct_iface_params_t params;
    uct_md_attr_t md_attr;
    ucs_status_t status;
    char md_name[UCT_MD_NAME_MAX], dev_name[UCT_DEVICE_NAME_MAX];

    CHECK_OK(uct_query_components(&comps, &n), "uct_query_components");
    c->comp = NULL;
    for (i = 0; i < n; ++i) {
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        CHECK_OK(uct_component_query(comps[i], &cattr), "component query");
        if (!strcmp(cattr.name, "dcx")) {
            c->comp = comps[i];
        }
    }
    uct_release_component_list(comps);
    CHECK(c->comp != NULL, "the dcx component is not registered");

    /* the first memory domain (device) the component offers */
    cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    CHECK_OK(uct_component_query(c->comp, &cattr), "component query");
    CHECK(cattr.md_resource_count > 0, "dcx offers no device");
    cattr.md_resources = calloc(cattr.md_resource_count,
                                sizeof(*cattr.md_resources));
    CHECK(cattr.md_resources != NULL, "out of memory");
    cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    CHECK_OK(uct_component_query(c->comp, &cattr), "component query");
    snprintf(md_name, sizeof(md_name), "%s", cattr.md_resources[0].md_name);
    free(cattr.md_resources);
    snprintf(dev_name, sizeof(dev_name), "%s:1", md_name);

    CHECK_OK(uct_md_config_read(c->comp, NULL, NULL, &md_config),
             "md config");
    status = uct_md_open(c->comp, md_name, md_config, &c->md);
    uct_config_release(md_config);
    CHECK(status == UCS_OK, "uct_md_open %s: %s", md_name,
          ucs_status_string(status));
    CHECK_OK(uct_md_query(c->md, &md_attr), "uct_md_query");
    c->rkey_size = md_attr.rkey_packed_size;
    CHECK(c->rkey_size <= 64, "rkey of %zu bytes", c->rkey_size);

    CHECK_OK(ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                      &c->async), "async context");
    CHECK_OK(uct_worker_create(c->async, UCS_THREAD_MODE_SINGLE, &c->worker),
             "worker");
    CHECK_OK(uct_md_iface_config_read(c->md, "dcx", NULL, NULL, &if_config),
             "iface config");
    memset(&params, 0, sizeof(params));
    params.field_mask           = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                                  UCT_IFACE_PARAM_FIELD_DEVICE;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "dcx";
    params.mode.device.dev_name = dev_name;
    status = uct_iface_open(c->md, c->worker, &params, if_config, &c->iface);
    uct_config_release(if_config);
    CHECK_OK(status, "uct_iface_open");
    uct_iface_progress_enable(c->iface,
                              UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
}

static void connect_peer(ctx_t *c, exchange_t *mine, exchange_t *peer)
{
    uct_iface_attr_t attr;
    uct_ep_params_t params;

    CHECK_OK(uct_iface_query(c->iface, &attr), "uct_iface_query");
    mine->dev_len   = attr.device_addr_len;
    mine->iface_len = attr.iface_addr_len;
    CHECK_OK(uct_iface_get_device_address(c->iface,
                                          (uct_device_addr_t*)mine->dev),
             "device address");
    CHECK_OK(uct_iface_get_address(c->iface, (uct_iface_addr_t*)mine->iface),
             "iface address");
    xfer(mine, sizeof(*mine), 1);
    xfer(peer, sizeof(*peer), 0);

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                        UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = c->iface;
    params.dev_addr   = (uct_device_addr_t*)peer->dev;
    params.iface_addr = (uct_iface_addr_t*)peer->iface;
    CHECK_OK(uct_ep_create(&params, &c->ep), "uct_ep_create");
}

typedef struct {
    uct_completion_t uct;
    int              done;
} comp_t;

static void comp_cb(uct_completion_t *self)
{
    comp_t *comp = (comp_t*)self;

    CHECK(self->status == UCS_OK, "transfer failed: %s",
          ucs_status_string(self->status));
    comp->done = 1;
}

/* One zero-copy put or get of len bytes at remote offset 0 of rkey */
static void rma(ctx_t *c, int put, void *buf, size_t len, uct_mem_h memh,
                uct_rkey_t rkey)
{
    comp_t comp = { .uct = { .func = comp_cb, .count = 1 }, .done = 0 };
    uct_iov_t iov = { .buffer = buf, .length = len, .memh = memh,
                      .stride = 0, .count = 1 };
    ucs_status_t status;

    do {
        status = put ? uct_ep_put_zcopy(c->ep, &iov, 1, 0, rkey, &comp.uct) :
                       uct_ep_get_zcopy(c->ep, &iov, 1, 0, rkey, &comp.uct);
        if (status == UCS_ERR_NO_RESOURCE) {
            uct_worker_progress(c->worker);
        }
    } while (status == UCS_ERR_NO_RESOURCE);
    CHECK((status == UCS_OK) || (status == UCS_INPROGRESS), "%s: %s",
          put ? "put_zcopy" : "get_zcopy", ucs_status_string(status));
    if (status == UCS_INPROGRESS) {
        while (!comp.done) {
            uct_worker_progress(c->worker);
        }
    }
    while (uct_ep_flush(c->ep, 0, NULL) == UCS_ERR_NO_RESOURCE) {
        uct_worker_progress(c->worker);
    }
    while (uct_ep_flush(c->ep, 0, NULL) == UCS_INPROGRESS) {
        uct_worker_progress(c->worker);
    }
}

/* The values: who owns the array, which array, where */
static double mval(int rank, size_t r, size_t col)
{
    return rank * 1e8 + r * 1e4 + col;
}

static double aval(int rank, size_t x, size_t y, size_t z)
{
    return 5e8 + rank * 1e7 + x * 1e4 + y * 1e2 + z;
}

static double sent_val(int rank, size_t i)
{
    return -1.0 - rank * 1e6 - i;
}

int main(int argc, char **argv)
{
    size_t N = (argc > 1) ? strtoul(argv[1], NULL, 0) : 64;
    uct_dcx_md_mem_reg_strided_func_t reg_strided;
    exchange_t mine, peer;
    uct_rkey_bundle_t rkb[4];
    uct_mem_h mat_memh, arr_memh, key[4], buf_memh;
    uct_dcx_strided_desc_t d;
    size_t recv_col, send_col, peer_recv_col, peer_send_col;
    size_t r, col, x, y, z, i, face = NY * NZ;
    double *mat, *arr, *buf, expect;
    ctx_t c;
    int sv[2], status;
    char fabric[32];
    pid_t pid;

    CHECK((N >= 4) && (N <= 8192), "N must be in 4..8192");
    snprintf(fabric, sizeof(fabric), "ex%d", (int)getpid());
    /* a soft device on a fabric of this run's own, unless the environment
     * chose another device (dcx-run --mlx5-emu sets UCX_DCX_SOFT_DEVICES=0
     * and the emulated devices' fabric) */
    setenv("UCX_DCX_SOFT_DEVICES", "1", 0);
    setenv("UCX_DCX_SOFT_FABRIC", fabric, 1);
    /* a column of N elements at a stride of 8N: up to N = 8191 one
     * interleaved entry; beyond, one list entry per element */
    setenv("UCX_DCX_SOFT_MKEY_MAX_ENTRIES", "8192", 0);
    CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "socketpair: %s",
          strerror(errno));
    pid = fork();
    CHECK(pid >= 0, "fork: %s", strerror(errno));
    g_rank = (pid == 0) ? 1 : 0;
    g_sock = sv[g_rank];
    close(sv[1 - g_rank]);

    open_dcx(&c);
    connect_peer(&c, &mine, &peer);

    reg_strided = (uct_dcx_md_mem_reg_strided_func_t)
                  dlsym(RTLD_DEFAULT, UCT_DCX_MD_MEM_REG_STRIDED_SYMBOL);
    CHECK(reg_strided == uct_dcx_md_mem_reg_strided,
          "dlsym(%s) did not find the exported symbol",
          UCT_DCX_MD_MEM_REG_STRIDED_SYMBOL);

    /* the arrays, with values naming owner and position */
    mat = malloc(N * N * sizeof(double));
    arr = malloc(NX * NY * NZ * sizeof(double));
    buf = malloc(((N > face) ? N : face) * sizeof(double));
    CHECK((mat != NULL) && (arr != NULL) && (buf != NULL), "out of memory");
    for (r = 0; r < N; ++r) {
        for (col = 0; col < N; ++col) {
            mat[r * N + col] = mval(g_rank, r, col);
        }
    }
    for (i = 0; i < (size_t)NX * NY * NZ; ++i) {
        arr[i] = aval(g_rank, i % NX, (i / NX) % NY, i / (NX * NY));
    }
    CHECK_OK(uct_md_mem_reg(c.md, mat, N * N * sizeof(double),
                            UCT_MD_MEM_ACCESS_ALL, &mat_memh), "reg matrix");
    CHECK_OK(uct_md_mem_reg(c.md, arr, NX * NY * NZ * sizeof(double),
                            UCT_MD_MEM_ACCESS_ALL, &arr_memh), "reg array");
    CHECK_OK(uct_md_mem_reg(c.md, buf, ((N > face) ? N : face) *
                            sizeof(double), UCT_MD_MEM_ACCESS_ALL, &buf_memh),
             "reg buffer");

    /* columns: rank 0 receives into column 1 and sends column 2; rank 1
     * receives into column N - 2 and sends column N - 3 */
    recv_col      = g_rank ? N - 2 : 1;
    send_col      = g_rank ? N - 3 : 2;
    peer_recv_col = g_rank ? 1 : N - 2;
    peer_send_col = g_rank ? 2 : N - 3;
    memset(&d, 0, sizeof(d));
    d.elem_size = sizeof(double);
    d.stride    = N * sizeof(double);
    d.count     = N;
    d.base      = &mat[recv_col];
    CHECK_OK(reg_strided(c.md, &d, mat_memh, UCT_MD_MEM_ACCESS_REMOTE_PUT,
                         &key[0]), "strided recv column");
    d.base = &mat[send_col];
    CHECK_OK(reg_strided(c.md, &d, mat_memh, UCT_MD_MEM_ACCESS_REMOTE_GET,
                         &key[1]), "strided send column");
    /* faces x = 0 (ghost) and x = NX - 2 (boundary) */
    d.elem_size    = sizeof(double);
    d.stride       = NX * sizeof(double);
    d.count        = NY;
    d.block_count  = NZ;
    d.block_stride = NX * NY * sizeof(double);
    d.base         = &arr[0];
    CHECK_OK(reg_strided(c.md, &d, arr_memh, UCT_MD_MEM_ACCESS_REMOTE_PUT,
                         &key[2]), "strided ghost face");
    d.base = &arr[NX - 2];
    CHECK_OK(reg_strided(c.md, &d, arr_memh, UCT_MD_MEM_ACCESS_REMOTE_GET,
                         &key[3]), "strided boundary face");
    for (i = 0; i < 4; ++i) {
        CHECK_OK(uct_md_mkey_pack(c.md, key[i], mine.rkey[i]), "mkey pack");
    }
    xfer(mine.rkey, sizeof(mine.rkey), 1);
    xfer(peer.rkey, sizeof(peer.rkey), 0);
    for (i = 0; i < 4; ++i) {
        CHECK_OK(uct_rkey_unpack(c.comp, peer.rkey[i], &rkb[i]),
                 "rkey unpack");
    }

    /* 1. put a contiguous vector into the peer's receive column */
    for (i = 0; i < N; ++i) {
        buf[i] = sent_val(g_rank, i);
    }
    rma(&c, 1, buf, N * sizeof(double), buf_memh, rkb[0].rkey);
    barrier(&c);
    for (r = 0; r < N; ++r) {
        for (col = 0; col < N; ++col) {
            expect = (col == recv_col) ? sent_val(1 - g_rank, r) :
                     mval(g_rank, r, col);
            CHECK(mat[r * N + col] == expect, "matrix (%zu, %zu) is %.0f, "
                  "expected %.0f", r, col, mat[r * N + col], expect);
        }
    }

    /* 2. get the peer's send column: gathered into a contiguous vector */
    memset(buf, 0, N * sizeof(double));
    rma(&c, 0, buf, N * sizeof(double), buf_memh, rkb[1].rkey);
    for (i = 0; i < N; ++i) {
        expect = mval(1 - g_rank, i, peer_send_col);
        CHECK(buf[i] == expect, "gathered column element %zu is %.0f, "
              "expected %.0f", i, buf[i], expect);
    }
    (void)peer_recv_col;

    /* 3. halo: get the peer's boundary face, put it into the peer's ghost
     * face as the new ghost values it expects (its own boundary plus 0.5) */
    rma(&c, 0, buf, face * sizeof(double), buf_memh, rkb[3].rkey);
    for (z = 0; z < NZ; ++z) {
        for (y = 0; y < NY; ++y) {
            expect = aval(1 - g_rank, NX - 2, y, z);
            CHECK(buf[z * NY + y] == expect, "gathered face (y %zu, z %zu) "
                  "is %.0f, expected %.0f", y, z, buf[z * NY + y], expect);
            buf[z * NY + y] += 0.5;
        }
    }
    barrier(&c);   /* both have read before anyone writes */
    rma(&c, 1, buf, face * sizeof(double), buf_memh, rkb[2].rkey);
    barrier(&c);
    for (z = 0; z < NZ; ++z) {
        for (y = 0; y < NY; ++y) {
            for (x = 0; x < NX; ++x) {
                expect = (x == 0) ? aval(g_rank, NX - 2, y, z) + 0.5 :
                         aval(g_rank, x, y, z);
                CHECK(arr[(z * NY + y) * NX + x] == expect, "array (%zu, "
                      "%zu, %zu) is %.1f, expected %.1f", x, y, z,
                      arr[(z * NY + y) * NX + x], expect);
            }
        }
    }

    /* 4. release: the strided keys before the memory under them */
    barrier(&c);
    for (i = 0; i < 4; ++i) {
        uct_rkey_release(c.comp, &rkb[i]);
        CHECK_OK(uct_md_mem_dereg(c.md, key[i]), "strided dereg");
    }
    CHECK_OK(uct_md_mem_dereg(c.md, buf_memh), "dereg buffer");
    CHECK_OK(uct_md_mem_dereg(c.md, arr_memh), "dereg array");
    CHECK_OK(uct_md_mem_dereg(c.md, mat_memh), "dereg matrix");
    barrier(&c);
    uct_ep_destroy(c.ep);
    uct_iface_close(c.iface);
    uct_worker_destroy(c.worker);
    uct_md_close(c.md);
    ucs_async_context_destroy(c.async);
    free(mat);
    free(arr);
    free(buf);

    if (g_rank == 1) {
        return 0;
    }
    CHECK(waitpid(pid, &status, 0) == pid, "waitpid: %s", strerror(errno));
    CHECK(WIFEXITED(status) && (WEXITSTATUS(status) == 0),
          "rank 1 failed (status 0x%x)", status);
    printf("strided_exchange: N = %zu: column put/get and %dx%dx%d halo face "
           "put/get checked element by element in both processes\n", N, NX,
           NY, NZ);
    return 0;
}
