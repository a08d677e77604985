##
## ch4:efarm: MPICH's build fragment for the efarm netmod, included from
## src/mpid/ch4/netmod/Makefile.mk (scripts/mpich-build.sh adds the include).
## Adding a file here, to subconfigure.m4 or to errnames.txt needs MPICH's
## autogen and configure again; the script notices and reruns them.
##

if BUILD_CH4_NETMOD_EFARM

noinst_HEADERS += \
    src/mpid/ch4/netmod/efarm/efarm_pre.h \
    src/mpid/ch4/netmod/efarm/efarm_impl.h \
    src/mpid/ch4/netmod/efarm/efarm_compat.h \
    src/mpid/ch4/netmod/efarm/efarm_cvars.h \
    src/mpid/ch4/netmod/efarm/netmod_inline.h \
    src/mpid/ch4/netmod/efarm/efarm_am.h \
    src/mpid/ch4/netmod/efarm/efarm_proc.h \
    src/mpid/ch4/netmod/efarm/efarm_progress.h \
    src/mpid/ch4/netmod/efarm/efarm_send.h \
    src/mpid/ch4/netmod/efarm/efarm_recv.h \
    src/mpid/ch4/netmod/efarm/efarm_p2p.h \
    src/mpid/ch4/netmod/efarm/efarm_probe.h \
    src/mpid/ch4/netmod/efarm/efarm_rma_nm.h \
    src/mpid/ch4/netmod/efarm/efarm_win.h \
    src/mpid/ch4/netmod/efarm/efarm_dynproc.h \
    src/mpid/ch4/netmod/efarm/efarm_noinline.h

mpi_core_sources += \
    src/mpid/ch4/netmod/efarm/func_table.c \
    src/mpid/ch4/netmod/efarm/efarm_init.c \
    src/mpid/ch4/netmod/efarm/efarm_am.c \
    src/mpid/ch4/netmod/efarm/efarm_win.c \
    src/mpid/ch4/netmod/efarm/efarm_rma.c \
    src/mpid/ch4/netmod/efarm/efarm_stripe.c \
    src/mpid/ch4/netmod/efarm/efarm_noinline.c \
    src/mpid/ch4/netmod/efarm/efarm_dynproc.c \
    src/mpid/ch4/netmod/efarm/efarm_dynproc_core.c

errnames_txt_files += src/mpid/ch4/netmod/efarm/errnames.txt

endif BUILD_CH4_NETMOD_EFARM
