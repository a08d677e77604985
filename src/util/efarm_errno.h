/*
 * Error codes.
 *
 * Functions return int: 0 on success, a negative errno (-ENOMEM, -EINVAL,
 * -EAGAIN meaning only "queue and retry later", ...) or a negative efarm code
 * from the list below. The efarm codes name a defect precisely enough that a
 * log line or a dissector message says what was wrong without a debugger.
 * They live above the errno range so the two never collide.
 */
#ifndef EFARM_ERRNO_H
#define EFARM_ERRNO_H

/* X(name, message). Order is ABI for nothing; append freely. */
#define EFARM_ERROR_LIST(X)                                                                    \
    X(PKT_TRUNCATED_BASE, "packet shorter than the 4-byte base header")                        \
    X(PKT_BAD_VERSION, "protocol version is not 4")                                            \
    X(PKT_UNKNOWN_TYPE, "unknown packet type")                                                 \
    X(PKT_RETIRED_TYPE, "retired packet type (RTS/CONNACK are not sent in protocol v4)")       \
    X(PKT_RESERVED_TYPE, "reserved packet type (6, 131 or 132 is never sent on the wire)")     \
    X(PKT_TRUNCATED_HEADER, "packet shorter than its type's mandatory header")                 \
    X(PKT_TRUNCATED_RMA_IOV, "rma_iov_count entries do not fit in the packet")                 \
    X(PKT_TRUNCATED_READ_IOV, "read_iov_count entries do not fit in the packet")               \
    X(PKT_TRUNCATED_RAW_ADDR, "raw-address optional header does not fit in the packet")        \
    X(PKT_RAW_ADDR_SIZE, "raw-address header size is smaller than a 32-byte raw address")      \
    X(PKT_TRUNCATED_CQ_DATA, "CQ-data optional header does not fit in the packet")             \
    X(PKT_TRUNCATED_CONNID, "connid optional header does not fit in the packet")               \
    X(PKT_OPT_CONFLICT, "REQ carries both the raw-address and the connid header")              \
    X(PKT_NEXTRA_P3, "HANDSHAKE nextra_p3 is below 3")                                         \
    X(PKT_EXTRA_INFO_COUNT, "HANDSHAKE extra_info word count exceeds the supported maximum")   \
    X(PKT_TRUNCATED_EXTRA_INFO, "HANDSHAKE extra_info words do not fit in the packet")         \
    X(PKT_TRUNCATED_HANDSHAKE_OPT, "HANDSHAKE optional fields do not fit in the packet")       \
    X(PKT_SEG_OVERFLOW, "segment offset plus length overflows 64 bits")                        \
    X(PKT_SEG_LENGTH, "seg_length is larger than the data the packet carries")                 \
    X(PKT_SEG_BEYOND_MSG, "segment extends past msg_length")                                   \
    X(PKT_RUNT_LENGTH, "runt_length is larger than msg_length, or the segment passes it")      \
    X(PKT_READ_NACK_FLAG, "READ_NACK flag on a packet that is not a data-less LONGCTS RTM")    \
    X(PKT_CTS_ZERO, "CTS grants zero bytes (recv_length must be > 0)")                         \
    X(PKT_FIELD_RANGE, "field value does not fit its wire width")                              \
    X(PKT_MISSING_ARRAY, "nonzero count given without its array")                              \
    X(PKT_ENCODE_TYPE, "packet type has no encoder (retired, reserved or unknown)")            \
    X(DEV_LOAD, "could not load libibverbs/libefa for the selected device (EFARM_DEVICE)")     \
    X(DEV_NONE, "no EFA device found")                                                         \
    X(DEV_RNR, "receiver not ready: no receive posted within the RNR retry budget")            \
    X(DEV_REMOTE_ACCESS, "remote access error: bad key, bounds or access rights")              \
    X(DEV_REMOTE_QP, "remote QP does not exist, is not ready, or has another Q-Key")           \
    X(DEV_REMOTE_LENGTH, "remote receive buffer too short")                                    \
    X(DEV_LOCAL_LENGTH, "local length error (message too long or receive too short)")          \
    X(DEV_LOCAL_PROTECTION, "local protection error (lkey does not cover the buffer)")         \
    X(DEV_LOCAL_QP, "local QP operation error (bad address handle or operation)")              \
    X(DEV_FLUSHED, "work request flushed: the QP went to the error state")                     \
    X(DEV_TIMEOUT, "remote unresponsive or unreachable")                                       \
    X(DEV_GENERAL, "device completion error")                                                  \
    X(PROTO_NO_DC, "peer does not support delivery complete (its HANDSHAKE lacks it)")         \
    X(PROTO_BAD_READ_IOV, "peer's read_iov does not describe the message it announced")        \
    X(PROTO_READ_FAILED, "RDMA read of the sender's buffer failed and cannot fall back")       \
    X(PROTO_PEER_GONE, "peer stopped answering; the operation cannot finish")                  \
    X(PROTO_RESOURCES, "endpoint resources exhausted for an operation that cannot wait")       \
    X(PROTO_PEER_FAILED,                                                                       \
      "a packet to a peer failed at the device and data or a reply it waits for was lost "     \
      "(the log names the peer and the device error)")                                         \
    X(PROTO_RX_FULL,                                                                           \
      "nothing could be received: every receive buffer holds a message waiting for a "         \
      "receive and their copies reached EFARM_UNEXP_MAX_BYTES (raise it)")                     \
    X(PROTO_RMA_KEY, "remote access names a key no exposed region has")                        \
    X(PROTO_RMA_BOUNDS, "remote access leaves the exposed region (or its range wraps)")        \
    X(PROTO_RMA_ACCESS, "remote access of a kind the exposed region does not grant")           \
    X(PROTO_RMA_REFUSED, "the target refused the one-sided operation (key, bounds, access or " \
                         "an atomic it does not apply); its memory is unchanged")              \
    X(PROTO_NESTED_WAIT, "progress called 2^20 times in a row from inside a completion "       \
                         "callback: something waits there, and nothing can complete there")

enum efarm_error_code {
    EFARM_ERR_BASE_ = 4096, /* above every errno value */
#define EFARM_ERR_ENUM_(name, msg) EFARM_ERR_##name,
    EFARM_ERROR_LIST(EFARM_ERR_ENUM_)
#undef EFARM_ERR_ENUM_
        EFARM_ERR_END_
};

/* Negative return values for the codes above, e.g. return EFARM_E(PKT_CTS_ZERO). */
#define EFARM_E(name) (-(int)EFARM_ERR_##name)

/*
 * Message for any value our functions return: 0, a negative errno or a
 * negative efarm code. Returns a static string; never NULL.
 */
const char *efarm_strerror(int err);

/* Short symbolic name ("PKT_CTS_ZERO", "ENOMEM") of err; never NULL. */
const char *efarm_strerror_name(int err);

#endif /* EFARM_ERRNO_H */
