/*
 * Address handles as on EFA: the device keeps one AH number per (PD, GID), so
 * every ibv_create_ah for the same PD and GID reports the same number through
 * efadv_query_ah, the number outlives all but the last of those AHs, and a
 * receive reports it as slid (libfabric maps slid back to its peer by it, and
 * makes an AH for its own address besides the peers').
 */
#include <errno.h>
#include <string.h>

#include "efasim_common.h"

/* Sends 16 bytes tx -> rx through ah and returns the receive's completion. */
static void send_via(struct efasim_pair *p, struct ibv_ah *ah, uint64_t wr_id, struct efasim_wc *wc)
{
    struct efasim_dest to = {.ah = ah, .qpn = p->rx.qpn, .qkey = p->rx.qkey};
    struct efasim_wc swc;

    efasim_post_recv(&p->rx, wr_id, &p->rbuf, 0, p->dev.mtu);
    EXPECT_EQ(efasim_send(&p->tx, &to, wr_id, &p->sbuf, 0, 16), 0);
    efasim_wait_wc(p->tx.send_cq, &swc, "the send");
    EXPECT_WC_STATUS(&swc, IBV_WC_SUCCESS);
    efasim_wait_wc(p->rx.recv_cq, wc, "the receive");
    EXPECT_WC_STATUS(wc, IBV_WC_SUCCESS);
    EXPECT_EQ(wc->wr_id, wr_id);
}

EFARM_TEST(efasim_ah_number_per_pd_and_gid)
{
    struct ibv_ah *a1, *a2, *other_pd_ah;
    struct ibv_pd *other_pd;
    struct efasim_pair p;
    struct efasim_wc wc;
    uint16_t ahn;

    efasim_pair_open(&p, NULL, NULL); /* p.to_rx.ah: one AH for the device's GID */
    ahn = efasim_ahn(p.to_rx.ah);
    a1 = efasim_ah_create(&p.dev, &p.dev.gid);
    a2 = efasim_ah_create(&p.dev, &p.dev.gid);
    EXPECT_TRUE(a1 != a2 && a1 != p.to_rx.ah);
    EXPECT_EQ(efasim_ahn(a1), ahn);
    EXPECT_EQ(efasim_ahn(a2), ahn);

    /* Another PD: another number for the same GID. */
    other_pd = ibv_alloc_pd(p.dev.ctx);
    EXPECT_TRUE(other_pd != NULL);
    {
        struct ibv_ah_attr attr = {.port_num = 1, .is_global = 1, .grh = {.dgid = p.dev.gid}};

        other_pd_ah = ibv_create_ah(other_pd, &attr);
        EXPECT_TRUE(other_pd_ah != NULL);
        EXPECT_TRUE(efasim_ahn(other_pd_ah) != ahn);
    }

    /* The number lives while any AH of (PD, GID) does: receives report it. */
    EXPECT_EQ(ibv_destroy_ah(p.to_rx.ah), 0);
    EXPECT_EQ(ibv_destroy_ah(a1), 0);
    send_via(&p, a2, 1, &wc);
    EXPECT_EQ(wc.slid, ahn);
    EXPECT_EQ(wc.sgid_ret, -ENOENT);

    /* A new AH of (PD, GID) while one lives gets the same number still. */
    p.to_rx.ah = efasim_ah_create(&p.dev, &p.dev.gid);
    EXPECT_EQ(ibv_destroy_ah(a2), 0);
    EXPECT_EQ(efasim_ahn(p.to_rx.ah), ahn); /* still held by to_rx's new AH */
    EXPECT_EQ(ibv_destroy_ah(other_pd_ah), 0);
    EXPECT_EQ(ibv_dealloc_pd(other_pd), 0);
    efasim_pair_close(&p);
}
