# src/util: error codes, byte order; later pools, logging, config, counters.
libefarm_la_SOURCES += \
	src/util/efarm_byteorder.h \
	src/util/efarm_config.h \
	src/util/config.c \
	src/util/efarm_errno.h \
	src/util/efarm_hex.h \
	src/util/errno.c
