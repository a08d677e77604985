/*
 * The input language of the receive-path fuzzer (fuzz_rx.c), shared with its
 * seed writer (fuzz_rx_seeds.c).
 *
 * An input is a sequence of commands, read until the bytes run out. Each
 * starts with one opcode byte (taken modulo FZ_OP_COUNT, so every byte is a
 * command) and its fixed operands; a command cut short by the end of the
 * input is ignored. Multi-byte operands are little-endian.
 *
 *   FZ_PKT      peer flags len:u16 bytes[len]
 *               wire peer `peer` sends the bytes as one packet to the engine,
 *               which progresses until it has received it. `flags` first
 *               rewrites a packet that decodes (FZ_FIX_*), so mutated seeds
 *               keep the sender's real address and live ids.
 *   FZ_RECV     mode len:u16     post a receive (tagged, untagged, wildcards by
 *                                mode) of len * 8 bytes between guard pages
 *   FZ_CANCEL   -                cancel the oldest receive still pending
 *   FZ_PROBE    mode             probe (claiming or not); receive what is claimed
 *   FZ_SEND     peer size flags  the engine sends 1 << (size % 19) bytes to a
 *                                known wire peer (eager to long-read)
 *   FZ_RMA      peer kind off:u16 len:u16
 *                                the engine reads, writes or runs an atomic on a
 *                                wire peer (emulated: the peer's answers are
 *                                what the fuzzer sends next)
 *   FZ_RDMA     peer kind off:u16 len:u16 key:u8
 *                                wire peer `peer` posts an RDMA read or write on
 *                                the engine's exposed window through the device
 *                                (the device must refuse bad keys and bounds)
 *   FZ_PROGRESS n                progress n times
 *
 * Wire peers: 0 and 1 are in the engine's address vector and have exchanged
 * HANDSHAKEs (0 advertises every feature, 1 no RDMA read); 2 is an unknown
 * sender that never handshakes.
 */
#ifndef EFARM_FUZZ_RX_H
#define EFARM_FUZZ_RX_H

enum fz_op {
    FZ_PKT,
    FZ_RECV,
    FZ_CANCEL,
    FZ_PROBE,
    FZ_SEND,
    FZ_RMA,
    FZ_RDMA,
    FZ_PROGRESS,
    FZ_OP_COUNT
};

#define FZ_PEERS 3

/* FZ_PKT flags: rewrites applied to a packet that decodes, then encoded again. */
#define FZ_FIX_ADDR  0x01u /* connid, raw address: the sending wire peer's own */
#define FZ_FIX_MSGID 0x02u /* msg_id: the next one this peer's REQs should carry */
#define FZ_FIX_IDS   0x04u /* send_id / recv_id: the last ones the engine sent this peer */
#define FZ_FIX_RMA   0x08u /* rma_iov: inside (or around) the window; atomics made valid */

/* The window the engine exposes (read and write) and its neighbours' guard pages. */
#define FZ_WINDOW_LEN 65536u

#endif /* EFARM_FUZZ_RX_H */
