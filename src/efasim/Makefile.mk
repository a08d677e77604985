# src/efasim: the emulated EFA device, as drop-in libibverbs.so.1 and libefa.so.1.
# They install under $(pkglibdir)/efasim, never over the system's rdma-core; a
# program selects them with LD_LIBRARY_PATH (or efarm's loader, issue 4).
#
# model/ is the device and what its kernel driver does, built once as a
# convenience library; verbs/ is the drop-in front end that links it.
noinst_LTLIBRARIES += src/efasim/libefasim-model.la
src_efasim_libefasim_model_la_SOURCES = \
	src/efasim/model/efasim_model.h \
	src/efasim/model/config.c \
	src/efasim/model/objects.c \
	src/efasim/model/pinned.c \
	src/efasim/model/devshare.c \
	src/efasim/model/qp.c \
	src/efasim/model/wire.c \
	src/efasim/model/fault.c \
	src/efasim/model/fastpath.c \
	src/efasim/model/service.c \
	src/efasim/model/sysfs.c
src_efasim_libefasim_model_la_CFLAGS = $(AM_CFLAGS) $(IBVERBS_CFLAGS) -pthread

efasimdir = $(pkglibdir)/efasim
efasim_LTLIBRARIES = src/efasim/libibverbs.la src/efasim/libefa.la

src_efasim_libibverbs_la_SOURCES = \
	src/efasim/verbs/efasim_verbs.h \
	src/efasim/verbs/device.c \
	src/efasim/verbs/fork.c \
	src/efasim/verbs/cq.c \
	src/efasim/verbs/qp.c \
	src/efasim/verbs/events.c \
	src/efasim/verbs/kabi.c
src_efasim_libibverbs_la_CFLAGS = $(AM_CFLAGS) $(IBVERBS_CFLAGS) -pthread
src_efasim_libibverbs_la_LIBADD = src/efasim/libefasim-model.la
src_efasim_libibverbs_la_LDFLAGS = -version-info 1:0:0 -no-undefined -pthread \
	-Wl,--version-script=$(top_srcdir)/src/efasim/verbs/libibverbs.map
EXTRA_src_efasim_libibverbs_la_DEPENDENCIES = $(top_srcdir)/src/efasim/verbs/libibverbs.map

src_efasim_libefa_la_SOURCES = src/efasim/verbs/efasim_verbs.h src/efasim/verbs/efadv.c
src_efasim_libefa_la_CFLAGS = $(AM_CFLAGS) $(IBVERBS_CFLAGS)
src_efasim_libefa_la_LIBADD = src/efasim/libibverbs.la
src_efasim_libefa_la_LDFLAGS = -version-info 1:0:0 -no-undefined \
	-Wl,--version-script=$(top_srcdir)/src/efasim/verbs/libefa.map
EXTRA_src_efasim_libefa_la_DEPENDENCIES = $(top_srcdir)/src/efasim/verbs/libefa.map

EXTRA_DIST += src/efasim/README.md src/efasim/verbs/libibverbs.map src/efasim/verbs/libefa.map

# kernel/ is the second front end: a library preloaded into unmodified programs
# that emulates EFA's kernel driver at the uverbs boundary (the device node,
# ioctl/write commands, mmap of the queues, doorbells), so the system's own
# libibverbs and libefa drive the same model. `efasim-info --env=kernel` prints
# the environment that loads it.
efasim_LTLIBRARIES += src/efasim/libefasim-kernel.la
src_efasim_libefasim_kernel_la_SOURCES = \
	src/efasim/kernel/kernel.h \
	src/efasim/kernel/uverbs.h \
	src/efasim/kernel/uverbs_cmds.h \
	src/efasim/kernel/efa_io.h \
	src/efasim/kernel/mmio.h \
	src/efasim/kernel/x86.h \
	src/efasim/kernel/interpose.c \
	src/efasim/kernel/uverbs.c \
	src/efasim/kernel/uverbs_cmds.c \
	src/efasim/kernel/efa.c \
	src/efasim/kernel/mmio.c \
	src/efasim/kernel/netlink.c \
	src/efasim/kernel/rebind.c \
	src/efasim/kernel/x86.c
src_efasim_libefasim_kernel_la_CFLAGS = $(AM_CFLAGS) $(IBVERBS_CFLAGS) -pthread
src_efasim_libefasim_kernel_la_LIBADD = src/efasim/libefasim-model.la -ldl
src_efasim_libefasim_kernel_la_LDFLAGS = -avoid-version -no-undefined -pthread \
	-Wl,--version-script=$(top_srcdir)/src/efasim/kernel/libefasim-kernel.map
EXTRA_src_efasim_libefasim_kernel_la_DEPENDENCIES = \
	$(top_srcdir)/src/efasim/kernel/libefasim-kernel.map
EXTRA_DIST += src/efasim/kernel/libefasim-kernel.map
