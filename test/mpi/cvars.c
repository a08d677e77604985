/*
 * efarm's MPI control variables (MPIR_CVAR_CH4_EFARM_*), seen as an MPI_T
 * tool sees them:
 *
 *   - before MPI_Init, MPI_T lists exactly MPITEST_CVARS_COUNT of them, all in
 *     the category CH4_EFARM, each with a description naming its EFARM_*
 *     variable; EFARM_RECVWIN's is an int of default 128, EFARM_MR_CACHE's a
 *     boolean (an int), EFARM_UNEXP_MAX_BYTES's a string (beyond MPI_T's int);
 *   - MPITEST_CVAR_WRITE="NAME=VALUE,..." writes them (NAME without the
 *     MPIR_CVAR_CH4_EFARM_ prefix; ints as numbers, strings as text) before
 *     MPI_Init; MPITEST_PVAR_EXPECT="pvar=VALUE,..." then checks efarm's
 *     performance variables after MPI_Init, so a write must have reached the
 *     engine (a refused write must make MPI_Init fail: run-mpi-tests.sh's
 *     must-fail runs).
 */
#define _POSIX_C_SOURCE 200809L /* strtok_r */

#include <stdlib.h>
#include <string.h>

#include "efarm_mpitest.h"

#define PREFIX "MPIR_CVAR_CH4_EFARM_"

struct cvar_info {
    int index;
    MPI_Datatype type;
    char desc[1024];
};

static int cvar_find(const char *name, struct cvar_info *ci)
{
    char got[256];
    int n, name_len, desc_len, verbosity, bind, scope;
    MPI_T_enum enumtype;

    CHECK_MPI(MPI_T_cvar_get_num(&n));
    for (int i = 0; i < n; i++) {
        name_len = (int)sizeof(got);
        desc_len = (int)sizeof(ci->desc);
        CHECK_MPI(MPI_T_cvar_get_info(i, got, &name_len, &verbosity, &ci->type, &enumtype, ci->desc,
                                      &desc_len, &bind, &scope));
        if (!strcmp(got, name)) {
            ci->index = i;
            return 1;
        }
    }
    return 0;
}

static int cvar_count_ours(void)
{
    char got[256], desc[1024];
    int n, count = 0, name_len, desc_len, verbosity, bind, scope;
    MPI_Datatype type;
    MPI_T_enum enumtype;

    CHECK_MPI(MPI_T_cvar_get_num(&n));
    for (int i = 0; i < n; i++) {
        name_len = (int)sizeof(got);
        desc_len = (int)sizeof(desc);
        CHECK_MPI(MPI_T_cvar_get_info(i, got, &name_len, &verbosity, &type, &enumtype, desc,
                                      &desc_len, &bind, &scope));
        if (strncmp(got, PREFIX, strlen(PREFIX)))
            continue;
        count++;
        mpitest_context("cvar %s", got);
        /* "Also read as EFARM_<NAME>." */
        {
            char want[300];

            snprintf(want, sizeof(want), "EFARM_%s", got + strlen(PREFIX));
            CHECK(strstr(desc, want) != NULL);
        }
        CHECK(type == MPI_INT || type == MPI_CHAR);
    }
    return count;
}

static void category_check(int expect)
{
    int cat, num_cvars, num_pvars, num_cats, name_len = 64, desc_len = 256;
    char name[64], desc[256];

    mpitest_context("category CH4_EFARM");
    CHECK_MPI(MPI_T_category_get_index("CH4_EFARM", &cat));
    CHECK_MPI(MPI_T_category_get_info(cat, name, &name_len, desc, &desc_len, &num_cvars, &num_pvars,
                                      &num_cats));
    CHECK_EQ(num_cvars, expect);
}

static void cvar_read_int(const char *name, int want)
{
    struct cvar_info ci;
    MPI_T_cvar_handle h;
    int count, value = -1;

    mpitest_context("read %s", name);
    CHECK(cvar_find(name, &ci));
    CHECK(ci.type == MPI_INT);
    CHECK_MPI(MPI_T_cvar_handle_alloc(ci.index, NULL, &h, &count));
    CHECK_EQ(count, 1);
    CHECK_MPI(MPI_T_cvar_read(h, &value));
    CHECK_EQ(value, want);
    CHECK_MPI(MPI_T_cvar_handle_free(&h));
}

/* Apply MPITEST_CVAR_WRITE. */
static void cvar_writes(void)
{
    const char *spec = getenv("MPITEST_CVAR_WRITE");
    char buf[1024], *save = NULL;

    if (!spec || !*spec)
        return;
    snprintf(buf, sizeof(buf), "%s", spec);
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char name[256], *eq = strchr(item, '=');
        struct cvar_info ci;
        MPI_T_cvar_handle h;
        int count;

        CHECK(eq != NULL);
        *eq = '\0';
        snprintf(name, sizeof(name), PREFIX "%s", item);
        mpitest_context("write %s=%s", name, eq + 1);
        CHECK(cvar_find(name, &ci));
        CHECK_MPI(MPI_T_cvar_handle_alloc(ci.index, NULL, &h, &count));
        if (ci.type == MPI_INT) {
            int v = atoi(eq + 1);

            CHECK_MPI(MPI_T_cvar_write(h, &v));
        } else {
            CHECK(ci.type == MPI_CHAR);
            CHECK_MPI(MPI_T_cvar_write(h, eq + 1));
        }
        CHECK_MPI(MPI_T_cvar_handle_free(&h));
    }
}

/* Check MPITEST_PVAR_EXPECT after MPI_Init. */
static void pvar_expectations(void)
{
    const char *spec = getenv("MPITEST_PVAR_EXPECT");
    char buf[1024], *save = NULL;

    if (!spec || !*spec)
        return;
    snprintf(buf, sizeof(buf), "%s", spec);
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(item, '=');

        CHECK(eq != NULL);
        *eq = '\0';
        mpitest_context("pvar %s after MPI_Init", item);
        CHECK_EQ(mpitest_pvar_read(item), strtoull(eq + 1, NULL, 10));
    }
}

int main(int argc, char **argv)
{
    int provided, expect = (int)mpitest_env_size("MPITEST_CVARS_COUNT", 0);
    struct cvar_info ci;

    CHECK_MPI(MPI_T_init_thread(MPI_THREAD_SINGLE, &provided));
    mpitest_context("count");
    CHECK(expect > 0);
    CHECK_EQ(cvar_count_ours(), expect);
    category_check(expect);
    if (!getenv("MPITEST_CVAR_WRITE") && !getenv("MPIR_CVAR_CH4_EFARM_RECVWIN"))
        cvar_read_int(PREFIX "RECVWIN", 128);
    mpitest_context("types");
    CHECK(cvar_find(PREFIX "MR_CACHE", &ci) && ci.type == MPI_INT);
    CHECK(cvar_find(PREFIX "UNEXP_MAX_BYTES", &ci) && ci.type == MPI_CHAR);
    CHECK(cvar_find(PREFIX "DEVICE", &ci) && ci.type == MPI_CHAR);
    CHECK(!cvar_find(PREFIX "TEST_SEED", &ci)); /* tests only: no control variable */
    cvar_writes();
    /*
     * MPI_T stays initialized across MPI_Init: MPICH 4.0.2's MPI_T_finalize
     * frees its string control variables, and a later MPI_Init then crashes
     * reading one (MPII_Coll_init).
     */

    mpitest_init(&argc, &argv, "cvars");
    pvar_expectations();
    {
        /* The job still works: a ring of one message each. */
        int next = (g_mpitest_rank + 1) % g_mpitest_size;
        int prev = (g_mpitest_rank + g_mpitest_size - 1) % g_mpitest_size, got = -1;

        mpitest_context("ring");
        CHECK_MPI(MPI_Sendrecv(&g_mpitest_rank, 1, MPI_INT, next, 7, &got, 1, MPI_INT, prev, 7,
                               MPI_COMM_WORLD, MPI_STATUS_IGNORE));
        CHECK_EQ(got, prev);
    }
    mpitest_finalize();
    CHECK_MPI(MPI_T_finalize()); /* the one of the start */
    return 0;
}
