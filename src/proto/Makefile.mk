# src/proto: EFA RDM protocol v4: packet codec, tag matcher, protocol engine.
libefarm_la_SOURCES += \
	src/proto/efarm_proto_v4.h \
	src/proto/efarm_pkt.h \
	src/proto/efarm_pkt_types.h \
	src/proto/pkt_codec.c \
	src/proto/pkt_print.c \
	src/proto/efarm_tm.h \
	src/proto/efarm_tm_inline.h \
	src/proto/tm.c \
	src/proto/efarm_proto.h \
	src/proto/proto_internal.h \
	src/proto/proto_peers.h \
	src/proto/proto_transmit.h \
	src/proto/proto_receive.h \
	src/proto/proto_ops.h \
	src/proto/proto_select.h \
	src/proto/proto_messages.h \
	src/proto/proto_onesided.h \
	src/proto/efarm_rma.h \
	src/proto/proto_expose.c \
	src/proto/proto_ep.c \
	src/proto/proto_names.c \
	src/proto/proto_av.c \
	src/proto/proto_tx.c \
	src/proto/proto_observe.c \
	src/proto/proto_rx.c \
	src/proto/proto_pkt.c \
	src/proto/proto_ops.c \
	src/proto/proto_probe.c \
	src/proto/proto_select.c \
	src/proto/proto_profile.c \
	src/proto/msg_proto.h \
	src/proto/msg_internal.h \
	src/proto/msg_send.c \
	src/proto/msg_eager.c \
	src/proto/msg_longcts.c \
	src/proto/msg_read.c \
	src/proto/msg_fast_inline.h \
	src/proto/msg_recv.c \
	src/proto/rma_proto.h \
	src/proto/rma.c \
	src/proto/rma_long.c \
	src/proto/rma_target.c \
	src/proto/rma_atomic.c
EXTRA_DIST += src/proto/README.md
