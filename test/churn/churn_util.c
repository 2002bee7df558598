/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Peer-churn test: the clock, the log, the watchdog, the payload patterns
 * and the files of the rank directory (churn.h).
 */
#include "churn.h"

double now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

double real_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

void say(const char *fmt, ...)
{
    va_list ap;
    char line[1024];

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    printf("[%8.3f] rank %d: %s\n", now() - g.t0, g.rank, line);
    fflush(stdout);
}

void dump_stacks(void)
{
    char cmd[128];
    const char *env = getenv("CHURN_GDB");

    if ((env == NULL) || (strcmp(env, "1") != 0)) {
        return;
    }
    snprintf(cmd, sizeof(cmd),
             "gdb -p %d -batch -ex 'thread apply all bt' </dev/null 2>&1",
             (int)getpid());
    fflush(stdout);
    if (system(cmd) == -1) {
        say("could not run gdb");
    }
    fflush(stdout);
}

void beat(const char *phase)
{
    if (phase != NULL) {
        snprintf(g.phase, sizeof(g.phase), "%s", phase);
    }
    g_beat_ms = (uint64_t)(now() * 1000);
}

/* a UCX call that does not return is caught here */
void *watchdog(void *arg)
{
    double limit = g.wait_s + 5;

    (void)arg;
    for (;;) {
        usleep(200000);
        if (now() * 1000 - g_beat_ms > limit * 1000) {
            STUCK("no return to the main loop for %.0f s (%s)", limit, g.phase);
        }
    }
    return NULL;
}

static uint64_t mix64(uint64_t x)
{
    x += GOLDEN;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

uint64_t word_at(const void *buf, size_t i)
{
    uint64_t w;

    memcpy(&w, (const uint8_t *)buf + 8 * i, 8);
    return w;
}

/* payload word i: 0 the destination's identity, 1 the source's, then a
 * pattern of (destination, kind, source, sequence) */
static uint64_t expected_word(size_t i, uint64_t dst_nonce, uint64_t src_nonce,
                              int kind, int src, uint64_t seq)
{
    uint64_t key;

    if (i == 0) {
        return dst_nonce;
    } else if (i == 1) {
        return src_nonce;
    }
    key = mix64(dst_nonce ^
                mix64(((uint64_t)kind << 56) ^ ((uint64_t)src << 48) ^ seq));
    return key ^ (i * GOLDEN);
}

void fill(void *buf, size_t len, uint64_t dst_nonce, int kind, uint64_t seq)
{
    size_t i;
    uint64_t w;

    for (i = 0; i < len / 8; i++) {
        w = expected_word(i, dst_nonce, g.nonce, kind, g.rank, seq);
        memcpy((uint8_t *)buf + 8 * i, &w, 8);
    }
}

/* checks a received payload of rank SRC (KIND, SEQ) meant for this rank;
 * a wrong destination identity is a misdelivery, anything else corruption */
void check_payload(const void *buf, size_t len, int kind, int src, uint64_t seq,
                   const char *what)
{
    struct peer *p = &g.peers[src];
    size_t i;
    uint64_t w, e;

    w = word_at(buf, 0);
    if (w != g.nonce) {
        FATAL("MISDELIVERED: %s from rank %d (sequence %" PRIu64
              ", %zu bytes) is addressed to identity 0x%016" PRIx64
              ", this process is 0x%016" PRIx64,
              what, src, seq, len, w, g.nonce);
    }
    for (i = 1; i < len / 8; i++) {
        w = word_at(buf, i);
        e = expected_word(i, g.nonce, p->nonce, kind, src, seq);
        if ((i == 1) && !p->connected) {
            continue; /* its identity is not known yet */
        }
        if (w != e) {
            FATAL("CORRUPT: %s from rank %d (sequence %" PRIu64
                  ", %zu bytes): byte %zu is 0x%016" PRIx64
                  ", expected 0x%016" PRIx64 "%s",
                  what, src, seq, len, 8 * i, w, e,
                  (i == 1) ? " (the sender's identity)" : "");
        }
    }
}

/* ---- files of DIR ---- */

static void path_of(char *buf, size_t size, int rank, const char *suffix)
{
    if (rank < 0) {
        snprintf(buf, size, "%s/%s", g.dir, suffix);
    } else {
        snprintf(buf, size, "%s/%d.%s", g.dir, rank, suffix);
    }
}

int file_exists(int rank, const char *suffix)
{
    char path[4096];
    struct stat st;

    path_of(path, sizeof(path), rank, suffix);
    return stat(path, &st) == 0;
}

void write_file(const char *suffix, const void *data, size_t len)
{
    char path[4096], tmp[4096];
    const uint8_t *p = data;
    ssize_t n;
    int fd;

    path_of(path, sizeof(path), g.rank, suffix);
    snprintf(tmp, sizeof(tmp), "%s/.%d.%s.tmp", g.dir, g.rank, suffix);
    fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) {
        say("cannot create %s: %s", tmp, strerror(errno));
        _exit(2);
    }
    while (len > 0) {
        n = write(fd, p, len);
        if (n <= 0) {
            say("cannot write %s: %s", tmp, strerror(errno));
            _exit(2);
        }
        p += n;
        len -= n;
    }
    if ((close(fd) != 0) || (rename(tmp, path) != 0)) {
        say("cannot publish %s: %s", path, strerror(errno));
        _exit(2);
    }
}

/* the whole file, or NULL; *lenp its length */
uint8_t *read_file(int rank, const char *suffix, size_t *lenp)
{
    char path[4096];
    uint8_t *buf;
    size_t cap = 4096, len = 0;
    ssize_t n;
    int fd;

    path_of(path, sizeof(path), rank, suffix);
    fd = open(path, O_RDONLY);
    if (fd < 0) {
        return NULL;
    }
    buf = malloc(cap + 1);
    for (;;) {
        if (len == cap) {
            cap *= 2;
            buf = realloc(buf, cap + 1);
        }
        n = read(fd, buf + len, cap - len);
        if (n <= 0) {
            break;
        }
        len += n;
    }
    close(fd);
    buf[len] = 0;
    *lenp    = len;
    return buf;
}

void publish_address(void)
{
    struct addr_hdr h = {0};
    size_t len        = sizeof(h) + g.addr_len + g.rkey_len;
    uint8_t *buf      = malloc(len);

    h.magic    = ADDR_MAGIC;
    h.nonce    = g.nonce;
    h.base     = (uintptr_t)g.region;
    h.rank     = g.rank;
    h.addr_len = g.addr_len;
    h.rkey_len = g.rkey_len;
    memcpy(buf, &h, sizeof(h));
    memcpy(buf + sizeof(h), g.addr, g.addr_len);
    memcpy(buf + sizeof(h) + g.addr_len, g.rkey_buf, g.rkey_len);
    write_file("addr", buf, len);
    free(buf);
}
