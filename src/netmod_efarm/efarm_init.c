/*
 * Start-up and teardown of ch4:efarm.
 *
 * ch4 calls, in this order (src/mpid/ch4/src/ch4_init.c, ch4_comm.c):
 * init_local from MPID_Init, before any other process is known; init_world
 * while MPI_COMM_WORLD is committed, once the node's init shared memory
 * exists; post_init after it; mpi_finalize_hook from MPID_Finalize.
 *
 * One efarm endpoint serves the process (ch4 VCI 0). Its 32-byte raw address
 * (protocol v4 section 1.4) is the business card every rank publishes through
 * PMI; each rank inserts every card into its address vector, its own included
 * (a multi-rank communicator sends to its own rank through the netmod), and
 * keeps the resulting peer handle in the rank's AV entry.
 */
#include "efarm_impl.h"
#include "efarm_noinline.h"
#include "mpidu_bc.h"

MPIDI_EFARM_global_t MPIDI_EFARM_global;

/* ---- MPI_T performance variables ------------------------------------------ */

/*
 * Every engine counter is the pvar efarm_<name> and every netmod counter
 * efarm_nm_<name>: read-only, continuous, unsigned long long, not bound to an
 * object. Engine counters are read through a callback, from the endpoint
 * while it is open and from the copy taken at finalize after that.
 */
static const size_t engine_counter_offsets[] = {
#define MPIDI_EFARM_OFFSET_(name, doc) offsetof(struct efarm_counters, name),
    EFARM_COUNTER_LIST(MPIDI_EFARM_OFFSET_)
#undef MPIDI_EFARM_OFFSET_
};

static void engine_counter_read(void *addr, void *obj_handle, int count, void *buf)
{
    const struct efarm_counters *src = MPIDI_EFARM_global.ep
                                           ? efarm_ep_counters(MPIDI_EFARM_global.ep)
                                           : &MPIDI_EFARM_global.final_counters;
    uint64_t value;

    (void)obj_handle, (void)count;
    memcpy(&value, (const char *)src + *(const size_t *)addr, sizeof(value));
    *(unsigned long long *)buf = value;
}

static void register_pvars(void)
{
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
#define MPIDI_EFARM_NM_PVAR_(name, doc)                                                            \
    MPIR_T_PVAR_REGISTER_impl(MPI_T_PVAR_CLASS_COUNTER, MPI_UNSIGNED_LONG_LONG, "efarm_nm_" #name, \
                              &MPIDI_EFARM_global.nm_counters.name, 1, MPI_T_ENUM_NULL,            \
                              MPI_T_VERBOSITY_USER_BASIC, MPI_T_BIND_NO_OBJECT, flags, NULL, NULL, \
                              "EFARM", doc);
    MPIDI_EFARM_NM_COUNTER_LIST(MPIDI_EFARM_NM_PVAR_)
#undef MPIDI_EFARM_NM_PVAR_
}

/*
 * The device of this rank: chosen from the machine's topology by the rank's
 * position among the node's ranks (EFARM_IFACE and EFARM_NIC_VERBOSE apply).
 * The ranks' CPU bindings would refine the choice; they are not gathered
 * yet, so every rank counts as unbound.
 */
static int choose_device(char name[EFARM_DEV_NAME_MAX])
{
    int mpi_errno = MPI_SUCCESS;
    int ret;

    ret = efarm_dev_choose_nic((unsigned)MPIR_Process.local_rank, (unsigned)MPIR_Process.local_size,
                               NULL, name);
    if (ret < 0) {
        mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_dev_choose_nic");
        goto fn_fail;
    }

fn_exit:
    return mpi_errno;
fn_fail:
    goto fn_exit;
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

    /* One endpoint, so one VCI; more would need an endpoint per VCI. */
    if (MPIDI_global.n_vcis != 1) {
        MPIR_ERR_SET1(mpi_errno, MPI_ERR_OTHER, "**efarm_vcis", "**efarm_vcis %d",
                      MPIDI_global.n_vcis);
        goto fn_fail;
    }

    mpi_errno = choose_device(device);
    if (mpi_errno)
        goto fn_fail;

    attr.device = device;
    /* Room for every rank of the job, with as much again for senders learnt from the wire. */
    if (MPIR_Process.size > 2048)
        attr.av_size = (uint32_t)MPIR_Process.size * 2;
    ret = efarm_ep_open(&attr, &ep);
    if (ret < 0) {
        mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_ep_open");
        goto fn_fail;
    }
    MPIDI_EFARM_global.ep = ep;
    MPIDI_EFARM_global.yield_polls = (unsigned)efarm_config()->yield_polls;
    MPIDI_EFARM_global.idle_polls = 0;
    register_pvars();

    /* The wire tag packs context, source and tag; MPI_TAG_UB follows from this. */
    *tag_bits = EFARM_TAG_TAG_BITS;

fn_exit:
    return mpi_errno;
fn_fail:
    goto fn_exit;
}

/*
 * Publish this endpoint's raw address and insert everyone's. The PMI
 * allgather lands in the node's init shared memory, one 32-byte card per
 * rank in rank order (cards have one length, so same_len).
 */
int MPIDI_EFARM_init_world(void)
{
    int mpi_errno = MPI_SUCCESS;
    uint8_t my_addr[EFARM_RAW_ADDR_LEN];
    bool table_created = false;
    void *table = NULL;
    int ret;

    /*
     * With MPIR_CVAR_CH4_ROOTS_ONLY_PMI only node roots publish through PMI
     * and the other cards travel over the netmod itself (MPIDU_bc_allgather),
     * which needs point-to-point efarm does not have yet.
     */
    if (MPIR_CVAR_CH4_ROOTS_ONLY_PMI) {
        MPIR_ERR_SET(mpi_errno, MPI_ERR_OTHER, "**efarm_roots_only_pmi");
        goto fn_fail;
    }

    efarm_ep_addr(MPIDI_EFARM_global.ep, my_addr);
    mpi_errno = MPIDU_bc_table_create(MPIR_Process.rank, MPIR_Process.size, MPIR_Process.node_map,
                                      my_addr, EFARM_RAW_ADDR_LEN, TRUE /* same_len */,
                                      FALSE /* roots_only */, &table, NULL);
    if (mpi_errno)
        goto fn_fail;
    table_created = true;

    for (int rank = 0; rank < MPIR_Process.size; rank++) {
        const uint8_t *raw = (const uint8_t *)table + (size_t)rank * EFARM_RAW_ADDR_LEN;
        efarm_peer_t peer;

        ret = efarm_av_insert(MPIDI_EFARM_global.ep, raw, &peer);
        if (ret < 0) {
            mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_av_insert");
            goto fn_fail;
        }
        MPIDI_EFARM_AV(&MPIDIU_get_av(0, rank)).peer = peer;
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

    if (MPIDI_EFARM_global.ep) {
        int ret = efarm_ep_flush(MPIDI_EFARM_global.ep, MPIDI_EFARM_FLUSH_TIMEOUT_MS);

        if (ret == -ETIMEDOUT)
            MPL_internal_error_printf("ch4:efarm: rank %d: packets still unacknowledged %d s into "
                                      "MPI_Finalize (a peer that receives nothing?); closing\n",
                                      MPIR_Process.rank, MPIDI_EFARM_FLUSH_TIMEOUT_MS / 1000);
        else if (ret < 0)
            mpi_errno = MPIDI_EFARM_ERROR(ret, "efarm_ep_flush (MPI_Finalize)");
        if (mpi_errno == MPI_SUCCESS && ret == 0)
            mpi_errno = MPIR_pmi_barrier();
        MPIDI_EFARM_global.final_counters = *efarm_ep_counters(MPIDI_EFARM_global.ep);
        efarm_ep_close(MPIDI_EFARM_global.ep);
        MPIDI_EFARM_global.ep = NULL;
    }
    MPIDI_EFARM_am_finalize();
    return mpi_errno;
}
