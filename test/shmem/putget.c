/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * OpenSHMEM put/get over spml ucx: blocking typed and byte-granular
 * put/get of several sizes, single-element p/g, strided iput/iget, and the
 * non-blocking _nbi variants completed by shmem_quiet.
 */
#include "shtest.h"

#define MAXN (1 << 20) /* longs: 8 MiB symmetric buffer */

static long val(int pe, long i, int round)
{
    return ((long)pe << 40) + i * 5 + round;
}

static const long sizes[] = {1, 8, 1000, 8193, 65536, MAXN};
#define NSIZES (int)(sizeof(sizes) / sizeof(sizes[0]))

int main(void)
{
    t_init("putget");
    long *sym = shmem_malloc(MAXN * sizeof(long));
    long *src = malloc(MAXN * sizeof(long));
    long *dst = malloc(MAXN * sizeof(long));
    int right = (t_me + 1) % t_npes, left = (t_me + t_npes - 1) % t_npes;
    if (!sym)
        CHECK_EQ("shmem_malloc", 1, 0);

    for (int round = 0; round < 2; round++) { /* round 1 uses _nbi */
        const char *pn = round ? "put_nbi" : "put";
        const char *gn = round ? "get_nbi" : "get";
        for (int k = 0; k < NSIZES; k++) {
            long n = sizes[k];
            for (long i = 0; i < MAXN; i++)
                sym[i] = -1;
            for (long i = 0; i < n; i++)
                src[i] = val(t_me, i, k + round);
            shmem_barrier_all();
            if (round) {
                shmem_long_put_nbi(sym, src, n, right);
                shmem_quiet();
            } else {
                shmem_long_put(sym, src, n, right);
            }
            shmem_barrier_all();
            for (long i = 0; i < n; i++)
                if (sym[i] != val(left, i, k + round))
                    CHECK_EQ(pn, val(left, i, k + round), sym[i]);
            if (n < MAXN)
                CHECK_EQ(pn, -1, sym[n]);

            /* get back what I put into my right neighbour */
            for (long i = 0; i < n; i++)
                dst[i] = -2;
            if (round) {
                shmem_long_get_nbi(dst, sym, n, right);
                shmem_quiet();
            } else {
                shmem_long_get(dst, sym, n, right);
            }
            for (long i = 0; i < n; i++)
                if (dst[i] != val(t_me, i, k + round))
                    CHECK_EQ(gn, val(t_me, i, k + round), dst[i]);
            shmem_barrier_all();
        }
    }

    /* byte-granular putmem/getmem with odd length and offset */
    {
        char *cs = (char *)src, *cd = (char *)dst, *cy = (char *)sym;
        size_t n = 12345;
        memset(cy, 0, n + 16);
        for (size_t i = 0; i < n; i++)
            cs[i] = (char)(i * 7 + t_me);
        shmem_barrier_all();
        shmem_putmem(cy + 3, cs, n, right);
        shmem_barrier_all();
        for (size_t i = 0; i < n; i++)
            if (cy[3 + i] != (char)(i * 7 + left))
                CHECK_EQ("putmem", (char)(i * 7 + left), cy[3 + i]);
        CHECK_EQ("putmem_before", 0, cy[2]);
        CHECK_EQ("putmem_after", 0, cy[3 + n]);
        shmem_getmem(cd, cy + 3, n, left);
        int ll = (left + t_npes - 1) % t_npes;
        for (size_t i = 0; i < n; i++)
            if (cd[i] != (char)(i * 7 + ll))
                CHECK_EQ("getmem", (char)(i * 7 + ll), cd[i]);
        shmem_barrier_all();
    }

    /* single elements: shmem_int_p / shmem_int_g, 32-bit put */
    {
        static int ip[64];
        static int i32[16];
        int in[16];
        for (int i = 0; i < 16; i++)
            in[i] = t_me * 100 + i;
        shmem_barrier_all();
        for (int p = 0; p < t_npes; p++)
            shmem_int_p(&ip[t_me], 1000 + t_me, p);
        shmem_put32(i32, in, 16, right);
        shmem_barrier_all();
        for (int p = 0; p < t_npes; p++)
            CHECK_EQ("int_p", 1000 + p, ip[p]);
        for (int i = 0; i < 16; i++)
            CHECK_EQ("put32", left * 100 + i, i32[i]);
        for (int p = 0; p < t_npes; p++)
            CHECK_EQ("int_g", 1000 + t_me, shmem_int_g(&ip[t_me], p));
        shmem_barrier_all();
    }

    /* strided: iput every 3rd element, iget every 2nd */
    {
        long n = 1000;
        for (long i = 0; i < 3 * n; i++)
            sym[i] = -1;
        for (long i = 0; i < n; i++)
            src[i] = val(t_me, i, 77);
        shmem_barrier_all();
        shmem_long_iput(sym, src, 3, 1, n, right);
        shmem_barrier_all();
        for (long i = 0; i < 3 * n; i++) {
            long e = (i % 3 == 0) ? val(left, i / 3, 77) : -1;
            if (sym[i] != e)
                CHECK_EQ("iput", e, sym[i]);
        }
        shmem_long_iget(dst, sym, 1, 3, n, right);
        for (long i = 0; i < n; i++)
            if (dst[i] != val(t_me, i, 77))
                CHECK_EQ("iget", val(t_me, i, 77), dst[i]);
        shmem_barrier_all();
    }

    /* many small nbi puts to every PE, one quiet at the end */
    {
        for (long i = 0; i < 64 * t_npes; i++)
            sym[i] = -1;
        shmem_barrier_all();
        for (int p = 0; p < t_npes; p++)
            for (long j = 0; j < 64; j++) {
                src[p * 64 + j] = val(t_me, j, p);
                shmem_long_put_nbi(&sym[t_me * 64 + j], &src[p * 64 + j], 1, p);
            }
        shmem_quiet();
        shmem_barrier_all();
        for (int p = 0; p < t_npes; p++)
            for (long j = 0; j < 64; j++)
                if (sym[p * 64 + j] != val(p, j, t_me))
                    CHECK_EQ("many_put_nbi", val(p, j, t_me), sym[p * 64 + j]);
    }

    shmem_barrier_all();
    shmem_free(sym);
    free(src);
    free(dst);
    t_finish();
    return 0;
}
