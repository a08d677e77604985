[#] start of __file__
dnl ch4:efarm: MPICH's configure fragment for the efarm netmod (--with-device=ch4:efarm).
dnl The netmod links libefarm, the engine installed by efarm's own build (make install):
dnl PREFIX/lib/libefarm.so and the headers in PREFIX/include/efarm, found with
dnl --with-efarm=PREFIX. scripts/mpich-build.sh in efarm's repository does all of it.
dnl
dnl MPICH_SUBCFG_AFTER=src/mpid/ch4

AC_DEFUN([PAC_SUBCFG_PREREQ_]PAC_SUBCFG_AUTO_SUFFIX,[
    AM_COND_IF([BUILD_CH4],[
        for net in $ch4_netmods ; do
            AS_IF([test "$net" = "efarm"], [
                build_ch4_netmod_efarm=yes
                AC_DEFINE([HAVE_CH4_NETMOD_EFARM], [1], [Define if the ch4:efarm netmod is built])
                dnl ch4 keeps each AV entry's is_local, so rank_is_local answers without SHM too.
                AC_DEFINE([MPIDI_BUILD_CH4_LOCALITY_INFO], [1], [CH4 should build locality info])
                dnl Under MPI_THREAD_MULTIPLE efarm needs MPICH's global critical section or,
                dnl on MPICH 5.0 and later, per-VCI sections (the netmod locks VCI 0 in its
                dnl entry points; efarm_compat.h refuses per-VCI on 4.x at compile time). ch4
                dnl defaults to per-VCI from MPICH 4.1 on (decided later in MPICH's configure,
                dnl from this variable): choose global when the user did not, as on every
                dnl version, and refuse lock-free here.
                AS_CASE([$enable_thread_cs],
                    [default|""], [enable_thread_cs=global
                        AC_MSG_NOTICE([ch4:efarm: --enable-thread-cs=global (efarm needs MPICH's global critical section)])],
                    [global], [],
                    [per-vci|per_vci], [AC_MSG_NOTICE([ch4:efarm: per-VCI critical sections (MPICH 5.0 and later; efarm_compat.h checks the version)])],
                    [AC_MSG_ERROR([ch4:efarm needs MPICH's global critical section or, on MPICH 5.0 and later, per-VCI ones: configure with --enable-thread-cs=global or per-vci, not --enable-thread-cs=$enable_thread_cs])])
            ])
        done
    ])
    AM_CONDITIONAL([BUILD_CH4_NETMOD_EFARM], [test "X$build_ch4_netmod_efarm" = "Xyes"])
])dnl

AC_DEFUN([PAC_SUBCFG_BODY_]PAC_SUBCFG_AUTO_SUFFIX,[
AM_COND_IF([BUILD_CH4_NETMOD_EFARM],[
    AC_MSG_NOTICE([RUNNING CONFIGURE FOR ch4:efarm])

    AC_ARG_WITH([efarm],
        [AS_HELP_STRING([--with-efarm=PREFIX],
            [where efarm is installed: PREFIX/include/efarm and PREFIX/lib (default: the
             compiler's search paths)])],
        [], [with_efarm=])
    AS_IF([test "x$with_efarm" = xno],
        [AC_MSG_ERROR([ch4:efarm needs efarm: do not pass --without-efarm])])
    AS_IF([test -n "$with_efarm" && test "x$with_efarm" != xyes], [
        PAC_APPEND_FLAG([-I${with_efarm}/include/efarm], [CPPFLAGS])
        PAC_APPEND_FLAG([-L${with_efarm}/lib], [LDFLAGS])
    ], [
        for efarm_dir in /usr/local/include/efarm /usr/include/efarm ; do
            AS_IF([test -f "$efarm_dir/efarm_proto.h"], [
                PAC_APPEND_FLAG([-I$efarm_dir], [CPPFLAGS])
                break
            ])
        done
    ])

    dnl efarm's public headers and library: the engine (efarm_ep_open) with its device
    dnl layer, which loads libibverbs/libefa itself at run time (EFARM_DEVICE).
    AC_CHECK_HEADER([efarm_proto.h], [],
        [AC_MSG_ERROR([efarm_proto.h not found: install efarm (make install) and pass --with-efarm=PREFIX])])
    AC_CHECK_LIB([efarm], [efarm_ep_open], [:],
        [AC_MSG_ERROR([libefarm not found or unusable: install efarm and pass --with-efarm=PREFIX])])
    PAC_LIBS_ADD([-lefarm])

    dnl rdma-core: efarm is built against its verbs ABI and loads the system's (or
    dnl efasim's) libibverbs.so.1 and libefa.so.1 at run time; a machine without the
    dnl headers has no rdma-core to run on.
    AC_CHECK_HEADER([infiniband/verbs.h], [],
        [AC_MSG_ERROR([infiniband/verbs.h not found: ch4:efarm needs rdma-core (libibverbs-dev)])])
    AC_CHECK_HEADER([infiniband/efadv.h], [],
        [AC_MSG_ERROR([infiniband/efadv.h not found: ch4:efarm needs rdma-core's libefa])],
        [#include <infiniband/verbs.h>])

    dnl hwloc: libefarm uses the system's libhwloc to choose each rank's NIC. MPICH's
    dnl embedded hwloc defines the same symbols without a prefix, so both in one
    dnl process would clash.
    AS_IF([test "x$with_hwloc" = xembedded || test "x$pac_have_hwloc" != xyes],
        [AC_MSG_ERROR([ch4:efarm needs the system hwloc that libefarm uses: install libhwloc-dev and pass --with-hwloc=/usr (MPICH chose ${with_hwloc:-none})])])
    AC_CHECK_HEADER([hwloc.h], [],
        [AC_MSG_ERROR([hwloc.h not found: ch4:efarm needs hwloc (libhwloc-dev)])])
])dnl end AM_COND_IF(BUILD_CH4_NETMOD_EFARM)
])dnl end _BODY

[#] end of __file__
