/*
 * The engine suite, part 6 (see proto_rig.h): message order across msg_id
 * wraparound with efasim reordering, the reorder window's overflow list,
 * attr.first_msg_id, and a multi-packet message stalled in its window slot
 * while the unexpected queue is full.
 */
#include <stdlib.h>

#include "efarm_errno.h"
#include "efarm_proto.h"
#include "efarm_proto_v4.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "proto_rig.h"

/* ---- 6. msg_id wraparound, the reorder window's overflow list ----------------------------- */

/*
 * n messages of every subprotocol, three tagged for one untagged, all on one
 * key, sent in one burst through msg_id 2^32 - 1 -> 0 with efasim reordering
 * and delaying datagrams: both streams arrive in order and intact. Half the
 * receives are posted before the burst, half after.
 */
static void wraparound(uint32_t recvwin, unsigned n)
{
    struct efarm_ep_attr attr = g_small;
    struct rig r;
    struct msg *m = calloc(n, sizeof(*m));
    uint64_t e[2];

    use_faults();
    attr.first_msg_id = 0xfffffff0u;
    attr.recvwin = recvwin;
    rig_open(&r, &attr, &attr);
    rig_handshake(&r);
    e[0] = eager_fit(&r, false, false, false, false);
    e[1] = eager_fit(&r, true, false, false, false);
    for (unsigned i = 0; i < n; i++) {
        bool tagged = i % 4 != 3;
        static const uint8_t protos[6] = {EFARM_PROTO_EAGER,   EFARM_PROTO_EAGER,
                                          EFARM_PROTO_MEDIUM,  EFARM_PROTO_MEDIUM,
                                          EFARM_PROTO_LONGCTS, EFARM_PROTO_RUNTREAD};
        uint64_t lens[6] = {
            i % 50, e[tagged], e[tagged] + 1, r.medium_max, r.medium_max + 1 + i, r.read_min + i};

        msg_init(&m[i], lens[i % 6], lens[i % 6], 0, tagged, protos[i % 6], 1000 + i);
    }
    for (unsigned i = 0; i < n / 2; i++)
        msg_post(&r, &m[i]);
    for (unsigned i = 0; i < n; i++) {
        msg_send(&r, &m[i]);
        /* One runting read spends the runt budget; the reads behind it go long-read. */
        if (m[i].proto == EFARM_PROTO_RUNTREAD && m[i].sreq.proto == EFARM_PROTO_LONGREAD)
            m[i].proto = EFARM_PROTO_LONGREAD;
    }
    proto_pair_spin(&r.p, 5000);
    for (unsigned i = n / 2; i < n; i++)
        msg_post(&r, &m[i]);
    msgs_wait_check(&r, m, n);
    EXPECT_TRUE(cnt(r.p.b)->out_of_order > 0);
    if (recvwin < 16)
        EXPECT_TRUE(cnt(r.p.b)->overflow > 0);
    for (unsigned i = 0; i < n; i++)
        msg_free(&m[i]);
    free(m);
    rig_close(&r);
}

EFARM_TEST_TIMEOUT(proto_msg_id_wraparound, 60)
{
    wraparound(128, 300);
}

EFARM_TEST_TIMEOUT(proto_msg_id_wraparound_recvwin4, 60)
{
    wraparound(4, 300);
}

/*
 * attr.first_msg_id really moves the msg_ids (else the wraparound tests
 * would not wrap): a receiver that starts at 0 sees 0xfffffff0 as 16
 * behind and drops it as stale.
 */
EFARM_TEST(proto_first_msg_id_takes_effect)
{
    struct efarm_ep_attr attr_a = {.first_msg_id = 0xfffffff0u};
    struct rig r;
    uint8_t byte = 1, got = 0;
    struct efarm_req s = {0}, rr = {0};

    rig_open(&r, &attr_a, NULL);
    EXPECT_RET(efarm_trecv(r.p.b, &got, 1, CTX, SRC, TAG, &rr), 0);
    EXPECT_RET(efarm_tsend(r.p.a, r.p.a_to_b, &byte, 1, CTX, SRC, TAG, 0, 0, &s), 0);
    SPIN_UNTIL(&r.p, cnt(r.p.b)->stale_ids == 1, WAIT_S);
    proto_pair_spin(&r.p, 5000);
    EXPECT_TRUE(!rr.done);
    EXPECT_EQ(got, 0);
    proto_pair_close(&r.p);
}

/*
 * A multi-packet message whose turn comes while the unexpected queue is full
 * waits in its window slot, and its later packets join it there. When room
 * appears and it becomes an unexpected message, every packet of the slot
 * must go with it (a lost segment leaves the receive waiting forever and
 * leaks the packet's buffer).
 */
EFARM_TEST(proto_stalled_multipacket_message)
{
    struct efarm_ep_attr attr = g_small, attr_b = g_small;
    struct rig r;
    struct proto_pair *p = &r.p;
    struct msg m[3];
    uint64_t nreq[3], rx0[3];

    attr.runt_size = 20000; /* three runt packets */
    attr_b.max_unexpected = 1;
    rig_open(&r, &attr, &attr_b);
    rig_handshake(&r);
    msg_init(&m[0], 10, 10, 0, true, EFARM_PROTO_EAGER, 70);
    msg_init(&m[1], r.medium_max, r.medium_max, 0, true, EFARM_PROTO_MEDIUM, 71);
    msg_init(&m[2], r.read_min, r.read_min, 0, true, EFARM_PROTO_RUNTREAD, 72);
    for (unsigned i = 0; i < 3; i++) {
        uint8_t type = rtm_type(m[i].proto, true, false);

        nreq[i] = msg_req_pkts(&r, &m[i], r.runt_size);
        rx0[i] = cnt(p->b)->rx_by_type[type];
        msg_send(&r, &m[i]);
    }
    EXPECT_TRUE(nreq[1] > 1 && nreq[2] > 1);
    SPIN_UNTIL(p,
               cnt(p->b)->rx_by_type[EFARM_PKT_MEDIUM_TAGRTM] - rx0[1] == nreq[1] &&
                   cnt(p->b)->rx_by_type[EFARM_PKT_RUNTREAD_TAGRTM] - rx0[2] == nreq[2],
               WAIT_S);
    EXPECT_EQ(cnt(p->b)->unexpected, 1); /* m[0]; m[1] is deferred, m[2] waits behind it */
    EXPECT_TRUE(cnt(p->b)->deferred > 0);
    /* Each receive frees the one unexpected slot: the next message becomes unexpected there. */
    for (unsigned i = 0; i < 3; i++) {
        msg_post(&r, &m[i]);
        if (i < 2)
            SPIN_UNTIL(p, cnt(p->b)->unexpected == i + 2, WAIT_S);
    }
    msgs_wait_check(&r, m, 3);
    for (unsigned i = 0; i < 3; i++)
        msg_free(&m[i]);
    rig_close(&r);
}
