/*
 * The engine's table of packet types: its columns of efarm_pkt_types.h's
 * list (see efarm_pkt_row in proto_receive.h). The codec's columns of the
 * same list make pkt_codec.c's table; the traits both need (tagged, read
 * iov) are read from the list's TRAITS column here too, so the two tables
 * cannot disagree on them.
 */
#include "proto_internal.h"

#include "efarm_pkt_types.h"
#include "efarm_rma.h"
#include "proto_messages.h"
#include "proto_onesided.h"
#include "proto_peers.h"
#include "proto_receive.h"

/* ENGINE columns. */
#define E_NONE     .serve = NULL
#define E_CTRL(fn) .ctrl = fn
#define E_RTM(p, d, c)                                                                            \
    .serve = efarm_rtm_recv, .ordered = true, .rtm = true, .proto = EFARM_PROTO_##p, .data = (d), \
    .dc = (c)
#define E_RTM_NACK(p, c) E_RTM(p, 0, c), .on_nack = efarm_longcts_nack_recv
#define E_REFUSED(d)     .serve = efarm_req_refuse, .ordered = true, .data = (d)
#define E_RTA(k, c)      .serve = efarm_rta_recv, .ordered = true, .atomic = (k), .dc = (c)
#define E_TARGET(fn, c)  .serve = fn, .dc = (c)
#define E_TARGET_RTW(p, d, c) \
    .serve = efarm_rtw_long_recv, .rtw = true, .proto = EFARM_PROTO_##p, .data = (d), .dc = (c)
#define E_TARGET_RTW_NACK(p, c) E_TARGET_RTW(p, 0, c), .on_nack = efarm_longcts_nack_recv

/* LOSS columns. */
#define L_OP       .lost_alone = "a packet it waits for" /* sent alone: not expected */
#define L_REPLY(s) .lost_alone = s
#define L_HELLO(s) .lost_alone = s, .lost_to_implicit_ok = true
#define L_TRIGGER  .lost_alone = NULL, .trigger = true

#define ENGINE_ROW(type, nick, codec, s, f, tr, check, engine, loss)              \
    [EFARM_PKT_##type] = {engine, loss, .tagged = ((tr)&EFARM_PKT_T_TAGGED) != 0, \
                          .read_iov = ((tr)&EFARM_PKT_T_READ_IOV) != 0},

const struct efarm_pkt_row g_efarm_pkt_rows[EFARM_PKT_TYPE_COUNT] = {
    EFARM_PKT_TYPE_LIST(ENGINE_ROW)};
