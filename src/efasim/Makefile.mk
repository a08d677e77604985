# src/efasim: the emulated EFA device, as drop-in libibverbs.so.1 and libefa.so.1.
# They install under $(pkglibdir)/efasim, never over the system's rdma-core; a
# program selects them with LD_LIBRARY_PATH (or efarm's loader, issue 4).
efasimdir = $(pkglibdir)/efasim
efasim_LTLIBRARIES = src/efasim/libibverbs.la src/efasim/libefa.la

src_efasim_libibverbs_la_SOURCES = \
	src/efasim/efasim.h \
	src/efasim/config.c \
	src/efasim/device.c \
	src/efasim/cq.c \
	src/efasim/qp.c \
	src/efasim/wire.c \
	src/efasim/fault.c \
	src/efasim/fastpath.c \
	src/efasim/kabi.c \
	src/efasim/service.c \
	src/efasim/sysfs.c
src_efasim_libibverbs_la_CFLAGS = $(AM_CFLAGS) $(IBVERBS_CFLAGS) -pthread
src_efasim_libibverbs_la_LDFLAGS = -version-info 1:0:0 -no-undefined -pthread \
	-Wl,--version-script=$(top_srcdir)/src/efasim/libibverbs.map
EXTRA_src_efasim_libibverbs_la_DEPENDENCIES = $(top_srcdir)/src/efasim/libibverbs.map

src_efasim_libefa_la_SOURCES = src/efasim/efadv.c
src_efasim_libefa_la_CFLAGS = $(AM_CFLAGS) $(IBVERBS_CFLAGS)
src_efasim_libefa_la_LIBADD = src/efasim/libibverbs.la
src_efasim_libefa_la_LDFLAGS = -version-info 1:0:0 -no-undefined \
	-Wl,--version-script=$(top_srcdir)/src/efasim/libefa.map
EXTRA_src_efasim_libefa_la_DEPENDENCIES = $(top_srcdir)/src/efasim/libefa.map

EXTRA_DIST += src/efasim/README.md src/efasim/libibverbs.map src/efasim/libefa.map
