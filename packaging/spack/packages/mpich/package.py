# MPICH with efarm's ch4 netmod: Spack's own mpich recipe plus a variant.
#
#   spack repo add packaging/spack      # this repository's recipes first
#   spack install mpich@4.3.2 +efarm
#
# +efarm puts the netmod into the MPICH tree (efarm's installed
# share/efarm/mpich/mpich-netmod-prepare.sh), regenerates it with MPICH's
# autogen.sh and configures --with-device=ch4:efarm --with-efarm=<efarm>.
# MPICH 4.0.2 and 4.3.x carry it (efarm's doc/MPICH-VERSIONS.md); 4.1 and 4.2
# are refused by the netmod itself.

from spack.package import *
from spack.pkg.builtin.mpich import Mpich as BuiltinMpich


class Mpich(BuiltinMpich):
    variant(
        "efarm",
        default=False,
        description="ch4:efarm netmod: MPI over EFA by protocol v4 on libibverbs/libefa",
    )

    depends_on("efarm", when="+efarm")
    for tool in ("autoconf", "automake", "libtool", "m4", "python"):
        depends_on(tool, type="build", when="+efarm")

    conflicts("+efarm", when="@:4.0.1", msg="ch4:efarm needs MPICH 4.0.2 or 4.3")
    conflicts("+efarm", when="@4.1:4.2", msg="ch4:efarm supports MPICH 4.0.2 and 4.3, not 4.1 or 4.2")
    conflicts("+efarm", when="device=ch3", msg="ch4:efarm is a ch4 netmod")
    conflicts("+efarm", when="netmod=ofi", msg="+efarm replaces the netmod")
    conflicts("+efarm", when="netmod=ucx", msg="+efarm replaces the netmod")

    @run_before("autoreconf")
    def efarm_netmod(self):
        if not self.spec.satisfies("+efarm"):
            return
        prepare = Executable(
            join_path(self.spec["efarm"].prefix.share.efarm.mpich, "mpich-netmod-prepare.sh")
        )
        prepare(self.stage.source_path)

    def autoreconf(self, spec, prefix):
        if spec.satisfies("+efarm"):
            # A release tarball has its modules' configure scripts; the netmod's
            # files (control variables, error messages, Makefile fragment) need
            # MPICH's own generators.
            Executable("./autogen.sh")("-quick", "-without-hwloc", "-without-json", "-without-hydra")
            return
        super().autoreconf(spec, prefix)

    def configure_args(self):
        args = super().configure_args()
        if self.spec.satisfies("+efarm"):
            args = [a for a in args if not a.startswith("--with-device=")]
            args += [
                "--with-device=ch4:efarm",
                "--with-efarm={0}".format(self.spec["efarm"].prefix),
            ]
        return args
