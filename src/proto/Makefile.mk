# src/proto: EFA RDM protocol v4: packet codec, tag matcher, protocol engine.
libefarm_la_SOURCES += \
	src/proto/efarm_proto_v4.h \
	src/proto/efarm_pkt.h \
	src/proto/pkt_codec.c \
	src/proto/pkt_print.c \
	src/proto/efarm_tm.h \
	src/proto/tm.c
