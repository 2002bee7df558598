/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Probing and cancellation: MPI_Probe, MPI_Iprobe, MPI_Mprobe/MPI_Mrecv,
 * MPI_Improbe/MPI_Imrecv (eager and rendezvous sizes, wildcards), and
 * MPI_Cancel of posted receives checked with MPI_Test_cancelled.
 */
#include "mpitest.h"

static const size_t sizes[] = {0, 1, 8193, 1 << 20};
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

/* Every non-zero rank sends every size to rank 0 with a distinct tag. */
static void send_all_to_root(int base)
{
    if (t_rank == 0)
        return;
    unsigned char *b = malloc(sizes[NSIZES - 1]);
    for (unsigned k = 0; k < NSIZES; k++) {
        int tag = base + t_rank * 10 + (int)k;
        t_fill(b, sizes[k], t_rank, tag);
        CHECK_MPI("probe_send",
                  MPI_Send(b, (int)sizes[k], MPI_BYTE, 0, tag, MPI_COMM_WORLD));
    }
    free(b);
}

/* Inspect a probe status: return the size index, checking the count. */
static int probed_k(const char *test, MPI_Status *st, int base)
{
    int count, k = st->MPI_TAG - base - st->MPI_SOURCE * 10;
    if (k < 0 || k >= (int)NSIZES)
        CHECK_EQ(test, 0, k);
    MPI_Get_count(st, MPI_BYTE, &count);
    CHECK_EQ(test, (long long)sizes[k], count);
    return k;
}

static void test_probe(void)
{
    int nmsg = (t_size - 1) * (int)NSIZES;
    /* MPI_Probe then a receive sized from the status */
    send_all_to_root(100);
    if (t_rank == 0) {
        for (int i = 0; i < nmsg; i++) {
            MPI_Status st, st2;
            CHECK_MPI("probe", MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG,
                                         MPI_COMM_WORLD, &st));
            int k            = probed_k("probe_count", &st, 100);
            unsigned char *b = malloc(sizes[k] + 1);
            CHECK_MPI("probe_recv",
                      MPI_Recv(b, (int)sizes[k], MPI_BYTE, st.MPI_SOURCE,
                               st.MPI_TAG, MPI_COMM_WORLD, &st2));
            t_verify("probe_data", b, sizes[k], st.MPI_SOURCE, st.MPI_TAG);
            free(b);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* MPI_Iprobe: nothing there yet, then poll until something is */
    if (t_rank == 0) {
        int flag = 1;
        CHECK_MPI("iprobe_empty",
                  MPI_Iprobe(MPI_ANY_SOURCE, 4242, MPI_COMM_WORLD, &flag,
                             MPI_STATUS_IGNORE));
        CHECK_EQ("iprobe_empty", 0, flag);
    }
    MPI_Barrier(MPI_COMM_WORLD);
    send_all_to_root(200);
    if (t_rank == 0) {
        for (int i = 0; i < nmsg; i++) {
            MPI_Status st;
            int flag = 0;
            while (!flag)
                CHECK_MPI("iprobe", MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG,
                                               MPI_COMM_WORLD, &flag, &st));
            int k            = probed_k("iprobe_count", &st, 200);
            unsigned char *b = malloc(sizes[k] + 1);
            CHECK_MPI("iprobe_recv",
                      MPI_Recv(b, (int)sizes[k], MPI_BYTE, st.MPI_SOURCE,
                               st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
            t_verify("iprobe_data", b, sizes[k], st.MPI_SOURCE, st.MPI_TAG);
            free(b);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* Matched probe: the message handle is received with MPI_Mrecv */
    send_all_to_root(300);
    if (t_rank == 0) {
        for (int i = 0; i < nmsg; i++) {
            MPI_Status st, st2;
            MPI_Message msg;
            CHECK_MPI("mprobe", MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG,
                                           MPI_COMM_WORLD, &msg, &st));
            int k            = probed_k("mprobe_count", &st, 300);
            unsigned char *b = malloc(sizes[k] + 1);
            CHECK_MPI("mrecv",
                      MPI_Mrecv(b, (int)sizes[k], MPI_BYTE, &msg, &st2));
            CHECK_EQ("mrecv_source", st.MPI_SOURCE, st2.MPI_SOURCE);
            CHECK_EQ("mrecv_tag", st.MPI_TAG, st2.MPI_TAG);
            CHECK_EQ("mrecv_msg_null", 1, msg == MPI_MESSAGE_NULL);
            t_verify("mrecv_data", b, sizes[k], st.MPI_SOURCE, st.MPI_TAG);
            free(b);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);

    /* MPI_Improbe + MPI_Imrecv */
    send_all_to_root(400);
    if (t_rank == 0) {
        for (int i = 0; i < nmsg; i++) {
            MPI_Status st;
            MPI_Message msg;
            MPI_Request req;
            int flag = 0;
            while (!flag)
                CHECK_MPI("improbe",
                          MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG,
                                      MPI_COMM_WORLD, &flag, &msg, &st));
            int k            = probed_k("improbe_count", &st, 400);
            unsigned char *b = malloc(sizes[k] + 1);
            CHECK_MPI("imrecv",
                      MPI_Imrecv(b, (int)sizes[k], MPI_BYTE, &msg, &req));
            CHECK_MPI("imrecv_wait", MPI_Wait(&req, MPI_STATUS_IGNORE));
            t_verify("imrecv_data", b, sizes[k], st.MPI_SOURCE, st.MPI_TAG);
            free(b);
        }
    }
    MPI_Barrier(MPI_COMM_WORLD);
}

static void test_cancel(void)
{
    MPI_Request req;
    MPI_Status st;
    int flag = 0, v = -1, peer = (t_rank + 1) % t_size;
    int from = (t_rank + t_size - 1) % t_size;

    /* A receive nobody will match: cancel must succeed. */
    CHECK_MPI("cancel_irecv",
              MPI_Irecv(&v, 1, MPI_INT, peer, 31337, MPI_COMM_WORLD, &req));
    CHECK_MPI("cancel", MPI_Cancel(&req));
    CHECK_MPI("cancel_wait", MPI_Wait(&req, &st));
    CHECK_MPI("test_cancelled", MPI_Test_cancelled(&st, &flag));
    CHECK_EQ("test_cancelled", 1, flag);
    CHECK_EQ("cancel_buffer_untouched", -1, v);

    /* Wildcard receives, large buffer, completed by MPI_Test polling */
    unsigned char *big = malloc(1 << 20);
    CHECK_MPI("cancel_irecv_any",
              MPI_Irecv(big, 1 << 20, MPI_BYTE, MPI_ANY_SOURCE, MPI_ANY_TAG,
                        MPI_COMM_WORLD, &req));
    CHECK_MPI("cancel_any", MPI_Cancel(&req));
    flag = 0;
    while (!flag)
        CHECK_MPI("cancel_any_test", MPI_Test(&req, &flag, &st));
    CHECK_MPI("test_cancelled_any", MPI_Test_cancelled(&st, &flag));
    CHECK_EQ("test_cancelled_any", 1, flag);
    free(big);

    /*
     * A cancelled receive must not swallow a later message with the same
     * signature: cancel one, then send and receive a real one.
     */
    CHECK_MPI("cancel_irecv2",
              MPI_Irecv(&v, 1, MPI_INT, from, 55, MPI_COMM_WORLD, &req));
    CHECK_MPI("cancel2", MPI_Cancel(&req));
    CHECK_MPI("cancel2_wait", MPI_Wait(&req, &st));
    CHECK_MPI("test_cancelled2", MPI_Test_cancelled(&st, &flag));
    CHECK_EQ("test_cancelled2", 1, flag);
    MPI_Barrier(MPI_COMM_WORLD);
    int out = 7000 + t_rank, in = -1;
    CHECK_MPI("after_cancel",
              MPI_Sendrecv(&out, 1, MPI_INT, peer, 55, &in, 1, MPI_INT, from,
                           55, MPI_COMM_WORLD, &st));
    CHECK_EQ("after_cancel_value", 7000 + from, in);
    CHECK_MPI("test_cancelled_normal", MPI_Test_cancelled(&st, &flag));
    CHECK_EQ("test_cancelled_normal", 0, flag);
    CHECK_EQ("cancelled_buffer_untouched", -1, v);
}

int main(int argc, char **argv)
{
    t_init(&argc, &argv, "probe_cancel");
    test_probe();
    test_cancel();
    t_finish();
    return 0;
}
