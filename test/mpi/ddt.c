/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Derived datatypes over pml ucx: vector, indexed and struct types used on
 * the send side, the receive side and both, small (eager) and large
 * (rendezvous). Every element is checked, and the holes a type skips over
 * must be left untouched on the receive side.
 */
#include "mpitest.h"
#include <stddef.h>

#define HOLE (-7)

static int ev(int i)
{
    return i * 3 + 11;
}

/* Exchange with the partner rank (0<->1, 2<->3): a 'send' then 'recv'. */
static void xchg(const char *test, const void *sb, int sn, MPI_Datatype st,
                 void *rb, int rn, MPI_Datatype rt)
{
    int peer = t_rank ^ 1;
    MPI_Status s;
    if (peer >= t_size)
        return;
    CHECK_MPI(test, MPI_Sendrecv(sb, sn, st, peer, 9, rb, rn, rt, peer, 9,
                                 MPI_COMM_WORLD, &s));
}

static void test_vector(int blocks)
{
    /* 'blocks' blocks of 3 ints, stride 5 */
    MPI_Datatype vec;
    int span = blocks * 5, n = blocks * 3;
    int *strided = malloc(span * sizeof(int)),
        *packed  = malloc(n * sizeof(int));
    MPI_Type_vector(blocks, 3, 5, MPI_INT, &vec);
    MPI_Type_commit(&vec);

    /* strided -> contiguous */
    for (int i = 0; i < span; i++)
        strided[i] = (i % 5 < 3) ? ev((i / 5) * 3 + i % 5) : HOLE;
    for (int i = 0; i < n; i++)
        packed[i] = -1;
    int *rpacked = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++)
        rpacked[i] = -1;
    xchg("vector_send", strided, 1, vec, rpacked, n, MPI_INT);
    if ((t_rank ^ 1) < t_size)
        for (int i = 0; i < n; i++)
            if (rpacked[i] != ev(i))
                CHECK_EQ("vector_send_data", ev(i), rpacked[i]);

    /* contiguous -> strided */
    for (int i = 0; i < n; i++)
        packed[i] = ev(i);
    for (int i = 0; i < span; i++)
        strided[i] = HOLE;
    xchg("vector_recv", packed, n, MPI_INT, strided, 1, vec);
    if ((t_rank ^ 1) < t_size)
        for (int i = 0; i < span; i++) {
            int e = (i % 5 < 3) ? ev((i / 5) * 3 + i % 5) : HOLE;
            if (strided[i] != e)
                CHECK_EQ("vector_recv_data", e, strided[i]);
        }

    /* strided -> strided (non-blocking) */
    int *s2 = malloc(span * sizeof(int));
    for (int i = 0; i < span; i++)
        s2[i] = HOLE;
    if ((t_rank ^ 1) < t_size) {
        MPI_Request r[2];
        MPI_Irecv(s2, 1, vec, t_rank ^ 1, 10, MPI_COMM_WORLD, &r[0]);
        MPI_Isend(strided, 1, vec, t_rank ^ 1, 10, MPI_COMM_WORLD, &r[1]);
        CHECK_MPI("vector_both_wait", MPI_Waitall(2, r, MPI_STATUSES_IGNORE));
        for (int i = 0; i < span; i++)
            if (s2[i] != strided[i])
                CHECK_EQ("vector_both_data", strided[i], s2[i]);
    }
    MPI_Type_free(&vec);
    free(strided);
    free(packed);
    free(rpacked);
    free(s2);
}

static void test_indexed(int reps)
{
    /* irregular blocks: lengths 1,4,2,7 at displacements 0,3,10,14; span 21 */
    int bl[4] = {1, 4, 2, 7}, dp[4] = {0, 3, 10, 14};
    const int per = 14, ext = 21;
    MPI_Datatype idx, idx_r;
    MPI_Type_indexed(4, bl, dp, MPI_INT, &idx);
    /* resize so consecutive elements tile with no gap beyond the span */
    MPI_Type_create_resized(idx, 0, ext * sizeof(int), &idx_r);
    MPI_Type_commit(&idx_r);
    int span = reps * ext, n = reps * per;
    int *sparse = malloc(span * sizeof(int)), *dense = malloc(n * sizeof(int));
    char in[21] = {0};
    for (int b = 0; b < 4; b++)
        for (int j = 0; j < bl[b]; j++)
            in[dp[b] + j] = 1;

    /* expected content of the sparse layout: k-th selected element = ev(k) */
    for (int r = 0, k = 0; r < reps; r++)
        for (int i = 0; i < ext; i++)
            sparse[r * ext + i] = in[i] ? ev(k++) : HOLE;
    for (int i = 0; i < n; i++)
        dense[i] = -1;
    xchg("indexed_send", sparse, reps, idx_r, dense, n, MPI_INT);
    if ((t_rank ^ 1) < t_size)
        for (int i = 0; i < n; i++)
            if (dense[i] != ev(i))
                CHECK_EQ("indexed_send_data", ev(i), dense[i]);

    for (int i = 0; i < n; i++)
        dense[i] = ev(i);
    for (int i = 0; i < span; i++)
        sparse[i] = HOLE;
    xchg("indexed_recv", dense, n, MPI_INT, sparse, reps, idx_r);
    if ((t_rank ^ 1) < t_size)
        for (int r = 0, k = 0; r < reps; r++)
            for (int i = 0; i < ext; i++) {
                int e = in[i] ? ev(k++) : HOLE;
                if (sparse[r * ext + i] != e)
                    CHECK_EQ("indexed_recv_data", e, sparse[r * ext + i]);
            }
    MPI_Type_free(&idx);
    MPI_Type_free(&idx_r);
    free(sparse);
    free(dense);
}

struct particle {
    char kind; /* padding follows */
    double pos[3];
    int id;
    short flags[2];
    long long mass;
};

static void set_particle(struct particle *p, int i, int rank)
{
    memset(p, 0x5a, sizeof(*p)); /* padding gets a fixed junk value */
    p->kind = (char)('a' + (i + rank) % 26);
    for (int d = 0; d < 3; d++)
        p->pos[d] = i * 1.5 + d + rank * 0.25;
    p->id       = i * 10 + rank;
    p->flags[0] = (short)(i & 0x7fff);
    p->flags[1] = (short)-(i & 0x7fff);
    p->mass     = ((long long)i << 33) + rank;
}

static void check_particle(const struct particle *p, int i, int rank)
{
    struct particle e;
    set_particle(&e, i, rank);
    CHECK_EQ("struct_kind", e.kind, p->kind);
    for (int d = 0; d < 3; d++)
        if (p->pos[d] != e.pos[d])
            CHECK_EQ("struct_pos", (long long)(e.pos[d] * 4),
                     (long long)(p->pos[d] * 4));
    CHECK_EQ("struct_id", e.id, p->id);
    CHECK_EQ("struct_flags0", e.flags[0], p->flags[0]);
    CHECK_EQ("struct_flags1", e.flags[1], p->flags[1]);
    CHECK_EQ("struct_mass", e.mass, p->mass);
}

static void test_struct(int n)
{
    int bl[5]          = {1, 3, 1, 2, 1};
    MPI_Aint dp[5]     = {offsetof(struct particle, kind),
                          offsetof(struct particle, pos),
                          offsetof(struct particle, id),
                          offsetof(struct particle, flags),
                          offsetof(struct particle, mass)};
    MPI_Datatype ty[5] = {MPI_CHAR, MPI_DOUBLE, MPI_INT, MPI_SHORT,
                          MPI_LONG_LONG};
    MPI_Datatype st, st_r;
    MPI_Type_create_struct(5, bl, dp, ty, &st);
    MPI_Type_create_resized(st, 0, sizeof(struct particle), &st_r);
    MPI_Type_commit(&st_r);
    int sz;
    MPI_Type_size(st_r, &sz);
    CHECK_EQ("struct_type_size", 1 + 24 + 4 + 4 + 8, sz);

    struct particle *s = malloc(n * sizeof(*s)), *r = malloc(n * sizeof(*r));
    for (int i = 0; i < n; i++)
        set_particle(&s[i], i, t_rank);
    memset(r, 0, n * sizeof(*r));
    xchg("struct_xchg", s, n, st_r, r, n, st_r);
    if ((t_rank ^ 1) < t_size)
        for (int i = 0; i < n; i++)
            check_particle(&r[i], i, t_rank ^ 1);

    /* struct -> packed bytes (MPI_BYTE of the packed size), then unpack locally */
    unsigned char *pk = malloc((size_t)n * sz);
    xchg("struct_to_bytes", s, n, st_r, pk, n * sz, MPI_BYTE);
    if ((t_rank ^ 1) < t_size) {
        int pos = 0;
        memset(r, 0, n * sizeof(*r));
        CHECK_MPI("struct_unpack",
                  MPI_Unpack(pk, n * sz, &pos, r, n, st_r, MPI_COMM_SELF));
        CHECK_EQ("struct_unpack_pos", (long long)n * sz, pos);
        for (int i = 0; i < n; i++)
            check_particle(&r[i], i, t_rank ^ 1);
    }
    MPI_Type_free(&st);
    MPI_Type_free(&st_r);
    free(s);
    free(r);
    free(pk);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "ddt");
    /* small, medium, and large enough for rendezvous */
    const int reps[] = {1, 100, 3000, 100000};
    for (int i = 0; i < 4; i++) {
        test_vector(reps[i]);
        test_indexed(reps[i]);
        test_struct(reps[i]);
    }
    t_finish();
    return 0;
}
