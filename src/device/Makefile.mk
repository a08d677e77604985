# src/device: the EFA device on libibverbs + libefa (loaded at run time), NIC
# selection and the registration cache. See efarm_device.h.
libefarm_la_SOURCES += \
	src/device/efarm_device.h \
	src/device/device_internal.h \
	src/device/efarm_device_inline.h \
	src/device/efarm_device_limits.h \
	src/device/loader.c \
	src/device/ep.c \
	src/device/nic_choose.c
libefarm_la_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/src/device $(IBVERBS_CFLAGS) $(HWLOC_CFLAGS) \
	-DEFARM_EFASIM_DIR=\"$(pkglibdir)/efasim\"
libefarm_la_CFLAGS = $(AM_CFLAGS) $(ENGINE_CFLAGS)
libefarm_la_LIBADD = $(HWLOC_LIBS) -ldl -lpthread
EXTRA_DIST += src/device/README.md
