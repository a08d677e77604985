/*
 * efasim's wire: SRD semantics over UDP, and UD's.
 *
 * Every datagram that needs an answer (DATA, WRITE, READ_REQ) occupies an
 * in-flight slot until its ACK, NACK or READ_RESP arrives; a timer resends it
 * with exponential backoff, and a peer silent for EFASIM_TIMEOUT_MS fails the
 * WR. Receivers settle each sequence number once (take the datagram, or
 * refuse it for good) and keep the answer until the sender's low-water mark
 * passes it, so every copy (a retransmission, a duplicate, a late reordered
 * one) is answered exactly as the first settlement was.
 *
 * RNR: a receive queue with nothing posted refuses a DATA (or a WRITE with
 * immediate, except on a QP created with unsolicited write receive, where
 * such a write takes no receive WR) with an RNR NACK, which the sender retries after
 * EFASIM_RNR_BACKOFF_US within its QP's rnr_retry budget (7 = forever, so
 * never final, below). An
 * RNR error completion must mean the message was not delivered, while copies
 * of an attempt may still be in flight when a refusal comes back; so exactly
 * one party decides, the receiver. While the sender has retries left, a
 * refusal settles nothing: a later copy is fresh and may find a receive. Once
 * it has none, its copies carry EFASIM_F_RNR_FINAL; the receiver settles such
 * a datagram at its first copy, taken or refused, and answers a refusal with
 * an RNR NACK that carries EFASIM_F_RNR_FINAL too. Only that NACK fails the WR
 * with EFASIM_ST_REMOTE_RNR; if it is lost, the sender's retransmission
 * draws the same answer. Refusals of non-final copies count against the
 * budget once per attempt (requests carry the attempt, NACKs echo it), so
 * duplicated or retransmitted copies do not use it up.
 *
 * RDMA requests are checked against the target MR's key, bounds and access
 * before a byte is read or written. The fault injector (fault.c) sits below
 * all this: it drops, duplicates, delays and reorders datagrams on their way
 * out.
 *
 * A QP number can pass to a new QP (in this process or another) while peers
 * still hold state for the old one. Each datagram names its sender's
 * incarnation; a new one at an address resets what the receiver knew of that
 * address (its receive window with the answers kept, ACKs owed), and answers
 * count only when they name the incarnation they answer. Sequence numbers
 * toward an address never restart: each request carries the sender's
 * low-water mark, so a new receiver places its window where the sender is.
 * WRs that were meant for the old QP reach the new one with the old Q-Key and
 * fail its Q-Key check (EFASIM_ST_REMOTE_BAD_DEST_QPN), as on EFA.
 *
 * A UD QP's datagrams (EFASIM_PKT_UD) skip all of it: a send is one datagram
 * and completes once it left; a receiver takes it into its next posted
 * receive or drops it without a word (QP not ready, Q-Key mismatch, nothing
 * posted), and loss, duplication and reordering by the fault injector stay as
 * they are. SRD and UD QPs drop each other's datagrams.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>
#include <sys/socket.h>

#include "efasim_model.h"

/* ---- Peers ----------------------------------------------------------------------- */

static struct efasim_peer *peer_get(struct efasim_qp *qp, struct in_addr ip, uint16_t port,
                                    bool create, uint32_t *idx_p)
{
    uint32_t n = efasim_config()->max_peers;
    uint32_t h = (ip.s_addr * 2654435761u) ^ (port * 40503u);

    for (uint32_t probe = 0; probe < n; probe++) {
        uint32_t i = (h + probe) % n;
        struct efasim_peer *p = &qp->peers[i];

        if (p->used && p->ip.s_addr == ip.s_addr && p->port == port) {
            *idx_p = i;
            return p;
        }
        if (!p->used) {
            if (!create)
                return NULL;
            memset(p, 0, sizeof(*p));
            p->used = true;
            p->ip = ip;
            p->port = port;
            *idx_p = i;
            return p;
        }
    }
    return NULL; /* every slot taken: bounded state, the datagram is dropped */
}

#define SEQWIN_WORDS (EFASIM_RX_WINDOW / 64)

/* Move the window's base up by n, forgetting what lies below the new base. */
static void seqwin_shift(struct efasim_seqwin *w, uint64_t n)
{
    unsigned words = (unsigned)(n / 64), bits = (unsigned)(n % 64);

    if (n >= EFASIM_RX_WINDOW) {
        memset(w->bits, 0, sizeof(w->bits));
    } else {
        for (unsigned i = 0; i < SEQWIN_WORDS; i++) {
            uint64_t lo = i + words < SEQWIN_WORDS ? w->bits[i + words] : 0;
            uint64_t hi = i + words + 1 < SEQWIN_WORDS ? w->bits[i + words + 1] : 0;

            w->bits[i] = bits ? lo >> bits | hi << (64 - bits) : lo;
        }
    }
    w->base += n;
}

/* Slide the base past every settled sequence number at the bottom of the window. */
static void seqwin_slide(struct efasim_seqwin *w)
{
    uint64_t n = 0;

    for (unsigned i = 0; i < SEQWIN_WORDS; i++) {
        if (w->bits[i] != UINT64_MAX) {
            n += (uint64_t)__builtin_ctzll(~w->bits[i]);
            break;
        }
        n += 64;
    }
    if (n)
        seqwin_shift(w, n);
}

/* Settle seq, which lies in [base, base + EFASIM_RX_WINDOW). */
static void seqwin_mark(struct efasim_seqwin *w, uint64_t seq)
{
    uint64_t off = seq - w->base;

    w->bits[off / 64] |= 1ull << (off % 64);
    if (!off)
        seqwin_slide(w);
}

/* Everything below `base` is settled (the sender's low-water mark says so). */
static void seqwin_advance(struct efasim_seqwin *w, uint64_t base)
{
    if (base <= w->base)
        return;
    seqwin_shift(w, base - w->base);
    seqwin_slide(w);
}

/* ---- The receive window: what each of a peer's datagrams got from us --------------- */

#define RXWIN_WORDS (EFASIM_RX_WINDOW / 64)

/* The answers a settled datagram can have, by their 3-bit code in the window; 0 is ACK. */
static const uint32_t rxwin_status[] = {EFASIM_ST_OK,
                                        EFASIM_ST_REMOTE_RNR,
                                        EFASIM_ST_REMOTE_BAD_LENGTH,
                                        EFASIM_ST_REMOTE_BAD_ADDRESS,
                                        EFASIM_ST_LOCAL_INVALID_LKEY,
                                        EFASIM_ST_FAST_REFUSED,
                                        EFASIM_ST_FAST_RETRY};
#define RXWIN_CODES (sizeof(rxwin_status) / sizeof(rxwin_status[0]))
_Static_assert(RXWIN_CODES <= 8, "answers fit the window's 3 code bits");

/* Forget the entries of `count` sequence numbers from `from`; count < EFASIM_RX_WINDOW. */
static void rxwin_clear(struct efasim_rxwin *w, uint64_t from, uint64_t count)
{
    while (count) {
        unsigned bit = (unsigned)(from % 64);
        uint64_t take = 64 - bit < count ? 64 - bit : count;
        uint64_t keep = ~((take == 64 ? UINT64_MAX : (1ull << take) - 1) << bit);
        unsigned i = (unsigned)(from / 64 % RXWIN_WORDS);

        w->word[i].settled &= keep;
        for (unsigned b = 0; b < 3; b++)
            w->word[i].code[b] &= keep;
        from += take;
        count -= take;
    }
}

/*
 * The sender holds the answer to every sequence number below `low`: their
 * entries are free for the numbers EFASIM_RX_WINDOW above. The base moves only
 * with the sender's mark, never with what this QP settled, so an answer stays
 * until the sender has it.
 */
static void rxwin_advance(struct efasim_rxwin *w, uint64_t low)
{
    if (low <= w->base)
        return;
    if (low - w->base >= EFASIM_RX_WINDOW)
        memset(w->word, 0, sizeof(w->word));
    else
        rxwin_clear(w, w->base, low - w->base);
    w->base = low;
}

/* 1 = fresh, 0 = settled (a copy), -1 = beyond the window (dropped; it will come again). */
static int rxwin_check(const struct efasim_rxwin *w, uint64_t seq)
{
    if (seq < w->base)
        return 0;
    if (seq - w->base >= EFASIM_RX_WINDOW)
        return -1;
    return (w->word[seq / 64 % RXWIN_WORDS].settled >> (seq % 64)) & 1 ? 0 : 1;
}

/* Settle seq, which lies in the window, with the answer it got (EFASIM_ST_OK: an ACK). */
static void rxwin_settle(struct efasim_rxwin *w, uint64_t seq, uint32_t status)
{
    unsigned i = (unsigned)(seq / 64 % RXWIN_WORDS);
    uint64_t bit = 1ull << (seq % 64);
    unsigned code = 0;

    while (code < RXWIN_CODES - 1 && rxwin_status[code] != status) /* status is one of them */
        code++;
    w->word[i].settled |= bit;
    for (unsigned b = 0; b < 3; b++)
        w->word[i].code[b] |= code >> b & 1 ? bit : 0;
}

/* The answer a settled seq got; below the base the sender has it already, and ACK will do. */
static uint32_t rxwin_answer(const struct efasim_rxwin *w, uint64_t seq)
{
    unsigned i = (unsigned)(seq / 64 % RXWIN_WORDS);

    unsigned code = 0;

    if (seq < w->base)
        return EFASIM_ST_OK;
    for (unsigned b = 0; b < 3; b++)
        code |= (unsigned)(w->word[i].code[b] >> (seq % 64) & 1) << b;
    return code < RXWIN_CODES ? rxwin_status[code] : EFASIM_ST_OK;
}

/*
 * A datagram from p's address names another incarnation than the one on
 * record. Either a new QP holds the number now: forget what the old one had
 * sent (its receive window with our answers, and ACKs owed to it); our
 * own sequence numbers toward the address go on, and the new QP learns where
 * they are from `low`. Or it is a late datagram of the QP it replaced: its
 * requests are dropped, while its answers, which name our incarnation and our
 * own in-flight slots, stay good. Returns false to drop the datagram.
 */
static bool peer_incarnation(struct efasim_peer *p, uint32_t inc, bool request)
{
    if (p->inc && inc == p->prev_inc)
        return !request;
    if (p->inc) {
        p->prev_inc = p->inc;
        memset(&p->rx, 0, sizeof(p->rx));
        p->npend = 0;
    }
    p->inc = inc;
    return true;
}

void efasim_peers_settle_all(struct efasim_qp *qp)
{
    for (uint32_t i = 0; qp->peers && i < efasim_config()->max_peers; i++) {
        struct efasim_peer *p = &qp->peers[i];

        if (p->used)
            seqwin_advance(&p->tx, p->tx_seq);
    }
}

/* ---- Responses -------------------------------------------------------------------- */

struct rx_src {
    struct sockaddr_in addr;
    const struct efasim_hdr *hdr;
    uint32_t qpn; /* the sending QP's number, from its port */
};

/* flags: EFASIM_F_RNR_FINAL on an RNR refusal this QP settled. */
static void send_nack(struct efasim_qp *qp, const struct rx_src *src, uint32_t status,
                      uint16_t flags)
{
    struct efasim_hdr h = {.magic = EFASIM_MAGIC,
                           .type = EFASIM_PKT_NACK,
                           .flags = flags,
                           .attempt = src->hdr->attempt,
                           .seq = src->hdr->seq,
                           .cookie = src->hdr->cookie,
                           .status = status,
                           .src_inc = qp->inc,
                           .dst_inc = src->hdr->src_inc};
    struct iovec iov = {.iov_base = &h, .iov_len = sizeof(h)};

    efasim_xmit_batched(qp, &src->addr, &iov, 1, 1, false);
}

/*
 * ACKs are owed per peer and ride on the next datagram this QP sends that
 * peer (a ping's ACK travels with the pong), so a round trip costs two
 * datagrams as on the kernel's path. What no datagram carries within
 * EFASIM_ACK_DELAY_US goes out in an ACK datagram of its own; the ACK of an
 * RDMA write without immediate, which nothing answers, goes at once.
 */
static void ack_send_pending(struct efasim_qp *qp, struct efasim_peer *p)
{
    struct sockaddr_in dst = {.sin_family = AF_INET, .sin_addr = p->ip, .sin_port = htons(p->port)};
    struct efasim_hdr h = {.magic = EFASIM_MAGIC,
                           .type = EFASIM_PKT_ACK,
                           .nacks = (uint16_t)p->npend,
                           .src_inc = qp->inc,
                           .dst_inc = p->inc};
    struct iovec iov[2] = {{&h, sizeof(h)}, {p->pend, p->npend * sizeof(struct efasim_ack)}};

    efasim_xmit_batched(qp, &dst, iov, 2, 2, false);
    p->npend = 0;
}

static void ack_flush(struct efasim_qp *qp, uint64_t now, bool all)
{
    uint64_t delay = (uint64_t)efasim_config()->ack_delay_us * 1000;
    uint32_t kept = 0;

    for (uint32_t i = 0; i < qp->npend_peers; i++) {
        struct efasim_peer *p = &qp->peers[qp->pend_peers[i]];

        if (!p->npend)
            continue;
        if (all || now - p->pend_since_ns >= delay)
            ack_send_pending(qp, p);
        else
            qp->pend_peers[kept++] = qp->pend_peers[i];
    }
    qp->npend_peers = kept;
}

static void ack_add(struct efasim_qp *qp, struct efasim_peer *p, uint32_t pidx,
                    const struct rx_src *src)
{
    if (!p->npend) {
        if (qp->npend_peers == EFASIM_PEND_PEERS)
            ack_flush(qp, 0, true);
        qp->pend_peers[qp->npend_peers++] = pidx;
        p->pend_since_ns = efasim_now_ns();
    }
    p->pend[p->npend++] = (struct efasim_ack){.seq = src->hdr->seq, .cookie = src->hdr->cookie};
    if (p->npend == EFASIM_ACK_PIGGY)
        ack_send_pending(qp, p);
}

/* ---- Copying between datagrams and SGE lists -------------------------------------- */

/* Copy n bytes at `offset` of the SGE list's concatenation to or from `buf`. */
static void sge_copy(const struct ibv_sge *sge, uint32_t nsge, uint64_t offset, void *buf,
                     uint64_t n, bool to_sges)
{
    uint8_t *p = buf;

    for (uint32_t i = 0; i < nsge && n; i++) {
        uint64_t len = sge[i].length;
        uint64_t take;
        uint8_t *mem;

        if (offset >= len) {
            offset -= len;
            continue;
        }
        take = len - offset < n ? len - offset : n;
        mem = (uint8_t *)(uintptr_t)sge[i].addr + offset;
        if (to_sges)
            memcpy(mem, p, take);
        else
            memcpy(p, mem, take);
        p += take;
        n -= take;
        offset = 0;
    }
}

/* iovecs covering n bytes at `offset` of a send WR's data; returns how many were used. */
static int swqe_iov(const struct efasim_swqe *w, uint64_t offset, uint64_t n, struct iovec *iov,
                    int max)
{
    int k = 0;

    if (w->is_inline) {
        iov[0] = (struct iovec){w->inline_data + offset, n};
        return n ? 1 : 0;
    }
    for (uint32_t i = 0; i < w->nsge && n && k < max; i++) {
        uint64_t len = w->sge[i].length;
        uint64_t take;

        if (offset >= len) {
            offset -= len;
            continue;
        }
        take = len - offset < n ? len - offset : n;
        iov[k++] = (struct iovec){(uint8_t *)(uintptr_t)w->sge[i].addr + offset, take};
        n -= take;
        offset = 0;
    }
    return k;
}

/* ---- Sending chunks ---------------------------------------------------------------- */

static void chunk_range(const struct efasim_swqe *w, uint32_t chunk, uint64_t *off_p,
                        uint64_t *len_p)
{
    uint64_t size = w->op == EFASIM_OP_SEND ? w->length : w->chunk_size;
    uint64_t off = (uint64_t)chunk * size;

    *off_p = off;
    *len_p = w->length - off < size ? w->length - off : size;
}

/*
 * Whether a WR's local memory is still registered as it was posted: a device
 * translates lkeys whenever it reads, retransmissions included, and a WR whose
 * MR went away meanwhile cannot be read again.
 */
static bool swqe_lkeys_live(const struct efasim_qp *qp, const struct efasim_swqe *w)
{
    for (uint32_t i = 0; i < w->nsge; i++)
        if (!efasim_mr_check(qp->ctx, w->sge[i].lkey, w->sge[i].addr, w->sge[i].length, 0))
            return false;
    return true;
}

/*
 * Put one datagram of in-flight slot `slot` on the wire. A retransmission
 * first checks the WR's lkeys; when its data cannot be read any more (MR gone,
 * memory unmapped), a probe goes instead: the header alone with
 * EFASIM_F_PROBE, which the receiver answers as it settled the datagram, or
 * refuses for good if it never got it (see rx_request).
 */
static void inflight_send(struct efasim_qp *qp, struct efasim_inflight *f, uint32_t slot,
                          bool retransmit)
{
    struct efasim_swqe *w = &qp->sq[f->wqe];
    struct efasim_peer *p = &qp->peers[f->peer];
    struct efasim_hdr h = {.magic = EFASIM_MAGIC,
                           .qkey = w->dst_qkey,
                           .seq = f->seq,
                           .cookie = slot | (uint32_t)f->gen << 16,
                           .src_inc = qp->inc,
                           .dst_inc = p->inc,
                           .low = p->tx.base};
    struct iovec iov[1 + EFASIM_MAX_SGE];
    struct efasim_fast_req fast_req;
    uint64_t off, len;
    int n = 0;

    chunk_range(w, f->chunk, &off, &len);
    switch (w->op) {
    case EFASIM_OP_SEND:
        h.type = EFASIM_PKT_DATA;
        n = swqe_iov(w, off, len, iov + 1, EFASIM_MAX_SGE);
        break;
    case EFASIM_OP_WRITE:
        h.type = EFASIM_PKT_WRITE;
        n = swqe_iov(w, off, len, iov + 1, EFASIM_MAX_SGE);
        break;
    case EFASIM_OP_READ:
        h.type = EFASIM_PKT_READ_REQ;
        break;
    }
    if (w->fast) {
        /* A direct-copy request: where this chunk lies here, instead of the data. */
        struct iovec local[EFASIM_MAX_SGE];

        efasim_fast_req_build(&fast_req, &w->fast_nonce, local,
                              swqe_iov(w, off, len, local, EFASIM_MAX_SGE));
        h.flags |= EFASIM_F_FAST;
        iov[1] = (struct iovec){&fast_req, sizeof(fast_req)};
        n = 1;
    }
    if (w->op != EFASIM_OP_SEND) {
        h.raddr = w->raddr + off;
        h.rbase = w->raddr;
        h.rtotal = w->length;
        h.rkey = w->rkey;
        h.len = (uint32_t)len;
    }
    if (w->has_imm && f->chunk == w->nchunks - 1) {
        h.flags |= EFASIM_F_IMM;
        h.imm = w->imm;
    }
    /* No RNR retry left: the receiver's refusal of this copy is final (see rx_request). */
    h.attempt = f->attempt;
    if (!w->rnr_left && w->op != EFASIM_OP_READ)
        h.flags |= EFASIM_F_RNR_FINAL;
    /* ACKs this peer is owed ride along, between the header and the payload. */
    struct iovec out[2 + EFASIM_MAX_SGE];

    h.nacks = (uint16_t)p->npend;
    out[0] = (struct iovec){&h, sizeof(h)};
    out[1] = (struct iovec){p->pend, p->npend * sizeof(struct efasim_ack)};
    memcpy(out + 2, iov + 1, (size_t)n * sizeof(struct iovec));
    if (n && retransmit && !w->is_inline && !swqe_lkeys_live(qp, w))
        n = -1; /* the MR went away: nothing of it is read */
    /* Header, ACKs and a direct-copy request are ours; a payload is the application's. */
    if (n < 0 ||
        efasim_xmit_batched(qp, &w->dst, out, n + 2, w->fast ? 3 : 2, !w->fast) == -EFAULT) {
        h.flags |= EFASIM_F_PROBE;
        (void)efasim_xmit(qp, &w->dst, out, 2);
    }
    p->npend = 0;
}

static bool inflight_alloc(struct efasim_qp *qp, uint32_t *slot_p)
{
    if (qp->ninflight == EFASIM_INFLIGHT_MAX)
        return false;
    for (uint32_t i = 0; i < EFASIM_INFLIGHT_MAX; i++) {
        if (!qp->inflight[i].used) {
            qp->inflight[i].used = true;
            qp->inflight[i].gen++;
            qp->ninflight++;
            *slot_p = i;
            return true;
        }
    }
    return false;
}

static void inflight_free(struct efasim_qp *qp, uint32_t slot)
{
    qp->inflight[slot].used = false;
    qp->ninflight--;
}

/* Send the next chunk of WR `idx`; false when it must wait (no slot, window, or imm order). */
static bool swqe_issue_chunk(struct efasim_qp *qp, uint32_t idx)
{
    const struct efasim_config *cfg = efasim_config();
    struct efasim_swqe *w = &qp->sq[idx];
    struct efasim_inflight *f;
    struct efasim_peer *p;
    uint32_t slot, pidx;

    if (w->chunks_inflight >= (w->fast ? EFASIM_FAST_WINDOW : EFASIM_RDMA_WINDOW))
        return false;
    /* The chunk that carries immediate data goes last, after every other chunk landed. */
    if (w->has_imm && w->next_chunk == w->nchunks - 1 && w->chunks_done != w->nchunks - 1)
        return false;
    p = peer_get(qp, w->dst.sin_addr, ntohs(w->dst.sin_port), true, &pidx);
    if (!p) {
        w->status = EFASIM_ST_LOCAL_INVALID_AH;
        w->next_chunk = w->nchunks;
        return false;
    }
    /* Beyond the receiver's duplicate window it would be dropped: wait for settlements. */
    if (p->tx_seq - p->tx.base >= EFASIM_RX_WINDOW || !inflight_alloc(qp, &slot))
        return false;
    f = &qp->inflight[slot];
    f->wqe = idx;
    f->chunk = w->next_chunk++;
    f->peer = pidx;
    f->seq = p->tx_seq++;
    f->first_ns = efasim_nic_now(qp->ctx);
    f->rto_us = cfg->rto_us;
    f->attempt = 0;
    f->rnr_backoff = false;
    f->deadline_ns = efasim_now_ns() + (uint64_t)f->rto_us * 1000;
    if (f->deadline_ns < qp->next_deadline_ns || qp->ninflight == 1)
        qp->next_deadline_ns = f->deadline_ns;
    w->chunks_inflight++;
    inflight_send(qp, f, slot, false);
    return true;
}

/*
 * An RDMA WR goes by direct-copy requests (fastpath.c) when this process can
 * offer them and its peer has not refused one; each request then carries
 * EFASIM_FAST_CHUNK bytes instead of EFASIM_RDMA_CHUNK. A WR whose request is
 * refused is redone by datagrams (swqe_fast_fallback).
 */
void efasim_swqe_plan(struct efasim_qp *qp, struct efasim_swqe *w)
{
    const struct efasim_config *cfg = efasim_config();

    w->fast = false;
    w->fast_fallback = false;
    if (w->op != EFASIM_OP_SEND && w->length && !w->is_inline && efasim_fast_usable()) {
        uint32_t pidx;
        struct efasim_peer *p = peer_get(qp, w->dst.sin_addr, ntohs(w->dst.sin_port), false, &pidx);

        w->fast = !p || !p->no_fast;
    }
    w->chunk_size = w->fast ? cfg->fast_chunk : cfg->rdma_chunk;
    w->fast_nonce = w->fast ? efasim_fast_nonce() : 0;
    w->nchunks = w->op == EFASIM_OP_SEND || !w->length
                     ? 1
                     : (uint32_t)((w->length + w->chunk_size - 1) / w->chunk_size);
}

static bool swqe_queued(const struct efasim_qp *qp, uint32_t idx)
{
    for (uint32_t k = 0; k < qp->fifo_count; k++)
        if (qp->issue_fifo[(qp->fifo_head + k) % qp->cap.max_send_wr] == idx)
            return true;
    return false;
}

/*
 * A direct-copy WR that drew a refusal, now that none of its requests is in
 * flight: start it over by datagrams, from its first byte (RDMA moves the same
 * bytes again, so what a request already copied is simply copied once more).
 * The issue FIFO has room: it never holds more WRs than the send queue.
 */
static void swqe_fast_restart(struct efasim_qp *qp, uint32_t idx)
{
    struct efasim_swqe *w = &qp->sq[idx];

    w->fast = false;
    w->fast_fallback = false;
    __atomic_store_n(&w->fast_nonce, 0, __ATOMIC_RELEASE); /* late requests move nothing */
    w->chunk_size = efasim_config()->rdma_chunk;
    w->nchunks = (uint32_t)((w->length + w->chunk_size - 1) / w->chunk_size);
    w->next_chunk = 0;
    w->chunks_done = 0;
    if (!swqe_queued(qp, idx)) {
        qp->issue_fifo[(qp->fifo_head + qp->fifo_count) % qp->cap.max_send_wr] = idx;
        qp->fifo_count++;
    }
}

/*
 * A UD QP's send: one datagram through the fault injector, nothing kept of it
 * afterwards. It completes once the datagram left; whether it arrives, and
 * how often, nobody learns (unreliable datagrams). Memory the kernel cannot
 * read fails it with EFASIM_ST_LOCAL_INVALID_LKEY, as it fails an SRD WR.
 */
static void ud_send(struct efasim_qp *qp, struct efasim_swqe *w)
{
    struct efasim_hdr h = {
        .magic = EFASIM_MAGIC, .type = EFASIM_PKT_UD, .qkey = w->dst_qkey, .src_inc = qp->inc};
    struct iovec iov[1 + EFASIM_MAX_SGE];
    int n;

    if (w->has_imm) {
        h.flags |= EFASIM_F_IMM;
        h.imm = w->imm;
    }
    iov[0] = (struct iovec){&h, sizeof(h)};
    n = swqe_iov(w, 0, w->length, iov + 1, EFASIM_MAX_SGE);
    /* Not batched: the datagram has left when its WR completes. */
    if (efasim_xmit(qp, &w->dst, iov, n + 1) == -EFAULT)
        w->status = EFASIM_ST_LOCAL_INVALID_LKEY;
    w->next_chunk = w->nchunks;
    w->chunks_done = w->nchunks;
}

void efasim_qp_issue(struct efasim_qp *qp)
{
    while (qp->fifo_count) {
        uint32_t idx = qp->issue_fifo[qp->fifo_head];
        struct efasim_swqe *w = &qp->sq[idx];

        if (qp->type == EFASIM_QPT_UD)
            ud_send(qp, w);
        while (w->next_chunk < w->nchunks && swqe_issue_chunk(qp, idx))
            ;
        if (w->next_chunk < w->nchunks && w->status == EFASIM_ST_OK)
            return; /* in order: later WRs wait for this one's chunks */
        qp->fifo_head = (qp->fifo_head + 1) % qp->cap.max_send_wr;
        qp->fifo_count--;
        if (qp->type == EFASIM_QPT_UD || (w->status != EFASIM_ST_OK && !w->chunks_inflight))
            efasim_swqe_finish(qp, idx);
    }
}

void efasim_swqe_finish(struct efasim_qp *qp, uint32_t idx)
{
    /*
     * As rdma-core's EFA provider reports them (efa_wc_read_opcode, efa_process_cqe):
     * every send-queue completion that is not an RDMA write is IBV_WC_SEND, reads included.
     */
    static const enum ibv_wc_opcode opcode[] = {
        [EFASIM_OP_SEND] = IBV_WC_SEND,
        [EFASIM_OP_READ] = IBV_WC_SEND,
        [EFASIM_OP_WRITE] = IBV_WC_RDMA_WRITE,
    };
    struct efasim_swqe *w = &qp->sq[idx];

    if (w->signaled || w->status != EFASIM_ST_OK) {
        struct efasim_cqe cqe = {.wr_id = w->wr_id,
                                 .opcode = opcode[w->op],
                                 .vendor_err = w->status,
                                 .byte_len = w->op == EFASIM_OP_READ ? (uint32_t)w->length : 0,
                                 .qp_num = qp->qpn,
                                 .sq = true,
                                 .qp = qp};

        /* Send completions are bounded by the SQ depth, which the CQ must cover. */
        if (efasim_cq_push(qp->send_cq, &cqe)) {
            qp->finish_pending = true; /* retried by qp_retry_finish */
            return;
        }
    }
    /* A copy of its direct-copy requests still on the way finds no nonce: it moves nothing. */
    __atomic_store_n(&w->fast_nonce, 0, __ATOMIC_RELEASE);
    w->used = false;
    qp->sq_used--;
}

/* WR idx had a chunk answered: finish it, restart it by datagrams, or wait for the rest. */
static void swqe_chunk_settled(struct efasim_qp *qp, uint32_t idx)
{
    struct efasim_swqe *w = &qp->sq[idx];

    if (w->chunks_inflight)
        return;
    if (w->fast_fallback && w->status == EFASIM_ST_OK) {
        swqe_fast_restart(qp, idx);
        return;
    }
    /* A failed WR may still sit in the issue FIFO; it finishes when it leaves it. */
    if ((w->chunks_done == w->nchunks || w->status != EFASIM_ST_OK) && !swqe_queued(qp, idx))
        efasim_swqe_finish(qp, idx);
}

/* A chunk got its answer: EFASIM_ST_OK or the status the WR fails with. */
static void chunk_done(struct efasim_qp *qp, uint32_t slot, uint8_t status)
{
    struct efasim_inflight *f = &qp->inflight[slot];
    uint32_t idx = f->wqe;
    struct efasim_swqe *w = &qp->sq[idx];

    seqwin_mark(&qp->peers[f->peer].tx, f->seq);
    w->chunks_inflight--;
    w->chunks_done++;
    if (status != EFASIM_ST_OK && w->status == EFASIM_ST_OK) {
        w->status = status;
        w->next_chunk = w->nchunks; /* send nothing more for a failed WR */
    }
    inflight_free(qp, slot);
    swqe_chunk_settled(qp, idx);
}

/*
 * A direct-copy request of WR `slot`'s was refused (fastpath.c): nothing of it
 * reached a completion. `for_peer`: the peer cannot serve direct copies at
 * all, so no later WR to it asks. The WR stops issuing requests and, once the
 * others in flight are answered, starts over by datagrams.
 */
static void swqe_fast_fallback(struct efasim_qp *qp, uint32_t slot, bool for_peer)
{
    struct efasim_inflight *f = &qp->inflight[slot];
    uint32_t idx = f->wqe;
    struct efasim_swqe *w = &qp->sq[idx];

    if (for_peer)
        qp->peers[f->peer].no_fast = true;
    seqwin_mark(&qp->peers[f->peer].tx, f->seq);
    w->chunks_inflight--;
    w->fast_fallback = true;
    if (w->status == EFASIM_ST_OK)
        w->next_chunk = w->nchunks;
    inflight_free(qp, slot);
    swqe_chunk_settled(qp, idx);
}

/* The in-flight slot an answer names, if it is still waiting for one. */
static int inflight_lookup(struct efasim_qp *qp, const struct rx_src *src, uint64_t seq,
                           uint32_t cookie, uint32_t *slot_p)
{
    uint32_t slot = cookie & 0xffff;
    struct efasim_inflight *f;
    struct efasim_peer *p;

    if (cookie == EFASIM_COOKIE_ANY) { /* a departing QP's answer: match by address and seq */
        uint32_t pidx;

        if (!peer_get(qp, src->addr.sin_addr, ntohs(src->addr.sin_port), false, &pidx))
            return -1;
        for (slot = 0; slot < EFASIM_INFLIGHT_MAX; slot++)
            if (qp->inflight[slot].used && qp->inflight[slot].peer == pidx &&
                qp->inflight[slot].seq == seq)
                break;
        if (slot == EFASIM_INFLIGHT_MAX)
            return -1;
        cookie = slot | (uint32_t)qp->inflight[slot].gen << 16;
    }
    if (slot >= EFASIM_INFLIGHT_MAX)
        return -1;
    f = &qp->inflight[slot];
    if (!f->used || f->gen != cookie >> 16 || f->seq != seq)
        return -1;
    p = &qp->peers[f->peer];
    if (p->ip.s_addr != src->addr.sin_addr.s_addr || p->port != ntohs(src->addr.sin_port))
        return -1;
    p->heard = true;
    *slot_p = slot;
    return 0;
}

/* ---- Receiving ---------------------------------------------------------------------- */

/*
 * A receive WR takes the datagram (DATA, UD, or the immediate of a WRITE),
 * into a reserved CQ place: its len bytes of data land `skip` bytes into the
 * receive buffer (UD's GRH room), and byte_len reports skip more.
 */
static void rx_consume_recv(struct efasim_qp *qp, const struct rx_src *src, const uint8_t *data,
                            uint64_t len, uint32_t skip, enum ibv_wc_opcode opcode,
                            uint32_t byte_len, uint32_t *nack_p)
{
    struct efasim_rwqe *r = &qp->rq[qp->rq_head];
    struct efasim_cqe cqe = {.wr_id = r->wr_id,
                             .opcode = opcode,
                             .byte_len = skip + byte_len,
                             .qp_num = qp->qpn,
                             .src_qp = src->qpn,
                             .qp = qp};
    union ibv_gid gid;

    efasim_gid_from_addr(src->addr.sin_addr, &gid);
    cqe.slid = efasim_ahn_for_gid(qp->ctx, qp->pd, &gid);
    cqe.sgid = gid;
    if (src->hdr->flags & EFASIM_F_IMM) {
        cqe.wc_flags |= IBV_WC_WITH_IMM;
        cqe.imm = src->hdr->imm;
    }
    if (skip + len > r->length) {
        cqe.vendor_err = EFASIM_ST_LOCAL_BAD_LENGTH;
        cqe.byte_len = 0;
        *nack_p = EFASIM_ST_REMOTE_BAD_LENGTH;
    } else {
        sge_copy(r->sge, r->nsge, skip, (void *)data, len, true);
    }
    efasim_cq_push_reserved(qp->recv_cq, &cqe);
    qp->rq_head = (qp->rq_head + 1) % qp->cap.max_recv_wr;
    qp->rq_count--;
}

/*
 * The last chunk of a write with immediate, on a QP created with unsolicited
 * write receive, into a reserved CQ place: no receive WR is taken, so the
 * completion has wr_id 0 and the unsolicited mark, and otherwise what a
 * write with immediate that took a receive reports (the write's length,
 * imm, the sender).
 */
static void rx_unsolicited_cqe(struct efasim_qp *qp, const struct rx_src *src)
{
    struct efasim_cqe cqe = {.wr_id = 0,
                             .opcode = IBV_WC_RECV_RDMA_WITH_IMM,
                             .byte_len = (uint32_t)src->hdr->rtotal,
                             .imm = src->hdr->imm,
                             .qp_num = qp->qpn,
                             .src_qp = src->qpn,
                             .wc_flags = IBV_WC_WITH_IMM,
                             .unsolicited = true};
    union ibv_gid gid;

    efasim_gid_from_addr(src->addr.sin_addr, &gid);
    cqe.slid = efasim_ahn_for_gid(qp->ctx, qp->pd, &gid);
    cqe.sgid = gid;
    efasim_cq_push_reserved(qp->recv_cq, &cqe);
}

/*
 * An RDMA chunk is served only if the whole range of its WR is inside one MR
 * with the access asked for, and the chunk lies inside that range: a WR that
 * is partly out of bounds fails before any of its chunks touches memory.
 */
static bool rdma_range_ok(struct efasim_qp *qp, const struct efasim_hdr *h, unsigned access)
{
    return h->raddr >= h->rbase && h->len <= h->rtotal &&
           h->raddr - h->rbase <= h->rtotal - h->len &&
           efasim_mr_check(qp->ctx, h->rkey, h->rbase, h->rtotal, access) &&
           efasim_mr_check(qp->ctx, h->rkey, h->raddr, h->len, access);
}

/*
 * A request reaches this QP only if it is ready to receive and the Q-Key
 * matches; otherwise the sender learns the destination QP is bad, as on EFA.
 */
static bool rx_addressed_ok(struct efasim_qp *qp, const struct rx_src *src)
{
    if ((qp->state == IBV_QPS_RTR || qp->state == IBV_QPS_RTS) && src->hdr->qkey == qp->qkey)
        return true;
    send_nack(qp, src, EFASIM_ST_REMOTE_BAD_DEST_QPN, 0);
    return false;
}

/* Answer a settled datagram (or a copy of one) as it was settled. */
static void answer_settled(struct efasim_qp *qp, struct efasim_peer *p, uint32_t pidx,
                           const struct rx_src *src, uint32_t status)
{
    if (status == EFASIM_ST_OK)
        ack_add(qp, p, pidx, src);
    else
        send_nack(qp, src, status, status == EFASIM_ST_REMOTE_RNR ? EFASIM_F_RNR_FINAL : 0);
}

/*
 * The chunk of a direct-copy request, which passed every check a datagram
 * request passes, moves between the initiator's memory and ours (fastpath.c).
 */
static uint32_t rx_fast_copy(struct efasim_qp *qp, const struct efasim_hdr *h,
                             const uint8_t *payload, size_t plen)
{
    bool read = h->type == EFASIM_PKT_READ_REQ;
    uint32_t st =
        efasim_fast_copy(payload, plen, (void *)(uintptr_t)h->raddr, h->len, /*to_initiator=*/read);

    if (st == EFASIM_ST_OK && qp->ctx->hwc)
        efasim_hw_count(&qp->ctx->hwc->fast_ops, &qp->ctx->hwc->fast_bytes, h->len);
    return st;
}

/*
 * EFASIM_RNR_STALL_US: the QP behaves as if nothing were posted (a receiver
 * that stops posting for a while) during the first RNR_STALL_US of every
 * RNR_STALL_PERIOD_US, in a phase that differs per QP number. Its posted
 * receives stay; senders get RNR as from an empty queue.
 */
static bool rnr_stalled(const struct efasim_qp *qp)
{
    const struct efasim_config *cfg = efasim_config();
    uint64_t t;

    if (!cfg->rnr_stall_us)
        return false;
    t = efasim_now_ns() / 1000 + (uint64_t)qp->qpn * 7919u;
    return t % cfg->rnr_stall_period_us < cfg->rnr_stall_us;
}

/*
 * DATA and WRITE from peer p (slot pidx): checked, de-duplicated, applied, answered.
 *
 * Each sequence number is settled here exactly once, and every copy of it is
 * answered the way the first settlement was. With no receive posted, a copy
 * from a sender that still has RNR retries is refused without settling (a
 * later copy is fresh and may find a receive); a copy marked EFASIM_F_RNR_FINAL
 * settles the number as refused, and no later copy can be taken. So the
 * sender's RNR error and the datagram's fate are one decision, made here.
 */
static void rx_request(struct efasim_qp *qp, struct efasim_peer *p, uint32_t pidx,
                       const struct rx_src *src, const uint8_t *payload, size_t plen)
{
    const struct efasim_hdr *h = src->hdr;
    bool is_write = h->type == EFASIM_PKT_WRITE;
    bool is_read = h->type == EFASIM_PKT_READ_REQ; /* only direct-copy reads come here */
    bool fast = h->flags & EFASIM_F_FAST;
    bool write_imm = is_write && (h->flags & EFASIM_F_IMM);
    /*
     * On a QP created with unsolicited write receive, a write with immediate
     * takes no receive WR: it completes in the receive CQ by itself, flagged
     * unsolicited, and can never meet an RNR.
     */
    bool unsolicited = write_imm && qp->unsolicited_write_recv;
    bool wants_recv = h->type == EFASIM_PKT_DATA || (write_imm && !unsolicited);
    bool wants_cqe = wants_recv || unsolicited; /* completes in the receive CQ */
    bool reserved = false;                      /* a place in the receive CQ is ours */
    uint32_t nack = EFASIM_ST_OK;
    int fresh;

    if (!rx_addressed_ok(qp, src))
        return;
    fresh = rxwin_check(&p->rx, h->seq);
    if (fresh < 0)
        return;
    if (!fresh) {
        answer_settled(qp, p, pidx, src, rxwin_answer(&p->rx, h->seq));
        return;
    }
    if (h->flags & EFASIM_F_PROBE) {
        /* Never got it, and its data is gone at the sender: refused for good. */
        rxwin_settle(&p->rx, h->seq, EFASIM_ST_LOCAL_INVALID_LKEY);
        answer_settled(qp, p, pidx, src, EFASIM_ST_LOCAL_INVALID_LKEY);
        return;
    }
    if (is_write && (!efasim_config()->rdma_write || (!fast && plen != h->len) ||
                     !rdma_range_ok(qp, h, IBV_ACCESS_REMOTE_WRITE)))
        nack = EFASIM_ST_REMOTE_BAD_ADDRESS;
    if (is_read && (!efasim_config()->rdma_read || !rdma_range_ok(qp, h, IBV_ACCESS_REMOTE_READ)))
        nack = EFASIM_ST_REMOTE_BAD_ADDRESS;
    if (!nack && wants_recv) {
        bool none = !qp->rq_count || rnr_stalled(qp);

        if (none && !(h->flags & EFASIM_F_RNR_FINAL)) {
            send_nack(qp, src, EFASIM_ST_REMOTE_RNR, 0); /* not settled: a retry is fresh */
            return;
        }
        if (none)
            nack = EFASIM_ST_REMOTE_RNR; /* the last attempt: refused for good */
        else if (!efasim_cq_reserve(qp->recv_cq))
            return; /* no room to complete it: let the sender retransmit */
        else
            reserved = true;
    } else if (!nack && unsolicited) {
        if (!efasim_cq_reserve(qp->recv_cq))
            return; /* no room to complete it: let the sender retransmit */
        reserved = true;
    }
    if (!nack && fast)
        nack = rx_fast_copy(qp, h, payload, plen);
    else if (!nack && is_write)
        memcpy((void *)(uintptr_t)h->raddr, payload, plen);
    if (!nack && wants_recv)
        rx_consume_recv(qp, src, is_write ? NULL : payload, is_write ? 0 : plen, 0,
                        is_write ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV,
                        is_write ? (uint32_t)h->rtotal : (uint32_t)plen, &nack);
    else if (!nack && unsolicited)
        rx_unsolicited_cqe(qp, src);
    else if (reserved)
        efasim_cq_unreserve(qp->recv_cq);
    rxwin_settle(&p->rx, h->seq, nack);
    answer_settled(qp, p, pidx, src, nack);
    /*
     * A write without immediate reaches no application here, so no datagram of
     * ours will answer it to carry the ACK: it goes now, as the NIC acknowledges
     * a write at once, instead of after EFASIM_ACK_DELAY_US.
     */
    if ((is_write || is_read) && !wants_cqe && p->npend)
        ack_send_pending(qp, p);
    if (fast)
        efasim_tx_flush(qp); /* a direct copy took a while: its answer goes now */
}

/* READ_REQ: stateless; the target's memory is only read, after every check. */
static void rx_read_req(struct efasim_qp *qp, const struct rx_src *src)
{
    const struct efasim_hdr *h = src->hdr;
    struct efasim_hdr r = {.magic = EFASIM_MAGIC,
                           .type = EFASIM_PKT_READ_RESP,
                           .seq = h->seq,
                           .cookie = h->cookie,
                           .len = h->len,
                           .src_inc = qp->inc,
                           .dst_inc = h->src_inc};
    struct iovec iov[2] = {{&r, sizeof(r)}, {(void *)(uintptr_t)h->raddr, h->len}};

    if (!rx_addressed_ok(qp, src))
        return;
    if (!efasim_config()->rdma_read || h->len > efasim_config()->rdma_chunk ||
        !rdma_range_ok(qp, h, IBV_ACCESS_REMOTE_READ)) {
        send_nack(qp, src, EFASIM_ST_REMOTE_BAD_ADDRESS, 0);
        return;
    }
    /* Registered but unmapped by the application: EFA would read the pinned pages; we cannot. */
    if (efasim_xmit(qp, &src->addr, iov, 2) == -EFAULT)
        send_nack(qp, src, EFASIM_ST_REMOTE_BAD_ADDRESS, 0);
}

static void rx_read_resp(struct efasim_qp *qp, const struct rx_src *src, const uint8_t *payload,
                         size_t plen)
{
    uint32_t slot;
    struct efasim_swqe *w;
    uint64_t off, len;

    if (inflight_lookup(qp, src, src->hdr->seq, src->hdr->cookie, &slot))
        return; /* a duplicate answer, or one for a WR that already failed */
    w = &qp->sq[qp->inflight[slot].wqe];
    chunk_range(w, qp->inflight[slot].chunk, &off, &len);
    if (plen != len)
        return; /* malformed: not ours to trust; the timer asks again */
    /* The destination must still be registered, writable, as the device checks its lkey. */
    for (uint32_t i = 0; i < w->nsge; i++) {
        if (!efasim_mr_check(qp->ctx, w->sge[i].lkey, w->sge[i].addr, w->sge[i].length,
                             IBV_ACCESS_LOCAL_WRITE)) {
            chunk_done(qp, slot, EFASIM_ST_LOCAL_INVALID_LKEY);
            return;
        }
    }
    sge_copy(w->sge, w->nsge, off, (void *)payload, len, true);
    chunk_done(qp, slot, EFASIM_ST_OK);
}

/* As rx_read_resp checks a read's destination when its data arrives. */
static bool fast_read_dest_live(struct efasim_qp *qp, const struct efasim_swqe *w)
{
    if (w->op != EFASIM_OP_READ || !w->fast)
        return true;
    for (uint32_t i = 0; i < w->nsge; i++)
        if (!efasim_mr_check(qp->ctx, w->sge[i].lkey, w->sge[i].addr, w->sge[i].length,
                             IBV_ACCESS_LOCAL_WRITE))
            return false;
    return true;
}

static void rx_acks(struct efasim_qp *qp, const struct rx_src *src, const uint8_t *payload,
                    uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        struct efasim_ack a;
        uint32_t slot;

        memcpy(&a, payload + i * sizeof(a), sizeof(a));
        if (inflight_lookup(qp, src, a.seq, a.cookie, &slot))
            continue;
        /* A direct-copy read landed; its destination must still be registered, writable. */
        if (!fast_read_dest_live(qp, &qp->sq[qp->inflight[slot].wqe]))
            chunk_done(qp, slot, EFASIM_ST_LOCAL_INVALID_LKEY);
        else
            chunk_done(qp, slot, EFASIM_ST_OK);
    }
}

/*
 * A NACK fails the WR, except an RNR refusal the receiver did not settle
 * (no EFASIM_F_RNR_FINAL): the receiver may still take a later copy, so the
 * WR is resent after the backoff, and the resend carries EFASIM_F_RNR_FINAL
 * once the retries are used up. Every copy of one attempt can draw a refusal
 * (duplicates, retransmissions); only the first answer to the current attempt
 * counts against rnr_retry.
 */
static void rx_nack(struct efasim_qp *qp, const struct rx_src *src)
{
    const struct efasim_hdr *h = src->hdr;
    struct efasim_inflight *f;
    struct efasim_swqe *w;
    uint32_t slot;

    /* A refusal that names no failure is malformed: not ours to trust; the timer asks again. */
    if (h->status == EFASIM_ST_OK || h->status > UINT8_MAX)
        return;
    if (inflight_lookup(qp, src, h->seq, h->cookie, &slot))
        return;
    f = &qp->inflight[slot];
    w = &qp->sq[f->wqe];
    if (h->status == EFASIM_ST_FAST_REFUSED || h->status == EFASIM_ST_FAST_RETRY) {
        if (w->fast) /* a peer never refuses a datagram so: ignore it otherwise */
            swqe_fast_fallback(qp, slot, h->status == EFASIM_ST_FAST_REFUSED);
        return;
    }
    if (h->status == EFASIM_ST_REMOTE_RNR && !(h->flags & EFASIM_F_RNR_FINAL)) {
        uint64_t now = efasim_now_ns();

        if (h->attempt != f->attempt)
            return; /* a late refusal of an earlier attempt's copy */
        f->attempt++;
        if (w->rnr_left && w->rnr_left != UINT32_MAX)
            w->rnr_left--;
        /* Not a loss: resend after the RNR backoff, then with a fresh RTO. */
        f->rnr_backoff = true;
        f->deadline_ns = now + (uint64_t)efasim_config()->rnr_backoff_us * 1000;
        if (f->deadline_ns < qp->next_deadline_ns)
            qp->next_deadline_ns = f->deadline_ns;
        f->first_ns = efasim_nic_now(qp->ctx);
        return;
    }
    chunk_done(qp, slot, (uint8_t)h->status);
}

/*
 * A UD datagram: the next posted receive takes it, its payload after the
 * receive buffer's first EFASIM_UD_GRH_LEN bytes. Nothing is retransmitted,
 * so nothing is refused either: a QP that is not ready, another Q-Key, no
 * receive posted (or an RNR stall) or no room in the CQ drops it unanswered.
 */
static void rx_ud(struct efasim_qp *qp, const struct rx_src *src, const uint8_t *payload,
                  size_t plen)
{
    uint32_t unanswered;

    if ((qp->state != IBV_QPS_RTR && qp->state != IBV_QPS_RTS) || src->hdr->qkey != qp->qkey)
        return;
    if (!qp->rq_count || rnr_stalled(qp) || !efasim_cq_reserve(qp->recv_cq))
        return;
    rx_consume_recv(qp, src, payload, plen, EFASIM_UD_GRH_LEN, IBV_WC_RECV, (uint32_t)plen,
                    &unanswered);
}

static void rx_datagram(struct efasim_qp *qp, const struct sockaddr_in *from, const uint8_t *buf,
                        size_t len, uint64_t now)
{
    struct efasim_hdr h;
    struct rx_src src = {.addr = *from, .hdr = &h};
    const uint8_t *payload;
    size_t plen, acks_len;
    struct efasim_peer *p;
    bool request, for_us;
    uint32_t pidx;

    if (qp->ctx->hwc)
        efasim_hw_count(&qp->ctx->hwc->rx_pkts, &qp->ctx->hwc->rx_bytes, len);
    /* Only a QP sends from a QP number's port: anything else is not the device's. */
    if (len < sizeof(h) || !efasim_port_qpn(ntohs(from->sin_port), &src.qpn))
        return;
    memcpy(&h, buf, sizeof(h));
    acks_len = (size_t)h.nacks * sizeof(struct efasim_ack);
    if (h.magic != EFASIM_MAGIC || acks_len > len - sizeof(h))
        return;
    payload = buf + sizeof(h) + acks_len;
    plen = len - sizeof(h) - acks_len;
    /* UD and SRD QPs do not talk: a datagram of the other kind is dropped, unanswered. */
    if ((h.type == EFASIM_PKT_UD) != (qp->type == EFASIM_QPT_UD))
        return;
    if (qp->type == EFASIM_QPT_UD) {
        rx_ud(qp, &src, payload, plen);
        return;
    }
    /* Answers come only from addresses this QP sent to; requests may come from anyone. */
    request =
        h.type == EFASIM_PKT_DATA || h.type == EFASIM_PKT_WRITE || h.type == EFASIM_PKT_READ_REQ;
    p = peer_get(qp, from->sin_addr, ntohs(from->sin_port), request, &pidx);
    if (!p)
        return;
    if (h.src_inc != p->inc && !peer_incarnation(p, h.src_inc, request))
        return;
    if (h.src_inc == p->inc)
        p->last_heard_ns = now; /* alive: its datagrams to us keep our WRs to it waiting */
    if (request)
        rxwin_advance(&p->rx, h.low);
    /* Answers meant for an earlier QP with this number name slots that are not ours. */
    for_us = h.dst_inc == qp->inc;
    if (h.nacks && for_us)
        rx_acks(qp, &src, buf + sizeof(h), h.nacks);
    switch (h.type) {
    case EFASIM_PKT_DATA:
    case EFASIM_PKT_WRITE:
        rx_request(qp, p, pidx, &src, payload, plen);
        break;
    case EFASIM_PKT_READ_REQ:
        if (h.flags & EFASIM_F_FAST)
            rx_request(qp, p, pidx, &src, payload, plen); /* settled once, as a WRITE */
        else
            rx_read_req(qp, &src);
        break;
    case EFASIM_PKT_READ_RESP:
        if (for_us)
            rx_read_resp(qp, &src, payload, plen);
        break;
    case EFASIM_PKT_ACK: /* its entries were taken above */
        break;
    case EFASIM_PKT_NACK:
        if (for_us)
            rx_nack(qp, &src);
        break;
    default:
        break;
    }
}

/* ---- Timers and progress ------------------------------------------------------------ */

static uint64_t peer_last_heard(const struct efasim_qp *qp, const struct efasim_inflight *f)
{
    return qp->peers[f->peer].last_heard_ns;
}

/* now: the wall clock for retransmission deadlines; nic_now: the NIC's clock for liveness. */
static void qp_timers(struct efasim_qp *qp, uint64_t now, uint64_t nic_now)
{
    const struct efasim_config *cfg = efasim_config();
    uint64_t next = UINT64_MAX;
    /*
     * Backoff stops at EFASIM_RTO_MAX_US, and at a 32nd of EFASIM_TIMEOUT_MS:
     * a peer is found silent only after at least 32 unanswered copies, so a
     * short timeout (tests) does not turn ordinary loss into a dead peer.
     */
    uint32_t rto_cap = cfg->timeout_ms * 1000u / 32 < cfg->rto_max_us ? cfg->timeout_ms * 1000u / 32
                                                                      : cfg->rto_max_us;

    if (rto_cap < cfg->rto_us)
        rto_cap = cfg->rto_us;

    /* Most passes end here: no timer is due yet. */
    if (!qp->ninflight || now < qp->next_deadline_ns)
        return;
    for (uint32_t i = 0; i < EFASIM_INFLIGHT_MAX && qp->ninflight; i++) {
        struct efasim_inflight *f = &qp->inflight[i];

        if (!f->used)
            continue;
        if (now < f->deadline_ns) {
            next = f->deadline_ns < next ? f->deadline_ns : next;
            continue;
        }
        /*
         * As SRD: loss is retransmitted for as long as the peer lives. Only a peer
         * that has said nothing at all since this datagram first went out, for
         * EFASIM_TIMEOUT_MS, fails it: "unresponsive" if it ever answered, else
         * "unreachable". One datagram lost many times to a peer that answers
         * others is not a dead peer.
         */
        uint64_t since =
            f->first_ns > peer_last_heard(qp, f) ? f->first_ns : peer_last_heard(qp, f);

        if (nic_now > since && nic_now - since > (uint64_t)cfg->timeout_ms * 1000000) {
            uint8_t st =
                qp->peers[f->peer].heard ? EFASIM_ST_UNRESP_REMOTE : EFASIM_ST_UNREACH_REMOTE;

            chunk_done(qp, i, st);
            continue;
        }
        if (f->rnr_backoff)
            f->rto_us = cfg->rto_us; /* a new attempt, to a peer that just answered */
        else
            f->rto_us = f->rto_us * 2 < rto_cap ? f->rto_us * 2 : rto_cap;
        f->rnr_backoff = false;
        f->deadline_ns = now + (uint64_t)f->rto_us * 1000;
        next = f->deadline_ns < next ? f->deadline_ns : next;
        inflight_send(qp, f, i, true);
    }
    qp->next_deadline_ns = next;
}

/* Completions that found the send CQ full get another chance. */
static void qp_retry_finish(struct efasim_qp *qp)
{
    if (!qp->finish_pending)
        return;
    qp->finish_pending = false;
    for (uint32_t i = 0; i < qp->cap.max_send_wr && !efasim_cq_full(qp->send_cq); i++) {
        struct efasim_swqe *w = &qp->sq[i];

        if (w->used && w->nchunks && !w->chunks_inflight &&
            (w->chunks_done == w->nchunks || w->status != EFASIM_ST_OK) &&
            w->next_chunk >= w->nchunks) {
            bool queued = false;

            for (uint32_t k = 0; k < qp->fifo_count; k++)
                queued |= qp->issue_fifo[(qp->fifo_head + k) % qp->cap.max_send_wr] == i;
            if (!queued)
                efasim_swqe_finish(qp, i);
        }
    }
}

static void qp_progress(struct efasim_qp *qp, uint64_t now)
{
    uint64_t nic_now = now - __atomic_load_n(&qp->ctx->stalled_ns, __ATOMIC_RELAXED);
    struct mmsghdr msgs[EFASIM_RX_BATCH];
    struct iovec iovs[EFASIM_RX_BATCH];
    struct sockaddr_in from[EFASIM_RX_BATCH];
    int n;

    for (unsigned round = 0; round < 4; round++) {
        for (int i = 0; i < EFASIM_RX_BATCH; i++) {
            iovs[i] = (struct iovec){qp->rxbuf + (size_t)i * qp->rxbuf_size, qp->rxbuf_size};
            msgs[i].msg_hdr = (struct msghdr){.msg_name = &from[i],
                                              .msg_namelen = sizeof(from[i]),
                                              .msg_iov = &iovs[i],
                                              .msg_iovlen = 1};
        }
        n = recvmmsg(qp->fd, msgs, EFASIM_RX_BATCH, MSG_DONTWAIT, NULL);
        if (n <= 0)
            break;
        for (int i = 0; i < n; i++)
            if (!(msgs[i].msg_hdr.msg_flags & MSG_TRUNC))
                rx_datagram(qp, &from[i], iovs[i].iov_base, msgs[i].msg_len, nic_now);
        if (n < EFASIM_RX_BATCH)
            break;
    }
    qp_timers(qp, now, nic_now);
    qp_retry_finish(qp);
    efasim_qp_issue(qp);
    ack_flush(qp, efasim_now_ns(), false);
}

/*
 * A departing QP answers, once more and past the fault injector, every
 * datagram it settled that its sender may not have the answer to yet (all of
 * its receive window above the sender's low-water mark), matched by sequence
 * number. EFA keeps SRD's state below the QPs, so a retransmission of data the
 * NIC delivered is acknowledged even after the QP is destroyed; efasim's state
 * dies with the socket, so it says everything now, on a path that only the
 * kernel could drop (loopback and veth do not, with efasim's buffers).
 */
static void quiesce_answer_all(struct efasim_qp *qp)
{
    for (uint32_t i = 0; i < efasim_config()->max_peers; i++) {
        struct efasim_peer *p = &qp->peers[i];
        struct sockaddr_in dst = {
            .sin_family = AF_INET, .sin_addr = p->ip, .sin_port = htons(p->port)};
        struct efasim_ack acks[EFASIM_ACK_PIGGY];
        struct efasim_hdr h = {
            .magic = EFASIM_MAGIC, .type = EFASIM_PKT_ACK, .src_inc = qp->inc, .dst_inc = p->inc};
        struct iovec iov[2] = {{&h, sizeof(h)}, {acks, 0}};
        unsigned n = 0;

        if (!p->used || !p->inc)
            continue;
        for (uint64_t seq = p->rx.base; seq < p->rx.base + EFASIM_RX_WINDOW; seq++) {
            uint32_t st;

            if (rxwin_check(&p->rx, seq) != 0)
                continue; /* never settled: nothing to answer */
            st = rxwin_answer(&p->rx, seq);
            if (st != EFASIM_ST_OK) {
                struct efasim_hdr nack = {.magic = EFASIM_MAGIC,
                                          .type = EFASIM_PKT_NACK,
                                          .flags =
                                              st == EFASIM_ST_REMOTE_RNR ? EFASIM_F_RNR_FINAL : 0,
                                          .seq = seq,
                                          .cookie = EFASIM_COOKIE_ANY,
                                          .status = st,
                                          .src_inc = qp->inc,
                                          .dst_inc = p->inc};
                struct iovec one = {&nack, sizeof(nack)};

                (void)efasim_xmit_raw(qp->fd, &dst, &one, 1);
                continue;
            }
            acks[n++] = (struct efasim_ack){.seq = seq, .cookie = EFASIM_COOKIE_ANY};
            if (n == EFASIM_ACK_PIGGY) {
                h.nacks = (uint16_t)n;
                iov[1].iov_len = n * sizeof(acks[0]);
                (void)efasim_xmit_raw(qp->fd, &dst, iov, 2);
                n = 0;
            }
        }
        if (n) {
            h.nacks = (uint16_t)n;
            iov[1].iov_len = n * sizeof(acks[0]);
            (void)efasim_xmit_raw(qp->fd, &dst, iov, 2);
        }
    }
}

void efasim_qp_quiesce(struct efasim_qp *qp)
{
    efasim_tx_flush(qp); /* nothing of this socket's may wait in a batch */
    if (qp->type == EFASIM_QPT_UD)
        return; /* UD owes nobody an answer */
    /*
     * A NIC acknowledges what it delivered before the host destroys the QP:
     * take in what already reached the socket and send every ACK still owed,
     * so a peer never times out on data that arrived.
     */
    qp_progress(qp, efasim_now_ns());
    ack_flush(qp, 0, true);
    quiesce_answer_all(qp);
}

/*
 * The emulated NIC runs only when its process does (the application's polls
 * and the service thread). When neither ran for a while (the process was
 * stopped or starved of CPU), the NIC was off: that time is taken out of the
 * NIC's clock, by which peers' silence is measured, so a peer is not found
 * unresponsive for the time this side was not listening. A real NIC runs on.
 * A gap longer than 20 service periods plus 20 ms counts as off, beyond that.
 */
static uint64_t nic_pending_stall(uint64_t last, uint64_t now)
{
    uint64_t gap = now > last ? now - last : 0;
    uint64_t allowed = 20 * (uint64_t)efasim_config()->service_us * 1000 + 20000000;

    return gap > allowed ? gap - allowed : 0;
}

uint64_t efasim_nic_now(const struct efasim_context *ctx)
{
    uint64_t now = efasim_now_ns();
    uint64_t last = __atomic_load_n(&ctx->last_progress_ns, __ATOMIC_RELAXED);

    return now - __atomic_load_n(&ctx->stalled_ns, __ATOMIC_RELAXED) - nic_pending_stall(last, now);
}

/* The NIC runs now: a gap since it last ran that counts as off goes onto stalled_ns, once. */
static void nic_ran(struct efasim_context *ctx, uint64_t now)
{
    uint64_t last = __atomic_load_n(&ctx->last_progress_ns, __ATOMIC_RELAXED);

    do {
        if (last >= now)
            return; /* another thread's pass, later than this one's clock, counted it */
    } while (!__atomic_compare_exchange_n(&ctx->last_progress_ns, &last, now, false,
                                          __ATOMIC_RELAXED, __ATOMIC_RELAXED));
    __atomic_add_fetch(&ctx->stalled_ns, nic_pending_stall(last, now), __ATOMIC_RELAXED);
}

void efasim_progress(struct efasim_context *ctx, struct efasim_cq *cq)
{
    uint64_t now = efasim_now_ns();

    nic_ran(ctx, now);
    pthread_rwlock_rdlock(&ctx->objs);
    for (uint32_t i = 0; i < ctx->qp_slots_used; i++) {
        struct efasim_qp *qp = ctx->qps[i];

        if (!qp)
            continue;
        if (cq && (qp->send_cq == cq || qp->recv_cq == cq))
            pthread_mutex_lock(&qp->lock); /* feeds the polled CQ: wait for it */
        else if (pthread_mutex_trylock(&qp->lock))
            continue; /* someone is in there: it makes progress itself */
        efasim_tx_begin(qp);
        qp_progress(qp, now);
        efasim_tx_end(qp);
        pthread_mutex_unlock(&qp->lock);
    }
    pthread_rwlock_unlock(&ctx->objs);
    efasim_delayq_flush(ctx, false);
}
