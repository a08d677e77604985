/*
 * Seeing the wire (EFARM_LOG_LEVEL=data, EFARM_CAPTURE): every packet an
 * endpoint posts and every one it receives. A data log entry is a header line
 * and a hex line that efarm-pktdump --log (or plain efarm-pktdump, given the
 * hex) decodes, then the decoded fields; a capture record goes to the pcap
 * file (efarm_capture.h). Only endpoints with ep->observe come here, so the
 * packet paths pay one predictable branch when neither is on.
 */
#include <stdio.h>
#include <stdlib.h>

#include "efarm_capture.h"
#include "efarm_log.h"
#include "efarm_pkt.h"
#include "proto_internal.h"
#include "proto_peers.h"

/*
 * One data log entry: the header line, the hex line, the decoded fields. It is
 * built in memory and written at once, so the entries of processes sharing a
 * stderr file never interleave (a regular file's offset moves atomically).
 */
static void log_entry(const char *head, const uint8_t *p, uint32_t len)
{
    char who[64], *text = NULL;
    size_t n = 0;
    FILE *out = open_memstream(&text, &n);
    struct efarm_pkt pkt;
    int ret;

    if (!out)
        return;
    efarm_log_who(who, sizeof(who));
    fprintf(out, "%s data: %s\n%s hex:", who, head, who);
    for (uint32_t i = 0; i < len; i++)
        fprintf(out, " %02x", p[i]);
    fputc('\n', out);
    ret = efarm_pkt_decode(p, len, &pkt);
    if (ret == 0)
        efarm_pkt_print_text(out, &pkt);
    else
        fprintf(out, "(does not decode: %s)\n", efarm_strerror(ret));
    if (fclose(out) == 0)
        fwrite(text, 1, n, stderr);
    free(text);
}

void efarm_observe_tx(const struct efarm_ep *ep, const struct efarm_txpkt *tx)
{
    const struct efarm_peer *peer = &ep->peers[tx->peer];

    if (efarm_log_level() >= EFARM_LOG_DATA) {
        char head[160];

        snprintf(head, sizeof(head), "ep %u tx %s to peer %u (QPN %u), %u bytes", efarm_ep_qpn(ep),
                 efarm_pkt_type_info(tx->type)->name, tx->peer, peer->qpn, tx->len);
        log_entry(head, tx->buf, tx->len);
    }
    if (efarm_capture_on()) {
        struct efarm_capture_rec rec = {EFARM_CAPTURE_TX, efarm_ep_qpn(ep), peer->qpn, tx->peer,
                                        efarm_peer_gid(peer)};

        efarm_capture_write(&rec, tx->buf, tx->len);
    }
}

void efarm_observe_rx(const struct efarm_ep *ep, const struct efarm_dev_cqe *cqe)
{
    efarm_peer_t peer = cqe->ahn == EFARM_DEV_AHN_UNKNOWN
                            ? EFARM_PEER_NONE
                            : efarm_peer_by_ahn(ep, cqe->ahn, (uint16_t)cqe->src_qpn);

    if (efarm_log_level() >= EFARM_LOG_DATA) {
        char head[160];

        snprintf(head, sizeof(head), "ep %u rx %s from QPN %u, %u bytes", efarm_ep_qpn(ep),
                 cqe->len ? efarm_pkt_type_info(cqe->data[0])->name : "(empty)", cqe->src_qpn,
                 cqe->len);
        log_entry(head, cqe->data, cqe->len);
    }
    if (efarm_capture_on()) {
        struct efarm_capture_rec rec = {EFARM_CAPTURE_RX, efarm_ep_qpn(ep), cqe->src_qpn,
                                        peer == EFARM_PEER_NONE ? EFARM_CAPTURE_PEER_UNKNOWN : peer,
                                        peer != EFARM_PEER_NONE ? efarm_peer_gid(&ep->peers[peer])
                                        : cqe->has_sgid         ? cqe->sgid
                                                                : NULL};

        efarm_capture_write(&rec, cqe->data, cqe->len);
    }
}
