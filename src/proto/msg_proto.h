/*
 * A two-sided subprotocol is one row, defined in its own file with the code
 * the row points at:
 *   msg_eager.c    eager, medium (the data rides in the REQs);
 *   msg_longcts.c  long-CTS (the receiver grants the data by CTS);
 *   msg_read.c     long-read, runting read (the receiver reads the data).
 * A row holds the subprotocol's packet types, its traits, its sender's
 * builder, its receiver's start, its selection rule and its profile rule.
 * The engine reads the rows, never a switch over subprotocols:
 * g_efarm_msg_protos, selection's order (proto_select.c), the curves a
 * profile may give and the thresholds derived from them (proto_profile.c),
 * and the values the forcing tunables accept are generated from
 * EFARM_PROTO_LIST (src/util/efarm_proto_names.h).
 *
 * A new two-sided subprotocol: its line in EFARM_PROTO_LIST, its file with
 * its row (listed in Makefile.mk), its packet rows in efarm_pkt_types.h if
 * it brings packet types, and its counter in EFARM_COUNTER_LIST.
 */
#ifndef EFARM_MSG_PROTO_H
#define EFARM_MSG_PROTO_H

#include <stdbool.h>
#include <stdint.h>

#include "efarm_proto.h"

struct efarm_ep;
struct efarm_peer_state;
struct efarm_op;

/* ---- Selection (proto_select.c applies the rules in EFARM_PROTO_LIST's rank order) ---- */

/* The length bounds a rule may name; each is resolved per send (proto_select.c). */
enum efarm_sel_bound {
    EFARM_SEL_NONE,
    EFARM_SEL_EAGER_FIT,  /* what one packet carries (or EFARM_EAGER_MAX) */
    EFARM_SEL_MEDIUM_MAX, /* EFARM_MEDIUM_MAX, ending where a usable read protocol starts */
    EFARM_SEL_READ_MIN,   /* EFARM_READ_MIN, _UNREG or _STREAM as the send is */
    EFARM_SEL_RUNT_MIN,   /* EFARM_RUNT_MIN, at least the read one for a cold buffer */
};

/* Conditions of a rule. */
#define EFARM_SEL_NEED_READ  0x01u /* both sides negotiated RDMA read */
#define EFARM_SEL_NEED_RUNT  0x02u /* both sides negotiated runting read */
#define EFARM_SEL_NO_DC      0x04u /* not for delivery-complete sends */
#define EFARM_SEL_IDLE_READS 0x08u /* no RDMA read in flight on this endpoint */
#define EFARM_SEL_READ_SLOT  0x10u /* a read slot is free (EFARM_MAX_READS) */
#define EFARM_SEL_RUNT_BUDGET \
    0x20u                     /* the peer's runt bytes in flight leave room (EFARM_RUNT_SIZE) */
#define EFARM_SEL_FANIN 0x40u /* len x peers within EFARM_UNEXP_BYTES */
/* What runting read needs now (its rule's conditions; medium's bound asks them too). */
#define EFARM_SEL_RUNT_NEED                                                               \
    (EFARM_SEL_NEED_READ | EFARM_SEL_NEED_RUNT | EFARM_SEL_NO_DC | EFARM_SEL_IDLE_READS | \
     EFARM_SEL_RUNT_BUDGET)

/* What one packet decides, whatever the tunables say. */
enum efarm_sel_fit { EFARM_FIT_ANY, EFARM_FIT_ONE_PKT, EFARM_FIT_BEYOND_PKT, EFARM_FIT_NONEMPTY };

struct efarm_sel_rule {
    uint8_t min_len;     /* enum efarm_sel_bound: len >= this */
    uint8_t max_len;     /* enum efarm_sel_bound: len <= this */
    uint8_t need;        /* EFARM_SEL_*: conditions */
    uint8_t fit;         /* enum efarm_sel_fit: what must hold even when forced */
    uint8_t need_forced; /* the conditions that still hold when forced (the rest are policy) */
};

/* ---- Profiles (proto_profile.c derives the thresholds from the rows) ------------------ */

enum efarm_profile_race {
    EFARM_RACE_NONE,  /* no threshold of its own */
    EFARM_RACE_UNTIL, /* its threshold is the largest size it still wins at */
    EFARM_RACE_FROM,  /* its threshold is the first size from which it wins */
};

struct efarm_profile_rule {
    bool curve;            /* a profile may give its curves ("NAME SIZE US" lines) */
    uint8_t race;          /* enum efarm_profile_race */
    uint8_t rivals;        /* bits of enum efarm_proto_kind it races, those that have curves */
    uint8_t needs;         /* bits: curves without which its threshold stays as it is */
    uint8_t fallback_from; /* without its own curve: the threshold of this (earlier) kind + 1;
                              0: it stays as it is */
    double handicap;       /* it must win by this fraction of its cost */
    /* Its thresholds, EFARM_THR(field) (proto_select.h) by [stream curves][buffer to
       register]; 0: none. */
    uint16_t thr[2][2];
};

/* ---- The row ------------------------------------------------------------------------- */

struct efarm_msg_proto {
    uint8_t type[2][2]; /* the REQ type by [dc][tagged] */
    uint8_t rtw[2];     /* [dc]: a long one-sided write run on it (0: none runs on it) */
    uint16_t counter;   /* messages sent with it: offset in struct efarm_counters */
    bool whole;         /* the REQ holds the message (no msg_length field; no op to receive it
                           unless DC) */
    bool segmented;     /* data REQs at seg_offset: later segments join the op or record */
    bool reads;         /* the receiver reads the sender's read_iov and answers with EOR (the
                           sender waits for it); READ_NACK falls back to long-CTS */
    bool runt;          /* the first runt_length bytes come in REQs (a peer's runt budget) */
    bool cts;           /* the receiver grants the data by CTS rounds of CTSDATA */
    uint8_t fallback;   /* reads: what a READ_NACK or a refused registration turns it into */
    /* Sender: build and post what the op still has to send (0, -EAGAIN, an error). */
    int (*build)(struct efarm_ep *ep, struct efarm_peer_state *st, struct efarm_op *op);
    /* Receiver: the op matched and holds the data that came: start what follows (or NULL). */
    void (*rx_start)(struct efarm_ep *ep, struct efarm_op *op);
    struct efarm_sel_rule select;
    struct efarm_profile_rule profile;
};

/* Each subprotocol's row, efarm_msg_proto_<name>, and the table of them by kind. */
#define EFARM_MSG_PROTO_DECLARE_(id, name, rank) \
    extern const struct efarm_msg_proto efarm_msg_proto_##name;
EFARM_PROTO_LIST(EFARM_MSG_PROTO_DECLARE_)
#undef EFARM_MSG_PROTO_DECLARE_
extern const struct efarm_msg_proto *const g_efarm_msg_protos[EFARM_PROTO_COUNT];

/* The kinds in the order selection tries them (EFARM_PROTO_LIST's rank column). */
extern uint8_t g_efarm_msg_proto_order[EFARM_PROTO_COUNT];
/* A kind's rank in EFARM_PROTO_LIST. */
uint8_t efarm_msg_proto_rank(enum efarm_proto_kind kind);

#endif /* EFARM_MSG_PROTO_H */
