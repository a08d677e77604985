/*
 * Dynamic processes over efarm, the part that does not know MPICH
 * (efarm_dynproc_core.c): process ids ("upids") and the bootstrap messages of
 * connect/accept, spawn, join and intercommunicators between groups without a
 * common address table. MPICH's hooks (efarm_dynproc.c for 4.0 and 4.3) are
 * thin callers of these; so will MPICH 5.0's be (insert_upid,
 * dynamic_send, dynamic_sendrecv), which is why everything here takes plain
 * arguments: raw address bytes, an endpoint and peer, a tag, buffers, a
 * timeout and a progress callback. No MPICH header is included, so the unit
 * tests (test/unit/test_dynproc.c) build it alone.
 *
 * The upid (doc/NETMOD.md, "Dynamic processes"): 36 bytes, a 4-byte header
 * (magic 'E' 'F', format version 1, 0) and the process's 32-byte raw EFA
 * address on rail 0 (protocol v4 section 1.4: GID, QPN, pad 0, connid, 8
 * reserved bytes 0). The connid (the QP's QKEY, random per QP) tells two
 * incarnations behind one reused QP number apart, so the raw address alone
 * names one process for its lifetime. Further rails are not carried: a
 * process reached through a upid is never striped to (efarm_stripe.c keys
 * its tails by world rank, which is unique within one MPI_COMM_WORLD only).
 *
 * The reserved match space: bootstrap messages are tagged messages of
 * context MPIDI_EFARM_DYN_CONTEXT (0xffff) and source MPIDI_EFARM_DYN_SOURCE
 * (2^24 - 1), the tag being MPICH's (the port's tag). The netmod sends MPI
 * messages with context = a communicator's context id + offset and source = the
 * sender's rank in it. MPICH 4.0 and 4.3 never make 0xffff a context: it is
 * their MPIR_INVALID_CONTEXT_ID, and ids from the context mask leave the top
 * bit clear (the "dynamic process" half, which only ch3 used) and their
 * collective offset adds 1 to an even id, so 0x7fff is the largest context on
 * the wire. MPICH 5.0 puts the top bit in hashed ids of communicators made
 * from process-set groups, which could be 0xffff; the source 2^24 - 1 would
 * then need a rank 16777215 in it. Receives post the exact source too, so an
 * MPI message matches none of them and they match no MPI receive.
 */
#ifndef EFARM_DYNPROC_H_INCLUDED
#define EFARM_DYNPROC_H_INCLUDED

#include <stdint.h>

#include "efarm_proto.h"

#define MPIDI_EFARM_DYN_CONTEXT EFARM_CONTEXT_MAX
#define MPIDI_EFARM_DYN_SOURCE  EFARM_SOURCE_MAX

#define MPIDI_EFARM_UPID_MAGIC0  0x45u /* 'E' */
#define MPIDI_EFARM_UPID_MAGIC1  0x46u /* 'F' */
#define MPIDI_EFARM_UPID_VERSION 1u
#define MPIDI_EFARM_UPID_HDR_LEN 4u
#define MPIDI_EFARM_UPID_LEN     (MPIDI_EFARM_UPID_HDR_LEN + EFARM_RAW_ADDR_LEN)

/* The upid of the process whose rail-0 raw address is raw. */
void MPIDI_EFARM_upid_encode(const uint8_t raw[EFARM_RAW_ADDR_LEN],
                             uint8_t upid[MPIDI_EFARM_UPID_LEN]);

/*
 * Check len bytes at upid (from the wire: any length, any content) and copy
 * its raw address to raw. Returns 0, or -EINVAL and *why_p a sentence
 * (static) saying what is wrong; raw is written only on success.
 */
int MPIDI_EFARM_upid_decode(const void *upid, int64_t len, uint8_t raw[EFARM_RAW_ADDR_LEN],
                            const char **why_p);

/*
 * How an exchange waits. progress makes one round of progress (the engine's,
 * through the caller's progress engine; MPICH 5.0's yields the VCI lock in
 * it) and returns 0, or a negative error that ends the wait (the caller keeps
 * its own error, such as an mpi_errno, in arg). timeout_s: seconds for the
 * whole exchange, <= 0 without a limit.
 */
typedef int (*MPIDI_EFARM_dyn_progress_fn)(void *arg);

struct MPIDI_EFARM_dyn_wait {
    MPIDI_EFARM_dyn_progress_fn progress;
    void *arg;
    int timeout_s;
};

/* What an exchange did. */
struct MPIDI_EFARM_dyn_result {
    uint64_t recv_len;   /* bytes received (the message's length) */
    efarm_peer_t sender; /* who sent it */
    int recv_status;     /* the receive's own end: 0, -ETIMEDOUT, -EMSGSIZE, an error */
    int send_status;     /* the send's: 0, -ETIMEDOUT, an error */
};

/*
 * One bootstrap exchange in the reserved match space: with rbuf, a receive
 * of at most rlen bytes tagged tag from anyone (posted first); with sbuf,
 * slen bytes sent to peer with tag; then progress until both are done or
 * the timeout. Sends go from a copy, so nothing refers to sbuf on return.
 * At the timeout the receive is cancelled; one that had already matched
 * (its data on the way) is waited for instead and counts if it completes,
 * since its message would be lost otherwise. A send that has not completed
 * by then cannot be cancelled (the engine has no send cancel): it is left
 * to finish on its own copy, freed by its completion or by
 * MPIDI_EFARM_dyn_release() after the endpoint closes. Either way no engine
 * request refers to the caller's memory after the return.
 *
 * Returns 0, -ETIMEDOUT, -EMSGSIZE (the message was longer than rlen: it is
 * truncated), -ENOMEM, -EINVAL (a tag outside 0..EFARM_TAG_MAX, a length
 * over INT32_MAX), the progress callback's error or the engine's; res_p
 * (may be NULL) is filled in every case.
 */
int MPIDI_EFARM_dyn_exchange(struct efarm_ep *ep, efarm_peer_t peer, int32_t tag, const void *sbuf,
                             uint64_t slen, void *rbuf, uint64_t rlen,
                             const struct MPIDI_EFARM_dyn_wait *wait,
                             struct MPIDI_EFARM_dyn_result *res_p);

/*
 * The same in one conversation: conv, in MPIDI_EFARM_DYN_CONV_MIN to
 * MPIDI_EFARM_DYN_SOURCE, is the source word both the send and the receive
 * carry (MPIDI_EFARM_dyn_exchange's is MPIDI_EFARM_DYN_SOURCE), so a receive
 * takes only messages of its conversation: MPICH 5.0's hooks number each
 * connect/accept's conversation (efarm_dynproc.c), so that a message left by
 * an exchange that timed out never passes for one of a later exchange between
 * the same two processes. Values from 2^23 up: no rank of a communicator that
 * might share the reserved context reaches them. -EINVAL for another value.
 */
#define MPIDI_EFARM_DYN_CONV_MIN (1 << (EFARM_TAG_SOURCE_BITS - 1))
int MPIDI_EFARM_dyn_exchange_conv(struct efarm_ep *ep, efarm_peer_t peer, int32_t conv, int32_t tag,
                                  const void *sbuf, uint64_t slen, void *rbuf, uint64_t rlen,
                                  const struct MPIDI_EFARM_dyn_wait *wait,
                                  struct MPIDI_EFARM_dyn_result *res_p);

/* Sends left behind by timed-out exchanges and not yet complete. */
unsigned MPIDI_EFARM_dyn_abandoned(void);

/*
 * Free what timed-out exchanges left behind. Only once the endpoint is
 * closed (efarm_ep_close drops their requests without completing them).
 */
void MPIDI_EFARM_dyn_release(void);

/*
 * Insert-or-reuse: the peer of a process known by its raw address, added to
 * the endpoint's address vector unless present (efarm_av_insert keeps one
 * entry per GID, QPN and connid). Returns 0 or the engine's error (-ENOSPC:
 * the address vector is full, EFARM_AV_SIZE). A process that is not of the
 * caller's MPI_COMM_WORLD should then be marked with efarm_av_set_departing
 * (it may exit after MPI_Comm_disconnect without a barrier with us).
 */
int MPIDI_EFARM_dyn_peer(struct efarm_ep *ep, const uint8_t raw[EFARM_RAW_ADDR_LEN],
                         efarm_peer_t *peer_p);

#endif /* EFARM_DYNPROC_H_INCLUDED */
