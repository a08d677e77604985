/*
 * efarm-info: every efarm tunable (EFARM_*, also MPIR_CVAR_CH4_EFARM_*) with
 * its default, what it allows, the value in force and what set it, and why it
 * exists (a refused value shows as REFUSED, with the reason, and efarm-info
 * then stops with status 1: efarm would not start); the protocol engine's per-object sizes and its
 * counters; then the devices efarm sees and their capabilities, and the
 * subprotocol selection policy on the first of them (its profile, thresholds
 * and, per message size, the subprotocol picked and why).
 *
 *   efarm-info             all of it
 *   efarm-info --policy    only the selection policy
 */
#include <stdio.h>
#include <string.h>

#include "efarm_config.h"
#include "efarm_device.h"
#include "efarm_errno.h"
#include "efarm_nic.h"
#include "efarm_proto.h"

static int print_policy(void)
{
    struct efarm_device_caps caps[16];
    int n = efarm_device_query_all(caps, 16);

    if (n <= 0) {
        printf("\nno devices (%s): the policy depends on the device\n",
               efarm_strerror(n ? n : -19));
        return 1;
    }
    printf("\n");
    return efarm_policy_print(stdout, caps[0].name, caps[0].max_msg_size) ? 1 : 0;
}

int main(int argc, char **argv)
{
    struct efarm_device_caps caps[16];
    struct efarm_proto_sizes sizes;
    const char *refused;
    int n;

    if (argc > 2 || (argc == 2 && strcmp(argv[1], "--policy"))) {
        fprintf(stderr, "usage: efarm-info [--policy]\n");
        return 2;
    }
    if (argc == 1)
        efarm_config_print(stdout);
    if (efarm_config_status(&refused)) {
        if (argc == 2)
            fprintf(stderr, "%s\n", refused);
        fprintf(stderr,
                "efarm-info: a tunable was refused (above); efarm does not start with it\n");
        return 1;
    }
    if (argc == 2)
        return print_policy();
    efarm_proto_sizes(NULL, &sizes);
    const struct efarm_config *c = efarm_config();

    printf("\nprotocol engine memory: %u bytes per address-vector entry (every peer), %u per "
           "peer state (created on first contact), %u per reorder window (EFARM_RECVWIN slots, "
           "a peer holds one only while its packets wait for earlier ones), %u per operation, "
           "%u per send buffer descriptor, %u per stored packet descriptor\n",
           sizes.peer, sizes.peer_state, sizes.window, sizes.op, sizes.tx_pkt, sizes.rx_pkt);
    printf("\nunexpected messages (arrived before their receive): no count limit and no "
           "operation each; each costs a record of %u bytes (its matcher entry included) plus a "
           "copy of its packets in blocks of 256 B, 1 KiB, 4 KiB or an MTU, all counted against "
           "EFARM_UNEXP_BYTES (%llu, then receive buffers are held: senders see RNR) and "
           "EFARM_UNEXP_MAX_BYTES (%llu, the memory budget); storage grows in chunks as messages "
           "wait. When every receive buffer holds a waiting packet nothing more can arrive: a "
           "warning names EFARM_UNEXP_MAX_BYTES, and after EFARM_RX_FULL_TIMEOUT_MS (%llu ms; 0: "
           "never) of progress without a receive the endpoint fails (PROTO_RX_FULL)\n",
           sizes.unexp, (unsigned long long)c->unexp_bytes, (unsigned long long)c->unexp_max_bytes,
           (unsigned long long)c->rx_full_timeout_ms);
    printf("\nprotocol engine counters:\n");
    efarm_counters_describe(stdout);
    printf("\ndevice: %s\n", efarm_device_choice()->reason);
    n = efarm_device_query_all(caps, 16);
    if (n < 0) {
        printf("no devices: %s\n", efarm_strerror(n));
        return 1;
    }
    printf("%d device(s) through %s:\n", n,
           efarm_device_kind() == EFARM_DEVICE_SIM ? "efasim" : "the system's rdma-core");
    for (int i = 0; i < n && i < 16; i++)
        printf("  %s: mtu %u, inline %u, sq %u, rq %u, sge %u/%u, rdma max %llu, read %s, "
               "write %s, rnr retry %s, cq sgid %s, device version %u\n",
               caps[i].name, caps[i].max_msg_size, caps[i].inline_size, caps[i].max_sq_wr,
               caps[i].max_rq_wr, caps[i].max_sq_sge, caps[i].max_rq_sge,
               (unsigned long long)caps[i].max_rdma_size, caps[i].rdma_read ? "yes" : "no",
               caps[i].rdma_write ? "yes" : "no", caps[i].rnr_retry ? "yes" : "no",
               caps[i].cq_with_sgid ? "yes" : "no", caps[i].device_version);
    {
        /* What one MPI rank, alone on this host and not bound, would take. */
        struct efarm_nic_choice nic;
        char name[EFARM_DEV_NAME_MAX];
        int ret = efarm_dev_choose_nic(0, 1, NULL, name, &nic);

        if (ret < 0)
            printf("NIC choice: %s\n", efarm_strerror(ret));
        else
            printf("NIC a lone, unbound rank takes: %s (%s); EFARM_NIC_VERBOSE=1 prints each MPI "
                   "rank's\n",
                   name, nic.reason);
    }
    return print_policy();
}
