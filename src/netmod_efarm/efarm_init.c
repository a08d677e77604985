/*
 * Start-up and teardown of ch4:efarm.
 *
 * ch4 calls, in this order (src/mpid/ch4/src/ch4_init.c, ch4_comm.c):
 * init_local from MPID_Init, before any other process is known; with MPICH
 * 4.x init_world while MPI_COMM_WORLD is committed, once the node's init
 * shared memory exists, and post_init after it; with MPICH 5.0 the commit
 * hook of every bootstrap communicator (MPI_COMM_WORLD, a session's group
 * communicator) instead; mpi_finalize_hook from MPID_Finalize.
 *
 * With per-VCI critical sections ch4 then sets its VCIs (4.3: init_vcis,
 * from post-init; 5.0: comm_set_vcis) and efarm opens an endpoint for each
 * further VCI, their addresses gathered in one table (vci_cards).
 *
 * VCI 0's efarm endpoint serves the process's start-up. Its 32-byte raw address
 * (protocol v4 section 1.4) is the business card every rank publishes through
 * PMI; each rank inserts every card into its address vector, its own included
 * (a multi-rank communicator sends to its own rank through the netmod), and
 * keeps the resulting peer handle in the rank's AV entry.
 */
#include "efarm_impl.h"
#include "efarm_cvars.h"
#include "efarm_mr_cache.h"
#include "efarm_noinline.h"
#include "efarm_p2p.h"
#if !MPIDI_EFARM_MPICH_50
#include "mpidu_bc.h"
#endif

MPIDI_EFARM_global_t MPIDI_EFARM_global;
uint64_t MPIDI_EFARM_arrival_clocks[MPIDI_EFARM_VCI_MAX][8];

/* ---- MPI_T performance variables ------------------------------------------ */

/*
 * Every engine counter is the pvar efarm_<name> and every netmod counter
 * efarm_nm_<name>: read-only, continuous, unsigned long long, not bound to an
 * object, read through a callback as the sum over the VCIs. Engine counters
 * come from the endpoints while they are open and from the sum taken at
 * finalize after that.
 */
static const size_t engine_counter_offsets[] = {
#define MPIDI_EFARM_OFFSET_(name, doc) offsetof(struct efarm_counters, name),
    EFARM_COUNTER_LIST(MPIDI_EFARM_OFFSET_)
#undef MPIDI_EFARM_OFFSET_
};

/* The engine counter at offset off, summed over the VCIs' open endpoints. */
static uint64_t engine_counter_sum(size_t off)
{
    uint64_t sum = 0;

    for (int vci = 0; vci < MPIDI_EFARM_global.nvcis; vci++) {
        uint64_t value;

        if (MPIDI_EFARM_VCI(vci)->ep == NULL)
            continue;
        memcpy(&value, (const char *)efarm_ep_counters(MPIDI_EFARM_VCI(vci)->ep) + off,
               sizeof(value));
        sum += value;
    }
    return sum;
}

static void engine_counter_read(void *addr, void *obj_handle, int count, void *buf)
{
    size_t off = *(const size_t *)addr;
    uint64_t value;

    (void)obj_handle, (void)count;
    if (MPIDI_EFARM_VCI(0)->ep)
        value = engine_counter_sum(off);
    else
        memcpy(&value, (const char *)&MPIDI_EFARM_global.final_counters + off, sizeof(value));
    *(unsigned long long *)buf = value;
}

/* The netmod's counters (MPIDI_EFARM_nm_counters_t), summed over the VCIs. */
static const size_t nm_counter_offsets[] = {
#define MPIDI_EFARM_NM_OFFSET_(name, doc) offsetof(MPIDI_EFARM_nm_counters_t, name),
    MPIDI_EFARM_NM_COUNTER_LIST(MPIDI_EFARM_NM_OFFSET_)
#undef MPIDI_EFARM_NM_OFFSET_
};

/* efarm_nm_vcis (0) and efarm_nm_vcis_used (1). */
static const int vci_facts[] = {0, 1};

static void vci_fact_read(void *addr, void *obj_handle, int count, void *buf)
{
    unsigned long long n = 0;

    (void)obj_handle, (void)count;
    for (int vci = 0; vci < MPIDI_EFARM_VCI_MAX; vci++) {
        const MPIDI_EFARM_nm_counters_t *c = &MPIDI_EFARM_VCI(vci)->nm_counters;

        if (*(const int *)addr == 0)
            n += vci < MPIDI_EFARM_global.nvcis;
        else
            n += c->send_msgs + c->recv_msgs + c->am_send + c->am_recv > 0;
    }
    *(unsigned long long *)buf = n;
}

static void nm_counter_read(void *addr, void *obj_handle, int count, void *buf)
{
    unsigned long long sum = 0;

    (void)obj_handle, (void)count;
    for (int vci = 0; vci < MPIDI_EFARM_VCI_MAX; vci++) {
        unsigned long long value;

        memcpy(&value, (const char *)&MPIDI_EFARM_VCI(vci)->nm_counters + *(const size_t *)addr,
               sizeof(value));
        sum += value;
    }
    *(unsigned long long *)buf = sum;
}

/*
 * The engine's levels (efarm_level_<name>, class level): what the endpoints
 * hold now, summed over the rails; 0 once they are closed. addr is the
 * field's offset in struct efarm_levels.
 */
static const size_t engine_level_offsets[] = {
#define MPIDI_EFARM_LEVEL_OFFSET_(name, doc) offsetof(struct efarm_levels, name),
    EFARM_LEVEL_LIST(MPIDI_EFARM_LEVEL_OFFSET_)
#undef MPIDI_EFARM_LEVEL_OFFSET_
};

static void engine_level_read(void *addr, void *obj_handle, int count, void *buf)
{
    unsigned long long sum = 0;

    (void)obj_handle, (void)count;
    for (int vci = 0; vci < MPIDI_EFARM_global.nvcis; vci++) {
        for (unsigned long long r = 0; MPIDI_EFARM_VCI(vci)->ep && r < MPIDI_EFARM_global.nrails;
             r++) {
            struct efarm_ep *ep =
                r == 0 ? MPIDI_EFARM_VCI(vci)->ep : MPIDI_EFARM_VCI(vci)->rails[r];
            struct efarm_levels lv;
            uint64_t value;

            if (!ep)
                continue;
            efarm_ep_levels(ep, &lv);
            memcpy(&value, (const char *)&lv + *(const size_t *)addr, sizeof(value));
            sum += value;
        }
    }
    *(unsigned long long *)buf = sum;
}

/*
 * The registration caches' totals (every cache of the process: the memory hook
 * is process-wide), read through a callback; addr is the field's offset.
 */
static void mr_cache_read(void *addr, void *obj_handle, int count, void *buf)
{
    struct efarm_mr_cache_stats st;
    uint64_t value;

    (void)obj_handle, (void)count;
    efarm_mr_cache_totals(&st);
    if (*(const size_t *)addr == SIZE_MAX)
        value = st.caching;
    else
        memcpy(&value, (const char *)&st + *(const size_t *)addr, sizeof(value));
    *(unsigned long long *)buf = value;
}

static void register_pvars(void)
{
    static const size_t mr_offsets[] = {
        offsetof(struct efarm_mr_cache_stats, hits),
        offsetof(struct efarm_mr_cache_stats, misses),
        offsetof(struct efarm_mr_cache_stats, evictions),
        offsetof(struct efarm_mr_cache_stats, invalidations),
        SIZE_MAX, /* caching */
    };
    static bool registered;
    const int flags = MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS;
    int i = 0;

    if (registered)
        return;
    registered = true;
    MPIR_T_cat_add_desc("EFARM", "ch4:efarm: EFA RDM protocol engine and netmod counters");
#define MPIDI_EFARM_ENGINE_PVAR_(name, doc)                                                     \
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG, "efarm_" #name, \
                              (void *)&engine_counter_offsets[i++], 1, MPI_T_ENUM_NULL,         \
                              MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT, flags,          \
                              engine_counter_read, NULL, "EFARM", doc);
    EFARM_COUNTER_LIST(MPIDI_EFARM_ENGINE_PVAR_)
#undef MPIDI_EFARM_ENGINE_PVAR_
    i = 0;
#define MPIDI_EFARM_LEVEL_PVAR_(name, doc)                                                       \
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_LEVEL, MPI_UNSIGNED_LONG_LONG,                    \
                              "efarm_level_" #name, (void *)&engine_level_offsets[i++], 1,       \
                              MPI_T_ENUM_NULL, MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT, \
                              flags, engine_level_read, NULL, "EFARM", doc);
    EFARM_LEVEL_LIST(MPIDI_EFARM_LEVEL_PVAR_)
#undef MPIDI_EFARM_LEVEL_PVAR_
    i = 0;
#define MPIDI_EFARM_NM_PVAR_(name, doc)                                                            \
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG, "efarm_nm_" #name, \
                              (void *)&nm_counter_offsets[i++], 1, MPI_T_ENUM_NULL,                \
                              MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT, flags,             \
                              nm_counter_read, NULL, "EFARM", doc);
    MPIDI_EFARM_NM_COUNTER_LIST(MPIDI_EFARM_NM_PVAR_)
#undef MPIDI_EFARM_NM_PVAR_
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_GENERIC, MPI_UNSIGNED_LONG_LONG, "efarm_nm_vcis",
                              (void *)&vci_facts[0], 1, MPI_T_ENUM_NULL, MPI_T_VERBOSITY_USER_BASIC,
                              MPI_T_BIND_NO_OBJECT, flags, vci_fact_read, NULL, "EFARM",
                              "VCIs with an endpoint of their own (MPIR_CVAR_CH4_NUM_VCIS and "
                              "_RESERVE_VCIS on a per-VCI MPICH 5.0; else 1)");
    MPIR_T_PVAR_REGISTER_impl(
        MPI_T_PVAR_CLASS_GENERIC, MPI_UNSIGNED_LONG_LONG, "efarm_nm_vcis_used",
        (void *)&vci_facts[1], 1, MPI_T_ENUM_NULL, MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,
        flags, vci_fact_read, NULL, "EFARM", "VCIs whose endpoint has sent or received a message");
#define MPIDI_EFARM_MR_PVAR_(cls, name, k, doc)                                        \
    MPIR_T_PVAR_REGISTER_impl(cls, MPI_UNSIGNED_LONG_LONG, "efarm_nm_mr_cache_" #name, \
                              (void *)&mr_offsets[k], 1, MPI_T_ENUM_NULL,              \
                              MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT, flags, \
                              mr_cache_read, NULL, "EFARM", doc);
    _Static_assert(sizeof(((struct efarm_mr_cache_stats *)0)->hits) == sizeof(uint64_t),
                   "registration cache counters are 64-bit");
    MPIDI_EFARM_MR_PVAR_(MPI_T_PVAR_CLASS_COUNTER, hits, 0,
                         "read-protocol buffers found registered (registration cache hits)")
    MPIDI_EFARM_MR_PVAR_(MPI_T_PVAR_CLASS_COUNTER, misses, 1,
                         "buffers registered (misses; every get when the cache passes through)")
    MPIDI_EFARM_MR_PVAR_(MPI_T_PVAR_CLASS_COUNTER, evictions, 2,
                         "cached registrations dropped to make room")
    MPIDI_EFARM_MR_PVAR_(MPI_T_PVAR_CLASS_COUNTER, invalidations, 3,
                         "registrations dropped because their memory was freed or unmapped")
    MPIDI_EFARM_MR_PVAR_(MPI_T_PVAR_CLASS_GENERIC, caching, 4,
                         "1: registrations stay cached (memory hook live); 0: pass-through")
#undef MPIDI_EFARM_MR_PVAR_
    /* The NIC choice and the selection thresholds of init_local: facts, not counters. */
#define MPIDI_EFARM_NIC_PVAR_(name, doc)                                                           \
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_GENERIC, MPI_UNSIGNED_LONG_LONG, "efarm_nm_" #name, \
                              &MPIDI_EFARM_global.name, 1, MPI_T_ENUM_NULL,                        \
                              MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT,                    \
                              MPIR_T_PVAR_FLAG_READONLY | MPIR_T_PVAR_FLAG_CONTINUOUS, NULL, NULL, \
                              "EFARM", doc);
    MPIDI_EFARM_NIC_PVAR_(nic_index, "index of this rank's EFA device in the verbs device list")
    MPIDI_EFARM_NIC_PVAR_(nic_nearness, "why it was nearest: 0 same NUMA node, 1 same package, "
                                        "2 NUMA distance, 3 anywhere, 4 rank not bound")
    MPIDI_EFARM_NIC_PVAR_(nic_devices, "EFA devices the verbs library lists")
    MPIDI_EFARM_NIC_PVAR_(nic_sharing, "ranks of this node sharing the same nearest devices")
    MPIDI_EFARM_NIC_PVAR_(nic_local_ranks, "ranks on this node, as the NIC choice counted them")
    MPIDI_EFARM_NIC_PVAR_(nrails, "endpoints (NICs) this rank stripes large messages over "
                                  "(EFARM_RAILS; 1: none)")
    MPIDI_EFARM_NIC_PVAR_(medium_max, "largest medium message (EFARM_MEDIUM_MAX or the profile)")
    MPIDI_EFARM_NIC_PVAR_(read_min, "smallest read-protocol message, registered buffer")
    MPIDI_EFARM_NIC_PVAR_(read_min_unreg, "smallest read-protocol message, unregistered buffer")
    MPIDI_EFARM_NIC_PVAR_(runt_min, "smallest runting-read message (2^64-1: never)")
    MPIDI_EFARM_NIC_PVAR_(medium_max_stream, "largest medium message while sends to the peer are "
                                             "in flight (2^64-1: no bound of its own)")
    MPIDI_EFARM_NIC_PVAR_(read_min_stream, "smallest read-protocol message while sends to the peer "
                                           "are in flight, registered buffer")
    MPIDI_EFARM_NIC_PVAR_(read_min_stream_unreg, "the same, unregistered buffer")
#undef MPIDI_EFARM_NIC_PVAR_
}

/*
 * efarm's communicator info keys, kept in MPICH's per-communicator hint array
 * (every communicator starts at 0 = no hint): efarm_fanin under its own key,
 * so MPICH parses it and MPI_Comm_get_info shows it; efarm_protocol's value
 * is a name, which MPICH's integer hints cannot parse, so with MPICH 4.0 its
 * slot has no key and efarm's comm_set_hints fills it (efarm_noinline.c).
 * MPICH 4.3 gives a new communicator's info to keyed slots only, so there the
 * slot has its key and takes the subprotocol's number at creation.
 */
static void register_comm_hints(void)
{
    if (MPIDI_EFARM_global.hint_fanin)
        return;
    MPIDI_EFARM_global.hint_fanin = MPIR_Comm_register_hint(
        0, "efarm_fanin", NULL, MPIR_COMM_HINT_TYPE_INT, MPIR_COMM_HINT_ATTR_LOCAL, 0);
#if MPIDI_EFARM_MPICH_43
    MPIDI_EFARM_global.hint_proto =
        MPIR_Comm_register_hint(0, "efarm_protocol", MPIDI_EFARM_hint_proto_set,
                                MPIR_COMM_HINT_TYPE_INT, MPIR_COMM_HINT_ATTR_LOCAL, 0);
#else
    MPIDI_EFARM_global.hint_proto = MPIR_Comm_register_hint(0, NULL, NULL, MPIR_COMM_HINT_TYPE_INT,
                                                            MPIR_COMM_HINT_ATTR_LOCAL, 0);
#endif
}

/*
 * The device of this rank (issue 13). Every rank reads its own CPU binding
 * (hwloc) and publishes it with its host name through PMI as efarm-nic-<rank>;
 * after one PMI barrier each rank reads the values of the ranks on its node
 * and calls the NIC choice with all their bindings, so every rank of a node
 * computes the same spread (src/device/efarm_nic.h has the rules:
 * nearest NICs first, then the ranks sharing them round-robin; unbound ranks
 * share every NIC). The node's ranks are MPICH's (node_local_map), except when
 * MPICH was told to treat every process as its own node (MPIR_CVAR_NOLOCAL,
 * local cliques): those runs keep shared memory out of the way, but the ranks
 * still share the machine's NICs, so then the node is every rank with the same
 * host name (each rank reads all values: meant for tests on one machine).
 * EFARM_NIC_EXCHANGE=0 skips the exchange: every rank counts as unbound.
 * One PMI barrier at start-up is the cost; a single-rank job has none.
 */
#define MPIDI_EFARM_NIC_KEY_FMT "efarm-nic-%d"
#define MPIDI_EFARM_HOST_MAX    256

struct nic_peers {
    char *vals;     /* values of val_size bytes: "<host>|<binding>" */
    char **binding; /* per local rank: a pointer into vals, "" when unbound */
    unsigned nlocal, my_local;
};

static int nic_value_get(int rank, char *val, int val_size)
{
    char key[64];

    snprintf(key, sizeof(key), MPIDI_EFARM_NIC_KEY_FMT, rank);
    return MPIR_pmi_kvs_get(rank, key, val, val_size);
}

/*
 * "<host>|<binding>" (PMI-1 values cannot hold spaces): cut val at the '|' and
 * return the binding after it ("" when unbound, "-" on the wire).
 */
static char *nic_value_binding(char *val)
{
    char *sp = strchr(val, '|');

    if (!sp)
        return val + strlen(val);
    *sp = '\0';
    return strcmp(sp + 1, "-") ? sp + 1 : sp + 1 + 1;
}

static int nic_peers_gather(struct nic_peers *np)
{
    int mpi_errno = MPI_SUCCESS;
    int val_size = MPIR_pmi_max_val_size();
    int size = MPIR_Process.size, me = MPIR_Process.rank;
#ifdef ENABLE_NO_LOCAL
    bool by_host = true;
#else
    bool by_host = MPIR_CVAR_NOLOCAL || MPIR_pmi_has_local_cliques();
#endif
    int nget = by_host ? size : MPIR_Process.local_size;
    char host[MPIDI_EFARM_HOST_MAX], binding[512], key[64];
    char *mine;
    int ret;

    memset(np, 0, sizeof(*np));
    if (gethostname(host, sizeof(host)))
        snprintf(host, sizeof(host), "unknown");
    host[sizeof(host) - 1] = '\0';
    for (char *c = host; *c; c++)
        if (*c == ' ' || *c == '|' || *c == '=')
            *c = '_';
    ret = efarm_dev_cpu_binding(binding, sizeof(binding));
    if (ret && ret != -ENAMETOOLONG)
        return MPIDI_EFARM_ERROR(ret, "efarm_dev_cpu_binding");
    np->vals = MPL_calloc((size_t)nget + 1, (size_t)val_size, MPL_MEM_OTHER);
    np->binding = MPL_calloc((size_t)nget, sizeof(*np->binding), MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP(!np->vals || !np->binding, mpi_errno, MPI_ERR_OTHER, "**nomem");
    mine = np->vals + (size_t)nget * (size_t)val_size;
    /* A binding that does not fit counts as unbound rather than failing the job, and says so. */
    if (ret == -ENAMETOOLONG ||
        snprintf(mine, (size_t)val_size, "%s|%s", host, binding[0] ? binding : "-") >= val_size) {
        fprintf(stderr,
                "efarm: MPI rank %d: its CPU binding does not fit a PMI value; the NIC choice "
                "counts it as unbound\n",
                me);
        snprintf(mine, (size_t)val_size, "%.*s|-", val_size / 2, host);
    }
    snprintf(key, sizeof(key), MPIDI_EFARM_NIC_KEY_FMT, me);
    mpi_errno = MPIR_pmi_kvs_put(key, mine);
    MPIR_ERR_CHECK(mpi_errno);
    mpi_errno = MPIR_pmi_barrier();
    MPIR_ERR_CHECK(mpi_errno);
    nic_value_binding(mine); /* cut at the host name */

    for (int i = 0; i < nget; i++) {
        int rank = by_host ? i : MPIR_Process.node_local_map[i];
        char *val = np->vals + (size_t)np->nlocal * (size_t)val_size;
        char *b;

        mpi_errno = nic_value_get(rank, val, val_size);
        MPIR_ERR_CHECK(mpi_errno);
        b = nic_value_binding(val);
        if (by_host && strcmp(val, mine))
            continue; /* another node */
        if (rank == me)
            np->my_local = np->nlocal;
        np->binding[np->nlocal++] = b;
    }

fn_exit:
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

static void nic_peers_free(struct nic_peers *np)
{
    MPL_free(np->binding);
    MPL_free(np->vals);
}

/* ---- The launcher -------------------------------------------------------- */

/*
 * The PMI clients this MPICH has, and what each needs from the launcher: PMI 1
 * and PMI 2 (hydra's mpiexec, srun --mpi=pmi2) PMI_FD or PMI_PORT, PMIx
 * (srun --mpi=pmix) PMIX_NAMESPACE. MPICH 4.0 has one (USE_PMI2_API,
 * USE_PMIX_API, else PMI 1); 4.1 and later may have several (ENABLE_PMI1,
 * ENABLE_PMI2, ENABLE_PMIX) and pick one at run time. Only a PMIx library
 * from outside MPICH (--with-pmix: PMI_FROM_3RD_PARTY) reaches a PMIx server
 * such as Slurm's: the PMIx client of MPICH's own libpmi (4.2 and 4.3 build it
 * by default) speaks PMI's wire to hydra, and under srun --mpi=pmix
 * (MPIR_CVAR_PMI_VERSION=x) finds no server and runs the process alone.
 */
#if defined(ENABLE_PMI1) || \
    (MPICH_NUMVERSION < 40100000 && !defined(USE_PMI2_API) && !defined(USE_PMIX_API))
#define MPIDI_EFARM_LAUNCH_PMI1 1
#else
#define MPIDI_EFARM_LAUNCH_PMI1 0
#endif
#if defined(ENABLE_PMI2) || defined(USE_PMI2_API)
#define MPIDI_EFARM_LAUNCH_PMI2 1
#else
#define MPIDI_EFARM_LAUNCH_PMI2 0
#endif
#if (defined(ENABLE_PMIX) && defined(PMI_FROM_3RD_PARTY)) || defined(USE_PMIX_API)
#define MPIDI_EFARM_LAUNCH_PMIX 1
#else
#define MPIDI_EFARM_LAUNCH_PMIX 0
#endif

/*
 * srun started this process as one of several tasks of a job step, yet MPI
 * found no PMI server it speaks and started as a singleton: every task would
 * run alone, as a one-rank MPI_COMM_WORLD, each doing the whole job's work.
 * That is a launch whose PMI does not match the build (srun --mpi=none, or
 * pmix to a PMI 2 build): refused, naming the srun option that fits. A
 * process MPI_Comm_spawn started keeps its launcher's variables and passes.
 */
static int launch_check(void)
{
    const char *tasks = getenv("SLURM_STEP_NUM_TASKS");
    const char *srun_mpi = getenv("SLURM_MPI_TYPE");
    bool pmi12 = getenv("PMI_FD") != NULL || getenv("PMI_PORT") != NULL;
    bool pmix = getenv("PMIX_NAMESPACE") != NULL;
    const char *speaks, *fix;
    char msg[512];
    int mpi_errno = MPI_SUCCESS;

    if (MPIR_Process.size != 1 || tasks == NULL || atoi(tasks) < 2)
        return MPI_SUCCESS;
    if (((MPIDI_EFARM_LAUNCH_PMI1 || MPIDI_EFARM_LAUNCH_PMI2) && pmi12) ||
        (MPIDI_EFARM_LAUNCH_PMIX && pmix))
        return MPI_SUCCESS;
    if (MPIDI_EFARM_LAUNCH_PMIX && !MPIDI_EFARM_LAUNCH_PMI1 && !MPIDI_EFARM_LAUNCH_PMI2) {
        speaks = "PMIx";
        fix = "srun --mpi=pmix (or MpiDefault=pmix in slurm.conf)";
    } else if (MPIDI_EFARM_LAUNCH_PMI2 && !MPIDI_EFARM_LAUNCH_PMI1 && !MPIDI_EFARM_LAUNCH_PMIX) {
        speaks = "PMI 2";
        fix = "srun --mpi=pmi2 (or MpiDefault=pmi2 in slurm.conf)";
    } else if (MPIDI_EFARM_LAUNCH_PMIX) {
        speaks = "PMI 1, PMI 2, PMIx";
        fix = "srun --mpi=pmix or --mpi=pmi2, or mpiexec inside the allocation";
    } else {
        speaks = MPIDI_EFARM_LAUNCH_PMI2 ? "PMI 1, PMI 2" : "PMI 1";
        fix = "mpiexec inside the allocation (salloc or sbatch), or srun --mpi=pmi2";
    }
    /* Whole within MPICH's error line (256 characters with "efarm: the launch failed: "). */
    snprintf(msg, sizeof(msg),
             "srun started %s tasks, but this one runs alone: srun --mpi=%s gives no PMI this "
             "MPICH speaks (%s); start it with %s",
             tasks, srun_mpi ? srun_mpi : "none", speaks, fix);
    MPIR_ERR_SET2(mpi_errno, MPI_ERR_OTHER, "**efarm", "**efarm %s %s", "the launch", msg);
    return mpi_errno;
}

/*
 * MPICH 5.0 exchanges the node roots' addresses with a PMIx fence over that
 * group of processes (MPIDIU_bc_exchange_node_roots ->
 * MPIR_pmi_allgather_group), and builds a session's communicator the same way.
 * Slurm's PMIx server (its mpi/pmix plugin: 22.05 here, and the same report on
 * a newer one, pmodels/mpich#7957) never completes a fence over part of a
 * step's processes ("No process controlled by this slurmstepd is involved in
 * this collective"): every rank would hang in MPI_Init. MPICH has a switch for
 * PMI servers without group fences, MPIR_CVAR_PMI_DISABLE_GROUP: one fence
 * over all processes instead. Under Slurm's PMIx server (its tasks have
 * SLURM_PMIX_MAPPING_SERV) efarm sets it, unless the user set it either way.
 */
#if MPIDI_EFARM_MPICH_50 && MPIDI_EFARM_LAUNCH_PMIX
static void slurm_pmix_groups(void)
{
    static const char *const names[] = {"MPIR_CVAR_PMI_DISABLE_GROUP",
                                        "MPIR_PARAM_PMI_DISABLE_GROUP", "MPICH_PMI_DISABLE_GROUP"};

    if (MPIR_CVAR_PMI_DISABLE_GROUP || getenv("PMIX_NAMESPACE") == NULL ||
        getenv("SLURM_PMIX_MAPPING_SERV") == NULL)
        return;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (getenv(names[i]) != NULL)
            return;
    MPIR_CVAR_PMI_DISABLE_GROUP = 1;
    efarm_log(EFARM_LOG_INFO,
              "Slurm's PMIx server: fences over all processes (MPIR_CVAR_PMI_DISABLE_GROUP=1)");
}
#else
static void slurm_pmix_groups(void) {}
#endif

static int choose_device(char name[EFARM_DEV_NAME_MAX])
{
    int mpi_errno = MPI_SUCCESS;
    struct efarm_nic_choice *c = &MPIDI_EFARM_global.nic;
    struct nic_peers np = {0};
    unsigned my_local = (unsigned)MPIR_Process.local_rank;
    unsigned nlocal = (unsigned)MPIR_Process.local_size;
    int ret;

    if (MPIR_Process.size > 1 && efarm_config()->nic_exchange) {
        mpi_errno = nic_peers_gather(&np);
        MPIR_ERR_CHECK(mpi_errno);
        my_local = np.my_local;
        nlocal = np.nlocal;
    }
    ret = efarm_dev_choose_nic(my_local, nlocal, (const char *const *)np.binding, name, c);
    if (ret < 0 && efarm_device_choice()->kind == EFARM_DEVICE_NONE) {
        /* EFARM_DEVICE=auto on a host without EFA: the reason names the variable. */
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**efarm_device", "**efarm_device %s",
                      efarm_device_choice()->reason);
        goto fn_fail;
    }
    if (ret < 0) {
        mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_dev_choose_nic");
        goto fn_fail;
    }
    if (efarm_config()->nic_verbose)
        fprintf(stderr, "efarm: MPI rank %d (local %u of %u) -> %s -> %s\n", MPIR_Process.rank,
                my_local, nlocal, name, c->reason);
    MPIDI_EFARM_global.nic_index = c->index;
    MPIDI_EFARM_global.nic_nearness = (unsigned long long)c->nearness;
    MPIDI_EFARM_global.nic_devices = c->ndevices;
    MPIDI_EFARM_global.nic_sharing = c->nsharing;
    MPIDI_EFARM_global.nic_local_ranks = nlocal;

fn_exit:
    nic_peers_free(&np);
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/*
 * MPI_Finalize's early callback: drop the receives release_later still holds
 * before MPICH checks that nothing references its built-in communicators.
 */
static int release_at_finalize(void *arg)
{
    (void)arg;
    for (int vci = 0; vci < MPIDI_EFARM_VCI_MAX; vci++)
        MPIDI_EFARM_release_drain(MPIDI_EFARM_VCI(vci));
    return MPI_SUCCESS;
}

/*
 * MPI_T's copy of a string control variable: MPICH keeps what MPI_T reads and
 * writes apart from the variable its environment reading fills.
 */
static const char *cvar_mpit_string(const char *name)
{
    name2index_hash_t *h = NULL;
    cvar_table_entry_t *e;

    if (!cvar_hash || !cvar_table)
        return NULL;
    HASH_FIND_STR(cvar_hash, name, h);
    if (!h)
        return NULL;
    e = (cvar_table_entry_t *)utarray_eltptr(cvar_table, (unsigned)h->idx);
    return e && e->datatype == MPI_CHAR ? (const char *)e->addr : NULL;
}

/*
 * efarm_config_load's lookup: the text of v's control variable when it holds
 * something other than its default (set by MPICH's environment names or by an
 * MPI_T write before MPI_Init), else NULL.
 */
static const char *cvar_lookup(const struct efarm_config_var *v, void *ctx, char *buf, size_t len,
                               const char **source)
{
    static char name[80];

    (void)ctx;
    for (size_t i = 0; i < sizeof(MPIDI_EFARM_cvars) / sizeof(MPIDI_EFARM_cvars[0]); i++) {
        const struct MPIDI_EFARM_cvar *c = &MPIDI_EFARM_cvars[i];
        const char *text;

        if (strcmp(c->name, v->name))
            continue;
        snprintf(name, sizeof(name), "MPIR_CVAR_CH4_EFARM_%s", c->name);
        *source = name;
        if (!c->is_string) {
            /* int and boolean: MPICH's value against the table's default */
            int d = v->kind == EFARM_CONFIG_BOOL ? strcmp(v->def, "0") != 0 : atoi(v->def);

            if (*(const int *)c->addr == d)
                return NULL;
            snprintf(buf, len, "%d", *(const int *)c->addr);
            return buf;
        }
        text = cvar_mpit_string(name);
        if (text && strcmp(text, v->def))
            return text;
        text = *(const char *const *)c->addr;
        return text && strcmp(text, v->def) ? text : NULL;
    }
    return NULL;
}

/*
 * The tunables once more, now with the control variables; a refused value
 * fails MPI_Init with its message (every refused one, one per line).
 */
static int config_load(void)
{
    int mpi_errno = MPI_SUCCESS;
    const char *refused;

    if (efarm_config_load(cvar_lookup, NULL)) {
        efarm_config_status(&refused);
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**efarm_config", "**efarm_config %s", refused);
    }
    return mpi_errno;
}

/*
 * Open the endpoint (the device layer loads the verbs libraries EFARM_DEVICE
 * names: efa, sim or auto) and report how many tag bits a message carries.
 */
int MPIDI_EFARM_init_local(int *tag_bits)
{
    int mpi_errno = MPI_SUCCESS;
    struct efarm_ep_attr attr = {0};
    char device[EFARM_DEV_NAME_MAX];
    struct efarm_ep *ep;
    int ret;

#if MPIDI_EFARM_PER_VCI
    /* Per-VCI critical sections: the netmod relies on ch4 locking VCI 0 around progress. */
    if (MPIDI_CH4_MT_MODEL != MPIDI_CH4_MT_DIRECT) {
        MPIR_ERR_SET(mpi_errno, MPI_ERR_OTHER, "**efarm_mtmodel");
        goto fn_fail;
    }
#endif
    /*
     * Without per-VCI critical sections ch4 has one VCI. With them, MPICH 4.3
     * fixes its count before init_local and asks the netmod to open them in
     * init_vcis; 5.0 starts with one and asks for more in comm_set_vcis.
     */
    if (!MPIDI_EFARM_PER_VCI && MPIDI_global.n_vcis != 1) {
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**efarm_vcis", "**efarm_vcis %d",
                      MPIDI_global.n_vcis);
        goto fn_fail;
    }

    efarm_log_set_rank(MPIR_Process.rank);
    mpi_errno = launch_check();
    if (mpi_errno)
        goto fn_fail;
    mpi_errno = config_load();
    if (mpi_errno)
        goto fn_fail;
    slurm_pmix_groups();
    mpi_errno = choose_device(device);
    if (mpi_errno)
        goto fn_fail;

    attr.device = device;
    /*
     * Room for every endpoint of the job that may reach this one (each rank's
     * VCIs: MPIR_CVAR_CH4_NUM_VCIS and _RESERVE_VCIS on MPICH 5.0), with as
     * much again for senders learnt from the wire.
     */
    {
        uint64_t reach = (uint64_t)MPIR_Process.size;

#if MPIDI_EFARM_PER_VCI
        if (MPIR_CVAR_CH4_NUM_VCIS + MPIR_CVAR_CH4_RESERVE_VCIS > 1)
            reach *= (uint64_t)(MPIR_CVAR_CH4_NUM_VCIS + MPIR_CVAR_CH4_RESERVE_VCIS);
#endif
        if (reach > 2048)
            attr.av_size = (uint32_t)MPL_MIN(reach * 2, (uint64_t)1 << 30);
    }
    ret = efarm_ep_open(&attr, &ep);
    if (ret < 0) {
        mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_ep_open");
        goto fn_fail;
    }
    MPIDI_EFARM_VCI(0)->ep = ep;
    MPIDI_EFARM_global.nvcis = 1;
    /* comm_set_vcis opens the other VCIs' endpoints alike. */
    MPIDI_EFARM_global.ep_attr = attr;
    memcpy(MPIDI_EFARM_global.ep_device, device, sizeof(device));
    MPIDI_EFARM_global.ep_attr.device = MPIDI_EFARM_global.ep_device;
    /* One arrival order with MPIDIG's unexpected queue (efarm_pre.h). */
    efarm_ep_set_arrival_clock(ep, &MPIDI_EFARM_arrival_clocks[0][0]);
    efarm_log(EFARM_LOG_INFO, "MPI rank %d: %s; device %s: %s", MPIR_Process.rank,
              efarm_device_choice()->reason, device, MPIDI_EFARM_global.nic.reason);
    mpi_errno = MPIDI_EFARM_rails_open(&attr);
    if (mpi_errno)
        goto fn_fail;
    {
        struct efarm_ep_policy pol;

        efarm_ep_policy(ep, &pol);
        MPIDI_EFARM_global.medium_max = pol.medium_max;
        MPIDI_EFARM_global.read_min = pol.read_min;
        MPIDI_EFARM_global.read_min_unreg = pol.read_min_unreg;
        MPIDI_EFARM_global.runt_min = pol.runt_min;
        MPIDI_EFARM_global.medium_max_stream = pol.medium_max_stream;
        MPIDI_EFARM_global.read_min_stream = pol.read_min_stream;
        MPIDI_EFARM_global.read_min_stream_unreg = pol.read_min_stream_unreg;
    }
    MPIDI_EFARM_global.yield_polls = (unsigned)efarm_config()->yield_polls;
    MPIDI_EFARM_VCI(0)->idle_polls = 0;
    register_pvars();
    register_comm_hints();
    MPIR_Add_finalize(release_at_finalize, NULL, MPIR_FINALIZE_CALLBACK_PRIO + 1);

    /* The wire tag packs context, source and tag; MPI_TAG_UB follows from this. */
    *tag_bits = EFARM_TAG_TAG_BITS;

fn_exit:
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/*
 * A rank's card: a slot of 32 bytes per possible rail, rail 0's raw address
 * (protocol v4 section 1.4) first, zeros for a rail the rank has not opened.
 * Every card has the same length whatever EFARM_RAILS says, so ranks may set
 * it differently: two ranks stripe over the rails both have.
 */
#define MPIDI_EFARM_CARD_LEN ((size_t)MPIDI_EFARM_RAILS_MAX * EFARM_RAW_ADDR_LEN)

static void my_card(uint8_t card[MPIDI_EFARM_CARD_LEN])
{
    memset(card, 0, MPIDI_EFARM_CARD_LEN);
    for (unsigned r = 0; r < MPIDI_EFARM_global.nrails && r < MPIDI_EFARM_RAILS_MAX; r++)
        efarm_ep_addr(MPIDI_EFARM_VCI(0)->rails[r], card + (size_t)r * EFARM_RAW_ADDR_LEN);
}

int MPIDI_EFARM_peer_name(efarm_peer_t peer)
{
    size_t byte = peer / 8;
    uint8_t bit = (uint8_t)(1u << (peer % 8));
    int known;

    if (byte >= MPIDI_EFARM_global.named_peers_len) {
        size_t len = MPIDI_EFARM_global.named_peers_len ? MPIDI_EFARM_global.named_peers_len : 64;
        uint8_t *p;

        while (len <= byte)
            len *= 2;
        p = MPL_realloc(MPIDI_EFARM_global.named_peers, len, MPL_MEM_ADDRESS);
        if (p == NULL)
            return -ENOMEM;
        memset(p + MPIDI_EFARM_global.named_peers_len, 0, len - MPIDI_EFARM_global.named_peers_len);
        MPIDI_EFARM_global.named_peers = p;
        MPIDI_EFARM_global.named_peers_len = len;
    }
    known = (MPIDI_EFARM_global.named_peers[byte] & bit) != 0;
    MPIDI_EFARM_global.named_peers[byte] |= bit;
    return known;
}

/* Insert a peer's card into the address vectors and set its AV entry. */
static int insert_card(MPIDI_EFARM_addr_t *a, const uint8_t *card)
{
    static const uint8_t zero[EFARM_RAW_ADDR_LEN];
    unsigned k = 1;
    efarm_peer_t peer;
    int ret;

    ret = efarm_av_insert(MPIDI_EFARM_VCI(0)->ep, card, &peer);
    if (ret >= 0)
        ret = MPIDI_EFARM_peer_name(peer);
    if (ret < 0)
        return MPIDI_EFARM_ERROR(ret, "efarm_av_insert");
    a->peer = peer;
    /* The rails both have: the peer's published ones, up to ours. */
    while (k < MPIDI_EFARM_global.nrails && k < MPIDI_EFARM_RAILS_MAX &&
           memcmp(card + (size_t)k * EFARM_RAW_ADDR_LEN, zero, sizeof(zero)))
        k++;
    for (unsigned r = 1; r < k; r++) {
        ret = efarm_av_insert(MPIDI_EFARM_VCI(0)->rails[r], card + (size_t)r * EFARM_RAW_ADDR_LEN,
                              &a->rail_peer[r - 1]);
        if (ret < 0)
            return MPIDI_EFARM_ERROR(ret, "efarm_av_insert (a rail)");
    }
    a->nrails = (uint8_t)k;
    return MPI_SUCCESS;
}

#if MPIDI_EFARM_PER_VCI
/*
 * Open VCIs 1 .. want-1: an endpoint each, like VCI 0's, spread over the
 * rank's rails (VCI v on rail v % nrails's device: with EFARM_RAILS the
 * VCIs' traffic uses every NIC the rank has; without, all on VCI 0's), and
 * without rails of their own (striping stays on VCI 0). Returns how many VCIs
 * are open; *err_p is the engine's error that stopped it, or 0.
 */
static int open_vcis(int want, int *err_p)
{
    int n = MPIDI_EFARM_global.nvcis;

    *err_p = 0;
    for (; n < want; n++) {
        MPIDI_EFARM_vci_t *v = MPIDI_EFARM_VCI(n);
        struct efarm_ep_attr attr = MPIDI_EFARM_global.ep_attr;
        int ret;

        if (MPIDI_EFARM_global.nrails > 1)
            attr.device = MPIDI_EFARM_global.rail_device[n % MPIDI_EFARM_global.nrails];
        ret = efarm_ep_open(&attr, &v->ep);

        if (ret < 0) {
            v->ep = NULL;
            *err_p = ret;
            break;
        }
        efarm_ep_set_arrival_clock(v->ep, &MPIDI_EFARM_arrival_clocks[n][0]);
        v->idle_polls = 0;
    }
    MPIDI_EFARM_global.nvcis = n;
    return n;
}

/*
 * Every world rank's VCI addresses, in one table (vci_cards), and each
 * VCI's table of peer rows, empty: peers are made on first use.
 */
static int exchange_vci_cards(MPIR_Comm *comm, int maxn)
{
    int mpi_errno = MPI_SUCCESS;
    int size = comm->local_size;
    size_t slot = (size_t)maxn * EFARM_RAW_ADDR_LEN;
    uint8_t *cards = MPL_calloc((size_t)size, slot, MPL_MEM_ADDRESS);

    MPIR_ERR_CHKANDJUMP1(cards == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem", "**nomem %s",
                         "efarm VCI addresses");
    for (int vci = 0; vci < MPIDI_EFARM_global.nvcis; vci++)
        efarm_ep_addr(MPIDI_EFARM_VCI(vci)->ep,
                      cards + (size_t)comm->rank * slot + (size_t)vci * EFARM_RAW_ADDR_LEN);
    mpi_errno = MPIDI_EFARM_Allgather_start(cards, (MPI_Aint)slot, comm);
    MPIR_ERR_CHECK(mpi_errno);
    /* comm is MPI_COMM_WORLD (ch4 sets VCIs for it alone): its ranks are the world ranks. */
    MPIDI_EFARM_global.vci_cards = cards;
    MPIDI_EFARM_global.vci_cards_n = maxn;
    MPIDI_EFARM_global.vci_cards_ranks = size;
    cards = NULL;
    for (int vci = 0; vci < MPIDI_EFARM_global.nvcis; vci++) {
        MPIDI_EFARM_vci_t *v = MPIDI_EFARM_VCI(vci);

        v->peer_rows = MPL_calloc((size_t)size, sizeof(*v->peer_rows), MPL_MEM_ADDRESS);
        MPIR_ERR_CHKANDJUMP1(v->peer_rows == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem",
                             "**nomem %s", "efarm VCI peers");
    }

fn_exit:
    MPL_free(cards);
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/* The error for more VCIs than this MPICH was built with. */
static int vcis_too_many(int want)
{
    char why[96];

    snprintf(why, sizeof(why), "this MPICH has at most %d (--with-ch4-max-vcis)",
             MPIDI_EFARM_VCI_MAX);
    return MPIR_Err_create_code(MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__,
                                MPI_ERR_OTHER, "**efarm_vcimax", "**efarm_vcimax %d %d %s", 1, want,
                                why);
}

/*
 * Once every rank's count of open VCIs is known (fewest, most): a rank with
 * fewer than want fails every rank alike, with the same message, so that
 * none waits for one that gave up (err: this rank's engine error, or 0);
 * else, when any rank has more than one VCI, the VCI addresses are
 * exchanged.
 */
static int vcis_settle(MPIR_Comm *comm, int want, int fewest, int most, int err)
{
    if (fewest < want)
        return MPIR_Err_create_code(
            MPI_SUCCESS, MPIR_ERR_RECOVERABLE, __func__, __LINE__, MPI_ERR_OTHER, "**efarm_vcimax",
            "**efarm_vcimax %d %d %s", fewest, want,
            err ? efarm_strerror(err) : "another rank could not (its message says why)");
    return most > 1 ? exchange_vci_cards(comm, most) : MPI_SUCCESS;
}

efarm_peer_t MPIDI_EFARM_vci_peer_make(int src, int grank, int dst)
{
    static const uint8_t zero[EFARM_RAW_ADDR_LEN];
    const int n = MPIDI_EFARM_global.vci_cards_n;
    MPIDI_EFARM_vci_t *v;
    const uint8_t *card;
    efarm_peer_t *row, peer;
    int ret;

    if (src < 0 || src >= MPIDI_EFARM_global.nvcis || grank < 0 ||
        grank >= MPIDI_EFARM_global.vci_cards_ranks || dst < 0 || dst >= n)
        return EFARM_PEER_NONE;
    v = MPIDI_EFARM_VCI(src);
    if (v->peer_rows == NULL)
        return EFARM_PEER_NONE;
    card = MPIDI_EFARM_global.vci_cards +
           ((size_t)grank * (size_t)n + (size_t)dst) * EFARM_RAW_ADDR_LEN;
    if (memcmp(card, zero, sizeof(zero)) == 0)
        return EFARM_PEER_NONE; /* the rank has fewer VCIs */
    row = v->peer_rows[grank];
    if (row == NULL) {
        row = MPL_malloc(sizeof(*row) * (size_t)n, MPL_MEM_ADDRESS);
        if (row == NULL)
            return EFARM_PEER_NONE;
        for (int d = 0; d < n; d++)
            row[d] = EFARM_PEER_NONE;
        v->peer_rows[grank] = row;
    }
    if (row[dst] != EFARM_PEER_NONE)
        return row[dst];
    ret = efarm_av_insert(v->ep, card, &peer);
    if (ret < 0) {
        efarm_log(EFARM_LOG_ERROR, "VCI %d cannot reach world rank %d's VCI %d: %s%s", src, grank,
                  dst, efarm_strerror(ret),
                  ret == -ENOSPC ? " (the address vector is full: raise EFARM_AV_SIZE)" : "");
        return EFARM_PEER_NONE;
    }
    row[dst] = peer;
    return peer;
}
#else
efarm_peer_t MPIDI_EFARM_vci_peer_make(int src, int grank, int dst)
{
    (void)src, (void)grank, (void)dst;
    return EFARM_PEER_NONE;
}
#endif

#if !MPIDI_EFARM_MPICH_50
#if MPIDI_EFARM_MPICH_43
/*
 * MPICH 4.3 asks how many VCIs the netmod serves once MPI_COMM_WORLD is up
 * (MPIR_CVAR_CH4_NUM_VCIS implicit plus MPIR_CVAR_CH4_RESERVE_VCIS for
 * streams). With per-VCI critical sections efarm opens an endpoint for each
 * further VCI, gathers every rank's count and, when any rank has more than
 * one, every rank's VCI addresses; a rank that could not open them all fails,
 * and so does every other rank, with the same message (as on MPICH 5.0,
 * comm_set_vcis). With the global critical section: one, so reserved VCIs
 * shrink to none.
 */
int MPIDI_EFARM_init_vcis(int num_vcis, int *num_vcis_actual)
{
#if MPIDI_EFARM_PER_VCI
    MPIR_Comm *world = MPIR_Process.comm_world;
    int mpi_errno = MPI_SUCCESS, err = 0, n, fewest, most;
    int *counts;

    if (num_vcis > MPIDI_EFARM_VCI_MAX)
        return vcis_too_many(num_vcis);
    n = open_vcis(num_vcis, &err);
    *num_vcis_actual = n;
    counts = MPL_calloc((size_t)world->local_size, sizeof(int), MPL_MEM_OTHER);
    MPIR_ERR_CHKANDJUMP1(counts == NULL, mpi_errno, MPI_ERR_OTHER, "**nomem", "**nomem %s",
                         "efarm VCI counts");
    counts[world->rank] = n;
    mpi_errno = MPIDI_EFARM_Allgather_start(counts, (MPI_Aint)sizeof(int), world);
    if (mpi_errno)
        goto fn_fail;
    fewest = most = n;
    for (int r = 0; r < world->local_size; r++) {
        fewest = MPL_MIN(fewest, counts[r]);
        most = MPL_MAX(most, counts[r]);
    }
    mpi_errno = vcis_settle(world, num_vcis, fewest, most, err);

fn_exit:
    MPL_free(counts);
    return mpi_errno;
fn_fail:
    goto fn_exit;
#else
    (void)num_vcis;
    *num_vcis_actual = 1;
    return MPI_SUCCESS;
#endif
}
#endif

/*
 * MPICH 4.x: publish this rank's card and insert everyone's. The PMI
 * allgather lands in the node's init shared memory, one card per rank in
 * rank order.
 */
int MPIDI_EFARM_init_world(void)
{
    int mpi_errno = MPI_SUCCESS;
    uint8_t card[MPIDI_EFARM_CARD_LEN];
    bool table_created = false;
    void *table = NULL;

    /*
     * Every rank publishes its card through PMI, whatever
     * MPIR_CVAR_CH4_ROOTS_ONLY_PMI says (MPICH 4.3's default is on): with it
     * only node roots would publish, and the other cards would travel over
     * the netmod itself (MPIDU_bc_allgather) before it has its addresses.
     * The full exchange is what MPICH does with the variable off.
     */
    my_card(card);
    mpi_errno = MPIDU_bc_table_create(MPIR_Process.rank, MPIR_Process.size, MPIR_Process.node_map,
                                      card, (int)MPIDI_EFARM_CARD_LEN, TRUE /* same_len */,
                                      FALSE /* roots_only */, &table, NULL);
    if (mpi_errno)
        goto fn_fail;
    table_created = true;

    for (int rank = 0; rank < MPIR_Process.size; rank++) {
        mpi_errno = insert_card(&MPIDI_EFARM_AV(&MPIDIU_get_av(0, rank)),
                                (const uint8_t *)table + (size_t)rank * MPIDI_EFARM_CARD_LEN);
        if (mpi_errno)
            goto fn_fail;
    }

fn_exit:
    /* Every local rank must destroy the table: it ends with a node barrier. */
    if (table_created) {
        int destroy_errno = MPIDU_bc_table_destroy();
        if (mpi_errno == MPI_SUCCESS)
            mpi_errno = destroy_errno;
    }
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/* Nothing to add after MPI_COMM_WORLD exists: one endpoint, no per-VCI addresses. */
int MPIDI_EFARM_post_init(void)
{
    return MPI_SUCCESS;
}

#else /* MPICH 5.0 */

/*
 * MPICH 5.0 asks the netmod for MPI_COMM_WORLD's VCIs once it is committed
 * (MPIR_CVAR_CH4_NUM_VCIS implicit, MPIR_CVAR_CH4_RESERVE_VCIS for streams).
 * With per-VCI critical sections efarm opens an endpoint for each further
 * VCI, gathers every rank's count (ch4 expects them in all_num_vcis) and,
 * when any rank has more than one, every rank's VCI addresses. A rank that
 * could not open them all fails, and so does every other rank, after the
 * gather, with the same message: no rank waits for one that gave up. With
 * the global critical section ch4 has one VCI, and more are refused as on
 * MPICH 4.x.
 */
int MPIDI_EFARM_comm_set_vcis(MPIR_Comm *comm, int num_implicit, int num_reserved,
                              MPIDI_num_vci_t *all_num_vcis)
{
    int mpi_errno = MPI_SUCCESS;
    int want = num_implicit + num_reserved, n = 1, err = 0;
#if MPIDI_EFARM_PER_VCI
    int fewest, most;

    if (want > MPIDI_EFARM_VCI_MAX)
        return vcis_too_many(want);
    n = open_vcis(want, &err);
#else
    if (want != 1) {
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**efarm_vcis", "**efarm_vcis %d", want);
        return mpi_errno;
    }
#endif
    all_num_vcis[comm->rank].n_vcis = MPL_MIN(num_implicit, n);
    all_num_vcis[comm->rank].n_total_vcis = n;
    mpi_errno = MPIR_Allgather_fallback(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, all_num_vcis,
                                        sizeof(MPIDI_num_vci_t), MPIR_BYTE_INTERNAL, comm,
                                        MPIR_COLL_ATTR_SYNC);
    if (mpi_errno)
        return mpi_errno;
#if MPIDI_EFARM_PER_VCI
    fewest = most = n;
    for (int r = 0; r < comm->local_size; r++) {
        fewest = MPL_MIN(fewest, all_num_vcis[r].n_total_vcis);
        most = MPL_MAX(most, all_num_vcis[r].n_total_vcis);
    }
    return vcis_settle(comm, want, fewest, most, err);
#else
    (void)err;
    return MPI_SUCCESS; /* one VCI on every rank, as asked */
#endif
}

/*
 * Insert the card of comm's rank unless its AV entry has one (a process met
 * before), under VCI 0's lock: a session's communicator may be committed while
 * other threads send.
 */
static int insert_rank_card(MPIR_Comm *comm, int rank, const uint8_t *card)
{
    MPIDI_EFARM_addr_t *a = &MPIDI_EFARM_AV(MPIDIU_comm_rank_to_av(comm, rank));
    int mpi_errno = MPI_SUCCESS;

    MPIDI_EFARM_VCI_ENTER(0);
    if (!a->nrails)
        mpi_errno = insert_card(a, card);
    MPIDI_EFARM_VCI_EXIT(0);
    return mpi_errno;
}

/*
 * MPICH 5.0: the address exchange of a communicator marked
 * MPIR_COMM_ATTR__BOOTSTRAP (MPI_COMM_WORLD, or a group's communicator of MPI
 * sessions), called when it is committed, after the shared-memory module's
 * hook. The node roots exchange their cards through PMI (MPICH's
 * MPIDIU_bc_exchange_node_roots, which uses PMI groups where it can) and
 * insert them, so efarm reaches every node root; then, when a node has more
 * than one of comm's processes, every card travels over the node's shared
 * memory and the roots (an allgather that needs only those two). Processes
 * already known (from an earlier communicator) keep their entries.
 */
int MPIDI_EFARM_comm_addr_exchange(MPIR_Comm *comm)
{
    int mpi_errno = MPI_SUCCESS;
    uint8_t card[MPIDI_EFARM_CARD_LEN];
    int nroots = comm->num_external;
    uint8_t *roots = NULL, *all = NULL;
    const size_t rc_len = sizeof(int) + MPIDI_EFARM_CARD_LEN;

    my_card(card);
    if (nroots > 1) {
        if (comm->local_rank == 0) {
            roots = MPL_malloc((size_t)nroots * MPIDI_EFARM_CARD_LEN, MPL_MEM_ADDRESS);
            MPIR_ERR_CHKANDJUMP(!roots, mpi_errno, MPI_ERR_OTHER, "**nomem");
        }
        mpi_errno = MPIDIU_bc_exchange_node_roots(comm, (const char *)card,
                                                  (int)MPIDI_EFARM_CARD_LEN, roots);
        MPIR_ERR_CHECK(mpi_errno);
        if (comm->local_rank == 0) {
            MPIR_Comm *node_roots_comm = MPIR_Comm_get_node_roots_comm(comm);

            for (int i = 0; i < nroots; i++) {
                mpi_errno =
                    insert_rank_card(node_roots_comm, i, roots + (size_t)i * MPIDI_EFARM_CARD_LEN);
                MPIR_ERR_CHECK(mpi_errno);
            }
        }
    }
    if (nroots < comm->local_size) {
        /* (rank, card) pairs: the allgather gathers them in node order. */
        uint8_t *mine = MPL_malloc(rc_len, MPL_MEM_ADDRESS);

        all = MPL_malloc((size_t)comm->local_size * rc_len, MPL_MEM_ADDRESS);
        if (!mine || !all) {
            MPL_free(mine);
            MPIR_ERR_SETANDJUMP(mpi_errno, MPI_ERR_OTHER, "**nomem");
        }
        memcpy(mine, &comm->rank, sizeof(int));
        memcpy(mine + sizeof(int), card, MPIDI_EFARM_CARD_LEN);
        mpi_errno = MPIR_Allgather_intra_smp_no_order(mine, (MPI_Aint)rc_len, MPIR_BYTE_INTERNAL,
                                                      all, (MPI_Aint)rc_len, MPIR_BYTE_INTERNAL,
                                                      comm, MPIR_COLL_ATTR_SYNC);
        MPL_free(mine);
        MPIR_ERR_CHECK(mpi_errno);
        for (int i = 0; i < comm->local_size; i++) {
            int rank;

            memcpy(&rank, all + (size_t)i * rc_len, sizeof(int));
            MPIR_Assert(rank >= 0 && rank < comm->local_size);
            mpi_errno = insert_rank_card(comm, rank, all + (size_t)i * rc_len + sizeof(int));
            MPIR_ERR_CHECK(mpi_errno);
        }
    }
    /* A single-process communicator exchanged nothing: this process's own entry. */
    mpi_errno = insert_rank_card(comm, comm->rank, card);
    MPIR_ERR_CHECK(mpi_errno);

fn_exit:
    MPL_free(roots);
    MPL_free(all);
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

#endif /* MPIDI_EFARM_MPICH_50 */

/* How long MPI_Finalize waits for this rank's last packets to be acknowledged. */
#define MPIDI_EFARM_FLUSH_TIMEOUT_MS 60000

/*
 * Close the endpoint. MPI_Finalize does not synchronize the ranks first, and
 * a send completes as soon as its data is in packets (EFARM_SEND_INJECT): so
 * first wait until every packet this rank sent has been acknowledged (or
 * failed: then the job fails, the data is lost), then a PMI barrier, so that
 * no rank closes its QP while a peer may still have to resend to it (an
 * acknowledgement lost on the way: the last-ACK problem). Then close; the
 * engine counters are kept for MPI_T reads after finalize.
 */
int MPIDI_EFARM_mpi_finalize_hook(void)
{
    int mpi_errno = MPI_SUCCESS;

    for (int vci = 0; vci < MPIDI_EFARM_global.nvcis; vci++)
        MPIDI_EFARM_release_drain(MPIDI_EFARM_VCI(vci));
    if (MPIDI_EFARM_VCI(0)->ep) {
        int ret = 0;

        /* Every rank flushes its VCIs in the same order, VCI 0 first. */
        for (int vci = 0; vci < MPIDI_EFARM_global.nvcis && ret == 0; vci++)
            ret = efarm_ep_flush(MPIDI_EFARM_VCI(vci)->ep, MPIDI_EFARM_FLUSH_TIMEOUT_MS);
        if (ret == 0)
            ret = MPIDI_EFARM_rails_flush(MPIDI_EFARM_FLUSH_TIMEOUT_MS);

        if (ret == -ETIMEDOUT)
            MPL_internal_error_printf("ch4:efarm: rank %d: packets still unacknowledged %d s into "
                                      "MPI_Finalize (a peer that receives nothing?); closing\n",
                                      MPIR_Process.rank, MPIDI_EFARM_FLUSH_TIMEOUT_MS / 1000);
        else if (ret < 0)
            mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_ep_flush (MPI_Finalize)");
        if (mpi_errno == MPI_SUCCESS && ret == 0)
            mpi_errno = MPIR_pmi_barrier();
        for (size_t i = 0; i < sizeof(engine_counter_offsets) / sizeof(engine_counter_offsets[0]);
             i++) {
            uint64_t value = engine_counter_sum(engine_counter_offsets[i]);

            memcpy((char *)&MPIDI_EFARM_global.final_counters + engine_counter_offsets[i], &value,
                   sizeof(value));
        }
        MPIDI_EFARM_rails_close();
        for (int vci = MPIDI_EFARM_global.nvcis - 1; vci >= 0; vci--) {
            MPIDI_EFARM_vci_t *v = MPIDI_EFARM_VCI(vci);

            efarm_ep_close(v->ep);
            v->ep = NULL;
            if (v->peer_rows) {
                for (int r = 0; r < MPIDI_EFARM_global.vci_cards_ranks; r++)
                    MPL_free(v->peer_rows[r]);
                MPL_free(v->peer_rows);
                v->peer_rows = NULL;
            }
        }
        MPIDI_EFARM_global.nvcis = 0;
        MPL_free(MPIDI_EFARM_global.vci_cards);
        MPIDI_EFARM_global.vci_cards = NULL;
        MPIDI_EFARM_global.vci_cards_n = MPIDI_EFARM_global.vci_cards_ranks = 0;
    }
    MPL_free(MPIDI_EFARM_global.named_peers);
    MPIDI_EFARM_global.named_peers = NULL;
    MPIDI_EFARM_global.named_peers_len = 0;
    for (int vci = 0; vci < MPIDI_EFARM_VCI_MAX; vci++)
        MPIDI_EFARM_am_finalize(MPIDI_EFARM_VCI(vci));
    return mpi_errno;
}
