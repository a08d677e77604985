#!/bin/sh
# Hydra's launcher for emulated hosts: mpiexec -launcher ssh -launcher-exec
# THIS_SCRIPT calls it as ssh, "-x HOST COMMAND...". HOST is one of the
# addresses in NETNS_HOSTS ("ADDR=NAMESPACE=HOSTNAME,..."): the command (hydra's
# proxy) runs in that network namespace, in a UTS namespace of its own whose
# host name is HOSTNAME, with EFASIM_ADDR=ADDR so efasim binds the
# namespace's address. run-two-hosts.sh sets up the namespaces.
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
    shift
done
host=${1:-}
[ -n "$host" ] || { echo "netns-launcher: no host" >&2; exit 2; }
shift
ns= name=
for entry in $(echo "${NETNS_HOSTS:-}" | tr ',' ' '); do
    if [ "${entry%%=*}" = "$host" ]; then
        rest=${entry#*=}
        ns=${rest%%=*}
        name=${rest#*=}
    fi
done
[ -n "$ns" ] || { echo "netns-launcher: $host is not in NETNS_HOSTS ($NETNS_HOSTS)" >&2; exit 2; }
# The command arrives as ssh would send it to a remote shell: one string to evaluate.
exec ip netns exec "$ns" unshare --uts sh -c "hostname $name && EFASIM_ADDR=$host && export EFASIM_ADDR && exec $*"
