/*
 * MPI sessions over efarm, without MPI_Init: MPI_Session_init, the group of
 * the "mpi://WORLD" process set, MPI_Comm_create_from_group (with MPICH 5.0
 * a bootstrap communicator: efarm exchanges its addresses when it is
 * committed), then a ring of messages of every subprotocol's size and an
 * allreduce on it, every byte checked. A second communicator from the same
 * group (another string tag) carries a second ring. efarm's counter of sent
 * messages (MPI_T, efarm_nm_send_msgs) must have grown by at least the ring's
 * messages, so they crossed efarm. Then everything is freed and the session
 * finalized; a second session does it all again, both inside an outer
 * session that stays open. Prints
 * "sessions: OK (N ranks)" on the first process when every check passed;
 * exits nonzero (after a message naming the check) otherwise.
 */
#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int g_rank = -1;

static void die(const char *what, int line)
{
    fprintf(stderr, "sessions: process %d: line %d: %s\n", g_rank, line, what);
    exit(EXIT_FAILURE);
}

#define CHECK(c)                                \
    do {                                        \
        if (!(c))                               \
            die("check failed: " #c, __LINE__); \
    } while (0)
#define CHECK_MPI(call)                                         \
    do {                                                        \
        int err_ = (call);                                      \
        if (err_ != MPI_SUCCESS) {                              \
            char msg_[MPI_MAX_ERROR_STRING];                    \
            int len_ = 0;                                       \
            MPI_Error_string(err_, msg_, &len_);                \
            fprintf(stderr, "sessions: %s: %s\n", #call, msg_); \
            die("MPI call failed", __LINE__);                   \
        }                                                       \
    } while (0)

/* efarm's efarm_nm_send_msgs through MPI_T (no MPI_Init needed). */
static unsigned long long sent_msgs(void)
{
    int n = 0, idx = -1;
    unsigned long long v = 0;
    MPI_T_pvar_session s;
    MPI_T_pvar_handle h;
    int count;

    CHECK_MPI(MPI_T_pvar_get_num(&n));
    for (int i = 0; i < n && idx < 0; i++) {
        char name[128], desc[256];
        int nlen = sizeof(name), dlen = sizeof(desc), verb, cls, bind, ro, cont, atomic;
        MPI_Datatype dt;
        MPI_T_enum en;

        CHECK_MPI(MPI_T_pvar_get_info(i, name, &nlen, &verb, &cls, &dt, &en, desc, &dlen, &bind,
                                      &ro, &cont, &atomic));
        if (strcmp(name, "efarm_nm_send_msgs") == 0)
            idx = i;
    }
    if (idx < 0)
        die("no MPI_T variable efarm_nm_send_msgs: not an efarm MPICH?", __LINE__);
    CHECK_MPI(MPI_T_pvar_session_create(&s));
    CHECK_MPI(MPI_T_pvar_handle_alloc(s, idx, NULL, &h, &count));
    CHECK_MPI(MPI_T_pvar_read(s, h, &v));
    CHECK_MPI(MPI_T_pvar_handle_free(s, &h));
    CHECK_MPI(MPI_T_pvar_session_free(&s));
    return v;
}

/* A ring of messages of 0 bytes to 1 MiB on comm, every byte checked; returns how many it sent. */
static int ring(MPI_Comm comm, int salt)
{
    static const int sizes[] = {0, 8, 4000, 60000, 200000, 1 << 20};
    int rank, size, sent = 0;

    CHECK_MPI(MPI_Comm_rank(comm, &rank));
    CHECK_MPI(MPI_Comm_size(comm, &size));
    if (size < 2)
        return 0;
    for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        int n = sizes[k], to = (rank + 1) % size, from = (rank + size - 1) % size;
        unsigned char *out = malloc((size_t)n + 1), *in = malloc((size_t)n + 1);

        CHECK(out && in);
        for (int i = 0; i < n; i++)
            out[i] = (unsigned char)(rank * 31 + i * 7 + salt + (int)k);
        memset(in, 0xee, (size_t)n + 1);
        CHECK_MPI(MPI_Sendrecv(out, n, MPI_BYTE, to, 40 + (int)k, in, n, MPI_BYTE, from,
                               40 + (int)k, comm, MPI_STATUS_IGNORE));
        for (int i = 0; i < n; i++)
            if (in[i] != (unsigned char)(from * 31 + i * 7 + salt + (int)k))
                die("ring data differs", __LINE__);
        free(out);
        free(in);
        sent++;
    }
    return sent;
}

static void one_session(int round)
{
    MPI_Session session;
    MPI_Group group;
    MPI_Comm comm, comm2;
    int size, sum = 0, sent;
    unsigned long long before, after;
    char tag[64];

    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &session));
    CHECK_MPI(MPI_Group_from_session_pset(session, "mpi://WORLD", &group));
    CHECK_MPI(MPI_Group_rank(group, &g_rank));
    snprintf(tag, sizeof(tag), "efarm.test.sessions.%d", round);
    CHECK_MPI(MPI_Comm_create_from_group(group, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm));
    CHECK_MPI(MPI_Comm_size(comm, &size));

    before = sent_msgs();
    sent = ring(comm, round);
    after = sent_msgs();
    if (size > 1 && after - before < (unsigned long long)sent) {
        fprintf(stderr, "sessions: efarm sent %llu messages, the ring %d\n", after - before, sent);
        die("the ring's messages did not cross efarm", __LINE__);
    }
    CHECK_MPI(MPI_Allreduce(&g_rank, &sum, 1, MPI_INT, MPI_SUM, comm));
    CHECK(sum == size * (size - 1) / 2);

    snprintf(tag, sizeof(tag), "efarm.test.sessions.%d.second", round);
    CHECK_MPI(MPI_Comm_create_from_group(group, tag, MPI_INFO_NULL, MPI_ERRORS_RETURN, &comm2));
    ring(comm2, round + 100);
    CHECK_MPI(MPI_Barrier(comm2));
    CHECK_MPI(MPI_Comm_free(&comm2));
    CHECK_MPI(MPI_Comm_free(&comm));
    CHECK_MPI(MPI_Group_free(&group));
    CHECK_MPI(MPI_Session_finalize(&session));
}

int main(void)
{
    int provided, size = 0;
    MPI_Session outer;
    MPI_Group g;

    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    /*
     * One session stays open throughout: MPICH (4.0.2 with hydra, at least)
     * cannot initialize again once its last session is finalized (its PMI
     * connection is closed then). Inside it, two sessions come and go.
     */
    CHECK_MPI(MPI_Session_init(MPI_INFO_NULL, MPI_ERRORS_RETURN, &outer));
    for (int round = 0; round < 2; round++)
        one_session(round);
    CHECK_MPI(MPI_Group_from_session_pset(outer, "mpi://WORLD", &g));
    CHECK_MPI(MPI_Group_size(g, &size));
    CHECK_MPI(MPI_Group_free(&g));
    CHECK_MPI(MPI_Session_finalize(&outer));
    CHECK_MPI(MPI_T_finalize());
    if (g_rank == 0)
        printf("sessions: OK (%d ranks)\n", size);
    return 0;
}
