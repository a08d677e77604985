/*
 * Point-to-point at every subprotocol boundary, in every send mode.
 *
 * Ranks pair up (rank ^ 1). For each size (0, 1, each threshold of eager,
 * medium and the RDMA-read protocols -1/+0/+1, then larger messages up to
 * MPITEST_MAX_SIZE, default 64 MiB) the pair moves data both ways with
 * MPI_Send, MPI_Bsend, MPI_Rsend and MPI_Ssend (one way at a time, closed by
 * a 0-byte acknowledgement), and by exchange with MPI_Isend/MPI_Irecv,
 * persistent requests and MPI_Sendrecv. Every receive checks the data, the
 * status and that nothing past the message was written; every step checks
 * efarm's counters: the sender's engine sent exactly the messages of the
 * step, each by a subprotocol its size allows, and the native send and
 * receive byte counters grew by at least the payload. With more than two
 * ranks a ring exchange reaches every neighbour as well.
 *
 * Send modes other than standard and nonblocking stop at
 * MPITEST_MODE_MAX_SIZE (default 8 MiB) to keep the run short.
 */
#include "efarm_mpitest.h"

#include <stdlib.h>
#include <string.h>

enum { TAG_DATA = 11, TAG_ACK = 12, TAG_READY = 13 };
enum mode { M_SEND, M_BSEND, M_RSEND, M_SSEND, M_ISEND, M_PERSISTENT, M_SENDRECV, M_RING };
static const char *const g_mode_names[] = {"send",  "bsend",      "rsend",    "ssend",
                                           "isend", "persistent", "sendrecv", "ring"};

#define GUARD          64 /* bytes past each receive that must stay untouched */
#define GUARD_BYTE     0xa5
#define MAX_SIZES      64
#define PERSIST_ROUNDS 3

static size_t g_sizes[MAX_SIZES];
static int g_nsizes;
static size_t g_max, g_mode_max;
static uint8_t *g_sbuf, *g_rbuf, *g_sbuf2, *g_rbuf2;
static int g_partner;
static unsigned long long g_sent_bytes, g_recv_bytes;

static void add_size(size_t n)
{
    if (n > g_max || g_nsizes == MAX_SIZES)
        return;
    for (int i = 0; i < g_nsizes; i++)
        if (g_sizes[i] == n)
            return;
    g_sizes[g_nsizes++] = n;
}

static int cmp_size(const void *a, const void *b)
{
    size_t x = *(const size_t *)a, y = *(const size_t *)b;

    return x < y ? -1 : x > y;
}

static void add_boundary(size_t n)
{
    if (n > 0)
        add_size(n - 1);
    add_size(n);
    add_size(n + 1);
}

static void build_sizes(void)
{
    const struct mpitest_limits *l = &g_mpitest_limits;

    add_size(0);
    add_size(1);
    add_size(8);
    add_boundary(l->eager_lo);
    add_boundary(l->eager_hi);
    add_boundary(l->medium_max);
    add_size(l->medium_max + 4097);
    add_boundary(l->read_min);
    add_size(4u << 20);
    add_size((16u << 20) + 3);
    add_size(g_max);
    qsort(g_sizes, (size_t)g_nsizes, sizeof(g_sizes[0]), cmp_size);
}

static uint64_t seed_of(int from, int to, size_t n, enum mode m, int round)
{
    return mpitest_seed((uint64_t)from << 32 | (uint64_t)to, n, m, (uint64_t)round);
}

/* Receive-side checks shared by every mode: status, data, guard bytes. */
static void check_received(const MPI_Status *st, const uint8_t *buf, int from, size_t n,
                           uint64_t seed)
{
    int count = -1;

    CHECK_EQ(st->MPI_SOURCE, from);
    CHECK_EQ(st->MPI_TAG, TAG_DATA);
    CHECK_MPI(MPI_Get_count(st, MPI_BYTE, &count));
    CHECK_EQ(count, n);
    CHECK_DATA(buf, n, seed);
    CHECK_BYTES(buf + n, GUARD, GUARD_BYTE);
}

static void arm_guard(uint8_t *buf, size_t n)
{
    memset(buf + n, GUARD_BYTE, GUARD);
}

/* One message from `sender` to the other rank of the pair in mode m, closed by an ack. */
static void one_way(enum mode m, size_t n, int i_send)
{
    struct mpitest_counters before, after, d;
    MPI_Status st;
    MPI_Request req;
    uint64_t seed = i_send ? seed_of(g_mpitest_rank, g_partner, n, m, 0)
                           : seed_of(g_partner, g_mpitest_rank, n, m, 0);

    mpitest_context("%s of %zu bytes, %s rank %d", g_mode_names[m], n, i_send ? "to" : "from",
                    g_partner);
    if (i_send) {
        mpitest_fill(g_sbuf, n, seed);
        if (m == M_RSEND) /* the receive is posted before READY comes */
            CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, g_partner, TAG_READY, MPI_COMM_WORLD, &st));
        mpitest_counters_read(&before);
        switch (m) {
        case M_SEND:
            CHECK_MPI(MPI_Send(g_sbuf, (int)n, MPI_BYTE, g_partner, TAG_DATA, MPI_COMM_WORLD));
            break;
        case M_BSEND:
            CHECK_MPI(MPI_Bsend(g_sbuf, (int)n, MPI_BYTE, g_partner, TAG_DATA, MPI_COMM_WORLD));
            /* the attached buffer holds a copy: reusing ours must not matter */
            memset(g_sbuf, 0, n);
            break;
        case M_RSEND:
            CHECK_MPI(MPI_Rsend(g_sbuf, (int)n, MPI_BYTE, g_partner, TAG_DATA, MPI_COMM_WORLD));
            break;
        default:
            CHECK_MPI(MPI_Ssend(g_sbuf, (int)n, MPI_BYTE, g_partner, TAG_DATA, MPI_COMM_WORLD));
            break;
        }
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, g_partner, TAG_ACK, MPI_COMM_WORLD, &st));
        mpitest_counters_read(&after);
        mpitest_counters_diff(&after, &before, &d);
        CHECK_SENT(&d, 1, n);
        if (m == M_SSEND)
            CHECK_COUNTER(d.proto_dc, <=, 1);
        g_sent_bytes += n;
        return;
    }
    arm_guard(g_rbuf, n);
    mpitest_counters_read(&before);
    if (m == M_RSEND) {
        CHECK_MPI(MPI_Irecv(g_rbuf, (int)(n + GUARD), MPI_BYTE, g_partner, TAG_DATA, MPI_COMM_WORLD,
                            &req));
        CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, g_partner, TAG_READY, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Wait(&req, &st));
    } else {
        CHECK_MPI(
            MPI_Recv(g_rbuf, (int)(n + GUARD), MPI_BYTE, g_partner, TAG_DATA, MPI_COMM_WORLD, &st));
    }
    mpitest_counters_read(&after);
    mpitest_counters_diff(&after, &before, &d);
    check_received(&st, g_rbuf, g_partner, n, seed);
    CHECK_RECEIVED(&d, 1, n);
    g_recv_bytes += n;
    CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, g_partner, TAG_ACK, MPI_COMM_WORLD));
}

/* Both ranks send and receive at once: nonblocking, persistent or sendrecv. */
static void exchange(enum mode m, size_t n, int to, int from)
{
    struct mpitest_counters before, after, d;
    MPI_Request reqs[2];
    MPI_Status sts[2];
    int rounds = m == M_PERSISTENT ? PERSIST_ROUNDS : 1;

    mpitest_context("%s of %zu bytes to rank %d, from rank %d", g_mode_names[m], n, to, from);
    mpitest_counters_read(&before);
    if (m == M_PERSISTENT) {
        CHECK_MPI(MPI_Recv_init(g_rbuf, (int)(n + GUARD), MPI_BYTE, from, TAG_DATA, MPI_COMM_WORLD,
                                &reqs[0]));
        CHECK_MPI(MPI_Send_init(g_sbuf, (int)n, MPI_BYTE, to, TAG_DATA, MPI_COMM_WORLD, &reqs[1]));
    }
    for (int r = 0; r < rounds; r++) {
        mpitest_fill(g_sbuf, n, seed_of(g_mpitest_rank, to, n, m, r));
        arm_guard(g_rbuf, n);
        switch (m) {
        case M_SENDRECV:
            CHECK_MPI(MPI_Sendrecv(g_sbuf, (int)n, MPI_BYTE, to, TAG_DATA, g_rbuf, (int)(n + GUARD),
                                   MPI_BYTE, from, TAG_DATA, MPI_COMM_WORLD, &sts[0]));
            break;
        case M_PERSISTENT:
            CHECK_MPI(MPI_Startall(2, reqs));
            CHECK_MPI(MPI_Waitall(2, reqs, sts));
            break;
        default:
            CHECK_MPI(MPI_Irecv(g_rbuf, (int)(n + GUARD), MPI_BYTE, from, TAG_DATA, MPI_COMM_WORLD,
                                &reqs[0]));
            CHECK_MPI(MPI_Isend(g_sbuf, (int)n, MPI_BYTE, to, TAG_DATA, MPI_COMM_WORLD, &reqs[1]));
            CHECK_MPI(MPI_Waitall(2, reqs, sts));
            break;
        }
        check_received(&sts[0], g_rbuf, from, n, seed_of(from, g_mpitest_rank, n, m, r));
    }
    if (m == M_PERSISTENT) {
        CHECK_MPI(MPI_Request_free(&reqs[0]));
        CHECK_MPI(MPI_Request_free(&reqs[1]));
    }
    mpitest_counters_read(&after);
    mpitest_counters_diff(&after, &before, &d);
    CHECK_SENT(&d, (unsigned long long)rounds, n);
    CHECK_RECEIVED(&d, (unsigned long long)rounds, (unsigned long long)rounds * n);
    g_sent_bytes += (unsigned long long)rounds * n;
    g_recv_bytes += (unsigned long long)rounds * n;
}

/* Two messages in flight to the partner at once: the second is small and must not overtake. */
static void two_in_flight(size_t n)
{
    MPI_Request reqs[4];
    MPI_Status sts[4];
    size_t small = 5;

    mpitest_context("isend of %zu then %zu bytes in flight together", n, small);
    mpitest_fill(g_sbuf, n, seed_of(g_mpitest_rank, g_partner, n, M_ISEND, 7));
    mpitest_fill(g_sbuf2, small, seed_of(g_mpitest_rank, g_partner, small, M_ISEND, 8));
    arm_guard(g_rbuf, n);
    arm_guard(g_rbuf2, small);
    CHECK_MPI(MPI_Irecv(g_rbuf, (int)(n + GUARD), MPI_BYTE, g_partner, TAG_DATA, MPI_COMM_WORLD,
                        &reqs[0]));
    CHECK_MPI(MPI_Irecv(g_rbuf2, (int)(small + GUARD), MPI_BYTE, g_partner, TAG_DATA,
                        MPI_COMM_WORLD, &reqs[1]));
    CHECK_MPI(MPI_Isend(g_sbuf, (int)n, MPI_BYTE, g_partner, TAG_DATA, MPI_COMM_WORLD, &reqs[2]));
    CHECK_MPI(
        MPI_Isend(g_sbuf2, (int)small, MPI_BYTE, g_partner, TAG_DATA, MPI_COMM_WORLD, &reqs[3]));
    CHECK_MPI(MPI_Waitall(4, reqs, sts));
    check_received(&sts[0], g_rbuf, g_partner, n,
                   seed_of(g_partner, g_mpitest_rank, n, M_ISEND, 7));
    check_received(&sts[1], g_rbuf2, g_partner, small,
                   seed_of(g_partner, g_mpitest_rank, small, M_ISEND, 8));
}

static void pair_phase(void)
{
    int leader = g_mpitest_rank < g_partner;
    const enum mode one_way_modes[] = {M_SEND, M_BSEND, M_RSEND, M_SSEND};
    const enum mode exchange_modes[] = {M_ISEND, M_PERSISTENT, M_SENDRECV};

    for (int i = 0; i < g_nsizes; i++) {
        size_t n = g_sizes[i];

        for (size_t k = 0; k < sizeof(one_way_modes) / sizeof(one_way_modes[0]); k++) {
            enum mode m = one_way_modes[k];

            if (m != M_SEND && n > g_mode_max)
                continue;
            one_way(m, n, leader);
            one_way(m, n, !leader);
        }
        for (size_t k = 0; k < sizeof(exchange_modes) / sizeof(exchange_modes[0]); k++) {
            enum mode m = exchange_modes[k];

            if (m != M_ISEND && n > g_mode_max)
                continue;
            exchange(m, n, g_partner, g_partner);
        }
        if (n > 0 && n <= g_mode_max)
            two_in_flight(n);
    }
}

static void ring_phase(void)
{
    const struct mpitest_limits *l = &g_mpitest_limits;
    const size_t ring_sizes[] = {0, 1, l->eager_lo, l->medium_max, l->medium_max + 1, l->read_min};
    int right = (g_mpitest_rank + 1) % g_mpitest_size;
    int left = (g_mpitest_rank + g_mpitest_size - 1) % g_mpitest_size;

    for (size_t i = 0; i < sizeof(ring_sizes) / sizeof(ring_sizes[0]); i++)
        if (ring_sizes[i] <= g_mode_max)
            exchange(M_RING, ring_sizes[i], right, left);
}

/* Over the whole run the sender side went by every subprotocol the sizes reach. */
static void check_coverage(const struct mpitest_counters *start)
{
    const struct mpitest_limits *l = &g_mpitest_limits;
    struct mpitest_counters now, d;

    mpitest_context("coverage of the whole run");
    mpitest_counters_read(&now);
    mpitest_counters_diff(&now, start, &d);
    CHECK_COUNTER(d.nm_send_bytes, >=, g_sent_bytes);
    CHECK_COUNTER(d.nm_recv_bytes, >=, g_recv_bytes);
    CHECK_COUNTER(d.proto_eager, >, 0);
    if (l->medium_max > l->eager_hi && g_max > l->eager_hi)
        CHECK_COUNTER(d.proto_medium, >, 0);
    if (g_max > l->medium_max && (l->read_min > l->medium_max + 1 || !l->rdma_read))
        CHECK_COUNTER(d.proto_longcts, >, 0);
    if (l->rdma_read && g_max >= l->read_min)
        CHECK_COUNTER(d.proto_longread + d.proto_runtread, >, 0);
    if (g_mpitest_rank == 0 && mpitest_pvar_checks())
        mpitest_counters_print(stdout, "counters of the run", &d);
}

int main(int argc, char **argv)
{
    struct mpitest_counters start;
    size_t bsend_len;
    void *bsend_buf;
    int bsend_size;

    mpitest_init(&argc, &argv, "pt2pt_sizes");
    g_max = mpitest_env_size("MPITEST_MAX_SIZE", 64u << 20);
    g_mode_max = mpitest_env_size("MPITEST_MODE_MAX_SIZE", 8u << 20);
    if (g_mode_max > g_max)
        g_mode_max = g_max;
    CHECK(g_max <= (size_t)1 << 30);
    build_sizes();
    g_sbuf = mpitest_malloc(g_max + GUARD);
    g_rbuf = mpitest_malloc(g_max + GUARD);
    g_sbuf2 = mpitest_malloc(g_max + GUARD);
    g_rbuf2 = mpitest_malloc(g_max + GUARD);
    bsend_len = g_mode_max + 4 * MPI_BSEND_OVERHEAD;
    bsend_buf = mpitest_malloc(bsend_len);
    CHECK_MPI(MPI_Buffer_attach(bsend_buf, (int)bsend_len));
    if (g_mpitest_rank == 0) {
        printf("pt2pt_sizes: %d sizes up to %zu (modes up to %zu): eager <= %zu..%zu, medium <= "
               "%zu, reads >= %zu (%s)\n",
               g_nsizes, g_max, g_mode_max, g_mpitest_limits.eager_lo, g_mpitest_limits.eager_hi,
               g_mpitest_limits.medium_max, g_mpitest_limits.read_min,
               g_mpitest_limits.rdma_read ? "on" : "off");
        fflush(stdout);
    }
    mpitest_counters_read(&start);
    g_partner = g_mpitest_rank ^ 1;
    if (g_partner < g_mpitest_size)
        pair_phase();
    if (g_mpitest_size > 2)
        ring_phase();
    check_coverage(&start);
    CHECK_MPI(MPI_Buffer_detach(&bsend_buf, &bsend_size));
    CHECK_EQ(bsend_size, bsend_len);
    free(bsend_buf);
    free(g_sbuf);
    free(g_rbuf);
    free(g_sbuf2);
    free(g_rbuf2);
    mpitest_finalize();
    return 0;
}
