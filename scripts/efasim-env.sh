# shellcheck shell=bash
# Sourced (bash) by the scripts that run MPI jobs on efasim: the environment
# that puts efarm on efasim through one of its two front ends.
#
#   verbs   efasim's drop-in libibverbs/libefa, loaded by efarm itself
#           (EFARM_DEVICE=sim)
#   kernel  the system's rdma-core (libibverbs, libefa) on efasim's emulated
#           uverbs device: efarm takes the path it takes on EFA
#           (EFARM_DEVICE=efa), with efasim's kernel front end preloaded
#           (efasim-info --env=kernel)
#
# efasim_device_env FRONT_END PREFIX: sets the array device_env to the
# VAR=VALUE words of that environment (for env(1)), with PREFIX the install
# that holds efasim-info (MPICH's, where scripts/mpich-build.sh installs efarm).
# Returns nonzero, with a message, for an unknown front end or when the kernel
# front end's environment cannot be had.
efasim_device_env() {
    local line info=$2/bin/efasim-info
    case $1 in
    verbs) device_env=(EFARM_DEVICE=sim) ;;
    kernel)
        if [ ! -x "$info" ]; then
            echo "efasim-env: no $info to tell the kernel front end's environment" >&2
            return 1
        fi
        device_env=(EFARM_DEVICE=efa)
        while IFS= read -r line; do
            case $line in
            export\ *=*) eval "device_env+=(${line#export })" ;;
            esac
        done < <("$info" --env=kernel) || return 1
        [ ${#device_env[@]} -gt 1 ] || {
            echo "efasim-env: $info --env=kernel printed no environment" >&2
            return 1
        }
        ;;
    *)
        echo "efasim-env: front end '$1' is neither verbs nor kernel" >&2
        return 1
        ;;
    esac
}

# efasim_topology SYSFS XML: writes XML, this machine's hwloc topology (lstopo) with
# a host bridge holding one PCI function per efasim device of efasim's sysfs view (its
# PCI address, vendor and device ids) and the device under it, as hwloc shows an EFA NIC. MPICH's
# ch4:ofi places each NIC libfabric reports in hwloc's topology by its PCI address and
# asserts that it is there (MPIR_hwtopo_get_dev_parent_by_pci, from ofi_nic.c); hwloc
# reads the real /sys, where efasim's PCI functions do not exist. Needs
# lstopo-no-graphics (hwloc-nox).
efasim_topology() {
    local sysfs=$1 xml=$2 d devs=()
    for d in "$sysfs"/class/infiniband/*; do
        [ -e "$d/device/vendor" ] || continue
        devs+=("$(basename "$d") $(basename "$(readlink -f "$d/device")") $(cat "$d/device/vendor") $(cat "$d/device/device")")
    done
    [ ${#devs[@]} -gt 0 ] || { echo "no efasim device in $sysfs" >&2; return 1; }
    lstopo-no-graphics --of xml >"$xml.host" || return 1
    # Insert before the Machine object's closing tag (the last one at its indentation),
    # with gp_index values above every one in use.
    awk -v devs="$(printf '%s\n' "${devs[@]}")" '
        { line[NR] = $0; if ($0 ~ /^  <\/object>$/) last = NR
          if (match($0, /gp_index="[0-9]+"/)) { g = substr($0, RSTART + 10, RLENGTH - 11) + 0; if (g > gp) gp = g } }
        END {
            if (!last) exit 1
            n = split(devs, d, "\n")
            for (i = 1; i <= NR; i++) {
                if (i == last) {
                    printf "    <object type=\"Bridge\" gp_index=\"%d\" bridge_type=\"0-1\" depth=\"0\">\n", ++gp
                    for (k = 1; k <= n; k++) {
                        split(d[k], f, " "); sub(/^0x/, "", f[3]); sub(/^0x/, "", f[4])
                        printf "      <object type=\"PCIDev\" gp_index=\"%d\" pci_busid=\"%s\" pci_type=\"0200 [%s:%s] [0000:0000] 00\" pci_link_speed=\"0.000000\">\n", ++gp, f[2], f[3], f[4]
                        printf "        <object type=\"OSDev\" gp_index=\"%d\" name=\"%s\" osdev_type=\"3\"/>\n", ++gp, f[1]
                        printf "      </object>\n"
                    }
                    printf "    </object>\n"
                }
                print line[i]
            }
        }' "$xml.host" >"$xml" && rm -f "$xml.host"
}
