/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Accumulate-style one-sided operations on every predefined pair type
 * (MPI_FLOAT_INT, MPI_DOUBLE_INT, MPI_LONG_INT, MPI_2INT, MPI_SHORT_INT,
 * MPI_LONG_DOUBLE_INT) with MPI_MINLOC, MPI_MAXLOC, MPI_REPLACE and
 * MPI_NO_OP, and on MPI_FLOAT / MPI_DOUBLE with MPI_SUM, MPI_PROD,
 * MPI_MIN, MPI_MAX, MPI_REPLACE and MPI_NO_OP, through MPI_Get_accumulate,
 * MPI_Fetch_and_op and MPI_Accumulate under MPI_Win_lock_all, each
 * completed with MPI_Win_flush.
 *
 * Part 1 (every rank at once, deterministic): every origin owns one slot
 * of N elements in every target's window, so all ranks hit every target
 * concurrently (osc ucx serialises accumulates per target with a lock word
 * it takes with remote compare-and-swap) while each origin can predict
 * every fetched value and the final contents; the origin checks what it
 * fetched, the target checks its memory, element by element.
 * Part 2 (contention on one element): every rank applies MAXLOC, then SUM
 * (double), to the same element of every target; the final value is
 * checked, and each fetched value must be a state the element can have
 * passed through.
 *
 * Known problems of Open MPI 4.1.4's osc ucx (over any transport; see
 * docs/mpi-rma.md), which this program steers around:
 *  - MPI_Fetch_and_op with MPI_SUM/MPI_REPLACE/MPI_NO_OP is sent as a UCP
 *    integer atomic of the type's size, whatever the type: for float/double
 *    SUM that is an integer add of the bit patterns, and for pair types of
 *    6, 12 or 20 bytes UCP refuses it ("invalid atomic operation datatype:
 *    0x60") and the operation is silently dropped.  Those combinations go
 *    through MPI_Get_accumulate (count 1) instead, which is the same MPI
 *    operation.
 *  - MPI_Get_accumulate/MPI_Accumulate with a reduction op allocate their
 *    temporary buffer from the true extent of the type but use its extent:
 *    for padded pair types (MPI_DOUBLE_INT, MPI_LONG_INT,
 *    MPI_LONG_DOUBLE_INT: true extent < extent) and count > 1 that overruns
 *    the heap.  Those types are therefore used one element per call.
 *  - MPI_Get_accumulate with MPI_REPLACE issues ucp_get_nbi and then
 *    ucp_put_nbi to the same bytes without a fence: the fetched value is
 *    right only where UCP happens to keep them in order.  UCX 1.18's
 *    default (v2) protocols do not over posix,self, so with a UCX that
 *    defaults to them test/ucx-versions.sh runs this program with
 *    UCX_PROTO_ENABLE=n (docs/mpi-rma.md, problem 4).
 *
 * dcx-test-np: 2 3 4
 */
#include "mpitest.h"

#include <stddef.h>

#define N 6 /* elements per slot */

typedef struct {
    float v;
    int i;
} p_float_int;
typedef struct {
    double v;
    int i;
} p_double_int;
typedef struct {
    long v;
    int i;
} p_long_int;
typedef struct {
    int v;
    int i;
} p_2int;
typedef struct {
    short v;
    int i;
} p_short_int;
typedef struct {
    long double v;
    int i;
} p_long_double_int;

/* One pair type: values are small integers, exact in every value type. */
typedef struct {
    const char *name;
    MPI_Datatype dt;
    size_t extent; /* sizeof the C struct */
    size_t ioff;   /* offset of the int index */
    int padded;    /* extent != true extent */
    int size;      /* MPI_Type_size */
    void (*set)(void *p, long v);
    long (*get)(const void *p);
} pair_type_t;

#define PAIR_ACCESSORS(_t, _vt)           \
    static void set_##_t(void *p, long v) \
    {                                     \
        _vt x = (_vt)v;                   \
        memcpy(p, &x, sizeof(x));         \
    }                                     \
    static long get_##_t(const void *p)   \
    {                                     \
        _vt x;                            \
        memcpy(&x, p, sizeof(x));         \
        return (long)x;                   \
    }

PAIR_ACCESSORS(float_int, float)
PAIR_ACCESSORS(double_int, double)
PAIR_ACCESSORS(long_int, long)
PAIR_ACCESSORS(2int, int)
PAIR_ACCESSORS(short_int, short)
PAIR_ACCESSORS(long_double_int, long double)

#define PAIR(_n, _dt, _t)                                                      \
    {                                                                          \
        _n, _dt, sizeof(p_##_t), offsetof(p_##_t, i), 0, 0, set_##_t, get_##_t \
    }

static pair_type_t pairs[] = {
    PAIR("MPI_FLOAT_INT", MPI_FLOAT_INT, float_int),
    PAIR("MPI_DOUBLE_INT", MPI_DOUBLE_INT, double_int),
    PAIR("MPI_LONG_INT", MPI_LONG_INT, long_int),
    PAIR("MPI_2INT", MPI_2INT, 2int),
    PAIR("MPI_SHORT_INT", MPI_SHORT_INT, short_int),
    PAIR("MPI_LONG_DOUBLE_INT", MPI_LONG_DOUBLE_INT, long_double_int),
};
#define NPAIRS (int)(sizeof(pairs) / sizeof(pairs[0]))

#define SLOT_BYTES (N * 32) /* N elements of the largest pair type */

static char test_name[96];
static const char *tn(const char *type, const char *what)
{
    snprintf(test_name, sizeof(test_name), "%s_%s", type, what);
    return test_name;
}

static void *elem(void *base, const pair_type_t *t, int e)
{
    return (char *)base + e * t->extent;
}

static void pset(const pair_type_t *t, void *p, long v, int idx)
{
    memset(p, 0, t->extent);
    t->set(p, v);
    memcpy((char *)p + t->ioff, &idx, sizeof(idx));
}

static int pidx(const pair_type_t *t, const void *p)
{
    int idx;
    memcpy(&idx, (const char *)p + t->ioff, sizeof(idx));
    return idx;
}

/* MINLOC/MAXLOC as MPI defines them: the better value wins, ties keep the
 * smaller index. */
static void model_loc(const pair_type_t *t, void *acc, const void *in,
                      int is_max)
{
    long a = t->get(acc), b = t->get(in);
    int ia = pidx(t, acc), ib = pidx(t, in);
    int take = is_max ? (b > a) : (b < a);

    if (take || ((a == b) && (ib < ia)))
        pset(t, acc, b, ib);
}

static void check_pair(const char *type, const char *what, const pair_type_t *t,
                       const void *got, long v, int idx, int e)
{
    char d[96];

    if ((t->get(got) != v) || (pidx(t, got) != idx)) {
        snprintf(d, sizeof(d),
                 "(element %d: value %ld index %d, expected index %d)", e,
                 t->get(got), pidx(t, got), idx);
        t_fail(tn(type, what), v, t->get(got), d);
    }
}

/* Get_accumulate of elements [0, n) of my slot on target, one call for the
 * whole range if the type allows it, else one call per element. */
static void getacc(const pair_type_t *t, void *orig, void *res, int n,
                   int target, MPI_Aint disp, MPI_Op op, MPI_Win win,
                   const char *what)
{
    if (!t->padded) {
        CHECK_MPI(tn(t->name, what),
                  MPI_Get_accumulate(orig, n, t->dt, res, n, t->dt, target,
                                     disp, n, t->dt, op, win));
        return;
    }
    for (int e = 0; e < n; e++) {
        CHECK_MPI(tn(t->name, what),
                  MPI_Get_accumulate(elem(orig, t, e), 1, t->dt,
                                     elem(res, t, e), 1, t->dt, target,
                                     disp + e * t->extent, 1, t->dt, op, win));
    }
}

/* osc ucx runs Fetch_and_op REPLACE/NO_OP as a UCP atomic of the type's
 * size: only types of 8 bytes without holes survive that (see the header) */
static int fop_native(const pair_type_t *t)
{
    return (t->size == 8) && (t->extent == 8);
}

static long init_v(int origin, int e)
{
    return 10 + 3 * e + origin;
}
static int init_i(int origin, int e)
{
    return 100 + e + origin;
}

/* Part 1: each origin works on its own slot of every target. */
static void test_pair_slots(const pair_type_t *t, char *base, MPI_Win win)
{
    size_t ext = t->extent;
    char *orig = calloc(N, ext), *res = calloc(N, ext);
    /* model[target]: what my slot on target holds */
    char *model = calloc((size_t)t_size * N, ext);

    /* every target initialises every origin's slot */
    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t_rank, 0, win);
    for (int o = 0; o < t_size; o++)
        for (int e = 0; e < N; e++)
            pset(t, base + o * SLOT_BYTES + e * ext, init_v(o, e),
                 init_i(o, e));
    MPI_Win_unlock(t_rank, win);
    MPI_Barrier(MPI_COMM_WORLD);

    CHECK_MPI("lock_all", MPI_Win_lock_all(0, win));
    for (int k = 0; k < t_size; k++) {
        int p         = (t_rank + k) % t_size;
        MPI_Aint disp = (MPI_Aint)t_rank * SLOT_BYTES;
        char *m       = model + (size_t)p * N * ext;

        for (int e = 0; e < N; e++)
            pset(t, m + e * ext, init_v(t_rank, e), init_i(t_rank, e));

        /* MAXLOC: odd elements bigger, even ones equal (index decides) */
        for (int e = 0; e < N; e++)
            pset(t, orig + e * ext, init_v(t_rank, e) + ((e & 1) ? 7 : 0), e);
        getacc(t, orig, res, N, p, disp, MPI_MAXLOC, win,
               "get_accumulate_maxloc");
        CHECK_MPI(tn(t->name, "flush"), MPI_Win_flush(p, win));
        for (int e = 0; e < N; e++) {
            check_pair(t->name, "get_accumulate_maxloc_fetched", t,
                       res + e * ext, t->get(m + e * ext), pidx(t, m + e * ext),
                       e);
            model_loc(t, m + e * ext, orig + e * ext, 1);
        }

        /* MINLOC: element e gets e - 2 (wins for small e) */
        for (int e = 0; e < N; e++)
            pset(t, orig + e * ext, 11 + e, 50 + e);
        getacc(t, orig, res, N, p, disp, MPI_MINLOC, win,
               "get_accumulate_minloc");
        CHECK_MPI(tn(t->name, "flush"), MPI_Win_flush(p, win));
        for (int e = 0; e < N; e++) {
            check_pair(t->name, "get_accumulate_minloc_fetched", t,
                       res + e * ext, t->get(m + e * ext), pidx(t, m + e * ext),
                       e);
            model_loc(t, m + e * ext, orig + e * ext, 0);
        }

        /* Fetch_and_op MINLOC / MAXLOC on elements 0 and 1 */
        pset(t, orig, 1, 7);
        CHECK_MPI(tn(t->name, "fetch_and_op_minloc"),
                  MPI_Fetch_and_op(orig, res, t->dt, p, disp, MPI_MINLOC, win));
        CHECK_MPI(tn(t->name, "flush"), MPI_Win_flush(p, win));
        check_pair(t->name, "fetch_and_op_minloc_fetched", t, res, t->get(m),
                   pidx(t, m), 0);
        model_loc(t, m, orig, 0);

        pset(t, orig, 90, 8);
        CHECK_MPI(tn(t->name, "fetch_and_op_maxloc"),
                  MPI_Fetch_and_op(orig, res, t->dt, p, disp + ext, MPI_MAXLOC,
                                   win));
        CHECK_MPI(tn(t->name, "flush"), MPI_Win_flush(p, win));
        check_pair(t->name, "fetch_and_op_maxloc_fetched", t, res,
                   t->get(m + ext), pidx(t, m + ext), 1);
        model_loc(t, m + ext, orig, 1);

        /* REPLACE through Get_accumulate on elements 2.., and through
         * Fetch_and_op on element 2 when osc ucx can (8-byte types) */
        for (int e = 0; e < N; e++)
            pset(t, orig + e * ext, 200 + e + t_rank, 300 + e);
        getacc(t, orig + 3 * ext, res + 3 * ext, N - 3, p, disp + 3 * ext,
               MPI_REPLACE, win, "get_accumulate_replace");
        CHECK_MPI(tn(t->name, "flush"), MPI_Win_flush(p, win));
        for (int e = 3; e < N; e++) {
            check_pair(t->name, "get_accumulate_replace_fetched", t,
                       res + e * ext, t->get(m + e * ext), pidx(t, m + e * ext),
                       e);
            memcpy(m + e * ext, orig + e * ext, ext);
        }
        if (fop_native(t)) {
            CHECK_MPI(tn(t->name, "fetch_and_op_replace"),
                      MPI_Fetch_and_op(orig + 2 * ext, res + 2 * ext, t->dt, p,
                                       disp + 2 * ext, MPI_REPLACE, win));
        } else {
            getacc(t, orig + 2 * ext, res + 2 * ext, 1, p, disp + 2 * ext,
                   MPI_REPLACE, win, "get_accumulate_replace");
        }
        CHECK_MPI(tn(t->name, "flush"), MPI_Win_flush(p, win));
        check_pair(t->name, "replace_fetched", t, res + 2 * ext,
                   t->get(m + 2 * ext), pidx(t, m + 2 * ext), 2);
        memcpy(m + 2 * ext, orig + 2 * ext, ext);

        /* NO_OP reads everything back */
        memset(res, 0xa5, N * ext);
        getacc(t, orig, res, N, p, disp, MPI_NO_OP, win, "get_accumulate_noop");
        CHECK_MPI(tn(t->name, "flush"), MPI_Win_flush(p, win));
        for (int e = 0; e < N; e++)
            check_pair(t->name, "get_accumulate_noop_fetched", t, res + e * ext,
                       t->get(m + e * ext), pidx(t, m + e * ext), e);
        if (fop_native(t)) {
            memset(res, 0xa5, ext);
            CHECK_MPI(tn(t->name, "fetch_and_op_noop"),
                      MPI_Fetch_and_op(NULL, res, t->dt, p, disp + 4 * ext,
                                       MPI_NO_OP, win));
            CHECK_MPI(tn(t->name, "flush"), MPI_Win_flush(p, win));
            check_pair(t->name, "fetch_and_op_noop_fetched", t, res,
                       t->get(m + 4 * ext), pidx(t, m + 4 * ext), 4);
        }

        /* Accumulate (no result) MAXLOC on every element */
        for (int e = 0; e < N; e++)
            pset(t, orig + e * ext, 250 - e, 1);
        for (int e = 0; e < N; e++) {
            CHECK_MPI(tn(t->name, "accumulate_maxloc"),
                      MPI_Accumulate(orig + e * ext, 1, t->dt, p,
                                     disp + e * ext, 1, t->dt, MPI_MAXLOC,
                                     win));
            model_loc(t, m + e * ext, orig + e * ext, 1);
        }
        CHECK_MPI(tn(t->name, "flush"), MPI_Win_flush(p, win));
    }
    CHECK_MPI("unlock_all", MPI_Win_unlock_all(win));

    /* every origin tells each target what its slot must hold */
    char *expect = calloc((size_t)t_size * N, ext);
    MPI_Alltoall(model, (int)(N * ext), MPI_BYTE, expect, (int)(N * ext),
                 MPI_BYTE, MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, t_rank, 0, win);
    for (int o = 0; o < t_size; o++)
        for (int e = 0; e < N; e++) {
            char *x = expect + ((size_t)o * N + e) * ext;
            check_pair(t->name, "target_memory", t,
                       base + o * SLOT_BYTES + e * ext, t->get(x), pidx(t, x),
                       e);
        }
    MPI_Win_unlock(t_rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    free(expect);
    free(model);
    free(orig);
    free(res);
}

/* Part 2: everyone MAXLOCs element 0 of slot 0 on every target; value
 * 40 + rank for even ranks, 40 for odd ones: the winner is the highest
 * even rank, or rank 0 for a tie among the 40s if that is the maximum. */
static void test_pair_contention(const pair_type_t *t, char *base, MPI_Win win)
{
    size_t ext = t->extent;
    char orig[32], res[32];

    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t_rank, 0, win);
    pset(t, base, 30, 999);
    MPI_Win_unlock(t_rank, win);
    MPI_Barrier(MPI_COMM_WORLD);

    long myv = 40 + ((t_rank % 2) ? 0 : t_rank);
    pset(t, orig, myv, t_rank);
    CHECK_MPI("lock_all", MPI_Win_lock_all(0, win));
    for (int k = 0; k < t_size; k++) {
        int p = (t_rank + k) % t_size;
        CHECK_MPI(tn(t->name, "contended_get_accumulate"),
                  MPI_Get_accumulate(orig, 1, t->dt, res, 1, t->dt, p, 0, 1,
                                     t->dt, MPI_MAXLOC, win));
        CHECK_MPI(tn(t->name, "flush"), MPI_Win_flush(p, win));
        /* what I fetched is the initial value or some other rank's */
        long v = t->get(res);
        int i  = pidx(t, res);
        int ok = (v == 30 && i == 999) ||
                 (i >= 0 && i < t_size && i != t_rank &&
                  v == 40 + ((i % 2) ? 0 : i));
        if (!ok)
            check_pair(t->name, "contended_fetched", t, res, 30, 999, 0);
    }
    CHECK_MPI("unlock_all", MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    int best = 0;
    for (int r = 0; r < t_size; r++)
        if (40 + ((r % 2) ? 0 : r) > 40 + ((best % 2) ? 0 : best))
            best = r;
    MPI_Win_lock(MPI_LOCK_SHARED, t_rank, 0, win);
    check_pair(t->name, "contended_result", t, base,
               40 + ((best % 2) ? 0 : best), best, 0);
    MPI_Win_unlock(t_rank, win);
    (void)ext;
    MPI_Barrier(MPI_COMM_WORLD);
}

/* ---- float and double ---------------------------------------------------- */

typedef struct {
    const char *name;
    MPI_Datatype dt;
    size_t size;
    void (*set)(void *p, double v);
    double (*get)(const void *p);
} real_type_t;

static void set_f(void *p, double v)
{
    float x = (float)v;
    memcpy(p, &x, sizeof(x));
}
static double get_f(const void *p)
{
    float x;
    memcpy(&x, p, sizeof(x));
    return x;
}
static void set_d(void *p, double v)
{
    memcpy(p, &v, sizeof(v));
}
static double get_d(const void *p)
{
    double x;
    memcpy(&x, p, sizeof(x));
    return x;
}

static real_type_t reals[] = {
    {"MPI_FLOAT", MPI_FLOAT, sizeof(float), set_f, get_f},
    {"MPI_DOUBLE", MPI_DOUBLE, sizeof(double), set_d, get_d},
};

static void check_real(const char *type, const char *what, double got,
                       double exp, int e)
{
    char d[96];
    if (got != exp) {
        snprintf(d, sizeof(d), "(element %d: %.17g, expected %.17g)", e, got,
                 exp);
        t_fail(tn(type, what), (long long)exp, (long long)got, d);
    }
}

static double apply(MPI_Op op, double a, double b)
{
    if (op == MPI_SUM)
        return a + b;
    if (op == MPI_PROD)
        return a * b;
    if (op == MPI_MIN)
        return a < b ? a : b;
    if (op == MPI_MAX)
        return a > b ? a : b;
    if (op == MPI_REPLACE)
        return b;
    return a; /* MPI_NO_OP */
}

static void test_real_slots(const real_type_t *t, char *base, MPI_Win win)
{
    static const MPI_Op ops[] = {MPI_SUM, MPI_PROD,    MPI_MIN,
                                 MPI_MAX, MPI_REPLACE, MPI_NO_OP};
    static const char *opn[] = {"sum", "prod", "min", "max", "replace", "noop"};
    size_t sz                = t->size;
    char orig[N * 8], res[N * 8], name[64];
    double *model = calloc((size_t)t_size * N, sizeof(double));

    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t_rank, 0, win);
    for (int o = 0; o < t_size; o++)
        for (int e = 0; e < N; e++)
            t->set(base + o * SLOT_BYTES + e * sz, 2 + e + o);
    MPI_Win_unlock(t_rank, win);
    MPI_Barrier(MPI_COMM_WORLD);

    CHECK_MPI("lock_all", MPI_Win_lock_all(0, win));
    for (int k = 0; k < t_size; k++) {
        int p         = (t_rank + k) % t_size;
        MPI_Aint disp = (MPI_Aint)t_rank * SLOT_BYTES;
        double *m     = model + (size_t)p * N;

        for (int e = 0; e < N; e++)
            m[e] = 2 + e + t_rank;
        for (unsigned j = 0; j < sizeof(ops) / sizeof(ops[0]); j++) {
            /* operands: small integers or halves, so every result is exact */
            for (int e = 0; e < N; e++)
                t->set(orig + e * sz, (e % 3) + 0.5 * (j % 2) + 1);
            snprintf(name, sizeof(name), "get_accumulate_%s", opn[j]);
            CHECK_MPI(tn(t->name, name),
                      MPI_Get_accumulate(orig, N, t->dt, res, N, t->dt, p, disp,
                                         N, t->dt, ops[j], win));
            CHECK_MPI(tn(t->name, "flush"), MPI_Win_flush(p, win));
            for (int e = 0; e < N; e++) {
                check_real(t->name, name, t->get(res + e * sz), m[e], e);
                m[e] = apply(ops[j], m[e], t->get(orig + e * sz));
            }

            /* Fetch_and_op on one element (see the header for SUM) */
            int e = j % N;
            snprintf(name, sizeof(name), "fetch_and_op_%s", opn[j]);
            if (ops[j] == MPI_SUM)
                CHECK_MPI(tn(t->name, name),
                          MPI_Get_accumulate(orig + e * sz, 1, t->dt, res, 1,
                                             t->dt, p, disp + e * sz, 1, t->dt,
                                             MPI_SUM, win));
            else
                CHECK_MPI(tn(t->name, name),
                          MPI_Fetch_and_op(orig + e * sz, res, t->dt, p,
                                           disp + e * sz, ops[j], win));
            CHECK_MPI(tn(t->name, "flush"), MPI_Win_flush(p, win));
            check_real(t->name, name, t->get(res), m[e], e);
            m[e] = apply(ops[j], m[e], t->get(orig + e * sz));
        }
    }
    CHECK_MPI("unlock_all", MPI_Win_unlock_all(win));

    double *expect = calloc((size_t)t_size * N, sizeof(double));
    MPI_Alltoall(model, N, MPI_DOUBLE, expect, N, MPI_DOUBLE, MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, t_rank, 0, win);
    for (int o = 0; o < t_size; o++)
        for (int e = 0; e < N; e++)
            check_real(t->name, "target_memory",
                       t->get(base + o * SLOT_BYTES + e * sz),
                       expect[o * N + e], e);
    MPI_Win_unlock(t_rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    free(expect);
    free(model);
}

/* Everyone adds 2^rank to element 0 of every target with Get_accumulate
 * SUM: the total is exact, and each fetched value is 1 plus a sum of other
 * ranks' bits. */
static void test_real_contention(const real_type_t *t, char *base, MPI_Win win)
{
    char orig[8], res[8];

    MPI_Win_lock(MPI_LOCK_EXCLUSIVE, t_rank, 0, win);
    t->set(base, 1);
    MPI_Win_unlock(t_rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
    t->set(orig, (double)(1 << t_rank));
    CHECK_MPI("lock_all", MPI_Win_lock_all(0, win));
    for (int k = 0; k < t_size; k++) {
        int p = (t_rank + k) % t_size;
        CHECK_MPI(tn(t->name, "contended_sum"),
                  MPI_Get_accumulate(orig, 1, t->dt, res, 1, t->dt, p, 0, 1,
                                     t->dt, MPI_SUM, win));
        CHECK_MPI(tn(t->name, "flush"), MPI_Win_flush(p, win));
        double f  = t->get(res) - 1;
        long bits = (long)f;
        if (f != (double)bits || bits < 0 || bits >= (1L << t_size) ||
            (bits & (1L << t_rank)))
            check_real(t->name, "contended_sum_fetched", t->get(res), 1, 0);
    }
    CHECK_MPI("unlock_all", MPI_Win_unlock_all(win));
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Win_lock(MPI_LOCK_SHARED, t_rank, 0, win);
    check_real(t->name, "contended_sum_total", t->get(base),
               (double)(1L << t_size), 0);
    MPI_Win_unlock(t_rank, win);
    MPI_Barrier(MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
    MPI_Win win;
    char *base;

    t_init(&argc, &argv, "rma_atomic_types");
    CHECK_MPI("win_allocate",
              MPI_Win_allocate((MPI_Aint)t_size * SLOT_BYTES, 1, MPI_INFO_NULL,
                               MPI_COMM_WORLD, &base, &win));
    MPI_Win_set_errhandler(win, MPI_ERRORS_RETURN);

    for (int j = 0; j < NPAIRS; j++) {
        pair_type_t *t = &pairs[j];
        MPI_Aint lb, ext, tlb, text;
        MPI_Type_get_extent(t->dt, &lb, &ext);
        MPI_Type_get_true_extent(t->dt, &tlb, &text);
        CHECK_EQ(tn(t->name, "extent"), (long long)t->extent, ext);
        t->padded = (text != ext);
        MPI_Type_size(t->dt, &t->size);
        test_pair_slots(t, base, win);
        test_pair_contention(t, base, win);
    }
    for (unsigned j = 0; j < sizeof(reals) / sizeof(reals[0]); j++) {
        test_real_slots(&reals[j], base, win);
        test_real_contention(&reals[j], base, win);
    }

    CHECK_MPI("win_free", MPI_Win_free(&win));
    t_finish();
    return 0;
}
