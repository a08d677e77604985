/*
 * efarm's tunables: one table (name, type, default, why), read once from the
 * environment at first use. An EFARM_* variable that is not in the table is
 * reported, because a misspelt knob that silently does nothing costs hours.
 * `efarm-info` prints the table with the values in force.
 */
#ifndef EFARM_CONFIG_H
#define EFARM_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* X(NAME, member, kind, default, why); kind is STR, BOOL or U64. */
#define EFARM_CONFIG_LIST(X)                                                                     \
    X(DEVICE, device, STR, "auto",                                                               \
      "verbs libraries: efa (system rdma-core), sim (efasim), auto (efa if sysfs has one)")      \
    X(EFASIM_PATH, efasim_path, STR, "",                                                         \
      "directory of efasim's libibverbs.so.1 and libefa.so.1 (empty: the installed one)")        \
    X(IFACE, iface, STR, "",                                                                     \
      "comma-separated EFA devices this rank may use, like FI_EFA_IFACE (empty: all)")           \
    X(NIC_VERBOSE, nic_verbose, BOOL, "0", "print rank -> NIC -> reason when a NIC is chosen")   \
    X(TOPOLOGY, topology, STR, "",                                                               \
      "hwloc XML file describing this machine, for the NIC choice (empty: discover it)")         \
    X(RAILS, rails, U64, "1",                                                                    \
      "MPI: endpoints per rank, one per NIC tied for nearest (1-4; fewer when fewer are tied); " \
      "contiguous messages of EFARM_STRIPE_MIN bytes or more are striped over them")             \
    X(STRIPE_MIN, stripe_min, U64, "1048576",                                                    \
      "MPI, EFARM_RAILS > 1: smallest message striped over the rails (at least 4 KiB a rail)")   \
    X(NIC_EXCHANGE, nic_exchange, BOOL, "1",                                                     \
      "MPI: share CPU bindings through PMI at init (one barrier; set it alike on every rank); "  \
      "0 counts every rank unbound")                                                             \
    X(MR_CACHE, mr_cache, BOOL, "1",                                                             \
      "cache registrations of long/runt-read send buffers; 0 registers on every use")            \
    X(MR_CACHE_MAX_ENTRIES, mr_cache_max_entries, U64, "0",                                      \
      "registrations the cache may hold (0: from the device's MR limit)")                        \
    X(MR_CACHE_MAX_BYTES, mr_cache_max_bytes, U64, "0",                                          \
      "bytes the cache may keep registered (0: from the device's limits)")                       \
    X(LOG_LEVEL, log_level, STR, "warn",                                                         \
      "error, warn, info, debug, trace or data (data prints every packet)")                      \
    X(AV_SIZE, av_size, U64, "4096",                                                             \
      "peers one endpoint can address, unknown senders included (56 bytes each)")                \
    X(SQ_DEPTH, sq_depth, U64, "256", "send work requests in flight on the device")              \
    X(RX_BUFFERS, rx_buffers, U64, "512",                                                        \
      "MTU-sized receive buffers kept posted; fewer means earlier RNR under bursts")             \
    X(TX_PKTS, tx_pkts, U64, "512",                                                              \
      "registered MTU-sized send buffers; bounds packets queued or in flight")                   \
    X(MAX_OPS, max_ops, U64, "4096",                                                             \
      "sends in flight and receives in progress (send_id/recv_id space); unexpected messages "   \
      "take none")                                                                               \
    X(MAX_POSTED, max_posted, U64, "65536", "posted receives the matcher holds")                 \
    X(UNEXP_BYTES, unexp_bytes, U64, "67108864",                                                 \
      "bytes of waiting packets' copies and unexpected-message records before receive buffers "  \
      "are held (RNR back-pressure)")                                                            \
    X(UNEXP_MAX_BYTES, unexp_max_bytes, U64, "268435456",                                        \
      "hard cap on those bytes: up to it, copy rather than hold the last RX_RESERVE buffers; "   \
      "the memory budget of unexpected messages")                                                \
    X(RX_FULL_TIMEOUT_MS, rx_full_timeout_ms, U64, "30000",                                      \
      "fail the endpoint when nothing could be received this long while progress ran "           \
      "(UNEXP_MAX_BYTES reached, every receive buffer held; 0: wait forever)")                   \
    X(RX_RESERVE, rx_reserve, U64, "0",                                                          \
      "receive buffers waiting packets may not hold, so the next in-order one lands (0: 1/4)")   \
    X(RECVWIN, recvwin, U64, "128",                                                              \
      "reorder window per peer in messages (power of 2); later ones wait on an overflow list")   \
    X(EAGER_MAX, eager_max, U64, "0",                                                            \
      "largest eager message (0: what fits in one packet, MTU minus headers)")                   \
    X(PROFILE, profile, STR, "auto",                                                             \
      "selection profile the thresholds below come from: auto (efasim on efasim, else "          \
      "reference), reference, efasim, or a file of measured costs")                              \
    X(MEDIUM_MAX, medium_max, U64, "0",                                                          \
      "largest medium message, as FI_EFA_INTER_MAX_MEDIUM_MESSAGE_SIZE (0: from the profile)")   \
    X(READ_MIN, read_min, U64, "0",                                                              \
      "smallest long-read/runting-read message, as FI_EFA_INTER_MIN_READ_MESSAGE_SIZE (0: "      \
      "from the profile)")                                                                       \
    X(READ_MIN_UNREG, read_min_unreg, U64, "0",                                                  \
      "the same for a buffer not yet registered (0: READ_MIN if set, else the profile)")         \
    X(RUNT_MIN, runt_min, U64, "0",                                                              \
      "smallest runting-read message (0: READ_MIN if set, else the profile)")                    \
    X(MEDIUM_MAX_STREAM, medium_max_stream, U64, "0",                                            \
      "largest medium message while other sends to the same peer are in flight (0: from the "    \
      "profile's stream curves, none without them; EFARM_MEDIUM_MAX or more: none)")             \
    X(READ_MIN_STREAM, read_min_stream, U64, "0",                                                \
      "smallest read-protocol message while other sends to the same peer are in flight (0: "     \
      "READ_MIN if set, else the profile's stream curves, else as without sends in flight)")     \
    X(PROTO, proto, STR, "auto",                                                                 \
      "two-sided subprotocol forced where legal: auto, eager, medium, longcts, longread, "       \
      "runtread")                                                                                \
    X(RMA_PROTO, rma_proto, STR, "auto",                                                         \
      "one-sided subprotocols forced where legal: auto or a list of direct_write, eager_rtw, "   \
      "longcts_rtw, longread_rtw, direct_read, short_rtr, longcts_rtr")                          \
    X(RUNT_SIZE, runt_size, U64, "307200",                                                       \
      "bytes runting read sends eagerly per peer in flight, as FI_EFA_RUNT_SIZE (0: never)")     \
    X(RDMA_READ, rdma_read, BOOL, "1",                                                           \
      "use RDMA-read protocols when both sides have RDMA read; 0 advertises none")               \
    X(RMA_NATIVE, rma_native, BOOL, "1",                                                         \
      "MPI RMA as native one-sided operations where possible; 0 sends all of it as active "      \
      "messages")                                                                                \
    X(RMA_TARGET_IOV_MAX, rma_target_iov_max, U64, "64",                                         \
      "contiguous pieces noncontiguous target data of one MPI RMA call may have and go native "  \
      "(an engine operation per 4); more go as active messages (0: never native)")               \
    X(RDMA_WRITE, rdma_write, BOOL, "1",                                                         \
      "one-sided writes by RDMA write when both sides have it; 0 advertises none")               \
    X(MAX_READS, max_reads, U64, "32",                                                           \
      "RDMA reads in flight per endpoint; beyond it long messages use long-CTS")                 \
    X(CTS_CREDITS, cts_credits, U64, "64",                                                       \
      "CTSDATA packets a long-CTS sender asks for per CTS (credit_request)")                     \
    X(RX_WINDOW, rx_window, U64, "128",                                                          \
      "CTSDATA packets a long-CTS receiver grants per CTS, as FI_EFA_RX_WINDOW_SIZE")            \
    X(RNR_RETRY, rnr_retry, U64, "3",                                                            \
      "device RNR retries before an RNR completion reaches efarm (7: forever)")                  \
    X(RNR_BACKOFF_US, rnr_backoff_us, U64, "100",                                                \
      "first backoff after repeated RNR from a peer; randomized in [x, 2x), then doubled")       \
    X(RNR_BACKOFF_MAX_US, rnr_backoff_max_us, U64, "1000000",                                    \
      "longest RNR backoff, as FI_EFA_MAX_TIMEOUT")                                              \
    X(CONNID_HEADER, connid_header, BOOL, "1",                                                   \
      "ask peers for the connid header (extra request 3) to drop packets of dead QPs")           \
    X(YIELD_POLLS, yield_polls, U64, "64",                                                       \
      "MPI progress: sched_yield after this many empty polls, so ranks sharing cores run (0: "   \
      "never)")                                                                                  \
    X(TEST_SEED, test_seed, U64, "0", "seed of the unit-test runner's random streams (tests only)")

struct efarm_config {
#define EFARM_CONFIG_MEMBER_STR(name, member)             const char *member;
#define EFARM_CONFIG_MEMBER_BOOL(name, member)            bool member;
#define EFARM_CONFIG_MEMBER_U64(name, member)             uint64_t member;
#define EFARM_CONFIG_MEMBER(name, member, kind, def, why) EFARM_CONFIG_MEMBER_##kind(name, member)
    EFARM_CONFIG_LIST(EFARM_CONFIG_MEMBER)
#undef EFARM_CONFIG_MEMBER
};

/* The configuration, read on first use; never NULL, never changes afterwards. */
const struct efarm_config *efarm_config(void);

/* Print every tunable: name, default, value in force, why. */
void efarm_config_print(FILE *out);

#endif /* EFARM_CONFIG_H */
