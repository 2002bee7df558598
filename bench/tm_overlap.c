/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Rendezvous with a receiver that computes: UCP tagged messages of 256 KiB
 * to 16 MiB between two processes (this program forks the sender).  The
 * receiver posts the receive, tells the sender to go, then computes for C
 * microseconds in slices of S microseconds, calling ucp_worker_progress
 * once between slices, and then polls until the receive completes.  It
 * prints, per size and C, the median time from posting to completion
 * (microseconds).  Run it under UCX_TLS=dcx,self with offload on and off
 * (bench/tm.sh does, and prints both side by side).
 *
 * With -W WINDOW, eager bandwidth with the receives posted first, as an
 * MPI program's window of MPI_Irecv: per round the receiver posts WINDOW
 * receives (each its own buffer), tells the sender to go, and waits for
 * them all; the sender sends WINDOW messages.  Every message then arrives
 * expected, which is what offload places in the user's buffer (in
 * ucx_perftest's tag_bw the receiver posts one receive at a time, and most
 * messages arrive unexpected).  Prints, per size, the median MB/s of the
 * rounds (ITERS of them).
 *
 *   tm_overlap [-n ITERS] [-S SLICE_US] [-c "C1 C2 ..."] [-s "SIZE1 ..."]
 *              [-W WINDOW]
 */
#include <ucp/api/ucp.h>

#include <sys/select.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_POINTS 16
#define TAG        0x77ull

static double now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec * 1e-3;
}

static volatile double sink;

/* busy computation for us microseconds */
static void compute(double us)
{
    double end = now_us() + us, x = 1.0;

    while (now_us() < end) {
        for (int i = 0; i < 100; ++i) {
            x = x * 1.000001 + 0.5;
        }
    }
    sink = x;
}

static int rd(int fd, void *buf, size_t len)
{
    char *p = buf;

    while (len > 0) {
        ssize_t n = read(fd, p, len);
        if (n <= 0) {
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int wr(int fd, const void *buf, size_t len)
{
    return (write(fd, buf, len) == (ssize_t)len) ? 0 : -1;
}

static int parse_list(const char *s, size_t *out)
{
    int n = 0;
    char *end;

    while ((*s != '\0') && (n < MAX_POINTS)) {
        out[n++] = strtoull(s, &end, 0);
        if (end == s) {
            return -1;
        }
        s = end;
        while (*s == ' ') {
            ++s;
        }
    }
    return n;
}

static void wait_req(ucp_worker_h w, void *req)
{
    if (UCS_PTR_IS_ERR(req)) {
        fprintf(stderr, "tm_overlap: %s\n",
                ucs_status_string(UCS_PTR_STATUS(req)));
        exit(1);
    }
    if (req == NULL) {
        return;
    }
    while (ucp_request_check_status(req) == UCS_INPROGRESS) {
        ucp_worker_progress(w);
    }
    if (ucp_request_check_status(req) != UCS_OK) {
        fprintf(stderr, "tm_overlap: request failed: %s\n",
                ucs_status_string(ucp_request_check_status(req)));
        exit(1);
    }
    ucp_request_free(req);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

/* Progresses the worker until fd is readable (the peer's byte) */
static void serve_until_readable(ucp_worker_h worker, int fd)
{
    struct timeval tv = {0, 0};
    fd_set fds;

    for (;;) {
        FD_ZERO(&fds);
        FD_SET(fd, &fds);
        if (select(fd + 1, &fds, NULL, NULL, &tv) > 0) {
            return;
        }
        ucp_worker_progress(worker);
    }
}

/* -W: the sender's side of one size: per round, WINDOW sends once the
 * receiver said go */
static int window_send(ucp_worker_h worker, ucp_ep_h ep, int in, char *buf,
                       size_t size, int window, int rounds)
{
    ucp_request_param_t rp;
    void *reqs[1024];
    char go;

    memset(&rp, 0, sizeof(rp));
    for (int r = 0; r < rounds + 1; ++r) {
        serve_until_readable(worker, in); /* the receiver's go */
        if (rd(in, &go, 1)) {
            return -1;
        }
        for (int k = 0; k < window; ++k) {
            reqs[k] = ucp_tag_send_nbx(ep, buf, size, TAG, &rp);
        }
        for (int k = 0; k < window; ++k) {
            wait_req(worker, reqs[k]);
        }
    }
    return 0;
}

/* -W: the receiver's side of one size; prints the median MB/s */
static int window_recv(ucp_worker_h worker, int out, char *buf, size_t size,
                       int window, int rounds)
{
    ucp_request_param_t rp;
    ucp_tag_recv_info_t info;
    void *reqs[1024];
    double t[1001], t0;
    char go = 'g';

    memset(&rp, 0, sizeof(rp));
    for (int r = 0; r < rounds + 1; ++r) {
        for (int k = 0; k < window; ++k) {
            char *b = buf + k * size;

            b[0] = b[size - 1] = 0;
            reqs[k] = ucp_tag_recv_nbx(worker, b, size, TAG, ~0ull, &rp);
            if (UCS_PTR_IS_ERR(reqs[k])) {
                fprintf(stderr, "tm_overlap: recv failed\n");
                return -1;
            }
        }
        t0 = now_us();
        if (wr(out, &go, 1)) {
            return -1;
        }
        for (int k = 0; k < window; ++k) {
            char *b = buf + k * size;

            while (ucp_tag_recv_request_test(reqs[k], &info) ==
                   UCS_INPROGRESS) {
                ucp_worker_progress(worker);
            }
            if ((b[0] != 0x5a) || (b[size - 1] != 0x5a) ||
                (info.length != size)) {
                fprintf(stderr, "tm_overlap: bad data at size %zu\n", size);
                return -1;
            }
            ucp_request_free(reqs[k]);
        }
        if (r > 0) { /* the first is a warm-up */
            t[r - 1] = (double)size * window / (now_us() - t0); /* MB/s */
        }
    }
    qsort(t, rounds, sizeof(t[0]), cmp_double);
    printf("%zu %d %.1f\n", size, window, t[rounds / 2]);
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    size_t sizes[MAX_POINTS] = {262144, 1048576, 4194304, 16777216};
    size_t comps[MAX_POINTS] = {0, 1000, 5000, 20000};
    int nsizes = 4, ncomps = 4, iters = 5, slice = 50, window = 0, opt;
    int to_child[2], to_parent[2];
    ucp_params_t params;
    ucp_worker_params_t wparams;
    ucp_context_h ctx;
    ucp_worker_h worker;
    ucp_address_t *addr;
    size_t addr_len, max_size = 0;
    ucp_ep_params_t ep_params;
    ucp_ep_h ep;
    ucp_request_param_t rp;
    char *buf, *peer_addr, go = 'g';
    pid_t pid;
    int is_sender;

    while ((opt = getopt(argc, argv, "n:S:c:s:W:h")) != -1) {
        switch (opt) {
        case 'W':
            window = atoi(optarg);
            break;
        case 'n':
            iters = atoi(optarg);
            break;
        case 'S':
            slice = atoi(optarg);
            break;
        case 'c':
            ncomps = parse_list(optarg, comps);
            break;
        case 's':
            nsizes = parse_list(optarg, sizes);
            break;
        default:
            fprintf(stderr, "usage: tm_overlap [-n ITERS] [-S SLICE_US] "
                            "[-c \"C_US ...\"] [-s \"SIZE ...\"] "
                            "[-W WINDOW]\n");
            return 2;
        }
    }
    if ((iters <= 0) || (iters > 1000) || (slice <= 0) || (ncomps <= 0) ||
        (nsizes <= 0) || (window < 0) || (window > 1024)) {
        fprintf(stderr, "tm_overlap: bad arguments\n");
        return 2;
    }
    for (int i = 0; i < nsizes; ++i) {
        max_size = (sizes[i] > max_size) ? sizes[i] : max_size;
    }

    if ((pipe(to_child) != 0) || (pipe(to_parent) != 0)) {
        perror("pipe");
        return 1;
    }
    pid       = fork();
    is_sender = (pid == 0);

    memset(&params, 0, sizeof(params));
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    params.features   = UCP_FEATURE_TAG;
    if (ucp_init(&params, NULL, &ctx) != UCS_OK) {
        fprintf(stderr, "tm_overlap: ucp_init failed\n");
        return 1;
    }
    memset(&wparams, 0, sizeof(wparams));
    wparams.field_mask  = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
    wparams.thread_mode = UCS_THREAD_MODE_SINGLE;
    if ((ucp_worker_create(ctx, &wparams, &worker) != UCS_OK) ||
        (ucp_worker_get_address(worker, &addr, &addr_len) != UCS_OK)) {
        fprintf(stderr, "tm_overlap: worker failed\n");
        return 1;
    }
    /* swap addresses */
    {
        int out = is_sender ? to_parent[1] : to_child[1];
        int in  = is_sender ? to_child[0] : to_parent[0];
        size_t peer_len;

        if (wr(out, &addr_len, sizeof(addr_len)) || wr(out, addr, addr_len) ||
            rd(in, &peer_len, sizeof(peer_len))) {
            return 1;
        }
        peer_addr = malloc(peer_len);
        if ((peer_addr == NULL) || rd(in, peer_addr, peer_len)) {
            return 1;
        }
    }
    memset(&ep_params, 0, sizeof(ep_params));
    ep_params.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS;
    ep_params.address    = (ucp_address_t *)peer_addr;
    if (ucp_ep_create(worker, &ep_params, &ep) != UCS_OK) {
        fprintf(stderr, "tm_overlap: ep_create failed\n");
        return 1;
    }
    buf = malloc(max_size * (window ? window : 1));
    if (buf == NULL) {
        return 1;
    }
    memset(buf, is_sender ? 0x5a : 0, max_size * (window ? window : 1));
    memset(&rp, 0, sizeof(rp));

    if (is_sender) {
        for (int s = 0; (window > 0) && (s < nsizes); ++s) {
            if (window_send(worker, ep, to_child[0], buf, sizes[s], window,
                            iters)) {
                return 1;
            }
        }
        for (int s = 0; (window == 0) && (s < nsizes); ++s) {
            for (int c = 0; c < ncomps; ++c) {
                for (int i = 0; i < iters + 1; ++i) {
                    /* serve while waiting for the receiver's go */
                    serve_until_readable(worker, to_child[0]);
                    if (rd(to_child[0], &go, 1)) {
                        return 1;
                    }
                    wait_req(worker,
                             ucp_tag_send_nbx(ep, buf, sizes[s], TAG, &rp));
                }
            }
        }
        /* serve until the receiver is done */
        serve_until_readable(worker, to_child[0]);
        _exit(0);
    }

    if (window > 0) {
        printf("# size window MB/s (median of %d rounds, the receives posted "
               "first)\n",
               iters);
    } else {
        printf("# size compute_us median_us (receiver computes in %d us "
               "slices, %d iterations)\n",
               slice, iters);
    }
    for (int s = 0; (window > 0) && (s < nsizes); ++s) {
        if (window_recv(worker, to_child[1], buf, sizes[s], window, iters)) {
            return 1;
        }
    }
    for (int s = 0; (window == 0) && (s < nsizes); ++s) {
        for (int c = 0; c < ncomps; ++c) {
            double t[1001];

            for (int i = 0; i < iters + 1; ++i) {
                ucp_tag_recv_info_t info;
                double t0, done;
                void *req;

                buf[0] = buf[sizes[s] - 1] = 0;
                req = ucp_tag_recv_nbx(worker, buf, sizes[s], TAG, ~0ull, &rp);
                if (UCS_PTR_IS_ERR(req)) {
                    fprintf(stderr, "tm_overlap: recv failed\n");
                    return 1;
                }
                t0 = now_us();
                if (wr(to_child[1], &go, 1)) {
                    return 1;
                }
                for (double spent = 0; spent < comps[c]; spent += slice) {
                    compute(slice);
                    ucp_worker_progress(worker);
                }
                while (ucp_tag_recv_request_test(req, &info) ==
                       UCS_INPROGRESS) {
                    ucp_worker_progress(worker);
                }
                done = now_us();
                if ((buf[0] != 0x5a) || (buf[sizes[s] - 1] != 0x5a) ||
                    (info.length != sizes[s])) {
                    fprintf(stderr, "tm_overlap: bad data at size %zu\n",
                            sizes[s]);
                    return 1;
                }
                ucp_request_free(req);
                if (i > 0) { /* the first is a warm-up */
                    t[i - 1] = done - t0;
                }
            }
            qsort(t, iters, sizeof(t[0]), cmp_double);
            printf("%zu %zu %.0f\n", sizes[s], comps[c], t[iters / 2]);
            fflush(stdout);
        }
    }
    wr(to_child[1], &go, 1);
    waitpid(pid, NULL, 0);
    ucp_ep_destroy(ep);
    ucp_worker_release_address(worker, addr);
    ucp_worker_destroy(worker);
    ucp_cleanup(ctx);
    free(buf);
    free(peer_addr);
    return 0;
}
