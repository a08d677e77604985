/*
 * The names of efarm's subprotocols, in one place: the engine's enums
 * (efarm_proto.h, efarm_rma.h), its tables and the tunables that force a
 * subprotocol (EFARM_PROTO, EFARM_RMA_PROTO in efarm_config.h) are all
 * generated from these lists, so a name the engine accepts is a value the
 * tunable accepts, and no list of names is written twice.
 */
#ifndef EFARM_PROTO_NAMES_H
#define EFARM_PROTO_NAMES_H

/*
 * The two-sided subprotocols. X(ID, name, rank): the list's order is their
 * numbers (enum efarm_proto_kind, efarm_protocol's number - 1); selection
 * tries them by rank, lowest first (each rank once; gaps leave room for a new
 * one between two). Each has its row efarm_msg_proto_<name>, defined in its
 * own file (src/proto/msg_proto.h).
 */
#define EFARM_PROTO_LIST(X)   \
    X(EAGER, eager, 10)       \
    X(MEDIUM, medium, 20)     \
    X(LONGCTS, longcts, 90)   \
    X(LONGREAD, longread, 40) \
    X(RUNTREAD, runtread, 30)

/*
 * One-sided subprotocols: writes, reads, atomics (rma.c has the tables:
 * packet types, what completes each, its counter, and the rules selection
 * tries in order). X(ID, name, FORCE, doc): FORCE is F when EFARM_RMA_PROTO may
 * force it (a kind of operation has another subprotocol to choose), N when
 * it is its kind's only one (the atomics).
 */
#define EFARM_RMA_PROTO_LIST(X)                                                             \
    X(DIRECT_WRITE, direct_write, F, "RDMA write by the device (both sides negotiated it)") \
    X(EAGER_RTW, eager_rtw, F, "emulated write: EAGER_RTW packets the target copies")       \
    X(LONGCTS_RTW, longcts_rtw, F, "emulated write: LONGCTS_RTW, then CTSDATA per CTS")     \
    X(LONGREAD_RTW, longread_rtw, F, "emulated write: the target RDMA-reads it, then EOR")  \
    X(DIRECT_READ, direct_read, F, "RDMA read by the device (both sides negotiated it)")    \
    X(SHORT_RTR, short_rtr, F, "emulated read: SHORT_RTR answered by one READRSP each")     \
    X(LONGCTS_RTR, longcts_rtr, F, "emulated read: LONGCTS_RTR, READRSP, CTSDATA per CTS")  \
    X(WRITE_RTA, write_rta, N, "atomic without result: WRITE_RTA packets")                  \
    X(FETCH_RTA, fetch_rta, N, "fetching atomic: FETCH_RTA answered by ATOMRSP")            \
    X(COMPARE_RTA, compare_rta, N, "compare atomic: COMPARE_RTA answered by ATOMRSP")

/* The values the forcing tunables accept, as their tables write them: "auto|eager|...". */
#define EFARM_PROTO_NAME_ALT_(id, name, rank) "|" #name
#define EFARM_PROTO_NAMES                     "auto" EFARM_PROTO_LIST(EFARM_PROTO_NAME_ALT_)
/* The same for a message: "auto, eager, ...". */
#define EFARM_PROTO_NAME_TEXT_(id, name, rank) ", " #name
#define EFARM_PROTO_NAMES_TEXT                 "auto" EFARM_PROTO_LIST(EFARM_PROTO_NAME_TEXT_)
#define EFARM_RMA_FORCE_ALT_F_(name)           "|" #name
#define EFARM_RMA_FORCE_ALT_N_(name)
#define EFARM_RMA_FORCE_ALT_(id, name, force, doc) EFARM_RMA_FORCE_ALT_##force##_(name)
#define EFARM_RMA_FORCE_NAMES                      "auto" EFARM_RMA_PROTO_LIST(EFARM_RMA_FORCE_ALT_)

#endif /* EFARM_PROTO_NAMES_H */
