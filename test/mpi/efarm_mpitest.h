/*
 * Helpers shared by the MPI test programs of test/mpi.
 *
 * Every program calls mpitest_init() first and mpitest_finalize() last. A
 * failed CHECK prints the rank, the place, both operands and the last context
 * set with mpitest_context(), then calls MPI_Abort: a failure on any rank ends
 * the job with a nonzero status, which is what the runner looks at.
 *
 * The efarm netmod exports its counters as MPI_T performance variables named
 * "efarm_<counter>". mpitest_counters_read() reads the ones the tests use; a
 * program takes a snapshot before and after the traffic it drives and checks
 * the difference, which proves that the bytes crossed efarm (and not MPICH's
 * shared memory) and which subprotocol carried them. The variable
 * MPITEST_NO_PVAR_CHECK=1 turns those checks off, only for debugging the
 * programs on a build without efarm's variables.
 */
#ifndef MPITEST_H
#define MPITEST_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

extern int g_mpitest_rank;
extern int g_mpitest_size;

/* MPI_Init, MPI_T_init_thread and a first read of every counter (clear error if one is missing). */
void mpitest_init(int *argc, char ***argv, const char *name);
/* The same with MPI_Init_thread: fails unless MPI provides `required`. */
void mpitest_init_thread(int *argc, char ***argv, const char *name, int required);

/* Barrier, MPI_T_finalize, MPI_Finalize; rank 0 prints "<name>: OK (<n> ranks)". */
void mpitest_finalize(void);

/*
 * What a failure report names as the current step (printf format; kept until
 * the next call). With MPITEST_VERBOSE=1 every step is printed as it starts.
 */
void mpitest_context(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

_Noreturn void mpitest_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define CHECK(c)                                                 \
    do {                                                         \
        if (!(c))                                                \
            mpitest_fail(__FILE__, __LINE__, "expected %s", #c); \
    } while (0)

/* Compare two integers of any integer type (as long long); a failure prints both. */
#define CHECK_CMP(a, op, b)                                                                  \
    do {                                                                                     \
        long long a_ = (long long)(a), b_ = (long long)(b);                                  \
        if (!(a_ op b_))                                                                     \
            mpitest_fail(__FILE__, __LINE__, "%s %s %s: %lld vs %lld", #a, #op, #b, a_, b_); \
    } while (0)
#define CHECK_EQ(a, b) CHECK_CMP(a, ==, b)
#define CHECK_GE(a, b) CHECK_CMP(a, >=, b)
#define CHECK_LE(a, b) CHECK_CMP(a, <=, b)

/* An MPI call that must succeed; a failure prints the call and MPI's error string. */
#define CHECK_MPI(call) mpitest_check_mpi(__FILE__, __LINE__, #call, (call))
void mpitest_check_mpi(const char *file, int line, const char *call, int err);

/* An MPI return code whose error class must be `cls` (MPI_SUCCESS, MPI_ERR_TRUNCATE, ...). */
#define CHECK_ERR_CLASS(err, cls) mpitest_check_err_class(__FILE__, __LINE__, #err, (err), (cls))
void mpitest_check_err_class(const char *file, int line, const char *what, int err, int cls);

/*
 * Deterministic data: byte i of the stream `seed` is mpitest_byte(seed, i),
 * eight bytes of a 64-bit hash of (seed, i / 8). mpitest_seed() mixes up to
 * four small integers (sender, receiver, tag, iteration) into a seed.
 */
uint64_t mpitest_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d);
uint8_t mpitest_byte(uint64_t seed, size_t i);
void mpitest_fill(void *buf, size_t len, uint64_t seed);
#define CHECK_DATA(buf, len, seed) \
    mpitest_check_data(__FILE__, __LINE__, #buf, (buf), (len), (seed))
void mpitest_check_data(const char *file, int line, const char *what, const void *buf, size_t len,
                        uint64_t seed);
/* Every byte of buf[0, len) equals `value` (a receive must not write past its data). */
#define CHECK_BYTES(buf, len, value) \
    mpitest_check_bytes(__FILE__, __LINE__, #buf, (buf), (len), (value))
void mpitest_check_bytes(const char *file, int line, const char *what, const void *buf, size_t len,
                         uint8_t value);

/*
 * The MPICH version the program runs on, as MAJOR * 100 + MINOR (403 for 4.3.x),
 * read from MPI_Get_library_version: a program built against the MPI standard
 * ABI (mpicc_abi) has no MPICH_NUMVERSION, and one built against an MPICH's
 * mpi.h may run on another through its ABI. Not MPICH: the job aborts.
 */
int mpitest_mpich_version(void);

/* malloc that aborts the job on failure; the caller frees. */
void *mpitest_malloc(size_t len);

/* A nonnegative integer from the environment, or `def` when unset or empty; junk aborts. */
size_t mpitest_env_size(const char *name, size_t def);

/*
 * One-sided progress check (collective): rank 1 computes, calling no MPI, for
 * at most wait_s seconds until rank 0's MPI_Put lands a flag in mem[0] (its
 * own memory in win); rank 0 first reads mem[1] until rank 1 says it is
 * spinning, so the put cannot be applied by rank 1's progress before. Only a
 * put the device carries without the target's CPU can pass. flag_disp and
 * spin_disp are mem[0]'s and mem[1]'s target displacements at rank 1.
 */
void mpitest_rma_passive_check(MPI_Win win, volatile long long *mem, MPI_Aint flag_disp,
                               MPI_Aint spin_disp, unsigned wait_s);

/*
 * The efarm counters the tests read, as MPI_T variables "efarm_<name>" (class
 * counter, unsigned long long, no object binding, continuous).
 */
#define MPITEST_COUNTER_LIST(X) \
    X(nm_send_msgs)             \
    X(nm_send_bytes)            \
    X(nm_recv_msgs)             \
    X(nm_recv_bytes)            \
    X(nm_am_send)               \
    X(nm_am_recv)               \
    X(proto_eager)              \
    X(proto_medium)             \
    X(proto_longcts)            \
    X(proto_longread)           \
    X(proto_runtread)           \
    X(proto_dc)                 \
    X(unexpected)               \
    X(out_of_order)             \
    X(truncated)                \
    X(tx_pkts)                  \
    X(rx_pkts)

struct mpitest_counters {
#define MPITEST_COUNTER_MEMBER_(name) unsigned long long name;
    MPITEST_COUNTER_LIST(MPITEST_COUNTER_MEMBER_)
#undef MPITEST_COUNTER_MEMBER_
};

/* 0 when MPITEST_NO_PVAR_CHECK=1: counter reads return 0 and counter checks pass. */
int mpitest_pvar_checks(void);

/* Index of the MPI_T performance variable `name`, or -1 (MPI_T_pvar_get_num/get_info). */
int mpitest_pvar_lookup(const char *name);

/* Current value of the counter `name` (aborts if there is none; handles are cached). */
unsigned long long mpitest_pvar_read(const char *name);

void mpitest_counters_read(struct mpitest_counters *c_p);
/* *d_p = after - before, member by member. */
void mpitest_counters_diff(const struct mpitest_counters *after,
                           const struct mpitest_counters *before, struct mpitest_counters *d_p);
void mpitest_counters_print(FILE *out, const char *title, const struct mpitest_counters *c);

/*
 * The subprotocols the engine chooses between, as a bit mask, and the size
 * thresholds in force (EFARM_EAGER_MAX, EFARM_MEDIUM_MAX, EFARM_READ_MIN,
 * EFARM_RDMA_READ, EFASIM_MTU; the engine's defaults when unset). The exact
 * eager limit depends on the REQ header the engine puts in front of the data
 * (optional headers differ before and after the handshake), so unless
 * EFARM_EAGER_MAX pins it well below the MTU a message in (eager_lo,
 * eager_hi] may go eager or medium.
 */
enum {
    MPITEST_EAGER = 1u << 0,
    MPITEST_MEDIUM = 1u << 1,
    MPITEST_LONGCTS = 1u << 2,
    MPITEST_LONGREAD = 1u << 3,
    MPITEST_RUNTREAD = 1u << 4,
};

struct mpitest_limits {
    size_t eager_lo, eager_hi; /* up to eager_lo: eager; above eager_hi: never eager */
    size_t medium_max;
    size_t read_min, read_min_unreg; /* registered buffer, unregistered buffer */
    size_t runt_min;                 /* runting read (SIZE_MAX: never) */
    /* With other sends to the peer in flight (a stream): */
    size_t medium_max_stream;                      /* medium's own bound (SIZE_MAX: none) */
    size_t read_min_stream, read_min_stream_unreg; /* the read thresholds */
    int rdma_read; /* both EFARM_RDMA_READ and EFASIM_RDMA_READ on */
};

extern struct mpitest_limits g_mpitest_limits;

/* The subprotocols a message of `len` bytes may go by (mask of MPITEST_*). */
unsigned mpitest_expect_proto(size_t len);

/*
 * MPITEST_PROTO_NSIZES sizes that between them reach every subprotocol, from
 * the limits in force: 0, 1, eager_lo, eager_hi + 1, medium_max + 1,
 * read_min + 5 and 3 * read_min + 11, each at most `cap`. Returns the largest.
 */
#define MPITEST_PROTO_NSIZES 7
size_t mpitest_proto_sizes(size_t sizes[MPITEST_PROTO_NSIZES], size_t cap);

/* Messages a counter difference shows going by each subprotocol in `mask`. */
unsigned long long mpitest_proto_count(const struct mpitest_counters *d, unsigned mask);

/*
 * A counter difference shows exactly `nmsgs` messages of `len` bytes sent by
 * the engine, each by a subprotocol allowed for its size, and at least
 * nmsgs * len payload bytes through efarm's native sends.
 */
#define CHECK_SENT(d, nmsgs, len) mpitest_check_sent(__FILE__, __LINE__, (d), (nmsgs), (len))
void mpitest_check_sent(const char *file, int line, const struct mpitest_counters *d,
                        unsigned long long nmsgs, size_t len);

/* The same for nmsgs messages of the sizes lens[0..nmsgs). */
#define CHECK_SENT_SIZES(d, lens, nmsgs) \
    mpitest_check_sent_sizes(__FILE__, __LINE__, (d), (lens), (nmsgs))
void mpitest_check_sent_sizes(const char *file, int line, const struct mpitest_counters *d,
                              const size_t *lens, size_t nmsgs);

/* At least nmsgs messages and bytes received through efarm's native receives. */
#define CHECK_RECEIVED(d, nmsgs, bytes) \
    mpitest_check_received(__FILE__, __LINE__, (d), (nmsgs), (bytes))
void mpitest_check_received(const char *file, int line, const struct mpitest_counters *d,
                            unsigned long long nmsgs, unsigned long long bytes);

/* A counter check that only runs when mpitest_pvar_checks() is on. */
#define CHECK_COUNTER(a, op, b)      \
    do {                             \
        if (mpitest_pvar_checks())   \
            CHECK_CMP((a), op, (b)); \
    } while (0)

#endif /* MPITEST_H */
