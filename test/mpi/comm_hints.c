/*
 * Communicator hints reach efarm's subprotocol selection (issue 13).
 *
 * Rank 0 sends single messages to rank 1 on MPI_COMM_WORLD and on duplicates
 * carrying efarm's info keys; rank 0's counters show which subprotocol
 * carried each message, rank 1 checks the data. The run sets
 * EFARM_UNEXP_BYTES so that a message of m = EFARM_UNEXP_BYTES / (size - 1)
 * + 1 bytes fits medium for one sender but not for the communicator's
 * size - 1 senders:
 * A. MPI_COMM_WORLD: the communicator's size is the fan-in, so m goes medium
 *    only when size - 1 senders' m bytes fit EFARM_UNEXP_BYTES (2 ranks) and
 *    long-CTS otherwise.
 * B. efarm_fanin=1: the user's fan-in replaces the size: m goes medium.
 * C. efarm_protocol=longcts: a medium-sized message goes long-CTS; given as
 *    its number (3) at creation, and by name through MPI_Comm_set_info. By
 *    name at creation: long-CTS with MPICH 4.0; with MPICH 4.3, which hands a
 *    new communicator's info to integer keys only, it reads as 0 (auto).
 * D. efarm_protocol=medium (MPI_Comm_set_info): a message beyond
 *    EFARM_MEDIUM_MAX goes medium.
 * E. efarm_protocol=runtread (5, at creation) with MPI_Ssend: runting read
 *    cannot carry a synchronous send, so the policy picks (medium for this size).
 * F. efarm_fanin=12x and efarm_protocol=bulk are not valid: both are ignored
 *    (efarm prints why), so the communicator behaves as MPI_COMM_WORLD; set
 *    through MPI_Comm_set_info, and at creation with MPICH 4.0 (4.3 reads
 *    12x as 12 there without showing efarm the text).
 * G. MPI_Comm_get_info returns efarm_fanin as set.
 * Needs RDMA read for E (skipped without), and sizes that fall between the
 * eager limit and the read threshold (checked; the run's variables see to it).
 */
#include "efarm_mpitest.h"

#include <stdlib.h>
#include <string.h>

enum { TAG = 40 };

static uint8_t *g_buf;

/* One message of n bytes from rank 0 to 1 on comm; returns (on rank 0) the subprotocol mask. */
static unsigned send_one(MPI_Comm comm, size_t n, int ssend, int step, const char *what)
{
    struct mpitest_counters before, after, d;
    uint64_t seed = mpitest_seed(0, 1, n, (uint64_t)step);
    unsigned used = 0;

    mpitest_context("%s (%zu bytes)", what, n);
    CHECK_MPI(MPI_Barrier(comm));
    if (g_mpitest_rank == 0) {
        mpitest_fill(g_buf, n, seed);
        mpitest_counters_read(&before);
        if (ssend)
            CHECK_MPI(MPI_Ssend(g_buf, (int)n, MPI_BYTE, 1, TAG, comm));
        else
            CHECK_MPI(MPI_Send(g_buf, (int)n, MPI_BYTE, 1, TAG, comm));
        mpitest_counters_read(&after);
        mpitest_counters_diff(&after, &before, &d);
        /* One message through efarm, by whichever subprotocol: the caller checks which. */
        CHECK_EQ(d.nm_send_msgs, 1);
        CHECK_GE(d.nm_send_bytes, n);
        CHECK_EQ(d.proto_eager + d.proto_medium + d.proto_longcts + d.proto_longread +
                     d.proto_runtread,
                 1);
        if (d.proto_medium)
            used |= MPITEST_MEDIUM;
        if (d.proto_longcts)
            used |= MPITEST_LONGCTS;
        if (d.proto_longread)
            used |= MPITEST_LONGREAD;
        if (d.proto_runtread)
            used |= MPITEST_RUNTREAD;
        if (d.proto_eager)
            used |= MPITEST_EAGER;
    } else if (g_mpitest_rank == 1) {
        MPI_Status st;
        int count = -1;

        memset(g_buf, 0, n);
        CHECK_MPI(MPI_Recv(g_buf, (int)n, MPI_BYTE, 0, TAG, comm, &st));
        CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK_EQ(count, n);
        CHECK_DATA(g_buf, n, seed);
    }
    CHECK_MPI(MPI_Barrier(comm));
    return used;
}

static MPI_Comm dup_with(const char *key1, const char *val1, const char *key2, const char *val2)
{
    MPI_Info info;
    MPI_Comm comm;

    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, key1, val1));
    if (key2)
        CHECK_MPI(MPI_Info_set(info, key2, val2));
    CHECK_MPI(MPI_Comm_dup_with_info(MPI_COMM_WORLD, info, &comm));
    CHECK_MPI(MPI_Info_free(&info));
    return comm;
}

/* A duplicate of MPI_COMM_WORLD whose hints come later, through MPI_Comm_set_info. */
static MPI_Comm dup_then_set(const char *key1, const char *val1, const char *key2, const char *val2)
{
    MPI_Info info;
    MPI_Comm comm;

    CHECK_MPI(MPI_Comm_dup(MPI_COMM_WORLD, &comm));
    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, key1, val1));
    if (key2)
        CHECK_MPI(MPI_Info_set(info, key2, val2));
    CHECK_MPI(MPI_Comm_set_info(comm, info));
    CHECK_MPI(MPI_Info_free(&info));
    return comm;
}

/* Send as send_one does; rank 0 checks that the message went by the subprotocol want. */
static void expect(MPI_Comm comm, size_t n, int ssend, int step, unsigned want, const char *what)
{
    unsigned used = send_one(comm, n, ssend, step, what);

    if (g_mpitest_rank == 0 && mpitest_pvar_checks())
        CHECK_EQ(used, want);
}

int main(int argc, char **argv)
{
    const struct mpitest_limits *l;
    size_t unexp, m, mid, big;
    unsigned world_want;
    MPI_Comm c;

    mpitest_init(&argc, &argv, "comm_hints");
    l = &g_mpitest_limits;
    unexp = mpitest_env_size("EFARM_UNEXP_BYTES", 67108864);
    m = unexp / (size_t)(g_mpitest_size - 1 > 1 ? g_mpitest_size - 1 : 2) + 1;
    mid = l->eager_hi + 1000;     /* medium by size alone */
    big = l->medium_max + 100000; /* beyond medium, below the read thresholds */
    mpitest_context("sizes: m %zu, mid %zu, big %zu; eager_hi %zu, medium_max %zu, read_min %zu", m,
                    mid, big, l->eager_hi, l->medium_max, l->read_min);
    CHECK(m > l->eager_hi && m <= l->medium_max && m < l->read_min_unreg);
    CHECK(mid <= l->medium_max && mid * (size_t)(g_mpitest_size - 1) <= unexp);
    CHECK(big < l->read_min && big < l->read_min_unreg && big < l->runt_min);
    g_buf = mpitest_malloc(big);

    /* A. The communicator's size is the fan-in. */
    world_want = m * (size_t)(g_mpitest_size - 1) > unexp ? MPITEST_LONGCTS : MPITEST_MEDIUM;
    expect(MPI_COMM_WORLD, m, 0, 1, world_want, "A: MPI_COMM_WORLD, m bytes");

    /* B. efarm_fanin replaces it. */
    c = dup_with("efarm_fanin", "1", NULL, NULL);
    expect(c, m, 0, 2, MPITEST_MEDIUM, "B: efarm_fanin=1, m bytes");
    {
        MPI_Info got;
        char value[MPI_MAX_INFO_VAL + 1];
        int flag = 0;

        /* G. The hint reads back. */
        CHECK_MPI(MPI_Comm_get_info(c, &got));
        CHECK_MPI(MPI_Info_get(got, "efarm_fanin", MPI_MAX_INFO_VAL, value, &flag));
        CHECK(flag);
        CHECK(strcmp(value, "1") == 0);
        CHECK_MPI(MPI_Info_free(&got));
    }
    CHECK_MPI(MPI_Comm_free(&c));

    /* C, D. efarm_protocol forces the communicator's sends where the subprotocol can carry them. */
    c = dup_with("efarm_protocol", "3", NULL, NULL);
    expect(c, mid, 0, 3, MPITEST_LONGCTS, "C: efarm_protocol=3 at creation, mid bytes");
    CHECK_MPI(MPI_Comm_free(&c));
    c = dup_then_set("efarm_protocol", "longcts", NULL, NULL);
    expect(c, mid, 0, 9, MPITEST_LONGCTS, "C: efarm_protocol=longcts set later, mid bytes");
    CHECK_MPI(MPI_Comm_free(&c));
    c = dup_with("efarm_protocol", "longcts", NULL, NULL);
    if (mpitest_mpich_version() >= 403)
        expect(c, mid, 0, 10, MPITEST_MEDIUM, "C: efarm_protocol=longcts at creation (4.3: auto)");
    else
        expect(c, mid, 0, 10, MPITEST_LONGCTS, "C: efarm_protocol=longcts at creation, mid bytes");
    CHECK_MPI(MPI_Comm_free(&c));
    c = dup_then_set("efarm_protocol", "medium", NULL, NULL);
    expect(c, big, 0, 4, MPITEST_MEDIUM, "D: efarm_protocol=medium, big bytes");
    CHECK_MPI(MPI_Comm_free(&c));

    /* E. Runting read cannot carry a synchronous send: the policy picks. */
    if (l->rdma_read) {
        c = dup_with("efarm_protocol", "5", NULL, NULL);
        expect(c, mid, 1, 5, MPITEST_MEDIUM, "E: efarm_protocol=runtread, ssend");
        expect(c, big, 0, 6, MPITEST_RUNTREAD, "E: efarm_protocol=runtread, send");
        CHECK_MPI(MPI_Comm_free(&c));
    }

    /* F. Values that are not valid are ignored. */
    c = dup_then_set("efarm_fanin", "12x", "efarm_protocol", "bulk");
    expect(c, m, 0, 7, world_want, "F: bad hints set later, m bytes");
    expect(c, mid, 0, 8, MPITEST_MEDIUM, "F: bad hints set later, mid bytes");
    CHECK_MPI(MPI_Comm_free(&c));
    if (mpitest_mpich_version() < 403) {
        c = dup_with("efarm_fanin", "12x", "efarm_protocol", "bulk");
        expect(c, m, 0, 11, world_want, "F: bad hints at creation, m bytes");
        expect(c, mid, 0, 12, MPITEST_MEDIUM, "F: bad hints at creation, mid bytes");
        CHECK_MPI(MPI_Comm_free(&c));
    }

    free(g_buf);
    mpitest_finalize();
    return 0;
}
