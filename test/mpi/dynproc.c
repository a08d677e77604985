/*
 * Dynamic processes over efarm (efarm_dynproc.c): the job spawns as many
 * children as it has ranks (this program again, with the argument "child"),
 * and parents and children then
 *   1. check MPI_Comm_get_parent and exchange messages both ways over the
 *      spawn intercommunicator, pair by pair (parent r with child r), from
 *      100 bytes to a read-protocol size, every byte checked, the sends'
 *      subprotocols checked on efarm's counters;
 *   2. merge it and build a second intercommunicator with
 *      MPI_Intercomm_create(MPI_COMM_WORLD of each side, the merged one as
 *      peer), checked by an intercommunicator allreduce and messages;
 *   3. connect and accept through a port child 0 opens and sends its parent
 *      0, exchange, disconnect, and connect again through the same port;
 *   4. time out: parent 0 accepts on a port of its own with info
 *      timeout=2 that nobody connects to, and connects with timeout=2 to a
 *      port of the last child that never accepts: both must fail within a few
 *      seconds (MPI_ERRORS_RETURN), connects to ports whose process id is
 *      cut short or not efarm's fail with an error naming the upid, and
 *      after all that parent 0 accepts child 0's connection on its port
 *      (the process goes on working);
 *   5. MPI_Comm_join over a TCP loopback socket between parent 0 and child 0;
 *   6. MPI_Comm_disconnect the spawn intercommunicator.
 * efarm's counters show the traffic went through efarm: the bootstrap
 * messages (efarm_nm_dyn_sends/recvs), the timeouts (dyn_timeouts), no engine
 * peer added for a process met again (efarm_level_peers), processes reused
 * rather than inserted again (dyn_peers_reused).
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "efarm_mpitest.h"

#define TAG_PORT 5
#define TAG_DATA 6

static const size_t g_sizes[] = {100, 40000, 2u << 20};
#define NSIZES (sizeof(g_sizes) / sizeof(g_sizes[0]))

static double now_s(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/*
 * Rank r of this side exchanges with rank r of the other side of intercomm
 * c (both sides have the same size): every size both ways, every byte
 * checked. step names the exchange in the data seeds. Checks on the
 * counters that each send went through efarm by a subprotocol its size
 * allows.
 */
static void exchange(MPI_Comm c, int is_parent, int step)
{
    struct mpitest_counters before, after, d;
    int me;

    MPI_Comm_rank(c, &me);
    mpitest_counters_read(&before);
    for (size_t i = 0; i < NSIZES; i++) {
        size_t n = g_sizes[i];
        uint8_t *out = mpitest_malloc(n), *in = mpitest_malloc(n + 64);
        uint64_t seed_out = mpitest_seed((uint64_t)step, (uint64_t)is_parent, (uint64_t)me, i);
        uint64_t seed_in = mpitest_seed((uint64_t)step, (uint64_t)!is_parent, (uint64_t)me, i);
        MPI_Status st;
        int count;

        mpitest_context("step %d: %zu bytes with remote rank %d", step, n, me);
        mpitest_fill(out, n, seed_out);
        memset(in, 0xcc, n + 64);
        CHECK_MPI(MPI_Sendrecv(out, (int)n, MPI_BYTE, me, TAG_DATA, in, (int)n + 64, MPI_BYTE, me,
                               TAG_DATA, c, &st));
        CHECK_MPI(MPI_Get_count(&st, MPI_BYTE, &count));
        CHECK_EQ(count, n);
        CHECK_EQ(st.MPI_SOURCE, me);
        CHECK_DATA(in, n, seed_in);
        CHECK_BYTES(in + n, 64, 0xcc);
        free(out);
        free(in);
    }
    mpitest_counters_read(&after);
    mpitest_counters_diff(&after, &before, &d);
    CHECK_SENT_SIZES(&d, g_sizes, NSIZES);
    CHECK_RECEIVED(&d, NSIZES, g_sizes[0] + g_sizes[1] + g_sizes[2]);
    /*
     * The largest goes by a read protocol (the runs use the reference profile: from
     * 1 MiB), once the new peer's HANDSHAKE has said it can be read from. A send
     * that leaves before it, as the first messages of a new connection may, takes
     * long-CTS (as the reference's does). With efasim dropping datagrams
     * (EFASIM_LOSS, the -faults run) the HANDSHAKE can come after the largest
     * message, so there either is right.
     */
    if (g_mpitest_limits.rdma_read && getenv("EFASIM_LOSS") == NULL)
        CHECK_COUNTER(d.proto_longread + d.proto_runtread, >=, 1);
    else if (g_mpitest_limits.rdma_read)
        CHECK_COUNTER(d.proto_longread + d.proto_runtread + d.proto_longcts, >=, 1);
}

/* Rank 0's port name to every rank of comm. */
static void port_bcast(char port[MPI_MAX_PORT_NAME], MPI_Comm comm)
{
    CHECK_MPI(MPI_Bcast(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, comm));
}

static MPI_Info timeout_info(const char *seconds)
{
    MPI_Info info;

    CHECK_MPI(MPI_Info_create(&info));
    CHECK_MPI(MPI_Info_set(info, "timeout", seconds));
    return info;
}

/* Step 5, parent 0: a listening TCP socket on 127.0.0.1; returns it and its port. */
static int tcp_listen(int *port_p)
{
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t len = sizeof(a);
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    CHECK(fd >= 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    CHECK(listen(fd, 1) == 0);
    CHECK(getsockname(fd, (struct sockaddr *)&a, &len) == 0);
    *port_p = ntohs(a.sin_port);
    return fd;
}

static int tcp_connect(int port)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    int fd = socket(AF_INET, SOCK_STREAM, 0);

    CHECK(fd >= 0);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    CHECK(connect(fd, (struct sockaddr *)&a, sizeof(a)) == 0);
    return fd;
}

/* One small message each way on a new intercommunicator between parent 0 and child 0. */
static void ping(MPI_Comm c, int step)
{
    uint64_t mine = mpitest_seed((uint64_t)step, 1, 0, 0), got = 0;
    int rsize;

    CHECK_MPI(MPI_Comm_remote_size(c, &rsize));
    CHECK_EQ(rsize, 1);
    CHECK_MPI(MPI_Sendrecv(&mine, 1, MPI_UINT64_T, 0, TAG_DATA, &got, 1, MPI_UINT64_T, 0, TAG_DATA,
                           c, MPI_STATUS_IGNORE));
    CHECK_EQ(got, mine);
}

static void run(MPI_Comm inter, int is_parent)
{
    unsigned long long peers0, new0, reused0, timeouts0, sends0, recvs0;
    int me, size, rsize, flag;
    MPI_Comm merged, ic2, cc, world = MPI_COMM_WORLD;
    char port[MPI_MAX_PORT_NAME] = {0}, port2[MPI_MAX_PORT_NAME] = {0};

    MPI_Comm_rank(world, &me);
    MPI_Comm_size(world, &size);
    CHECK_MPI(MPI_Comm_test_inter(inter, &flag));
    CHECK(flag);
    CHECK_MPI(MPI_Comm_remote_size(inter, &rsize));
    CHECK_EQ(rsize, size);

    /* 1. Both ways over the spawn intercommunicator. */
    exchange(inter, is_parent, 1);
    peers0 = mpitest_pvar_read("efarm_level_peers");
    new0 = mpitest_pvar_read("efarm_nm_dyn_peers_new");
    reused0 = mpitest_pvar_read("efarm_nm_dyn_peers_reused");

    /* 2. MPI_Intercomm_create between the two worlds, the merged intercommunicator as peer. */
    mpitest_context("intercomm_create");
    CHECK_MPI(MPI_Intercomm_merge(inter, !is_parent, &merged));
    CHECK_MPI(MPI_Intercomm_create(world, 0, merged, is_parent ? size : 0, 77, &ic2));
    {
        int mine = is_parent ? me + 1 : 100 + me, sum = 0, want = 0;

        for (int r = 0; r < size; r++)
            want += is_parent ? 100 + r : r + 1;
        CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, ic2));
        CHECK_EQ(sum, want);
    }
    exchange(ic2, is_parent, 2);
    CHECK_MPI(MPI_Comm_free(&ic2));
    CHECK_MPI(MPI_Comm_free(&merged));
    /* Everyone was known already: no engine peer and no address table entry more. */
    CHECK_COUNTER(mpitest_pvar_read("efarm_level_peers"), ==, peers0);
    CHECK_COUNTER(mpitest_pvar_read("efarm_nm_dyn_peers_new"), ==, new0);

    /* 3. Connect/accept through child 0's port, twice. */
    if (!is_parent && me == 0) {
        CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, port));
        CHECK_MPI(MPI_Send(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, TAG_PORT, inter));
    } else if (is_parent && me == 0) {
        CHECK_MPI(
            MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, TAG_PORT, inter, MPI_STATUS_IGNORE));
    }
    port_bcast(port, world);
    for (int round = 0; round < 2; round++) {
        mpitest_context("connect/accept, round %d, port %s", round, port);
        if (is_parent)
            CHECK_MPI(MPI_Comm_connect(port, MPI_INFO_NULL, 0, world, &cc));
        else
            CHECK_MPI(MPI_Comm_accept(port, MPI_INFO_NULL, 0, world, &cc));
        exchange(cc, is_parent, 3 + round);
        CHECK_MPI(MPI_Comm_disconnect(&cc));
        CHECK(cc == MPI_COMM_NULL);
    }
    if (!is_parent && me == 0)
        CHECK_MPI(MPI_Close_port(port));
    /* Same processes: no engine peer more, and the upids found their entries. */
    CHECK_COUNTER(mpitest_pvar_read("efarm_level_peers"), ==, peers0);
    CHECK_COUNTER(mpitest_pvar_read("efarm_nm_dyn_peers_new"), ==, new0);
    CHECK_COUNTER(mpitest_pvar_read("efarm_nm_dyn_peers_reused"), >, reused0);

    /* 4. Timeouts on parent 0, then a connection that works. */
    timeouts0 = mpitest_pvar_read("efarm_nm_dyn_timeouts");
    if (is_parent && me == 0) {
        MPI_Info info = timeout_info("2");
        double t0;
        int err;

        mpitest_context("accept that times out");
        CHECK_MPI(MPI_Comm_set_errhandler(MPI_COMM_SELF, MPI_ERRORS_RETURN));
        CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, port2));
        t0 = now_s();
        err = MPI_Comm_accept(port2, info, 0, MPI_COMM_SELF, &cc);
        CHECK(err != MPI_SUCCESS);
        CHECK(now_s() - t0 >= 1.9 && now_s() - t0 < 30);
        CHECK_COUNTER(mpitest_pvar_read("efarm_nm_dyn_timeouts"), ==, timeouts0 + 1);

        mpitest_context("connect that times out (the last child's port, never accepted)");
        CHECK_MPI(MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, size - 1, TAG_PORT, inter,
                           MPI_STATUS_IGNORE));
        t0 = now_s();
        err = MPI_Comm_connect(port, info, 0, MPI_COMM_SELF, &cc);
        CHECK(err != MPI_SUCCESS);
        CHECK(now_s() - t0 >= 1.9 && now_s() - t0 < 30);
        CHECK_COUNTER(mpitest_pvar_read("efarm_nm_dyn_timeouts"), ==, timeouts0 + 2);
        CHECK_MPI(MPI_Info_free(&info));

        /* A port whose process id is cut short, or another netmod's: a clear error, no crash. */
        for (int k = 0; k < 2; k++) {
            char bad[MPI_MAX_PORT_NAME], msg[MPI_MAX_ERROR_STRING];
            char *hex;
            int len = 0;

            mpitest_context("connect to a port with a malformed process id (%d)", k);
            snprintf(bad, sizeof(bad), "%s", port2);
            hex = strstr(bad, "connentry#");
            CHECK(hex != NULL);
            hex += strlen("connentry#");
            if (k == 0)
                snprintf(hex, sizeof(bad) - (size_t)(hex - bad), "454601$"); /* 3 bytes */
            else
                hex[0] = hex[1] = '5'; /* 'U' for 'E': not efarm's */
            err = MPI_Comm_connect(bad, MPI_INFO_NULL, 0, MPI_COMM_SELF, &cc);
            CHECK(err != MPI_SUCCESS);
            MPI_Error_string(err, msg, &len);
            CHECK(strstr(msg, "upid") != NULL);
        }
        CHECK_COUNTER(mpitest_pvar_read("efarm_nm_dyn_timeouts"), ==, timeouts0 + 2);

        mpitest_context("accept after the timeouts");
        CHECK_MPI(MPI_Send(port2, MPI_MAX_PORT_NAME, MPI_CHAR, 0, TAG_PORT, inter));
        CHECK_MPI(MPI_Comm_accept(port2, MPI_INFO_NULL, 0, MPI_COMM_SELF, &cc));
        ping(cc, 5);
        CHECK_MPI(MPI_Comm_disconnect(&cc));
        CHECK_MPI(MPI_Close_port(port2));
    } else if (!is_parent && me == size - 1) {
        /* A port nobody accepts on: it stays open, so its tag is never reused. */
        CHECK_MPI(MPI_Open_port(MPI_INFO_NULL, port2));
        CHECK_MPI(MPI_Send(port2, MPI_MAX_PORT_NAME, MPI_CHAR, 0, TAG_PORT, inter));
    }
    if (!is_parent && me == 0) {
        mpitest_context("connect to parent 0's port after its timeouts");
        CHECK_MPI(
            MPI_Recv(port, MPI_MAX_PORT_NAME, MPI_CHAR, 0, TAG_PORT, inter, MPI_STATUS_IGNORE));
        CHECK_MPI(MPI_Comm_connect(port, MPI_INFO_NULL, 0, MPI_COMM_SELF, &cc));
        ping(cc, 5);
        CHECK_MPI(MPI_Comm_disconnect(&cc));
    }

    /* 5. MPI_Comm_join over TCP loopback between parent 0 and child 0. */
    if (me == 0) {
        int fd, tcp_port = 0;
        MPI_Comm jc;

        mpitest_context("join");
        if (is_parent) {
            int lfd = tcp_listen(&tcp_port);

            CHECK_MPI(MPI_Send(&tcp_port, 1, MPI_INT, 0, TAG_PORT, inter));
            fd = accept(lfd, NULL, NULL);
            CHECK(fd >= 0);
            close(lfd);
        } else {
            CHECK_MPI(MPI_Recv(&tcp_port, 1, MPI_INT, 0, TAG_PORT, inter, MPI_STATUS_IGNORE));
            fd = tcp_connect(tcp_port);
        }
        sends0 = mpitest_pvar_read("efarm_nm_dyn_sends");
        recvs0 = mpitest_pvar_read("efarm_nm_dyn_recvs");
        CHECK_MPI(MPI_Comm_join(fd, &jc));
        CHECK(jc != MPI_COMM_NULL);
        CHECK_COUNTER(mpitest_pvar_read("efarm_nm_dyn_sends"), >, sends0);
        CHECK_COUNTER(mpitest_pvar_read("efarm_nm_dyn_recvs"), >, recvs0);
        ping(jc, 6);
        CHECK_MPI(MPI_Comm_disconnect(&jc));
        close(fd);
    }
    if (!is_parent && me == size - 1)
        CHECK_MPI(MPI_Close_port(port2));

    /* 6. Done with each other. */
    mpitest_context("disconnect");
    CHECK_MPI(MPI_Comm_disconnect(&inter));
}

int main(int argc, char **argv)
{
    MPI_Comm parent, inter;
    int is_child = argc > 1 && strcmp(argv[1], "child") == 0;
    int size;

    mpitest_init(&argc, &argv, is_child ? "dynproc-child" : "dynproc");
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    CHECK_MPI(MPI_Comm_get_parent(&parent));
    if (is_child) {
        CHECK(parent != MPI_COMM_NULL);
        run(parent, 0);
    } else {
        char *child_argv[] = {"child", NULL};
        struct mpitest_counters before, after, d;
        int *errcodes = mpitest_malloc(sizeof(int) * (size_t)size);

        CHECK(parent == MPI_COMM_NULL);
        mpitest_context("spawn");
        mpitest_counters_read(&before);
        CHECK_MPI(MPI_Comm_spawn(argv[0], child_argv, size, MPI_INFO_NULL, 0, MPI_COMM_WORLD,
                                 &inter, errcodes));
        for (int i = 0; i < size; i++)
            CHECK_EQ(errcodes[i], MPI_SUCCESS);
        free(errcodes);
        mpitest_counters_read(&after);
        mpitest_counters_diff(&after, &before, &d);
        /* The root accepted its children's connection over efarm's bootstrap messages. */
        if (g_mpitest_rank == 0) {
            CHECK_COUNTER(mpitest_pvar_read("efarm_nm_dyn_recvs"), >=, 1);
            CHECK_COUNTER(mpitest_pvar_read("efarm_nm_dyn_sends"), >=, 1);
        }
        CHECK_COUNTER(mpitest_pvar_read("efarm_nm_dyn_peers_new"), >=, 1);
        run(inter, 1);
    }
    mpitest_finalize();
    return 0;
}
