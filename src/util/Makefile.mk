# src/util: error codes, byte order, lists, pools, texts, logging, config, packet capture.
libefarm_la_SOURCES += \
	src/util/efarm_byteorder.h \
	src/util/efarm_config.h \
	src/util/efarm_proto_names.h \
	src/util/efarm_time.h \
	src/util/config.c \
	src/util/efarm_errno.h \
	src/util/efarm_hex.h \
	src/util/errno.c \
	src/util/efarm_list.h \
	src/util/efarm_pool.h \
	src/util/pool.c \
	src/util/efarm_text.h \
	src/util/text.c \
	src/util/efarm_log.h \
	src/util/log.c \
	src/util/efarm_capture.h \
	src/util/capture.c
