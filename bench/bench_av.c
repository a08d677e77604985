/*
 * Scale without the machines: the memory and time an endpoint's address
 * vector costs per peer, with synthetic peers (no process behind them).
 *
 * For each N (1k, 10k, 100k by default), in a process of its own: an
 * endpoint on efasim with EFARM_AV_SIZE = N, then N raw addresses inserted
 * (G nodes of Q QPs each: a GID per node, Q = 64 ranks a node; each node's
 * address handle is created once), then first contact with every peer (the
 * per-peer state efarm creates when a peer is first sent to or heard from:
 * efarm_peer_state_get, what the engine calls then). It reports
 *   av B/peer       heap in use for the address vector before any contact:
 *                   what opening with N entries costs beyond opening with 16,
 *                   plus what the inserts allocated, over N (glibc mallinfo2:
 *                   arena bytes in use plus mmapped blocks)
 *   av MB           the same in all
 *   insert ms       time to insert the N addresses; ns/peer the same per peer
 *   contact B/peer  heap in use that first contact with every peer added, over N
 *   rss B/peer      resident memory added by inserts and contacts, over N
 * and the targets of issue 16: at most 64 B per uncontacted peer, 1 KiB per
 * contacted one, and a 100k-peer address vector in under 10 MB and 100 ms.
 *
 *   EFARM_DEVICE=sim EFARM_EFASIM_PATH=build/gcc/src/efasim/.libs bench/bench-av [N...]
 *
 * efasim's address-handle table is raised to the number of nodes
 * (EFASIM_MAX_AH, unless set): its default, 1024, is fewer than the 1563
 * nodes of 100k peers. (With it set lower, the inserts still succeed: the
 * handles beyond it are made at first post, doc/NETMOD.md.)
 *
 * Then the scale on paper (issue 56): from the figures just measured, the
 * host memory of one registration (a cache entry and its MR, measured here
 * too) and the sizes of an address handle's entry and an endpoint's pools,
 * what a rank holds and what a NIC must hold at 1k, 10k and 100k ranks on
 * p5-like and hpc7a-like nodes, against the device's limits, and which limit
 * such a job meets first. The node shapes and the device limits are stated
 * with the table (EFA publishes no max_ah or max_qp: `ibv_devinfo -v` on the
 * instance gives them; efasim's defaults stand in).
 */
#include <errno.h>
#include <malloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "efarm_byteorder.h"
#include "efarm_config.h"
#include "efarm_errno.h"
#include "efarm_proto.h"
#include "efarm_device_limits.h"
#include "efarm_mr_cache.h"
#include "efarm_proto_v4.h"
#include "proto_internal.h"
#include "proto_peers.h"
#include "resident.h"

#define QPS_PER_NODE 64

struct result {
    unsigned long n, nodes;
    double av_bytes, insert_ms, contact_bytes, rss_bytes, contact_ms;
    int err;
};

static double now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double heap_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();

    return (double)mi.uordblks + (double)mi.hblkhd;
}

/* Node n's GID (IPv4-mapped 10.x.y.z, as efasim's are) and QP q's raw address. */
static void synth_addr(unsigned long n, unsigned q, uint32_t connid,
                       uint8_t raw[EFARM_RAW_ADDR_LEN])
{
    uint32_t ip = 0x0a000000u + 1 + (uint32_t)n;

    memset(raw, 0, EFARM_RAW_ADDR_LEN);
    raw[10] = 0xff;
    raw[11] = 0xff;
    raw[12] = (uint8_t)(ip >> 24);
    raw[13] = (uint8_t)(ip >> 16);
    raw[14] = (uint8_t)(ip >> 8);
    raw[15] = (uint8_t)ip;
    efarm_store_le16(raw + offsetof(struct efarm_wire_raw_addr, qpn), (uint16_t)(1000 + q));
    efarm_store_le32(raw + offsetof(struct efarm_wire_raw_addr, connid), connid);
}

static int open_ep(uint32_t av_size, struct efarm_ep **ep)
{
    struct efarm_ep_attr a = {0};

    a.av_size = av_size;
    return efarm_ep_open(&a, ep);
}

/* One N, in this (child) process. */
static void run(unsigned long n, struct result *r)
{
    struct efarm_ep *ep;
    double h0, h1, h3, rss0, t0, t1;
    unsigned long i;

    memset(r, 0, sizeof(*r));
    r->n = n;
    r->nodes = (n + QPS_PER_NODE - 1) / QPS_PER_NODE;
    /* A first open and close: what stays allocated after the first (device, caches). */
    if ((r->err = open_ep(16, &ep)))
        return;
    efarm_ep_close(ep);
    malloc_trim(0);
    /* Opening with 16 entries: the endpoint's cost that does not grow with N. */
    h0 = heap_in_use();
    if ((r->err = open_ep(16, &ep)))
        return;
    h1 = heap_in_use() - h0;
    efarm_ep_close(ep);
    malloc_trim(0);

    h0 = heap_in_use();
    if ((r->err = open_ep((uint32_t)n, &ep)))
        return;
    rss0 = resident_bytes();
    t0 = now_ms();
    for (i = 0; i < n; i++) {
        uint8_t raw[EFARM_RAW_ADDR_LEN];
        efarm_peer_t peer;

        synth_addr(i / QPS_PER_NODE, (unsigned)(i % QPS_PER_NODE), 0x5eed0000u + (uint32_t)i, raw);
        if ((r->err = efarm_av_insert(ep, raw, &peer)))
            goto out;
        if (peer != (efarm_peer_t)i) {
            r->err = -EPROTO;
            goto out;
        }
    }
    t1 = now_ms();
    h3 = heap_in_use() - h0;
    r->insert_ms = t1 - t0;
    r->av_bytes = (h3 - h1) / (double)n; /* open(N) + inserts - open(16) */
    t0 = now_ms();
    for (i = 0; i < n; i++) {
        if (!efarm_peer_state_get(ep, (efarm_peer_t)i)) {
            r->err = -ENOMEM;
            goto out;
        }
    }
    r->contact_ms = now_ms() - t0;
    r->contact_bytes = (heap_in_use() - h0 - h3) / (double)n;
    r->rss_bytes = (resident_bytes() - rss0) / (double)n;
out:
    efarm_ep_close(ep);
}

/* Host memory of one cached registration (its entry, the MR object), over 1000 of 4 KiB. */
static void reg_cost(struct result *r)
{
    enum { NREG = 1000 };
    struct efarm_mr_ref *refs = calloc(NREG, sizeof(*refs));
    uint8_t *mem = aligned_alloc(4096, (size_t)NREG * 8192);
    struct efarm_ep *ep;
    double h0;

    memset(r, 0, sizeof(*r));
    if (!refs || !mem || (r->err = open_ep(16, &ep))) {
        r->err = r->err ? r->err : -ENOMEM;
        free(refs);
        free(mem);
        return;
    }
    h0 = heap_in_use();
    /* Every other page: no two registrations merge. */
    for (unsigned i = 0; i < NREG && !r->err; i++)
        r->err = efarm_mr_cache_get(ep->mr_cache, mem + (size_t)i * 8192, 4096,
                                    EFARM_DEV_ACCESS_REMOTE_READ, &refs[i]);
    r->av_bytes = (heap_in_use() - h0) / NREG;
    for (unsigned i = 0; i < NREG; i++)
        efarm_mr_cache_put(ep->mr_cache, &refs[i]);
    efarm_ep_close(ep);
    free(refs);
    free(mem);
}

/*
 * Node shapes: ranks a node, EFA NICs a node, each rank's rails (an endpoint
 * on each) and VCIs (an endpoint each), and how many remote NICs one endpoint
 * reaches per remote node (rail-aligned: its own rail's; one rail: every NIC
 * the remote node's ranks use).
 */
struct shape {
    const char *name;
    unsigned ranks_per_node, nics_per_node, rails, vcis, remote_nics_per_node;
};

static const struct shape g_shapes[] = {
    {"p5-like: 8 ranks (a GPU each), 32 NICs, 4 rails a rank", 8, 32, 4, 1, 1},
    {"hpc7a-like: 192 ranks (a core each), 2 NICs, 1 rail", 192, 2, 1, 1, 2},
    {"hpc7a-like: 192 ranks (a core each), 2 NICs, 1 rail", 192, 2, 1, 4, 2},
};

/* efasim's defaults stand in for the device limits EFA does not publish. */
#define PAPER_MAX_AH        1024u
#define PAPER_MAX_QP        256u
#define PAPER_MAX_REG_BYTES (96.0 * 1024 * 1024 * 1024)

static void paper(const struct result *res, unsigned nres, double reg_bytes)
{
    const struct efarm_config *c = efarm_config();
    double pools = (double)(c->rx_buffers + c->tx_pkts) * 8928.0; /* EFA's MTU */

    printf("\nscale on paper: all-to-all traffic (every rank talks to every other), from the "
           "figures above;\n  an endpoint pins %.1f MiB of pools (EFARM_RX_BUFFERS %llu + "
           "EFARM_TX_PKTS %llu x 8928 B), an address handle's entry is %zu B, a cached "
           "registration %.0f B of host memory;\n  device limits assumed: max_ah %u, max_qp %u, "
           "%.0f GiB registered (efasim's defaults; EFA publishes none)\n",
           pools / 1048576, (unsigned long long)c->rx_buffers, (unsigned long long)c->tx_pkts,
           sizeof(struct efarm_dev_ah), reg_bytes, PAPER_MAX_AH, PAPER_MAX_QP,
           PAPER_MAX_REG_BYTES / 1073741824.0);
    for (unsigned s = 0; s < sizeof(g_shapes) / sizeof(g_shapes[0]); s++) {
        const struct shape *sh = &g_shapes[s];
        unsigned eps_rank = sh->rails * sh->vcis;
        double eps_nic = (double)sh->ranks_per_node * eps_rank / sh->nics_per_node;

        printf("%s, %u VCI%s:\n", sh->name, sh->vcis, sh->vcis > 1 ? "s" : "");
        printf("%9s %6s %10s %10s %12s %12s %10s  %s\n", "ranks", "nodes", "MB/rank", "pinned MB",
               "AH/endpoint", "AH/NIC", "QP/NIC", "first limit met");
        for (unsigned k = 0; k < nres; k++) {
            const struct result *r = &res[k];
            double n = (double)r->n, nodes = n / sh->ranks_per_node;
            /* Each endpoint addresses every rank's endpoints (AV of 2x reach, as the netmod
             * sizes it), has contacted the ones it talks to, and the netmod's table holds
             * every rank's addresses (32 B each). */
            double reach = n * sh->vcis, av = r->av_bytes * 2 * reach,
                   contact = (r->contact_bytes) * (n - 1) * sh->vcis;
            double ah_ep = (nodes - 1) * sh->remote_nics_per_node, ah_nic = ah_ep * eps_nic;
            double mb = (eps_rank * (av + pools + ah_ep * (double)sizeof(struct efarm_dev_ah)) +
                         contact + 32 * reach) /
                        1e6;
            const char *first;

            if (eps_nic > PAPER_MAX_QP)
                first = "max_qp: MPI_Init fails naming it (fewer VCIs or ranks a NIC)";
            else if (ah_nic > PAPER_MAX_AH)
                first = "max_ah: handles released and made again (LRU)";
            else if (eps_nic * pools > PAPER_MAX_REG_BYTES)
                first = "registered pages: pools refused at start";
            else
                first = "none of these";
            printf("%9lu %6.0f %10.1f %10.1f %12.0f %12.0f %10.0f  %s\n", r->n, nodes, mb,
                   eps_rank * pools / 1e6, ah_ep, ah_nic, eps_nic, first);
        }
    }
}

int main(int argc, char **argv)
{
    struct result all[16];
    unsigned nall = 0;
    double reg_bytes = 0;
    unsigned long sizes[16] = {1000, 10000, 100000};
    unsigned nsizes = 3, fails = 0;
    char max_ah[32];

    if (argc > 1) {
        nsizes = 0;
        for (int i = 1; i < argc && nsizes < 16; i++) {
            char *end;
            unsigned long v = strtoul(argv[i], &end, 10);

            if (*end || v < 16 || v > 1000000) {
                fprintf(stderr, "bench-av: N must be 16 to 1000000, not %s\n", argv[i]);
                return 2;
            }
            sizes[nsizes++] = v;
        }
    }
    printf("bench-av: address vector of N synthetic peers, %d QPs a node (a GID each), on "
           "efasim\n",
           QPS_PER_NODE);
    printf("%8s %6s %10s %8s %10s %8s %12s %10s %10s\n", "peers", "nodes", "av B/peer", "av MB",
           "insert ms", "ns/peer", "contact B/p", "contact ms", "rss B/peer");
    for (unsigned k = 0; k < nsizes; k++) {
        struct result r;
        int fds[2];
        pid_t pid;

        if (pipe(fds))
            return 2;
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
            unsigned long nodes = (sizes[k] + QPS_PER_NODE - 1) / QPS_PER_NODE;

            close(fds[0]);
            snprintf(max_ah, sizeof(max_ah), "%lu", nodes + 64);
            setenv("EFASIM_MAX_AH", max_ah, 0);
            run(sizes[k], &r);
            if (write(fds[1], &r, sizeof(r)) != (ssize_t)sizeof(r))
                _exit(3);
            _exit(0);
        }
        close(fds[1]);
        if (pid < 0 || read(fds[0], &r, sizeof(r)) != (ssize_t)sizeof(r)) {
            fprintf(stderr, "bench-av: the run of %lu peers died\n", sizes[k]);
            fails++;
            close(fds[0]);
            waitpid(pid, NULL, 0);
            continue;
        }
        close(fds[0]);
        waitpid(pid, NULL, 0);
        if (r.err) {
            fprintf(stderr, "bench-av: %lu peers: %s\n", sizes[k], efarm_strerror(r.err));
            fails++;
            continue;
        }
        all[nall++] = r;
        printf("%8lu %6lu %10.1f %8.2f %10.2f %8.0f %12.1f %10.2f %10.1f\n", r.n, r.nodes,
               r.av_bytes, r.av_bytes * (double)r.n / 1e6, r.insert_ms,
               r.insert_ms * 1e6 / (double)r.n, r.contact_bytes, r.contact_ms, r.rss_bytes);
        printf("bench-av: %lu peers: uncontacted %.1f B/peer (target 64: %.2fx), contacted "
               "%.1f B/peer (target 1024: %.2fx)",
               r.n, r.av_bytes, r.av_bytes / 64, r.av_bytes + r.contact_bytes,
               (r.av_bytes + r.contact_bytes) / 1024);
        if (r.n == 100000)
            printf(", AV %.2f MB (target 10: %.2fx), insert %.1f ms (target 100: %.2fx)",
                   r.av_bytes * (double)r.n / 1e6, r.av_bytes * (double)r.n / 1e7, r.insert_ms,
                   r.insert_ms / 100);
        printf("\n");
    }
    {
        struct result r;
        int fds[2];
        pid_t pid;

        if (pipe(fds))
            return 2;
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
            close(fds[0]);
            reg_cost(&r);
            _exit(write(fds[1], &r, sizeof(r)) == (ssize_t)sizeof(r) ? 0 : 3);
        }
        close(fds[1]);
        if (pid < 0 || read(fds[0], &r, sizeof(r)) != (ssize_t)sizeof(r) || r.err) {
            fprintf(stderr, "bench-av: the registration run failed\n");
            fails++;
        } else {
            reg_bytes = r.av_bytes;
        }
        close(fds[0]);
        waitpid(pid, NULL, 0);
    }
    if (nall)
        paper(all, nall, reg_bytes);
    return fails ? 1 : 0;
}
