/*
 * efarm's tunables: one table (name, kind, default, allowed values, why).
 * Each is read from EFARM_<NAME> and from MPICH's names for its control
 * variable MPIR_CVAR_CH4_EFARM_<NAME> (MPICH_, MPIR_PARAM_ and MPIR_CVAR_
 * prefixes, in MPICH's order of precedence), and under MPI from the control
 * variable itself (an MPI_T write before MPI_Init). Every value from every
 * source is checked here, by efarm_config_check, and nowhere else: a refused
 * value names the variable, the value and what is allowed, and makes
 * efarm_config_status fail, so the endpoint and MPI_Init refuse to start and
 * efarm-info shows it refused. An EFARM_* variable that is not in the table
 * (nor among the scripts' variables, EFARM_SCRIPT_VAR_LIST) is reported,
 * because a misspelt knob that silently does nothing costs hours.
 */
#ifndef EFARM_CONFIG_H
#define EFARM_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "efarm_proto_names.h"

/*
 * X(NAME, member, kind, default, lo, hi, choices, why). kind:
 *   U64      a decimal number from lo to hi
 *   POW2     the same, a power of 2
 *   BOOL     0 or 1 (also yes/no, true/false, on/off, as MPICH reads booleans)
 *   ENUM     one of choices ("a|b|c"), any letter case
 *   LIST     auto, or a comma-separated list of the other choices
 *   PROFILE  one of choices, or a readable file
 *   FILE     empty, or a readable file
 *   DIR      empty, or a directory
 *   STR      any text
 *   TEST     a U64 for efarm's own tests: not an MPI control variable
 * An MPI control variable is an int when hi fits MPI_T's int (INT32_MAX), else
 * a string that efarm parses (byte counts may exceed 2 GiB).
 */
#define EFARM_CONFIG_LIST(X)                                                                       \
    X(DEVICE, device, ENUM, "auto", 0, 0, "auto|efa|sim",                                          \
      "verbs libraries: efa (system rdma-core), sim (efasim, the emulator), auto (efa when "       \
      "sysfs, at SYSFS_PATH as libibverbs reads it, lists an EFA device; without one efarm "       \
      "refuses to start, never emulating unasked)")                                                \
    X(EFASIM_PATH, efasim_path, DIR, "", 0, 0, "",                                                 \
      "directory of efasim's libibverbs.so.1 and libefa.so.1 (empty: the installed one)")          \
    X(IFACE, iface, STR, "", 0, 0, "",                                                             \
      "comma-separated EFA devices this rank may use, like FI_EFA_IFACE (empty: all)")             \
    X(NIC_VERBOSE, nic_verbose, BOOL, "0", 0, 1, "",                                               \
      "print rank -> NIC -> reason when a NIC is chosen")                                          \
    X(TOPOLOGY, topology, FILE, "", 0, 0, "",                                                      \
      "hwloc XML file describing this machine, for the NIC choice (empty: discover it)")           \
    X(RAILS, rails, U64, "1", 1, 4, "",                                                            \
      "MPI: endpoints per rank, one per NIC tied for nearest (1-4; fewer when fewer are tied); "   \
      "contiguous messages of EFARM_STRIPE_MIN bytes or more on VCI 0 are striped over them; "     \
      "with several VCIs, VCI v's endpoint opens on rail v mod N's NIC")                           \
    X(STRIPE_MIN, stripe_min, U64, "1048576", 0, INT64_MAX, "",                                    \
      "MPI, EFARM_RAILS > 1: smallest message striped over the rails (raised to 4 KiB a rail; 0: " \
      "never stripe)")                                                                             \
    X(NIC_EXCHANGE, nic_exchange, BOOL, "1", 0, 1, "",                                             \
      "MPI: share CPU bindings through PMI at init (one barrier; set it alike on every rank); "    \
      "0 counts every rank unbound")                                                               \
    X(MR_CACHE, mr_cache, BOOL, "1", 0, 1, "",                                                     \
      "cache registrations of long/runt-read send buffers; 0 registers on every use")              \
    X(MR_CACHE_MAX_ENTRIES, mr_cache_max_entries, U64, "0", 0, INT32_MAX, "",                      \
      "registrations the cache may hold (0: from the device's MR limit)")                          \
    X(MR_CACHE_MAX_BYTES, mr_cache_max_bytes, U64, "0", 0, INT64_MAX, "",                          \
      "bytes the cache may keep registered (0: from the device's limits)")                         \
    X(LOG_LEVEL, log_level, ENUM, "warn", 0, 0, "error|warn|info|debug|trace|data",                \
      "error, warn, info, debug, trace or data (data prints every packet)")                        \
    X(CAPTURE, capture, STR, "", 0, 0, "",                                                         \
      "pcap file of every packet sent and received (%p pid, %r MPI rank, %h host; empty: no "      \
      "capture); efarm-pktdump --pcap and Wireshark with efarm.lua read it")                       \
    X(AV_SIZE, av_size, U64, "4096", 1, 1073741823, "",                                            \
      "peers one endpoint can address, unknown senders included (48 bytes each)")                  \
    X(SQ_DEPTH, sq_depth, U64, "256", 1, 65536, "",                                                \
      "send work requests in flight on the device (the default fits itself to a device that "      \
      "takes fewer; a value set above the device's max_sq_wr is refused)")                         \
    X(RX_BUFFERS, rx_buffers, U64, "512", 2, 1048576, "",                                          \
      "MTU-sized receive buffers kept posted; fewer means earlier RNR under bursts")               \
    X(TX_PKTS, tx_pkts, U64, "512", 4, 1048576, "",                                                \
      "registered MTU-sized send buffers; bounds packets queued or in flight")                     \
    X(MAX_OPS, max_ops, U64, "4096", 1, 65535, "",                                                 \
      "sends in flight and receives in progress (send_id/recv_id space); unexpected messages "     \
      "take none")                                                                                 \
    X(MAX_POSTED, max_posted, U64, "65536", 1, INT32_MAX, "", "posted receives the matcher holds") \
    X(UNEXP_BYTES, unexp_bytes, U64, "67108864", 0, INT64_MAX, "",                                 \
      "bytes of waiting packets' copies and unexpected-message records before receive buffers "    \
      "are held (RNR back-pressure)")                                                              \
    X(UNEXP_MAX_BYTES, unexp_max_bytes, U64, "268435456", 0, INT64_MAX, "",                        \
      "hard cap on those bytes: up to it, copy rather than hold the last RX_RESERVE buffers; "     \
      "the memory budget of unexpected messages")                                                  \
    X(RX_FULL_TIMEOUT_MS, rx_full_timeout_ms, U64, "30000", 0, INT32_MAX, "",                      \
      "fail the endpoint when nothing could be received this long while progress ran "             \
      "(UNEXP_MAX_BYTES reached, every receive buffer held; 0: wait forever)")                     \
    X(PEER_PROBE_MS, peer_probe_ms, U64, "5000", 0, INT32_MAX, "",                                 \
      "an operation that waited this long on a peer silent as long sends it a HANDSHAKE as a "     \
      "liveness probe; a probe the device fails fails the peer and what waits on it, within 2x "   \
      "this plus the device's timeout (5 s finds a vanished peer in seconds, probes stay rare; "   \
      "0: never probe)")                                                                           \
    X(RX_RESERVE, rx_reserve, U64, "0", 0, 1048575, "",                                            \
      "receive buffers waiting packets may not hold, so the next in-order one lands (0: 1/4)")     \
    X(RECVWIN, recvwin, POW2, "128", 1, 65536, "",                                                 \
      "reorder window per peer in messages (power of 2); later ones wait on an overflow list")     \
    X(EAGER_MAX, eager_max, U64, "0", 0, 65536, "",                                                \
      "largest eager message (0: what fits in one packet, MTU minus headers; more than fits in "   \
      "one packet of the device is refused when the endpoint opens)")                              \
    X(PROFILE, profile, PROFILE, "auto", 0, 0, "auto|reference|efasim",                            \
      "selection profile the thresholds below come from: auto (efasim on efasim, else "            \
      "reference), reference, efasim, or a file of measured costs")                                \
    X(MEDIUM_MAX, medium_max, U64, "0", 0, INT64_MAX, "",                                          \
      "largest medium message, as FI_EFA_INTER_MAX_MEDIUM_MESSAGE_SIZE (0: from the profile)")     \
    X(READ_MIN, read_min, U64, "0", 0, INT64_MAX, "",                                              \
      "smallest long-read/runting-read message, as FI_EFA_INTER_MIN_READ_MESSAGE_SIZE (0: "        \
      "from the profile)")                                                                         \
    X(READ_MIN_UNREG, read_min_unreg, U64, "0", 0, INT64_MAX, "",                                  \
      "the same for a buffer not yet registered (0: READ_MIN if set, else the profile)")           \
    X(RUNT_MIN, runt_min, U64, "0", 0, INT64_MAX, "",                                              \
      "smallest runting-read message (0: READ_MIN if set, else the profile)")                      \
    X(MEDIUM_MAX_STREAM, medium_max_stream, U64, "0", 0, INT64_MAX, "",                            \
      "largest medium message while other sends to the same peer are in flight (0: from the "      \
      "profile's stream curves, none without them; EFARM_MEDIUM_MAX or more: none)")               \
    X(READ_MIN_STREAM, read_min_stream, U64, "0", 0, INT64_MAX, "",                                \
      "smallest read-protocol message while other sends to the same peer are in flight (0: "       \
      "READ_MIN if set, else the profile's stream curves, else as without sends in flight)")       \
    X(PROTO, proto, ENUM, "auto", 0, 0, EFARM_PROTO_NAMES,                                         \
      "two-sided subprotocol forced where legal (auto: the selection rules choose)")               \
    X(RMA_PROTO, rma_proto, LIST, "auto", 0, 0, EFARM_RMA_FORCE_NAMES,                             \
      "one-sided subprotocols forced where legal, each for its kind of operation (auto: the "      \
      "selection rules choose; an atomic has one subprotocol, nothing to force)")                  \
    X(RUNT_SIZE, runt_size, U64, "307200", 0, INT64_MAX, "",                                       \
      "bytes runting read sends eagerly per peer in flight, as FI_EFA_RUNT_SIZE (0: never)")       \
    X(RDMA_READ, rdma_read, BOOL, "1", 0, 1, "",                                                   \
      "use RDMA-read protocols when both sides have RDMA read; 0 advertises none")                 \
    X(RMA_NATIVE, rma_native, BOOL, "1", 0, 1, "",                                                 \
      "MPI RMA as native one-sided operations where possible; 0 sends all of it as active "        \
      "messages")                                                                                  \
    X(RMA_TARGET_IOV_MAX, rma_target_iov_max, U64, "64", 0, 65536, "",                             \
      "contiguous pieces noncontiguous target data of one MPI RMA call may have and go native "    \
      "(an engine operation per 4); more go as active messages (0: never native)")                 \
    X(RDMA_WRITE, rdma_write, BOOL, "1", 0, 1, "",                                                 \
      "one-sided writes by RDMA write when both sides have it; 0 advertises none")                 \
    X(MAX_READS, max_reads, U64, "32", 1, 65536, "",                                               \
      "RDMA reads in flight per endpoint; beyond it long messages use long-CTS")                   \
    X(CTS_CREDITS, cts_credits, U64, "64", 1, 65536, "",                                           \
      "CTSDATA packets a long-CTS sender asks for per CTS (credit_request)")                       \
    X(RX_WINDOW, rx_window, U64, "128", 1, 65536, "",                                              \
      "CTSDATA packets a long-CTS receiver grants per CTS, as FI_EFA_RX_WINDOW_SIZE")              \
    X(RNR_RETRY, rnr_retry, U64, "3", 0, 7, "",                                                    \
      "device RNR retries before an RNR completion reaches efarm (7: forever)")                    \
    X(RNR_BACKOFF_US, rnr_backoff_us, U64, "100", 1, INT32_MAX, "",                                \
      "first backoff after repeated RNR from a peer; randomized in [x, 2x), then doubled")         \
    X(RNR_BACKOFF_MAX_US, rnr_backoff_max_us, U64, "1000000", 1, INT32_MAX, "",                    \
      "longest RNR backoff, as FI_EFA_MAX_TIMEOUT")                                                \
    X(CONNID_HEADER, connid_header, BOOL, "1", 0, 1, "",                                           \
      "ask peers for the connid header (extra request 3) to drop packets of dead QPs")             \
    X(YIELD_POLLS, yield_polls, U64, "64", 0, INT32_MAX, "",                                       \
      "MPI progress: sched_yield after this many empty polls, so ranks sharing cores run (0: "     \
      "never)")                                                                                    \
    X(TEST_SEED, test_seed, TEST, "0", 0, UINT64_MAX, "",                                          \
      "seed of the unit-test runner's random streams (tests only)")

/*
 * EFARM_* variables that the library does not read: efarm's scripts and tests
 * do. S(NAME, read by, what). A NAME ending in '_' stands for every name that
 * begins with it. efarm does not report them as unknown; efarm-info and
 * doc/TUNABLES.md list them.
 */
#define EFARM_SCRIPT_VAR_LIST(S)                                                                 \
    S(BUILD_ROOT, "scripts, tests, benchmarks", "directory of build trees and logs (build)")     \
    S(MPICH_CACHE, "mpich-build.sh, mpich-testsuite.sh, test-all.sh",                            \
      "cache of the efarm MPICH build (build/mpich, or build/mpich-VERSION)")                    \
    S(MPICH_PREFIX, "mpich-build.sh, quickstart.sh, test scripts",                               \
      "where MPICH is (to be) installed (CACHE/install)")                                        \
    S(MPICH_RELEASE_CACHE, "mpich-build.sh", "cache of the --release build")                     \
    S(MPICH_OFI_CACHE, "mpich-build.sh", "cache of the --netmod ofi build")                      \
    S(MPICH_SOURCE, "mpich-build.sh", "--source: an MPICH tarball or directory")                 \
    S(MPICH_SOURCE_, "test-all.sh",                                                              \
      "per version (EFARM_MPICH_SOURCE_4_3_2): that MPICH's source for the tests; unset: "       \
      "its release tarball, fetched")                                                            \
    S(MPICH_TESTSUITE_DIR, "mpich-testsuite.sh", "where MPICH's test suite runs")                \
    S(MPICH_PMIX_CACHE, "mpich-build.sh", "cache of the --pmi pmix build")                       \
    S(MPICH_PMI2_CACHE, "mpich-build.sh", "cache of the --pmi pmi2 build")                       \
    S(MPICH_ABI_CACHE, "mpich-build.sh, test-all.sh", "cache of the --abi build")                \
    S(PMIX_DIR, "mpich-build.sh", "--pmi pmix: the PMIx installation (else pkg-config's)")       \
    S(SLURM_PMI_DIR, "mpich-build.sh", "--pmi pmi2, MPICH 4.1+: Slurm's libpmi2 (default /usr)") \
    S(PROGRESS_SECONDS, "mpich-build.sh", "seconds between progress lines of a build step (60)") \
    S(CCACHE_DIR, "test-all.sh, mpich-build.sh, .ci/run",                                        \
      "ccache's directory for efarm's own builds (unset: no ccache)")                            \
    S(RDMA_CORE_SOURCE, "rdma-core-build.sh", "an rdma-core source tarball or directory")        \
    S(SLURM_DIR, "slurm-cluster.sh", "the local Slurm cluster's state (/run/efarm-slurm)")       \
    S(SLURM_START_TIMEOUT, "slurm-cluster.sh", "seconds for its nodes to come up (60)")          \
    S(TEST_DEVICE, "unit tests", "efa: the unit suite on EFA's path (kernel front end)")         \
    S(LIBFABRIC_CACHE, "libfabric-build.sh, test-all.sh", "cache of the libfabric build")        \
    S(LIBFABRIC_PREFIX, "libfabric-build.sh, test-all.sh", "where that libfabric is installed")  \
    S(FUZZ_SECONDS, "test-all.sh", "seconds of each fuzz run (60)")                              \
    S(TEST_BUDGET, "test-all.sh, .ci/run",                                                       \
      "seconds after which test-all.sh starts no step (0: none; CI sets 4500)")                  \
    S(INTEROP_FI_RDMA_WRITE, "run-interop.sh",                                                   \
      "1: the libfabric under test writes by RDMA write (>= 1.18 on rdma-core >= 45)")           \
    S(TEST_VERBOSE, "unit tests", "set: some tests print what they chose")

enum efarm_config_kind {
    EFARM_CONFIG_U64,
    EFARM_CONFIG_POW2,
    EFARM_CONFIG_BOOL,
    EFARM_CONFIG_ENUM,
    EFARM_CONFIG_LIST,
    EFARM_CONFIG_PROFILE,
    EFARM_CONFIG_FILE,
    EFARM_CONFIG_DIR,
    EFARM_CONFIG_STR,
    EFARM_CONFIG_TEST,
};

#define EFARM_CONFIG_TYPE_U64     uint64_t
#define EFARM_CONFIG_TYPE_POW2    uint64_t
#define EFARM_CONFIG_TYPE_TEST    uint64_t
#define EFARM_CONFIG_TYPE_BOOL    bool
#define EFARM_CONFIG_TYPE_ENUM    const char *
#define EFARM_CONFIG_TYPE_LIST    const char *
#define EFARM_CONFIG_TYPE_PROFILE const char *
#define EFARM_CONFIG_TYPE_FILE    const char *
#define EFARM_CONFIG_TYPE_DIR     const char *
#define EFARM_CONFIG_TYPE_STR     const char *

struct efarm_config {
#define EFARM_CONFIG_MEMBER(name, member, kind, def, lo, hi, choices, why) \
    EFARM_CONFIG_TYPE_##kind member;
    EFARM_CONFIG_LIST(EFARM_CONFIG_MEMBER)
#undef EFARM_CONFIG_MEMBER
};

/* One row of the table, for code that walks it (tools, the MPI glue). */
struct efarm_config_var {
    const char *name; /* without the EFARM_ prefix */
    enum efarm_config_kind kind;
    const char *def;
    uint64_t lo, hi;
    const char *choices; /* ENUM, LIST, PROFILE: "a|b|c" */
    const char *why;
};

/* The table: *n rows. */
const struct efarm_config_var *efarm_config_vars(unsigned *n);

/* The row of NAME (without EFARM_), or NULL. */
const struct efarm_config_var *efarm_config_var(const char *name);

/* True when the variable is an MPI control variable of MPI_T type int (else string). */
bool efarm_config_cvar_is_int(const struct efarm_config_var *v);

/* "a power of 2 from 1 to 65536" and the like: what v accepts. */
void efarm_config_allowed(const struct efarm_config_var *v, char *buf, size_t len);

/*
 * The one check of a value: 0 when text is allowed for v, else -EINVAL with
 * "SOURCE=TEXT refused: expected ALLOWED" in err (source: the variable's name
 * as the user set it).
 */
int efarm_config_check(const struct efarm_config_var *v, const char *source, const char *text,
                       char *err, size_t errlen);

/* The configuration, read on first use; never NULL. */
const struct efarm_config *efarm_config(void);

/*
 * 0 when every value set was accepted; else -EINVAL and, in *msg, one line per
 * refused value (they keep their defaults in struct efarm_config, but nothing
 * may start with them: the endpoint and MPI_Init fail).
 */
int efarm_config_status(const char **msg);

/*
 * Under MPI: read the configuration again with a further source above the
 * environment, the control variables. lookup returns the text of v's control
 * variable (NULL: none), which is taken when it differs from the text the
 * environment gave (so an MPI_T write shows, and MPICH's own reading of the
 * same environment variable is not checked twice); source_out names it for
 * messages. Returns efarm_config_status. Not thread-safe: call it before any
 * endpoint opens.
 */
typedef const char *(*efarm_config_lookup_fn)(const struct efarm_config_var *v, void *ctx,
                                              char *buf, size_t len, const char **source_out);
int efarm_config_load(efarm_config_lookup_fn lookup, void *ctx);

/* The script variables: *n rows of {name, read by, what}. */
struct efarm_script_var {
    const char *name; /* without EFARM_; ending in '_': a prefix */
    const char *reader;
    const char *what;
};
const struct efarm_script_var *efarm_script_vars(unsigned *n);

/* True when NAME (without EFARM_) is in force at its default: no source set it. */
bool efarm_config_is_default(const char *name);

/* Print every tunable: name, default, allowed, value in force (or REFUSED), source, why. */
void efarm_config_print(FILE *out);

#endif /* EFARM_CONFIG_H */
