# Spack recipe for efarm: the EFA RDM protocol v4 engine (libefarm), the efasim
# emulator, the tools, and the sources of MPICH's ch4:efarm netmod that the
# mpich recipe of this repository builds into MPICH (mpich +efarm).
#
# efarm has no release tarball yet: build from a checkout with
#   spack repo add packaging/spack
#   spack dev-build -d . efarm@main
# (or `spack develop efarm@main` in an environment).

from spack.package import *


class Efarm(AutotoolsPackage):
    """EFA RDM protocol v4 on libibverbs and libefa, with no libfabric underneath:
    the protocol engine of MPICH's ch4:efarm netmod, efasim (a user-space EFA
    device for machines without one) and the efarm-info, efarm-pktdump and
    efarm-pingpong tools."""

    maintainers("efarm")
    license("BSD-3-Clause")

    version("main")

    variant("tests", default=False, description="Run efarm's unit tests (make check) after the build")

    depends_on("c", type="build")
    depends_on("autoconf", type="build")
    depends_on("automake", type="build")
    depends_on("libtool", type="build")
    depends_on("m4", type="build")
    depends_on("pkgconfig", type="build")
    depends_on("hwloc@2:")
    depends_on("rdma-core")  # libibverbs and libefa (the system's EFA provider)

    force_autoreconf = True

    def autoreconf(self, spec, prefix):
        Executable("./autogen.sh")()

    def configure_args(self):
        return ["--disable-silent-rules"]

    def check(self):
        if self.spec.satisfies("+tests"):
            make("check")

    def setup_run_environment(self, env):
        # Where the MPICH recipe (and a user) finds the netmod and its prepare script.
        env.set("EFARM_MPICH_NETMOD", self.prefix.share.efarm.mpich)
