#!/usr/bin/env bash
# Run a command under a time limit, and when it hangs, say where: like
# `timeout -k 10 SECONDS CMD`, but before killing it prints the stack of every
# thread of every process the command started (the MPI ranks, under mpiexec and
# hydra's proxies), so a hang in a test is a failure with the stacks of both ranks.
#
#   scripts/hang-guard.sh SECONDS CMD [ARG...]
#
# Exit status: the command's, or 124 when SECONDS passed (as timeout(1)). On a
# hang, stdout gets, per process of the command's tree other than mpiexec, hydra's
# proxies and shells:
#   hang-guard: CMD hung after SECONDS s; stacks of its processes follow
#   hang-guard: stack of PID (NAME)
#   <gdb's `thread apply all bt`>
# then every process of the tree gets SIGTERM, and SIGKILL 10 s later. gdb attaches
# with ptrace: as root, or where /proc/sys/kernel/yama/ptrace_scope allows a
# process to trace its descendants (1, Debian's default, does). Without gdb the
# stacks are replaced by one line that says so.
set -u

if [ $# -lt 2 ] || ! [[ $1 =~ ^[0-9]+$ ]]; then
    echo "usage: $0 SECONDS CMD [ARG...]" >&2
    exit 2
fi
limit=$1
shift

# tree PID: PID and its descendants, parents first.
tree() {
    local p
    echo "$1"
    for p in $(ps -o pid= --ppid "$1" 2>/dev/null); do
        tree "$p"
    done
}

dump() { # PID of the command
    local p name
    echo "hang-guard: $* hung after $limit s; stacks of its processes follow"
    for p in $(tree "$1"); do
        name=$(cat "/proc/$p/comm" 2>/dev/null) || continue
        case $name in
        mpiexec* | hydra_* | bash | sh | dash | env | timeout | hang-guard.sh) continue ;;
        esac
        echo "hang-guard: stack of $p ($name)"
        if command -v gdb >/dev/null; then
            timeout 60 gdb -q -nx -batch -p "$p" -ex 'set pagination off' \
                -ex 'thread apply all bt' 2>&1 |
                grep -v -e '^\[New LWP' -e '^\[Thread debugging' -e '^Using host libthread_db' \
                    -e '^warning: ' -e '^[[:space:]]*$'
        else
            echo "hang-guard: no gdb here: stack not dumped"
        fi
    done
}

"$@" &
pid=$!
end=$((SECONDS + limit))
while kill -0 "$pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$end" ]; then
        dump "$pid" "$1"
        procs=$(tree "$pid")
        # shellcheck disable=SC2086 # a list of pids
        kill -TERM $procs 2>/dev/null
        for _ in $(seq 1 100); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        # shellcheck disable=SC2086
        kill -KILL $procs 2>/dev/null
        wait "$pid" 2>/dev/null
        exit 124
    fi
    # Short sleeps first, so a quick command costs little.
    if [ $((SECONDS + limit - end)) -lt 2 ]; then sleep 0.05; else sleep 0.5; fi
done
wait "$pid"
