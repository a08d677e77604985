/*
 * Wire conformance, parts 2-3 (see wire_peer.h): which peer a packet is
 * from. Unknown senders are learnt from the raw-address header (section 2.2)
 * and anything else from them is dropped; packets whose connid names no peer
 * are dropped (section 4.4); a peer restarted at the same GID and QPN, in a
 * child process, is a new peer with msg_ids from 0.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "efarm_byteorder.h"
#include "efarm_errno.h"
#include "efarm_pkt.h"
#include "efarm_proto.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "test_procs.h"
#include "wire_peer.h"

/* ---- 2. Unknown senders (section 2.2) ------------------------------------------------ */

/* A REQ with the raw-address header from an address never inserted: the peer is learnt. */
EFARM_TEST(wire_unknown_sender_learnt_from_raw_address)
{
    struct efarm_req ureq = {0}, treq = {0}, sreq = {0};
    uint8_t data[300], ubuf[300], tbuf[300];
    efarm_peer_t again;
    struct wp_pkt p;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    proto_fill(data, sizeof(data), 3);
    EXPECT_RET(efarm_recv(g_ep, ubuf, sizeof(ubuf), EFARM_PEER_NONE, &ureq), 0);
    EXPECT_RET(efarm_trecv(g_ep, tbuf, sizeof(tbuf), 1, 2, 9, &treq), 0);

    send_eager(&w, EFARM_PKT_EAGER_MSGRTM, 0, 0, data, 200);
    EXPECT_TRUE(ureq.done);
    EXPECT_RET(ureq.status, 0);
    EXPECT_EQ(ureq.length, 200);
    EXPECT_MEM_EQ(ubuf, data, 200);
    EXPECT_TRUE(ureq.peer != EFARM_PEER_NONE);
    EXPECT_EQ(cnt()->implicit_peers, 1);
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    expect_engine_handshake(&p, engine_features(efarm_ep_caps(g_ep)->rdma_read, true));

    /* The same sender again, tagged: the same peer, no second learning. */
    send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 1, tag_of(9), data + 1, 250);
    EXPECT_TRUE(treq.done);
    EXPECT_EQ(treq.peer, ureq.peer);
    EXPECT_EQ(treq.tag, 9);
    EXPECT_MEM_EQ(tbuf, data + 1, 250);
    EXPECT_EQ(cnt()->implicit_peers, 1);
    EXPECT_EQ(cnt()->unknown_sender, 0);

    /* Inserting that address now names the same peer. */
    EXPECT_RET(efarm_av_insert(g_ep, w.raw, &again), 0);
    EXPECT_EQ(again, ureq.peer);

    /* The application answers the learnt peer; the engine has no HANDSHAKE from it yet. */
    EXPECT_RET(efarm_send(g_ep, ureq.peer, data, 120, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_EAGER_MSGRTM, &p);
    expect_req_opts(&p, true, false);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 0);
    EXPECT_MEM_EQ(p.pkt.payload, data, 120);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, 0);
    EXPECT_EQ(cnt()->handshakes_sent, 1);
    wp_close(&w);
    engine_close();
}

/*
 * The raw-address header's size may grow (section 3.1): a 44-byte address
 * from an unknown sender is learnt the same, and its data found after it.
 * Zero-byte messages cross both ways.
 */
EFARM_TEST(wire_unknown_sender_longer_raw_address_and_empty_messages)
{
    uint8_t data[16] = {5, 6, 7}, buf[16];
    struct efarm_req rreq = {0}, sreq = {0};
    efarm_peer_t learnt;
    struct efarm_pkt pkt;
    struct wp_pkt p;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    EXPECT_RET(efarm_trecv(g_ep, buf, sizeof(buf), 1, 2, 3, &rreq), 0);
    wp_req(&w, &pkt, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(3));
    pkt.raw_addr_size = 44;
    wp_send_settle(&w, &pkt, NULL, 0, data, 16);
    EXPECT_TRUE(rreq.done);
    EXPECT_EQ(rreq.length, 16);
    EXPECT_MEM_EQ(buf, data, 16);
    EXPECT_EQ(cnt()->implicit_peers, 1);
    learnt = rreq.peer;
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);

    EXPECT_RET(efarm_trecv(g_ep, buf, sizeof(buf), 1, 2, 3, &rreq), 0);
    send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 1, tag_of(3), NULL, 0);
    EXPECT_TRUE(rreq.done);
    EXPECT_RET(rreq.status, 0);
    EXPECT_EQ(rreq.length, 0);
    EXPECT_EQ(rreq.peer, learnt);
    EXPECT_RET(efarm_tsend(g_ep, rreq.peer, NULL, 0, 1, 2, 3, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_EAGER_TAGRTM, &p);
    expect_req_opts(&p, true, false);
    EXPECT_EQ(p.pkt.payload_length, 0);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, 0);
    wp_close(&w);
    engine_close();
}

/*
 * libfabric's own handshake trigger (a 0-byte EAGER_RTW with its raw
 * address, before a DC send) from an unknown sender: learnt, answered with
 * the HANDSHAKE, nothing written; an EAGER_RTW that would write is refused.
 */
EFARM_TEST(wire_handshake_trigger_from_peer_answered)
{
    uint8_t iov[sizeof(struct efarm_wire_rma_iov)] = {0};
    struct efarm_pkt pkt;
    struct wp_pkt p;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    efarm_pkt_init(&pkt, EFARM_PKT_EAGER_RTW);
    pkt.flags = EFARM_REQ_RMA | EFARM_REQ_OPT_RAW_ADDR_HDR;
    efarm_pkt_set(&pkt, EFARM_PKT_F_RMA_IOV_COUNT, 0);
    memcpy(pkt.raw_addr.gid, w.raw, EFARM_GID_LEN);
    pkt.raw_addr.qpn = w.qpn;
    pkt.raw_addr.connid = w.connid;
    wp_send_settle(&w, &pkt, NULL, 0, NULL, 0);
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    expect_engine_handshake(&p, engine_features(efarm_ep_caps(g_ep)->rdma_read, true));
    EXPECT_EQ(cnt()->implicit_peers, 1);
    EXPECT_EQ(cnt()->unsupported, 0);

    /* A real write naming no exposed region: refused (it touched nothing) and counted. */
    efarm_pkt_set(&pkt, EFARM_PKT_F_RMA_IOV_COUNT, 1);
    pkt.rma_iov = iov;
    wp_send_settle(&w, &pkt, NULL, 0, "xyz", 3);
    EXPECT_EQ(cnt()->unsupported, 0);
    EXPECT_EQ(cnt()->rma_refused, 1);
    wp_expect_none(&w, -1);
    wp_close(&w);
    engine_close();
}

/*
 * From an unknown sender, anything but a REQ with the raw-address header is
 * dropped and counted: first while the engine has no address handle for the
 * sender's GID at all, then while it has one (another peer on that host).
 */
EFARM_TEST(wire_unknown_sender_without_raw_address_dropped)
{
    struct efarm_req rreq = {0};
    uint8_t data[64], buf[64];
    struct wp w, other;
    efarm_peer_t op;
    struct wp_pkt p;
    uint64_t drops = 0;

    engine_open(NULL);
    wp_open(&w);
    w.req_raw_addr = false;
    proto_fill(data, sizeof(data), 4);
    EXPECT_RET(efarm_trecv(g_ep, buf, sizeof(buf), 1, 2, EFARM_ANY_TAG, &rreq), 0);
    for (unsigned round = 0; round < 2; round++) {
        efarm_test_context("round %u (%s)", round, round ? "GID known" : "GID unknown");
        w.send_connid = false;
        send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(1), data, 10);
        w.send_connid = true; /* a REQ with the connid header only */
        send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(1), data, 10);
        send_cts(&w, 0x10001, 1, 100);
        send_reply(&w, EFARM_PKT_EOR, 0x10001, 1);
        wp_send_handshake(&w, FEAT_ALL);
        PUMP_UNTIL(cnt()->unknown_sender == drops + 5);
        drops += 5;
        wp_flush(&w); /* the device delivered them all */
        EXPECT_TRUE(!rreq.done);
        EXPECT_EQ(cnt()->implicit_peers, 0);
        EXPECT_EQ(cnt()->handshakes_sent, 0);
        EXPECT_EQ(cnt()->stale_ids, 0);
        wp_expect_none(&w, -1);
        /* The second round: the engine knows another QP on the same GID. */
        if (round == 0) {
            wp_open(&other);
            EXPECT_RET(efarm_av_insert(g_ep, other.raw, &op), 0);
        }
    }
    /* None of it took a msg_id: the learnt peer's msg_id 0 is delivered. */
    w.req_raw_addr = true;
    send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(1), data, 33);
    EXPECT_TRUE(rreq.done);
    EXPECT_EQ(rreq.length, 33);
    EXPECT_MEM_EQ(buf, data, 33);
    EXPECT_EQ(cnt()->implicit_peers, 1);
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    wp_close(&other);
    wp_close(&w);
    engine_close();
}

/*
 * A REQ whose raw-address header names an address that is not the sender's
 * and answers nothing (a forged header, a peer gone at once): the message is
 * delivered, the engine's HANDSHAKE to that address fails at the device
 * (efasim's timeout), and that learnt peer alone fails. The endpoint goes on:
 * a connected peer's messages still cross, both ways.
 */
EFARM_TEST(wire_forged_raw_address_fails_that_peer_only)
{
    struct efarm_req rreq = {0}, r2 = {0}, sreq = {0};
    uint8_t data[64], buf[64], buf2[64];
    struct wp w, forger;
    struct wp_pkt p;
    double deadline;

    setenv("EFASIM_TIMEOUT_MS", "300", 1);
    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_ALL);
    wp_open(&forger);
    proto_fill(data, sizeof(data), 6);
    /* The forger claims 127.1.2.3, where nothing listens, with its own QPN and connid. */
    forger.raw[12] = 127, forger.raw[13] = 1, forger.raw[14] = 2, forger.raw[15] = 3;
    EXPECT_RET(efarm_trecv(g_ep, buf, sizeof(buf), 1, 2, 5, &rreq), 0);
    send_eager(&forger, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(5), data, 40);
    EXPECT_TRUE(rreq.done);
    EXPECT_EQ(rreq.length, 40);
    EXPECT_EQ(cnt()->implicit_peers, 1);
    deadline = proto_now_s() + WP_TIMEOUT_S;
    while (cnt()->peers_failed == 0 && proto_now_s() < deadline)
        EXPECT_TRUE(efarm_ep_progress(g_ep) >= 0);
    EXPECT_EQ(cnt()->peers_failed, 1);
    pump_for(50000);
    EXPECT_TRUE(efarm_ep_progress(g_ep) >= 0); /* the endpoint did not fail */

    EXPECT_RET(efarm_trecv(g_ep, buf2, sizeof(buf2), 1, 2, 6, &r2), 0);
    send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(6), data + 1, 30);
    EXPECT_TRUE(r2.done);
    EXPECT_RET(r2.status, 0);
    EXPECT_MEM_EQ(buf2, data + 1, 30);
    EXPECT_RET(efarm_tsend(g_ep, w.peer, data, 20, 1, 2, 7, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_EAGER_TAGRTM, &p);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, 0);
    EXPECT_EQ(cnt()->peers_failed, 1);
    wp_close(&forger);
    wp_close(&w);
    engine_close();
}

/* ---- 3. connid (section 4.4) --------------------------------------------------------- */

/* Packets whose connid names no peer at their (GID, QPN) are dropped, never acted on. */
EFARM_TEST(wire_connid_mismatch_dropped)
{
    const uint64_t lcts = 100000, rlen = 30000;
    uint8_t *src = malloc(lcts), *dst = calloc(1, rlen), zero[WP_MAX_PKT] = {0};
    struct efarm_req sreq = {0}, rreq = {0};
    uint64_t off, grant, end, n, room;
    uint32_t send_id, recv_id, good;
    struct wp_pkt p;
    struct wp w;

    engine_open(NULL);
    wp_open(&w);
    wp_connect(&w, FEAT_NO_READ);
    good = w.connid;
    proto_fill(src, lcts, 11);

    /* An EAGER with a wrong connid: dropped before ordering, so msg_id 0 is still free. */
    EXPECT_RET(efarm_trecv(g_ep, dst, rlen, 1, 2, 1, &rreq), 0);
    w.connid = good ^ 0x00010000u;
    send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(1), src + 1, 100);
    EXPECT_EQ(cnt()->connid_mismatch, 1);
    pump_for(WP_QUIET_US);
    EXPECT_TRUE(!rreq.done);
    w.connid = good;
    send_eager(&w, EFARM_PKT_EAGER_TAGRTM, 0, tag_of(1), src, 100);
    EXPECT_TRUE(rreq.done);
    EXPECT_MEM_EQ(dst, src, 100);

    /* A CTS with a wrong connid grants nothing. */
    EXPECT_RET(efarm_tsend(g_ep, w.peer, src, lcts, 1, 2, 3, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_LONGCTS_TAGRTM, &p);
    off = p.pkt.payload_length;
    send_id = (uint32_t)get(&p, EFARM_PKT_F_SEND_ID);
    w.connid = 0;
    send_cts(&w, send_id, 9, lcts - off);
    EXPECT_EQ(cnt()->connid_mismatch, 2);
    wp_expect_none(&w, EFARM_PKT_CTSDATA);
    w.connid = good;
    send_cts(&w, send_id, 9, lcts - off);
    take_ctsdata(&w, 9, src, &off, lcts - off, true);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, 0);

    /* A CTSDATA with a wrong connid writes nothing. */
    memset(dst, 0, rlen);
    EXPECT_RET(efarm_trecv(g_ep, dst, rlen, 1, 2, 2, &rreq), 0);
    off = send_longcts(&w, EFARM_PKT_LONGCTS_TAGRTM, 1, tag_of(2), 0x99, src, rlen, 8, 0);
    wp_expect(&w, EFARM_PKT_CTS, &p);
    grant = get(&p, EFARM_PKT_F_RECV_LENGTH);
    recv_id = (uint32_t)get(&p, EFARM_PKT_F_RECV_ID);
    room = wp_ctsdata_room(&w);
    n = grant < room ? grant : room;
    w.connid = good + 1;
    send_ctsdata(&w, recv_id, off, src + off, n);
    EXPECT_EQ(cnt()->connid_mismatch, 3);
    EXPECT_MEM_EQ(dst + off, zero, n);
    w.connid = good;
    for (end = off + grant; off < end; off += n) {
        n = end - off < room ? end - off : room;
        send_ctsdata(&w, recv_id, off, src + off, n);
    }
    feed_ctsdata(&w, 0x99, src, off, rlen, true);
    wait_req(&rreq);
    EXPECT_RET(rreq.status, 0);
    EXPECT_MEM_EQ(dst, src, rlen);
    EXPECT_EQ(cnt()->connid_mismatch, 3);
    EXPECT_EQ(cnt()->stale_ids, 0);
    wp_close(&w);
    engine_close();
    free(src);
    free(dst);
}

#define RESTART_TAG 4

/*
 * The first incarnation of the wire peer, in a child process holding QP number
 * `qpn`: three messages in order and one ahead of its turn (msg_id 4, left in
 * the engine's reorder window), then it takes the engine's HANDSHAKE and one
 * message from the engine, and exits.
 */
static void restart_first_incarnation(uint16_t qpn, int in, int out)
{
    char value[16];
    uint8_t data[64];
    struct wp_pkt p;
    struct wp w;

    proto_use_efasim();
    snprintf(value, sizeof(value), "%u", qpn);
    setenv("EFASIM_QPN", value, 1);
    efarm_test_pipe_read(in, g_eng_raw, sizeof(g_eng_raw), "the other process's address");
    g_eng_qpn = efarm_load_le16(g_eng_raw + offsetof(struct efarm_wire_raw_addr, qpn));
    g_eng_connid = efarm_load_le32(g_eng_raw + offsetof(struct efarm_wire_raw_addr, connid));
    wp_open(&w);
    EXPECT_EQ(w.qpn, qpn);
    efarm_test_pipe_write(out, w.raw, sizeof(w.raw));
    for (uint32_t id = 0; id < 5; id++) {
        if (id == 3)
            continue;
        memset(data, 0x10 + id, sizeof(data));
        send_eager(&w, EFARM_PKT_EAGER_TAGRTM, id, tag_of(RESTART_TAG), data, sizeof(data));
    }
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    wp_expect(&w, EFARM_PKT_EAGER_TAGRTM, &p);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 0);
    wp_flush(&w);
    /* Linger: efasim sends the ACKs a QP owes only while it lives (not at destroy). */
    pump_for(100000);
    wp_close(&w);
    efarm_test_pipe_write(out, "k", 1);
}

/*
 * The second incarnation, in this process, at the first one's GID and QPN
 * with a new connid: a new peer with msg_ids from 0 both ways, untouched by
 * what the old one left (its msg_id counters, msg_id 4 in its window).
 */
static void restart_second_incarnation(uint16_t qpn, const uint8_t *old_raw, efarm_peer_t old_peer)
{
    uint32_t old_connid = efarm_load_le32(old_raw + offsetof(struct efarm_wire_raw_addr, connid));
    struct efarm_req rreq[5], sreq = {0};
    uint8_t buf[5][64], data[64];
    struct wp_pkt p;
    struct wp w;

    wp_open(&w);
    EXPECT_EQ(w.qpn, qpn);
    EXPECT_MEM_EQ(w.raw, old_raw, 18);
    EXPECT_TRUE(w.connid != old_connid);
    memset(rreq, 0, sizeof(rreq));
    for (unsigned i = 0; i < 5; i++)
        EXPECT_RET(efarm_trecv(g_ep, buf[i], 64, 1, 2, RESTART_TAG, &rreq[i]), 0);
    for (uint32_t id = 0; id < 5; id++) {
        memset(data, 0x40 + id, sizeof(data));
        send_eager(&w, EFARM_PKT_EAGER_TAGRTM, id, tag_of(RESTART_TAG), data, 32);
        EXPECT_TRUE(rreq[id].done);
        EXPECT_TRUE(rreq[id].peer != old_peer);
        EXPECT_EQ(rreq[id].peer, rreq[0].peer);
        EXPECT_EQ(rreq[id].length, 32);
        EXPECT_EQ(buf[id][0], 0x40 + id);
        if (id == 0)
            EXPECT_EQ(cnt()->implicit_peers, 2);
    }
    wp_expect(&w, EFARM_PKT_HANDSHAKE, &p);
    EXPECT_EQ(cnt()->handshakes_sent, 2);

    /* The engine's msg_ids towards the new peer start at 0 too. */
    EXPECT_RET(efarm_tsend(g_ep, rreq[0].peer, data, 20, 1, 2, 3, 0, 0, &sreq), 0);
    wp_expect(&w, EFARM_PKT_EAGER_TAGRTM, &p);
    expect_req_opts(&p, true, false);
    EXPECT_EQ(get(&p, EFARM_PKT_F_MSG_ID), 0);
    wait_req(&sreq);

    /* A send to the old incarnation fails at the device; nothing reaches the new one. */
    EXPECT_RET(efarm_tsend(g_ep, old_peer, data, 20, 1, 2, 3, 0, 0, &sreq), 0);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, EFARM_E(DEV_REMOTE_QP));
    wp_expect_none(&w, -1);
    wp_close(&w);
}

/*
 * Section 4.4: a process that restarts at the same GID and QPN has a new
 * connid. Its REQ with the raw-address header makes a new peer whose msg_ids
 * start afresh, both ways; what the old incarnation left behind (a message
 * waiting in its reorder window, its msg_id counters) touches nothing of the
 * new one, and the engine's packets for the old one never reach the new one.
 * EFASIM_QPN gives the engine QPN base and both incarnations base + 1.
 */
EFARM_TEST_TIMEOUT(wire_restarted_peer_is_a_new_peer, 60)
{
    uint16_t base = (uint16_t)efarm_test_free_qpns(2);
    int to_child[2], to_parent[2], status;
    uint8_t buf[3][64], data[64] = {0}, old_raw[EFARM_RAW_ADDR_LEN], ok;
    struct efarm_req rreq[3], sreq = {0};
    efarm_peer_t old_peer;
    char value[16];
    pid_t pid;

    EXPECT_EQ(pipe(to_child), 0);
    EXPECT_EQ(pipe(to_parent), 0);
    pid = fork(); /* before anything touches verbs: each process counts its own QP numbers */
    EXPECT_TRUE(pid >= 0);
    if (pid == 0) {
        restart_first_incarnation((uint16_t)(base + 1), to_child[0], to_parent[1]);
        _exit(0);
    }
    snprintf(value, sizeof(value), "%u", base);
    setenv("EFASIM_QPN", value, 1);
    engine_open(NULL);
    EXPECT_EQ(g_eng_qpn, base);
    efarm_test_pipe_write(to_child[1], g_eng_raw, sizeof(g_eng_raw));
    efarm_test_pipe_read(to_parent[0], old_raw, sizeof(old_raw), "the other process's address");

    memset(rreq, 0, sizeof(rreq));
    for (unsigned i = 0; i < 3; i++)
        EXPECT_RET(efarm_trecv(g_ep, buf[i], 64, 1, 2, RESTART_TAG, &rreq[i]), 0);
    PUMP_UNTIL(rreq[0].done && rreq[1].done && rreq[2].done && cnt()->rx_pkts == 4);
    old_peer = rreq[0].peer;
    for (unsigned i = 0; i < 3; i++) {
        EXPECT_EQ(rreq[i].peer, old_peer);
        EXPECT_EQ(buf[i][0], 0x10 + i);
    }
    EXPECT_EQ(cnt()->implicit_peers, 1);
    EXPECT_TRUE(cnt()->out_of_order >= 1); /* msg_id 4 at least (SRD may reorder the rest) */
    EXPECT_RET(efarm_tsend(g_ep, old_peer, data, 10, 1, 2, 3, 0, 0, &sreq), 0);
    wait_req(&sreq);
    EXPECT_RET(sreq.status, 0);
    EXPECT_EQ(read(to_parent[0], &ok, 1), 1); /* the old incarnation is gone */
    EXPECT_EQ(waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);

    restart_second_incarnation((uint16_t)(base + 1), old_raw, old_peer);
    engine_close();
}
