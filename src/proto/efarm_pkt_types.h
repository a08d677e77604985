/*
 * Every packet type of protocol v4, one row each: the one list from which the
 * codec's table (pkt_codec.c: name, wire layout, traits, checks) and the
 * engine's table (proto_pkt.c: how a packet of the type is received, served,
 * retried, and what losing one costs) are both generated. A fact about a
 * packet type is written here once; the code reads it from the tables.
 *
 * X(TYPE, NAME, CODEC, LAYOUT, FIELDS, TRAITS, CHECK, ENGINE, LOSS):
 *
 *   TYPE    the suffix of its EFARM_PKT_* number (efarm_proto_v4.h)
 *   NAME    the spec's nickname, as the tools print it
 *   CODEC   how it is laid out and coded (pkt_codec.c):
 *             RETIRED, RESERVED  no wire format; decoding says which
 *             PLAIN              fixed header, no REQ optional headers
 *             HANDSHAKE          fixed header, then its optional fields
 *             REQ                a REQ whose header is the whole LAYOUT
 *             REQ_SHORT          a REQ using all of FIELDS but the last
 *             MSG, TAG           the two halves of an RTM pair: MSG stops
 *                                before the tag (the last of FIELDS)
 *   LAYOUT  its efarm_wire_* header struct (efarm_proto_v4.h)
 *   FIELDS  its fixed fields in wire order (pkt_codec.c)
 *   TRAITS  EFARM_PKT_T_* bits besides SUPPORTED and REQ, which CODEC
 *           implies: TAGGED, RMA_IOV, READ_IOV (the payload starts with
 *           read_iov[]), MULTIUSE, OPT_8, LONGCTS
 *   CHECK   the codec's check after decoding (validate_*)
 *   ENGINE  how the engine receives it (proto_pkt.c):
 *             E_NONE                 not served: counted and dropped
 *             E_CTRL(fn)             control packet: fn at once
 *             E_RTM(P, DATA, DC)     message REQ, in msg_id order, matched
 *                                    against receives; subprotocol P, its
 *                                    data at DATA (RX_*), DC or not
 *             E_RTM_NACK(P, DC)      the same (long CTS), and its REQ sent
 *                                    again after a READ_NACK, at once
 *             E_REFUSED(DATA)        REQ in msg_id order that efarm
 *                                    refuses, using up its id (runting CTS)
 *             E_RTA(KIND, DC)        atomic REQ in msg_id order
 *             E_TARGET(fn, DC)       RMA target REQ, served at once, kept
 *                                    and retried while resources lack
 *             E_TARGET_RTW(P, DATA, DC)  long write served by a receive op of
 *                                    subprotocol P; DATA RX_SEG_OFFSET: a runt
 *                                    write, its first runt_length bytes in
 *                                    REQs joined by (peer, send_id), the
 *                                    rest as P brings it (CTS or reads)
 *             E_TARGET_RTW_NACK(P, DC)   the same (long CTS), and its REQ sent
 *                                    after our READ_NACK joins the runt write
 *                                    that sent it (else: a new write)
 *   LOSS    what losing one sent with no operation costs (proto_tx.c):
 *             L_OP         only operations send it (their class decides)
 *             L_REPLY(s)   the peer waits for it: s says what
 *             L_HELLO(s)   the same, except to a peer learnt only from a
 *                          raw-address header (HANDSHAKE)
 *             L_TRIGGER    a HANDSHAKE trigger (EAGER_RTW): its empty form (no
 *                          rma_iov, no data) only asks for our HANDSHAKE, so
 *                          received it does nothing; lost, nothing waits at the
 *                          peer, and our sends waiting for that HANDSHAKE fail
 *
 * Types missing from the list (12-63, 77-127, 148-255) have no wire format
 * and decode as unknown.
 */
#ifndef EFARM_PKT_TYPES_H
#define EFARM_PKT_TYPES_H

#define T_MU  EFARM_PKT_T_MULTIUSE
#define T_RMA EFARM_PKT_T_RMA_IOV
#define T_RIO EFARM_PKT_T_READ_IOV
#define T_LC  EFARM_PKT_T_LONGCTS
#define T_TAG EFARM_PKT_T_TAGGED
#define T_O8  EFARM_PKT_T_OPT_8

/* clang-format off */
#define EFARM_PKT_TYPE_LIST(X)                                                                    \
    X(RETIRED_RTS, "RTS", RETIRED, _, _, 0, _, E_NONE, L_OP)                                      \
    X(RETIRED_CONNACK, "CONNACK", RETIRED, _, _, 0, _, E_NONE, L_OP)                              \
    X(CTS, "CTS", PLAIN, efarm_wire_cts_hdr, g_cts_fields, T_MU, validate_cts,                    \
      E_CTRL(efarm_cts_recv), L_OP)                                                               \
    X(CTSDATA, "CTSDATA", PLAIN, efarm_wire_ctsdata_hdr, g_ctsdata_fields, T_O8,                  \
      validate_seg_length, E_CTRL(efarm_ctsdata_recv), L_OP)                                      \
    X(READRSP, "READRSP", PLAIN, efarm_wire_readrsp_hdr, g_readrsp_fields, T_MU,                  \
      validate_seg_length, E_CTRL(efarm_readrsp_recv), L_REPLY("a READRSP its read waits for"))   \
    X(RESERVED_6, "RESERVED_6", RESERVED, _, _, 0, _, E_NONE, L_OP)                               \
    X(EOR, "EOR", PLAIN, efarm_wire_eor_hdr, g_eor_fields, T_MU, validate_none,                   \
      E_CTRL(efarm_eor_recv), L_OP)                                                               \
    X(ATOMRSP, "ATOMRSP", PLAIN, efarm_wire_atomrsp_hdr, g_atomrsp_fields, T_MU,                  \
      validate_seg_length, E_CTRL(efarm_atomrsp_recv),                                            \
      L_REPLY("an ATOMRSP its atomic operation waits for"))                                       \
    X(HANDSHAKE, "HANDSHAKE", HANDSHAKE, efarm_wire_handshake_hdr, g_handshake_fields, 0,         \
      validate_none, E_CTRL(efarm_handshake_recv), L_HELLO("our HANDSHAKE, which it may wait for"))\
    X(RECEIPT, "RECEIPT", PLAIN, efarm_wire_receipt_hdr, g_receipt_fields, T_MU, validate_none,   \
      E_CTRL(efarm_receipt_recv), L_REPLY("a RECEIPT its send waits for"))                        \
    X(READ_NACK, "READ_NACK", PLAIN, efarm_wire_read_nack_hdr, g_read_nack_fields, T_MU,          \
      validate_none, E_CTRL(efarm_read_nack_recv), L_OP)                                          \
                                                                                                  \
    X(EAGER_MSGRTM, "EAGER_MSGRTM", MSG, efarm_wire_eager_rtm_hdr, g_eager_rtm_fields, 0,         \
      validate_none, E_RTM(EAGER, 0, false), L_OP)                                                \
    X(EAGER_TAGRTM, "EAGER_TAGRTM", TAG, efarm_wire_eager_rtm_hdr, g_eager_rtm_fields, T_TAG,     \
      validate_none, E_RTM(EAGER, 0, false), L_OP)                                                \
    X(MEDIUM_MSGRTM, "MEDIUM_MSGRTM", MSG, efarm_wire_medium_rtm_hdr, g_medium_rtm_fields, 0,     \
      validate_medium, E_RTM(MEDIUM, RX_SEG_OFFSET, false), L_OP)                                 \
    X(MEDIUM_TAGRTM, "MEDIUM_TAGRTM", TAG, efarm_wire_medium_rtm_hdr, g_medium_rtm_fields, T_TAG, \
      validate_medium, E_RTM(MEDIUM, RX_SEG_OFFSET, false), L_OP)                                 \
    X(LONGCTS_MSGRTM, "LONGCTS_MSGRTM", MSG, efarm_wire_longcts_rtm_hdr, g_longcts_rtm_fields,    \
      T_LC, validate_longcts, E_RTM_NACK(LONGCTS, false), L_OP)                                   \
    X(LONGCTS_TAGRTM, "LONGCTS_TAGRTM", TAG, efarm_wire_longcts_rtm_hdr, g_longcts_rtm_fields,    \
      T_LC | T_TAG, validate_longcts, E_RTM_NACK(LONGCTS, false), L_OP)                           \
    X(EAGER_RTW, "EAGER_RTW", REQ, efarm_wire_eager_rtw_hdr, g_eager_rtw_fields, T_RMA,           \
      validate_none, E_TARGET(efarm_rtw_recv, false), L_TRIGGER)                                        \
    X(LONGCTS_RTW, "LONGCTS_RTW", REQ, efarm_wire_longcts_rtw_hdr, g_longcts_rtw_fields,          \
      T_RMA | T_LC, validate_longcts, E_TARGET_RTW_NACK(LONGCTS, false), L_OP)                    \
    X(SHORT_RTR, "SHORT_RTR", REQ_SHORT, efarm_wire_rtr_hdr, g_rtr_fields, T_RMA, validate_none,  \
      E_TARGET(efarm_rtr_recv, false), L_OP)                                                      \
    X(LONGCTS_RTR, "LONGCTS_RTR", REQ, efarm_wire_rtr_hdr, g_rtr_fields, T_RMA, validate_none,    \
      E_TARGET(efarm_rtr_long_recv, false), L_OP)                                                 \
    X(WRITE_RTA, "WRITE_RTA", REQ, efarm_wire_rta_hdr, g_write_rta_fields, T_RMA, validate_none,  \
      E_RTA(EFARM_ATOMIC_WRITE, false), L_OP)                                                     \
    X(FETCH_RTA, "FETCH_RTA", REQ, efarm_wire_rta_hdr, g_fetch_rta_fields, T_RMA, validate_none,  \
      E_RTA(EFARM_ATOMIC_FETCH, false), L_OP)                                                     \
    X(COMPARE_RTA, "COMPARE_RTA", REQ, efarm_wire_rta_hdr, g_fetch_rta_fields, T_RMA,             \
      validate_none, E_RTA(EFARM_ATOMIC_COMPARE, false), L_OP)                                    \
                                                                                                  \
    X(LONGREAD_MSGRTM, "LONGREAD_MSGRTM", MSG, efarm_wire_longread_rtm_hdr,                       \
      g_longread_rtm_fields, T_RIO, validate_none, E_RTM(LONGREAD, RX_ONLY_IOV, false), L_OP)     \
    X(LONGREAD_TAGRTM, "LONGREAD_TAGRTM", TAG, efarm_wire_longread_rtm_hdr,                       \
      g_longread_rtm_fields, T_RIO | T_TAG, validate_none, E_RTM(LONGREAD, RX_ONLY_IOV, false),   \
      L_OP)                                                                                       \
    X(LONGREAD_RTW, "LONGREAD_RTW", REQ, efarm_wire_longcts_rtw_hdr, g_longread_rtw_fields,       \
      T_RMA | T_RIO, validate_none, E_TARGET_RTW(LONGREAD, RX_ONLY_IOV, false), L_OP)             \
    X(RESERVED_READ_RTR, "READ_RTR", RESERVED, _, _, 0, _, E_NONE, L_OP)                          \
    X(RESERVED_132, "RESERVED_132", RESERVED, _, _, 0, _, E_NONE, L_OP)                           \
                                                                                                  \
    X(DC_EAGER_MSGRTM, "DC_EAGER_MSGRTM", MSG, efarm_wire_dc_eager_rtm_hdr,                       \
      g_dc_eager_rtm_fields, 0, validate_none, E_RTM(EAGER, 0, true), L_OP)                       \
    X(DC_EAGER_TAGRTM, "DC_EAGER_TAGRTM", TAG, efarm_wire_dc_eager_rtm_hdr,                       \
      g_dc_eager_rtm_fields, T_TAG, validate_none, E_RTM(EAGER, 0, true), L_OP)                   \
    X(DC_MEDIUM_MSGRTM, "DC_MEDIUM_MSGRTM", MSG, efarm_wire_dc_medium_rtm_hdr,                    \
      g_dc_medium_rtm_fields, 0, validate_medium, E_RTM(MEDIUM, RX_SEG_OFFSET, true), L_OP)       \
    X(DC_MEDIUM_TAGRTM, "DC_MEDIUM_TAGRTM", TAG, efarm_wire_dc_medium_rtm_hdr,                    \
      g_dc_medium_rtm_fields, T_TAG, validate_medium, E_RTM(MEDIUM, RX_SEG_OFFSET, true), L_OP)   \
    X(DC_LONGCTS_MSGRTM, "DC_LONGCTS_MSGRTM", MSG, efarm_wire_longcts_rtm_hdr,                    \
      g_longcts_rtm_fields, T_LC, validate_longcts, E_RTM_NACK(LONGCTS, true), L_OP)              \
    X(DC_LONGCTS_TAGRTM, "DC_LONGCTS_TAGRTM", TAG, efarm_wire_longcts_rtm_hdr,                    \
      g_longcts_rtm_fields, T_LC | T_TAG, validate_longcts, E_RTM_NACK(LONGCTS, true), L_OP)      \
    X(DC_EAGER_RTW, "DC_EAGER_RTW", REQ, efarm_wire_dc_eager_rtw_hdr, g_dc_eager_rtw_fields,      \
      T_RMA, validate_none, E_TARGET(efarm_rtw_recv, true), L_OP)                                 \
    X(DC_LONGCTS_RTW, "DC_LONGCTS_RTW", REQ, efarm_wire_longcts_rtw_hdr, g_longcts_rtw_fields,    \
      T_RMA | T_LC, validate_longcts, E_TARGET_RTW_NACK(LONGCTS, true), L_OP)                     \
    X(DC_WRITE_RTA, "DC_WRITE_RTA", REQ, efarm_wire_rta_hdr, g_dc_write_rta_fields, T_RMA,        \
      validate_none, E_RTA(EFARM_ATOMIC_WRITE, true), L_OP)                                       \
                                                                                                  \
    X(RUNTCTS_MSGRTM, "RUNTCTS_MSGRTM", MSG, efarm_wire_runt_rtm_hdr, g_runtcts_rtm_fields, 0,    \
      validate_runt, E_REFUSED(RX_SEG_OFFSET), L_OP)                                              \
    X(RUNTCTS_TAGRTM, "RUNTCTS_TAGRTM", TAG, efarm_wire_runt_rtm_hdr, g_runtcts_rtm_fields,       \
      T_TAG, validate_runt, E_REFUSED(RX_SEG_OFFSET), L_OP)                                       \
    X(RUNTCTS_RTW, "RUNTCTS_RTW", REQ, efarm_wire_runt_rtw_hdr, g_runtcts_rtw_fields, T_RMA,      \
      validate_runt, E_TARGET_RTW(LONGCTS, RX_SEG_OFFSET, false), L_OP)                           \
    X(RUNTREAD_MSGRTM, "RUNTREAD_MSGRTM", MSG, efarm_wire_runt_rtm_hdr, g_runtread_rtm_fields,    \
      T_RIO, validate_runt, E_RTM(RUNTREAD, RX_SEG_OFFSET, false), L_OP)                          \
    X(RUNTREAD_TAGRTM, "RUNTREAD_TAGRTM", TAG, efarm_wire_runt_rtm_hdr, g_runtread_rtm_fields,    \
      T_RIO | T_TAG, validate_runt, E_RTM(RUNTREAD, RX_SEG_OFFSET, false), L_OP)                  \
    X(RUNTREAD_RTW, "RUNTREAD_RTW", REQ, efarm_wire_runt_rtw_hdr, g_runtread_rtw_fields,          \
      T_RMA | T_RIO, validate_runt, E_TARGET_RTW(RUNTREAD, RX_SEG_OFFSET, false), L_OP)
/* clang-format on */

#endif /* EFARM_PKT_TYPES_H */
