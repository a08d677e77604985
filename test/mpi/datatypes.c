/*
 * Noncontiguous datatypes over efarm.
 *
 * Ranks pair up (rank ^ 1). Each case is a derived type (vector, indexed,
 * struct, resized struct, resized int, subarray) at a size that lands in a
 * given subprotocol (eager to RDMA-read), together with a contiguous type of
 * the same signature. Every case goes both ways in three pairings:
 * noncontiguous to noncontiguous, noncontiguous to contiguous and contiguous
 * to noncontiguous, with MPI_Send/MPI_Recv, and once more by exchange with
 * MPI_Isend/MPI_Irecv. The receive buffer is filled with a sentinel first;
 * afterwards the whole buffer (holes included) must equal what MPI_Pack of
 * the sender's buffer unpacked into the receive layout gives, and the vector
 * cases are also checked element by element against the formula. The status
 * count is checked in the receive type, and efarm's counters must show one
 * message of the packed size by a subprotocol that size allows.
 */
#include "efarm_mpitest.h"

#include <stdlib.h>
#include <string.h>

enum { TAG_DATA = 40, TAG_ACK = 41 };
#define SENTINEL 0xee

struct dt_case {
    char name[48];
    MPI_Datatype type; /* noncontiguous */
    int count;
    MPI_Datatype contig; /* same signature, contiguous */
    int contig_count;
    int vec_blocklen, vec_stride; /* vector of MPI_INT cases: checked by formula too */
};

#define MAX_CASES 16
static struct dt_case g_cases[MAX_CASES];
static int g_ncases;
static MPI_Datatype g_free_list[4 * MAX_CASES];
static int g_nfree;

static MPI_Datatype commit(MPI_Datatype t)
{
    CHECK_MPI(MPI_Type_commit(&t));
    g_free_list[g_nfree++] = t;
    return t;
}

static void add_case(const char *name, MPI_Datatype type, int count, MPI_Datatype contig,
                     int contig_count)
{
    struct dt_case *c = &g_cases[g_ncases++];

    CHECK_LE(g_ncases, MAX_CASES);
    snprintf(c->name, sizeof(c->name), "%s", name);
    c->type = type;
    c->count = count;
    c->contig = contig;
    c->contig_count = contig_count;
}

static void add_vector(const char *name, int nblocks, int blocklen, int stride)
{
    MPI_Datatype t;

    CHECK_MPI(MPI_Type_vector(nblocks, blocklen, stride, MPI_INT, &t));
    add_case(name, commit(t), 1, MPI_INT, nblocks * blocklen);
    g_cases[g_ncases - 1].vec_blocklen = blocklen;
    g_cases[g_ncases - 1].vec_stride = stride;
}

/* Indexed: growing blocks with gaps; the count repeats it by its extent. */
static void add_indexed(void)
{
    int blens[8], displs[8], total = 0;
    MPI_Datatype t;

    for (int i = 0; i < 8; i++) {
        blens[i] = i + 1;
        displs[i] = i * (i + 5);
        total += blens[i];
    }
    CHECK_MPI(MPI_Type_indexed(8, blens, displs, MPI_INT, &t));
    t = commit(t);
    add_case("indexed x 3 (eager)", t, 3, MPI_INT, 3 * total);
    add_case("indexed x 20000 (read)", t, 20000, MPI_INT, 20000 * total);
}

/* struct {char; double; int[3]} with natural padding; its twin is the same fields packed. */
static void add_structs(void)
{
    int blens[3] = {1, 1, 3};
    MPI_Aint displs[3] = {0, 8, 16}, packed_displs[3] = {0, 1, 9};
    MPI_Datatype types[3] = {MPI_CHAR, MPI_DOUBLE, MPI_INT}, t, s, packed;

    CHECK_MPI(MPI_Type_create_struct(3, blens, displs, types, &t));
    s = commit(t);
    CHECK_MPI(MPI_Type_create_struct(3, blens, packed_displs, types, &t));
    CHECK_MPI(MPI_Type_create_resized(t, 0, 21, &packed));
    CHECK_MPI(MPI_Type_free(&t));
    packed = commit(packed);
    add_case("struct x 100 (eager)", s, 100, packed, 100);
    add_case("struct x 5000 (long-CTS)", s, 5000, packed, 5000);
    /* resized to a 40-byte extent: bigger holes between elements */
    CHECK_MPI(MPI_Type_create_resized(s, 0, 40, &t));
    add_case("struct resized to 40 x 60000 (read)", commit(t), 60000, packed, 60000);
}

static void build_cases(void)
{
    int sizes[2] = {512, 512}, sub[2] = {300, 200}, starts[2] = {17, 101};
    MPI_Datatype t;

    /* vectors of MPI_INT: eager, medium, long-CTS, read */
    add_vector("vector 10x3/5 (eager)", 10, 3, 5);
    add_vector("vector 2000x4/7 (medium)", 2000, 4, 7);
    add_vector("vector 40000x2/3 (long-CTS)", 40000, 2, 3);
    add_vector("vector 300000x2/3 (read)", 300000, 2, 3);
    add_indexed();
    add_structs();
    /* one int every 12 bytes */
    CHECK_MPI(MPI_Type_create_resized(MPI_INT, 0, 12, &t));
    add_case("int resized to 12 x 30000 (long-CTS)", commit(t), 30000, MPI_INT, 30000);
    /* a 300x200 block of a 512x512 array of doubles */
    CHECK_MPI(MPI_Type_create_subarray(2, sizes, sub, starts, MPI_ORDER_C, MPI_DOUBLE, &t));
    add_case("subarray 300x200 of 512x512 doubles", commit(t), 1, MPI_DOUBLE, 300 * 200);
}

/* Bytes a buffer of count elements of t spans (every case has lower bounds 0). */
static size_t span(MPI_Datatype t, int count)
{
    MPI_Aint lb, extent, true_lb, true_extent;

    CHECK_MPI(MPI_Type_get_extent(t, &lb, &extent));
    CHECK_MPI(MPI_Type_get_true_extent(t, &true_lb, &true_extent));
    CHECK_EQ(lb, 0);
    CHECK_GE(true_lb, 0);
    return count ? (size_t)(true_lb + (count - 1) * extent + true_extent) : 0;
}

static size_t type_bytes(MPI_Datatype t, int count)
{
    int size;

    CHECK_MPI(MPI_Type_size(t, &size));
    return (size_t)size * (size_t)count;
}

static uint64_t seed_of(int from, int c, int pairing, int round)
{
    return mpitest_seed((uint64_t)from, (uint64_t)c, (uint64_t)pairing, (uint64_t)round);
}

/* The receive buffer must equal the sender's buffer packed, then unpacked into the receive layout.
 */
static void check_layout(const struct dt_case *c, MPI_Datatype stype, int scount,
                         MPI_Datatype rtype, int rcount, const uint8_t *rbuf, uint64_t seed)
{
    size_t sspan = span(stype, scount), rspan = span(rtype, rcount);
    uint8_t *sbuf = mpitest_malloc(sspan), *expect = mpitest_malloc(rspan), *packed;
    int pack_size, pos = 0;

    mpitest_fill(sbuf, sspan, seed);
    CHECK_MPI(MPI_Pack_size(scount, stype, MPI_COMM_WORLD, &pack_size));
    packed = mpitest_malloc((size_t)pack_size);
    CHECK_MPI(MPI_Pack(sbuf, scount, stype, packed, pack_size, &pos, MPI_COMM_WORLD));
    CHECK_EQ(pos, type_bytes(stype, scount));
    memset(expect, SENTINEL, rspan);
    pos = 0;
    CHECK_MPI(MPI_Unpack(packed, pack_size, &pos, expect, rcount, rtype, MPI_COMM_WORLD));
    for (size_t i = 0; i < rspan; i++)
        if (rbuf[i] != expect[i])
            mpitest_fail(__FILE__, __LINE__,
                         "%s: receive buffer byte %zu of %zu is 0x%02x, want 0x%02x", c->name, i,
                         rspan, rbuf[i], expect[i]);
    /* vector of ints: element j of the contiguous side is int (j/bl)*stride + j%bl of the other */
    if (c->vec_blocklen) {
        const int *vec = (const int *)(stype == c->type ? (const void *)sbuf : (const void *)rbuf);
        const int *flat = (const int *)(stype == c->type ? (const void *)rbuf : (const void *)sbuf);

        if (stype != rtype)
            for (int j = 0; j < c->contig_count; j++) {
                int k = (j / c->vec_blocklen) * c->vec_stride + j % c->vec_blocklen;

                if (vec[k] != flat[j])
                    mpitest_fail(__FILE__, __LINE__,
                                 "%s: contiguous int %d is %d, vector int %d is %d", c->name, j,
                                 flat[j], k, vec[k]);
            }
    }
    free(packed);
    free(expect);
    free(sbuf);
}

static const char *const g_pairing_names[] = {"noncontig to noncontig", "noncontig to contig",
                                              "contig to noncontig"};

static void pick(const struct dt_case *c, int pairing, int sending, MPI_Datatype *t, int *count)
{
    int noncontig = pairing == 0 || (pairing == 1 && sending) || (pairing == 2 && !sending);

    *t = noncontig ? c->type : c->contig;
    *count = noncontig ? c->count : c->contig_count;
}

static void one_way(int ci, int pairing, int i_send, int partner)
{
    const struct dt_case *c = &g_cases[ci];
    struct mpitest_counters before, after, d;
    MPI_Datatype stype, rtype;
    int scount, rcount, got = -1;
    size_t bytes;
    uint8_t *buf;
    MPI_Status st;

    pick(c, pairing, 1, &stype, &scount);
    pick(c, pairing, 0, &rtype, &rcount);
    bytes = type_bytes(stype, scount);
    CHECK_EQ(bytes, type_bytes(rtype, rcount));
    mpitest_context("%s, %s, %zu bytes, %s rank %d", c->name, g_pairing_names[pairing], bytes,
                    i_send ? "to" : "from", partner);
    if (i_send) {
        size_t n = span(stype, scount);

        buf = mpitest_malloc(n);
        mpitest_fill(buf, n, seed_of(g_mpitest_rank, ci, pairing, 0));
        mpitest_counters_read(&before);
        CHECK_MPI(MPI_Send(buf, scount, stype, partner, TAG_DATA, MPI_COMM_WORLD));
        CHECK_MPI(MPI_Recv(NULL, 0, MPI_BYTE, partner, TAG_ACK, MPI_COMM_WORLD, &st));
        mpitest_counters_read(&after);
        mpitest_counters_diff(&after, &before, &d);
        CHECK_SENT(&d, 1, bytes);
        free(buf);
        return;
    }
    buf = mpitest_malloc(span(rtype, rcount));
    memset(buf, SENTINEL, span(rtype, rcount));
    mpitest_counters_read(&before);
    CHECK_MPI(MPI_Recv(buf, rcount, rtype, partner, TAG_DATA, MPI_COMM_WORLD, &st));
    mpitest_counters_read(&after);
    mpitest_counters_diff(&after, &before, &d);
    CHECK_EQ(st.MPI_SOURCE, partner);
    CHECK_EQ(st.MPI_TAG, TAG_DATA);
    CHECK_MPI(MPI_Get_count(&st, rtype, &got));
    CHECK_EQ(got, rcount);
    check_layout(c, stype, scount, rtype, rcount, buf, seed_of(partner, ci, pairing, 0));
    CHECK_RECEIVED(&d, 1, bytes);
    free(buf);
    CHECK_MPI(MPI_Send(NULL, 0, MPI_BYTE, partner, TAG_ACK, MPI_COMM_WORLD));
}

/*
 * Both at once with MPI_Isend/MPI_Irecv: the lower rank sends and receives
 * the noncontiguous type, the higher one the contiguous twin, so one
 * direction is noncontig to contig and the other contig to noncontig.
 */
static void exchange(int ci, int partner)
{
    const struct dt_case *c = &g_cases[ci];
    int low = g_mpitest_rank < partner;
    MPI_Datatype mine = low ? c->type : c->contig, theirs = low ? c->contig : c->type;
    int my_count = low ? c->count : c->contig_count, their_count = low ? c->contig_count : c->count;
    size_t my_span = span(mine, my_count);
    uint8_t *sbuf = mpitest_malloc(my_span), *rbuf = mpitest_malloc(my_span);
    MPI_Request reqs[2];
    MPI_Status sts[2];
    int got = -1;

    mpitest_context("%s, exchange with MPI_Isend/MPI_Irecv", c->name);
    mpitest_fill(sbuf, my_span, seed_of(g_mpitest_rank, ci, 3, 1));
    memset(rbuf, SENTINEL, my_span);
    CHECK_MPI(MPI_Irecv(rbuf, my_count, mine, partner, TAG_DATA, MPI_COMM_WORLD, &reqs[0]));
    CHECK_MPI(MPI_Isend(sbuf, my_count, mine, partner, TAG_DATA, MPI_COMM_WORLD, &reqs[1]));
    CHECK_MPI(MPI_Waitall(2, reqs, sts));
    CHECK_MPI(MPI_Get_count(&sts[0], mine, &got));
    CHECK_EQ(got, my_count);
    check_layout(c, theirs, their_count, mine, my_count, rbuf, seed_of(partner, ci, 3, 1));
    free(sbuf);
    free(rbuf);
}

int main(int argc, char **argv)
{
    int partner;

    mpitest_init(&argc, &argv, "datatypes");
    build_cases();
    partner = g_mpitest_rank ^ 1;
    if (partner < g_mpitest_size) {
        int leader = g_mpitest_rank < partner;

        for (int ci = 0; ci < g_ncases; ci++) {
            for (int pairing = 0; pairing < 3; pairing++) {
                one_way(ci, pairing, leader, partner);
                one_way(ci, pairing, !leader, partner);
            }
            exchange(ci, partner);
        }
    }
    for (int i = 0; i < g_nfree; i++)
        CHECK_MPI(MPI_Type_free(&g_free_list[i]));
    mpitest_finalize();
    return 0;
}
