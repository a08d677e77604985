/*
 * Pre-flight check of scripts/mpich-testsuite.sh: does traffic between the ranks of
 * this machine cross ch4:efarm? Every rank sends one small and one large message
 * around a ring and reads efarm's MPI_T performance variables before and after. It
 * passes ("efarm carries the ranks' traffic") when every rank's efarm_tx_pkts grew
 * and its native or active-message send count (efarm_nm_send_msgs, efarm_nm_am_send)
 * grew; it fails when a counter is missing or did not move, which is what a run
 * whose ranks talk through MPICH's shared memory looks like.
 *
 * Usage: mpiexec -n N mpich-efarm-check   (N >= 2)
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { CHECK_NVARS = 3, SMALL_BYTES = 8, LARGE_BYTES = 1 << 20 };

static const char *const g_var_names[CHECK_NVARS] = {"efarm_tx_pkts", "efarm_nm_send_msgs",
                                                     "efarm_nm_am_send"};

struct check_vars {
    MPI_T_pvar_session session;
    MPI_T_pvar_handle handle[CHECK_NVARS];
};

/* Looks up a counter by name; returns its index or -1. */
static int pvar_find(const char *name)
{
    int num = 0;
    MPI_T_pvar_get_num(&num);
    for (int i = 0; i < num; i++) {
        char vname[256], desc[256];
        int name_len = sizeof(vname), desc_len = sizeof(desc);
        int verbosity, var_class, bind, readonly, continuous, atomic;
        MPI_Datatype type;
        MPI_T_enum enumtype;
        if (MPI_T_pvar_get_info(i, vname, &name_len, &verbosity, &var_class, &type, &enumtype, desc,
                                &desc_len, &bind, &readonly, &continuous, &atomic) != MPI_SUCCESS)
            continue;
        if (strcmp(vname, name) == 0 && var_class == MPI_T_PVAR_CLASS_COUNTER &&
            type == MPI_UNSIGNED_LONG_LONG && bind == MPI_T_BIND_NO_OBJECT)
            return i;
    }
    return -1;
}

/* Opens a session with a handle on every counter; on failure names the missing one. */
static int vars_open(struct check_vars *vars, const char **missing_p)
{
    if (MPI_T_pvar_session_create(&vars->session) != MPI_SUCCESS) {
        *missing_p = "an MPI_T pvar session";
        return -1;
    }
    for (int v = 0; v < CHECK_NVARS; v++) {
        int count, index = pvar_find(g_var_names[v]);
        if (index < 0 ||
            MPI_T_pvar_handle_alloc(vars->session, index, NULL, &vars->handle[v], &count) !=
                MPI_SUCCESS ||
            count != 1) {
            *missing_p = g_var_names[v];
            return -1;
        }
    }
    return 0;
}

static void vars_read(struct check_vars *vars, unsigned long long value[CHECK_NVARS])
{
    for (int v = 0; v < CHECK_NVARS; v++) {
        value[v] = 0;
        MPI_T_pvar_read(vars->session, vars->handle[v], &value[v]);
    }
}

/* Sends BYTES to the next rank and receives as many from the previous one; returns the
 * number of bytes that arrived wrong. */
static int ring_exchange(int rank, int size, int bytes)
{
    unsigned char *out = malloc(bytes), *in = malloc(bytes);
    int bad = 0;
    if (out == NULL || in == NULL) {
        fprintf(stderr, "mpich-efarm-check: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    int prev = (rank + size - 1) % size;
    for (int i = 0; i < bytes; i++)
        out[i] = (unsigned char)(rank * 31 + i);
    memset(in, 0, bytes);
    MPI_Sendrecv(out, bytes, MPI_BYTE, (rank + 1) % size, 7, in, bytes, MPI_BYTE, prev, 7,
                 MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < bytes; i++)
        bad += in[i] != (unsigned char)(prev * 31 + i);
    free(out);
    free(in);
    return bad;
}

int main(int argc, char **argv)
{
    int rank, size, provided, ok = 1, all_ok;
    const char *missing = NULL;
    struct check_vars vars;
    unsigned long long before[CHECK_NVARS], after[CHECK_NVARS];

    MPI_Init(&argc, &argv);
    MPI_T_init_thread(MPI_THREAD_SINGLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size < 2) {
        if (rank == 0)
            printf("mpich-efarm-check: needs at least 2 ranks\n");
        MPI_Finalize();
        return 1;
    }

    if (vars_open(&vars, &missing) != 0) {
        printf("mpich-efarm-check: rank %d: no MPI_T counter %s (is this MPICH ch4:efarm?)\n", rank,
               missing);
        ok = 0;
    } else {
        vars_read(&vars, before);
    }
    int bad = ring_exchange(rank, size, SMALL_BYTES) + ring_exchange(rank, size, LARGE_BYTES);
    if (bad != 0) {
        printf("mpich-efarm-check: rank %d: %d bytes received wrong\n", rank, bad);
        ok = 0;
    }
    if (missing == NULL) {
        vars_read(&vars, after);
        unsigned long long tx = after[0] - before[0];
        unsigned long long sends = (after[1] - before[1]) + (after[2] - before[2]);
        if (tx == 0 || sends == 0) {
            printf("mpich-efarm-check: rank %d: efarm counters did not move (tx_pkts +%llu, "
                   "nm_send_msgs + nm_am_send +%llu): traffic did not cross efarm\n",
                   rank, tx, sends);
            ok = 0;
        }
    }
    MPI_Allreduce(&ok, &all_ok, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    if (rank == 0 && all_ok)
        printf("mpich-efarm-check: efarm carries the traffic of all %d ranks\n", size);
    if (missing == NULL) {
        for (int v = 0; v < CHECK_NVARS; v++)
            MPI_T_pvar_handle_free(vars.session, &vars.handle[v]);
        MPI_T_pvar_session_free(&vars.session);
    }
    MPI_T_finalize();
    MPI_Finalize();
    return all_ok ? 0 : 1;
}
