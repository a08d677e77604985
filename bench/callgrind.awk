# One callgrind output file, read for the bench scripts that count instructions
# (run-instr-bench.sh, run-engine-instr.sh):
#
#     awk -v mode=mpi|engine [-v byfn=1] -f bench/callgrind.awk CALLGRIND-FILE
#     awk -v mode=calls -v patterns="ERE ..." [-v exclude=ERE] -f bench/callgrind.awk FILE
#
# mode=mpi and mode=engine print self instructions per object class, "CLASS COUNT"
# lines. Run the program under callgrind with --skip-plt=no: callgrind's default
# charges a PLT stub to its caller, and with it, now and then, more (ch4:ucx's call
# of ucp_worker_progress was charged 0 to 175 instructions per round trip beyond the
# stub's one jump, varying from phase to phase); kept apart, every function's count
# is a whole multiple of its calls, and a stub's own instructions (its jump) are
# charged here to the object whose calls go through it, as callgrind's default
# means to.
#
# mode=mpi: an MPI program's objects, mpich (libmpi, libmpich), efarm (libefarm),
# libfabric, ucp, uct, ucs, device (efasim), rdma-core (libibverbs, libefa), libc,
# other.
# mode=engine: a program on the engine alone (tools/efarm-pingpong, which links
# libefarm in, or fabtests' fi_pingpong on libfabric): engine (libefarm, or
# libfabric), program (the tool's own functions, told apart from the engine's by
# their source file under tools/), device, rdma-core, libc, other; and a last line
# "calls N": the calls from other objects into the verbs provider's most called
# function, its CQ poll (Debian's libefa has no symbols: it is found by its count).
# -v byfn=1 (either mode) also prints rdma-core's count function by function, as
# "rdma-core:FUNCTION COUNT" lines beside the "rdma-core" total (with a build of
# rdma-core that has symbols: scripts/rdma-core-build.sh).
#
# mode=calls prints one line: for each ERE of patterns (space-separated), the calls,
# from every caller, of the functions whose names match it and not exclude.

# callgrind compresses names: "(id) name" the first time, "(id)" after.
function named(kind, s,   id, rest) {
    if (match(s, /^\([0-9]+\)/)) {
        id = substr(s, 1, RLENGTH); rest = substr(s, RLENGTH + 2)
        if (rest != "") name[kind, id] = rest
        return name[kind, id]
    }
    return s
}
# Order matters: "libefa" is a prefix of "libefarm".
function class(o) {
    if (mode == "engine" && o ~ /\/lib(efarm|fabric)[^\/]*\.so/) return "engine"
    if (o ~ /\/libefarm[^\/]*\.so/) return "efarm"
    if (o ~ /\/efasim\// || o ~ /\/libefasim[^\/]*\.so/) return "device"
    if (o ~ /\/lib(ibverbs|efa)[^\/]*\.so/) return "rdma-core"
    if (o ~ /\/libc\.so/) return "libc"
    if (mode == "engine") {
        if (o ~ /\/(efarm-pingpong|lt-efarm-pingpong)$/) return "efarm-program"
        if (o ~ /\/fi_pingpong$/) return "program"
        return "other"
    }
    if (o ~ /\/libmpi(ch)?[^\/]*\.so/) return "mpich"
    if (o ~ /\/libfabric[^\/]*\.so/) return "libfabric"
    if (o ~ /\/libucp[^\/]*\.so/) return "ucp"
    if (o ~ /\/libuct[^\/]*\.so/) return "uct"
    if (o ~ /\/libuc[sm][^\/]*\.so/) return "ucs"
    return "other"
}
# The verbs provider: Debian's libefa, or efasim's drop-in libibverbs.
function provider(o) { return o ~ /\/libefa\.so/ || o ~ /\/efasim\/.*\/libibverbs\.so/ }
BEGIN {
    if (mode != "mpi" && mode != "engine" && mode != "calls") {
        print "callgrind.awk: mode must be mpi, engine or calls, not '" mode "'" > "/dev/stderr"
        bad = 1; exit 2
    }
    npat = split(patterns, pat, " ")
}
mode == "calls" && /^c?fn=/ { f = named("fn", substr($0, index($0, "=") + 1)); next }
mode == "calls" && /^calls=/ {
    for (i = 1; i <= npat; i++)
        if (f ~ pat[i] && (exclude == "" || f !~ exclude)) n[i] += substr($1, 7) + 0
    next
}
mode == "calls" { next }
/^ob=/ { ob = named("ob", substr($0, 4)); obclass = class(ob); cob = ob; next }
/^cob=/ { cob = named("ob", substr($0, 5)); next }
/^fl=/ { fl = named("fl", substr($0, 4)); next }
/^fi=|^fe=/ { named("fl", substr($0, 4)); next }
/^cfi=|^cfl=/ { named("fl", substr($0, 5)); next }
/^fn=/ {
    fn = named("fn", substr($0, 4)); plt = fn ~ / \[PLT\]$/; cob = ob
    cur = obclass
    # efarm-pingpong links the engine in: its functions are the engine's but for
    # those of tools/ (the program), told apart by their source file.
    if (cur == "efarm-program") cur = fl ~ /\/tools\// ? "program" : "engine"
    next
}
/^cfn=/ { cfn = named("fn", substr($0, 5)); next }
/^calls=/ {
    if (!plt && cfn ~ / \[PLT\]$/) owner[cfn] = cur
    if (provider(cob) && !provider(ob)) vcalls[cfn] += substr($1, 7) + 0
    skip = 1; cob = ob; next
}
/^[0-9+*-]/ {
    # the line after calls= is the call's inclusive cost, not this function's own
    if (skip) { skip = 0; next }
    if (plt) stub[fn] += $NF; else cost[cur] += $NF
    if (byfn && !plt && cur == "rdma-core") fcost["rdma-core:" fn] += $NF
    next
}
END {
    if (bad) exit 2
    if (mode == "calls") {
        for (i = 1; i <= npat; i++) printf("%s%d", i > 1 ? " " : "", n[i] + 0)
        printf("\n")
        exit 0
    }
    for (s in stub) cost[(s in owner) ? owner[s] : "other"] += stub[s]
    for (c in cost) print c, cost[c]
    if (byfn) {
        # PLT stubs charged to rdma-core (its calls between its two libraries)
        rest = cost["rdma-core"]
        for (c in fcost) { print c, fcost[c]; rest -= fcost[c] }
        if (rest != 0) print "rdma-core:(PLT)", rest
    }
    if (mode == "engine") {
        for (f in vcalls) if (vcalls[f] > most) most = vcalls[f]
        print "calls", most + 0
    }
}
