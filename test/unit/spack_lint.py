#!/usr/bin/env python3
"""Check efarm's Spack recipes without Spack.

    python3 test/unit/spack_lint.py packaging/spack

Each packaging/spack/packages/<name>/package.py must compile, and must load
against a stand-in of Spack's package API that records what the recipe
declares: the class named after the package, its versions, variants,
dependencies and conflicts, and the methods Spack calls (configure_args, the
autoreconf hook). Then the recipe's logic runs on stand-in specs: efarm's
configure arguments, and mpich+efarm's, which must replace the device with
ch4:efarm and name efarm's prefix, while mpich~efarm keeps Spack's own
arguments. Prints one line per check and exits 1 at the first failure.
"""
import ast
import os
import sys
import types


class Recorder:
    """What a recipe declared, class by class."""

    def __init__(self):
        self.calls = []

    def directive(self, name):
        def record(*args, **kwargs):
            self.calls.append((name, args, kwargs))
            return lambda f: f

        return record


REC = Recorder()


class Prefix(str):
    def __getattr__(self, name):
        return Prefix(os.path.join(self, name))


class Spec:
    def __init__(self, name, variants, prefix="/opt/" + "x"):
        self.name = name
        self.variants = set(variants)
        self.prefix = Prefix(prefix)
        self.deps = {}

    def satisfies(self, constraint):
        if constraint.startswith("+"):
            return constraint[1:] in self.variants
        if constraint.startswith("~"):
            return constraint[1:] not in self.variants
        return False

    def __contains__(self, constraint):
        return self.satisfies(constraint)

    def __getitem__(self, name):
        return self.deps[name]


class BasePackage:
    def __init__(self, spec):
        self.spec = spec

    def configure_args(self):
        return ["--with-device=ch4:ofi", "--enable-shared"]

    def autoreconf(self, spec, prefix):
        REC.calls.append(("builtin-autoreconf", (), {}))


def stand_in_spack():
    spack = types.ModuleType("spack")
    package = types.ModuleType("spack.package")
    for name in ("version", "variant", "depends_on", "conflicts", "maintainers", "license",
                 "provides", "patch", "resource"):
        setattr(package, name, REC.directive(name))
    package.run_before = REC.directive("run_before")
    package.run_after = REC.directive("run_after")
    package.AutotoolsPackage = BasePackage
    package.Executable = lambda path: (lambda *a, **k: REC.calls.append(("run", (path,) + a, k)))
    package.make = lambda *a, **k: REC.calls.append(("make", a, k))
    package.join_path = os.path.join
    package.__all__ = [n for n in dir(package) if not n.startswith("_")]
    pkg = types.ModuleType("spack.pkg")
    builtin = types.ModuleType("spack.pkg.builtin")
    mpich = types.ModuleType("spack.pkg.builtin.mpich")

    class Mpich(BasePackage):
        pass

    mpich.Mpich = Mpich
    for name, mod in (("spack", spack), ("spack.package", package), ("spack.pkg", pkg),
                      ("spack.pkg.builtin", builtin), ("spack.pkg.builtin.mpich", mpich)):
        sys.modules[name] = mod


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what)
    if not ok:
        sys.exit(1)


def load(path, name):
    source = open(path).read()
    ast.parse(source, path)  # a syntax error fails here, with its line
    check(True, "%s parses" % path)
    module = types.ModuleType("recipe_" + name)
    REC.calls = []
    exec(compile(source, path, "exec"), module.__dict__)
    cls_name = "".join(part.capitalize() for part in name.split("-"))
    check(hasattr(module, cls_name), "%s defines class %s" % (path, cls_name))
    return getattr(module, cls_name), list(REC.calls)


def declared(calls, kind):
    return [c for c in calls if c[0] == kind]


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else "packaging/spack"
    stand_in_spack()
    repo = open(os.path.join(root, "repo.yaml")).read()
    check("namespace: efarm" in repo, "repo.yaml names the namespace efarm")
    recipes = sorted(os.listdir(os.path.join(root, "packages")))
    check(recipes == ["efarm", "mpich"], "recipes present: %s" % ", ".join(recipes))

    Efarm, calls = load(os.path.join(root, "packages/efarm/package.py"), "efarm")
    deps = [c[1][0] for c in declared(calls, "depends_on")]
    for dep in ("hwloc@2:", "rdma-core", "autoconf", "automake", "libtool", "pkgconfig"):
        check(dep in deps, "efarm depends on %s" % dep)
    check(declared(calls, "version") != [], "efarm declares a version")
    efarm = Efarm(Spec("efarm", []))
    check(isinstance(efarm.configure_args(), list), "efarm's configure_args is a list")
    REC.calls = []
    efarm.autoreconf(efarm.spec, efarm.spec.prefix)
    check(("run", ("./autogen.sh",), {}) in REC.calls, "efarm's autoreconf runs autogen.sh")

    Mpich, calls = load(os.path.join(root, "packages/mpich/package.py"), "mpich")
    variants = [c[1][0] for c in declared(calls, "variant")]
    check("efarm" in variants, "mpich declares the efarm variant")
    efarm_deps = [c for c in declared(calls, "depends_on") if c[1][0] == "efarm"]
    check(efarm_deps and efarm_deps[0][2].get("when") == "+efarm",
          "mpich depends on efarm when +efarm")
    refused = {c[2].get("when") for c in declared(calls, "conflicts") if c[1][0] == "+efarm"}
    for when in ("@4.1:4.2", "device=ch3"):
        check(when in refused, "mpich+efarm conflicts with %s" % when)

    spec = Spec("mpich", ["efarm"])
    spec.deps["efarm"] = Spec("efarm", [], "/opt/efarm")
    args = Mpich(spec).configure_args()
    check("--with-device=ch4:efarm" in args and "--with-efarm=/opt/efarm" in args,
          "mpich+efarm configures ch4:efarm with efarm's prefix")
    check(not [a for a in args if a.startswith("--with-device=") and a != "--with-device=ch4:efarm"],
          "mpich+efarm drops Spack's own device")
    check("--enable-shared" in args, "mpich+efarm keeps Spack's other arguments")
    plain = Mpich(Spec("mpich", []))
    check(plain.configure_args() == ["--with-device=ch4:ofi", "--enable-shared"],
          "mpich~efarm keeps Spack's arguments as they are")
    REC.calls = []
    m = Mpich(spec)
    m.stage = types.SimpleNamespace(source_path="/tmp/mpich-src")
    m.efarm_netmod()
    check(("run", ("/opt/efarm/share/efarm/mpich/mpich-netmod-prepare.sh", "/tmp/mpich-src"), {})
          in REC.calls, "mpich+efarm runs efarm's installed mpich-netmod-prepare.sh on its tree")
    REC.calls = []
    m.autoreconf(spec, spec.prefix)
    check(any(c[0] == "run" and c[1][0] == "./autogen.sh" for c in REC.calls),
          "mpich+efarm regenerates the tree with MPICH's autogen.sh")
    REC.calls = []
    plain_spec = Spec("mpich", [])
    Mpich(plain_spec).autoreconf(plain_spec, plain_spec.prefix)
    check(("builtin-autoreconf", (), {}) in REC.calls, "mpich~efarm keeps Spack's autoreconf")
    print("spack recipes: 2 checked")


main()
