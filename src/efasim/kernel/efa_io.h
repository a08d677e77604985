/*
 * EFA's queue formats as the device reads and writes them: send queue
 * entries (a 32-byte meta descriptor and 32 bytes of buffer descriptors,
 * inline data or an RDMA request), receive descriptors and completion
 * entries with their phase bit. These are the layouts rdma-core's EFA
 * provider writes and reads (providers/efa/efa_io_defs.h, rdma-core 44 and
 * the RDMA-write fields of later releases), written here as efasim's device
 * side reads them: little-endian fields at fixed offsets, pinned by static
 * assertions. Field bits are (mask, shift) pairs, one per line.
 */
#ifndef EFASIM_EFA_IO_H
#define EFASIM_EFA_IO_H

#include <stddef.h>
#include <stdint.h>

/* Send queue entry. */
struct efasim_io_tx_meta {
    uint16_t req_id;
    uint8_t ctrl1; /* op type, has imm, inline, meta extension, meta desc */
    uint8_t ctrl2; /* phase, first, last, completion requested */
    uint16_t dest_qp_num;
    uint16_t length; /* inline bytes, or the number of buffer descriptors */
    uint32_t immediate_data;
    uint16_t ah;
    uint8_t ctrl3; /* processing hints (newer devices) */
    uint8_t reserved;
    uint32_t qkey;
    uint8_t reserved2[12];
};

struct efasim_io_tx_buf {
    uint32_t length;
    uint32_t lkey; /* bits 0..23 */
    uint32_t addr_lo, addr_hi;
};

struct efasim_io_remote_mem {
    uint32_t length;
    uint32_t rkey;
    uint32_t addr_lo, addr_hi;
};

struct efasim_io_tx_wqe {
    struct efasim_io_tx_meta meta;
    union {
        struct efasim_io_tx_buf sgl[2];
        uint8_t inline_data[32];
        struct {
            struct efasim_io_remote_mem remote;
            struct efasim_io_tx_buf local[1];
        } rdma;
    } data;
};

#define EFASIM_IO_TX_OP_TYPE  0x0f, 0 /* ctrl1 */
#define EFASIM_IO_TX_HAS_IMM  0x01, 4
#define EFASIM_IO_TX_INLINE   0x01, 5
#define EFASIM_IO_TX_META_EXT 0x01, 6
#define EFASIM_IO_TX_META     0x01, 7
#define EFASIM_IO_TX_PHASE    0x01, 0 /* ctrl2 */
#define EFASIM_IO_TX_FIRST    0x01, 2
#define EFASIM_IO_TX_LAST     0x01, 3
#define EFASIM_IO_TX_COMP_REQ 0x01, 4
#define EFASIM_IO_LKEY_MASK   0xffffffu

enum efasim_io_op {
    EFASIM_IO_OP_SEND = 0,
    EFASIM_IO_OP_RDMA_READ = 1,
    EFASIM_IO_OP_RDMA_WRITE = 2,
};

/* Receive descriptor: one per receive buffer; a WR spans FIRST..LAST. */
struct efasim_io_rx_desc {
    uint32_t addr_lo, addr_hi;
    uint16_t req_id; /* the WR's, in its first descriptor */
    uint16_t length;
    uint32_t lkey_ctrl; /* lkey bits 0..23, FIRST bit 30, LAST bit 31 */
};

#define EFASIM_IO_RX_FIRST (1u << 30)
#define EFASIM_IO_RX_LAST  (1u << 31)

/* Completion entries. */
struct efasim_io_cdesc {
    uint16_t req_id;
    uint8_t status; /* enum efasim_status: EFA's completion status */
    uint8_t flags;  /* phase, queue type, has imm, op type, unsolicited */
    uint16_t qp_num;
    uint16_t length;
};

struct efasim_io_rx_cdesc {
    struct efasim_io_cdesc common;
    uint16_t ah; /* the sender's AH number here, 0xffff if none */
    uint16_t src_qp_num;
    uint32_t imm;
};

struct efasim_io_rx_cdesc_ex {
    struct efasim_io_rx_cdesc base;
    union {
        uint16_t length_hi;   /* an RDMA write with immediate: its length's bits 31:16 */
        uint8_t src_addr[16]; /* else the sender's GID (CQ created with SGID) */
    };
};

#define EFASIM_IO_CQE_PHASE       0x01, 0
#define EFASIM_IO_CQE_Q_TYPE      0x03, 1
#define EFASIM_IO_CQE_HAS_IMM     0x01, 3
#define EFASIM_IO_CQE_OP_TYPE     0x07, 4
#define EFASIM_IO_CQE_UNSOLICITED 0x01, 7

enum { EFASIM_IO_SEND_QUEUE = 1, EFASIM_IO_RECV_QUEUE = 2 };

/* CQ doorbell: consumer index, command sequence number, arm. */
#define EFASIM_IO_CQ_DB_CONSUMER 0xffff, 0
#define EFASIM_IO_CQ_DB_CMD_SN   0x03, 29
#define EFASIM_IO_CQ_DB_ARM      0x01, 31

/* Read and write a field given as (mask, shift). */
#define EFASIM_IO_GET_(v, mask, shift)    (((v) >> (shift)) & (mask))
#define EFASIM_IO_GET(v, field)           EFASIM_IO_GET_(v, field)
#define EFASIM_IO_SET_(v, mask, shift, x) ((v) | (((x) & (mask)) << (shift)))
#define EFASIM_IO_SET(v, field, x)        EFASIM_IO_SET_(v, field, x)

_Static_assert(sizeof(struct efasim_io_tx_meta) == 32, "TX meta descriptor is 32 bytes");
_Static_assert(sizeof(struct efasim_io_tx_wqe) == 64, "TX WQE is 64 bytes");
_Static_assert(offsetof(struct efasim_io_tx_meta, qkey) == 16, "TX meta qkey at 16");
_Static_assert(offsetof(struct efasim_io_tx_wqe, data) == 32, "TX data at 32");
_Static_assert(sizeof(struct efasim_io_rx_desc) == 16, "RX descriptor is 16 bytes");
_Static_assert(sizeof(struct efasim_io_cdesc) == 8, "common CQE is 8 bytes");
_Static_assert(sizeof(struct efasim_io_rx_cdesc) == 16, "RX CQE is 16 bytes");
_Static_assert(sizeof(struct efasim_io_rx_cdesc_ex) == 32, "RX CQE with SGID is 32 bytes");

#endif /* EFASIM_EFA_IO_H */
