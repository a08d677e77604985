/*
 * Packet capture (EFARM_CAPTURE): every packet an endpoint sends or receives,
 * as a pcap file that efarm-pktdump --pcap and Wireshark (tools/efarm.lua)
 * read.
 *
 * File: classic pcap with nanosecond timestamps (magic 0xa1b23c4d, written in
 * this host's byte order as pcap does), link type LINKTYPE_USER0 (147). Each
 * record is a capture header of EFARM_CAPTURE_HDR_LEN bytes, big-endian,
 * then the protocol v4 packet exactly as it crossed the wire:
 *
 *   0   u8   version (1)
 *   1   u8   direction: 0 sent by this endpoint, 1 received
 *   2   u16  capture header length (40)
 *   4   u32  this endpoint's QPN
 *   8   u32  the peer's QPN
 *   12  u32  the peer's index in this endpoint's address vector (0xffffffff:
 *            an unknown sender)
 *   16  16B  the peer's GID (zeros when the receive did not say it)
 *   32  u32  the process id
 *   36  i32  the MPI rank (-1: not an MPI process)
 */
#ifndef EFARM_CAPTURE_H
#define EFARM_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

#define EFARM_CAPTURE_PCAP_MAGIC_NS 0xa1b23c4du
#define EFARM_CAPTURE_LINKTYPE      147 /* LINKTYPE_USER0 */
#define EFARM_CAPTURE_VERSION       1
#define EFARM_CAPTURE_HDR_LEN       40
#define EFARM_CAPTURE_SNAPLEN       65535
#define EFARM_CAPTURE_PEER_UNKNOWN  0xffffffffu

enum efarm_capture_dir { EFARM_CAPTURE_TX = 0, EFARM_CAPTURE_RX = 1 };

struct efarm_capture_rec {
    enum efarm_capture_dir dir;
    uint32_t local_qpn, peer_qpn, peer_index;
    const uint8_t *peer_gid; /* 16 bytes, or NULL */
};

/*
 * Open the process's capture file when EFARM_CAPTURE names one (first call
 * only; later calls return the first result): %p in the name becomes the
 * process id, %r the MPI rank (the process id outside MPI), %h the host name,
 * %% a percent sign. Returns 0 (also when capture is off), or -errno with one
 * line on stderr naming EFARM_CAPTURE and the file.
 */
int efarm_capture_open(void);

/* True while a capture file is open. */
bool efarm_capture_on(void);

/* Append one packet (thread-safe; a write error stops the capture with one message). */
void efarm_capture_write(const struct efarm_capture_rec *rec, const uint8_t *pkt, uint32_t len);

/* The MPI rank for %r and the records (efarm_log_set_rank calls it). */
void efarm_capture_set_rank(int rank);

/* Flush and close (at exit too). */
void efarm_capture_close(void);

#endif /* EFARM_CAPTURE_H */
