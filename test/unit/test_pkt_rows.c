/*
 * The packet-type rows (src/proto/efarm_pkt_types.h): every type with a wire
 * format has a complete engine row, and what the engine's row says agrees
 * with the codec's row of the same type (both are generated from one list;
 * this catches a list entry whose columns contradict each other).
 */
#include "efarm_pkt.h"
#include "efarm_rma.h"
#include "efarm_test.h"
#include "msg_proto.h"
#include "proto_internal.h"
#include "proto_messages.h"
#include "proto_onesided.h"
#include "proto_ops.h"
#include "proto_peers.h"
#include "proto_receive.h"
#include "proto_select.h"
#include "rma_proto.h"

static bool has_field(uint8_t type, enum efarm_pkt_field id)
{
    return efarm_pkt_field_offset(type, id, NULL) >= 0;
}

EFARM_TEST(pkt_rows_complete)
{
    unsigned served = 0, control = 0, ordered = 0;

    for (unsigned t = 0; t < EFARM_PKT_TYPE_COUNT; t++) {
        const struct efarm_pkt_type_info *info = efarm_pkt_type_info((uint8_t)t);
        const struct efarm_pkt_row *row = efarm_pkt_row((uint8_t)t);
        const bool req = info->traits & EFARM_PKT_T_REQ;

        efarm_test_context("type %u (%s)", t, info->name);
        if (!(info->traits & EFARM_PKT_T_SUPPORTED)) {
            /* No wire format: nothing decodes, so no handler may exist. */
            EXPECT_TRUE(row->ctrl == NULL && row->serve == NULL && row->on_nack == NULL);
            continue;
        }
        /* Section 3.1: the REQ types are exactly those from 64 on. */
        EXPECT_EQ(req, t >= EFARM_PKT_REQ_BEGIN);
        /* Exactly one way in: a control packet or a served REQ (every type is served). */
        EXPECT_EQ(row->ctrl != NULL, !req);
        EXPECT_EQ(row->serve != NULL, req);
        served++;
        control += row->ctrl != NULL;
        /* A REQ that takes a msg_id must be served in that order, or the sequence stalls. */
        if (req)
            EXPECT_EQ(row->ordered, has_field((uint8_t)t, EFARM_PKT_F_MSG_ID));
        ordered += row->ordered;
        /* Traits the engine reads from the same list as the codec. */
        EXPECT_EQ(row->tagged, (info->traits & EFARM_PKT_T_TAGGED) != 0);
        EXPECT_EQ(row->tagged, has_field((uint8_t)t, EFARM_PKT_F_TAG));
        EXPECT_EQ(row->read_iov, (info->traits & EFARM_PKT_T_READ_IOV) != 0);
        EXPECT_EQ(row->read_iov, has_field((uint8_t)t, EFARM_PKT_F_READ_IOV_COUNT));
        /* Where the data sits: at seg_offset exactly when the layout has one. */
        if (row->rtm || row->rtw || row->serve == efarm_req_refuse)
            EXPECT_EQ((row->data & RX_SEG_OFFSET) != 0,
                      has_field((uint8_t)t, EFARM_PKT_F_SEG_OFFSET));
        /* A long read's REQ carries its read_iov[] and nothing else. */
        if (row->data & RX_ONLY_IOV)
            EXPECT_TRUE(row->read_iov && row->proto == EFARM_PROTO_LONGREAD);
        /* The READ_NACK variant exists only where the codec lets the flag through. */
        if (row->on_nack != NULL)
            EXPECT_TRUE(info->traits & EFARM_PKT_T_LONGCTS);
        /* Messages and long writes. */
        EXPECT_TRUE(!(row->rtm && row->rtw));
        if (row->rtm)
            EXPECT_TRUE(row->ordered && row->serve == efarm_rtm_recv &&
                        !(info->traits & EFARM_PKT_T_RMA_IOV));
        if (row->rtw) {
            const struct efarm_msg_proto *mp = g_efarm_msg_protos[row->proto];

            EXPECT_TRUE(!row->ordered && (info->traits & EFARM_PKT_T_RMA_IOV));
            /* A write in slices is a runt write; the rest comes by CTS or reads. */
            EXPECT_EQ((row->data & RX_SEG_OFFSET) != 0,
                      has_field((uint8_t)t, EFARM_PKT_F_RUNT_LENGTH));
            EXPECT_TRUE(mp->cts || mp->reads);
            EXPECT_EQ(row->read_iov, mp->reads);
        }
        /* DC: the layout names the sender's operation for its RECEIPT. */
        if (row->dc)
            EXPECT_TRUE(has_field((uint8_t)t, EFARM_PKT_F_SEND_ID));
        /* Sent alone (no operation), its loss says what it cost unless nothing waits. */
        EXPECT_EQ(row->lost_alone == NULL, row->trigger);
        /* A trigger is told by its empty rma_iov: a REQ served at once that carries one. */
        if (row->trigger)
            EXPECT_TRUE(req && row->serve != NULL && !row->ordered &&
                        (info->traits & EFARM_PKT_T_RMA_IOV));
    }
    efarm_test_context("totals");
    /* The list has rows of every kind: control packets, REQs in order and at once. */
    EXPECT_TRUE(control > 0 && ordered > 0 && served > control + ordered);
}

/* The rows the protocol names: spot checks of what each column must say. */
EFARM_TEST(pkt_rows_spot_checks)
{
    const struct efarm_pkt_row *r;

    r = efarm_pkt_row(EFARM_PKT_MEDIUM_TAGRTM);
    EXPECT_TRUE(r->rtm && r->tagged && !r->dc && r->proto == EFARM_PROTO_MEDIUM);
    r = efarm_pkt_row(EFARM_PKT_DC_EAGER_MSGRTM);
    EXPECT_TRUE(r->rtm && !r->tagged && r->dc && r->proto == EFARM_PROTO_EAGER);
    r = efarm_pkt_row(EFARM_PKT_LONGCTS_TAGRTM);
    EXPECT_TRUE(r->on_nack == efarm_longcts_nack_recv && r->proto == EFARM_PROTO_LONGCTS);
    r = efarm_pkt_row(EFARM_PKT_RUNTREAD_MSGRTM);
    EXPECT_TRUE(r->read_iov && (r->data & RX_SEG_OFFSET) && r->proto == EFARM_PROTO_RUNTREAD);
    r = efarm_pkt_row(EFARM_PKT_FETCH_RTA);
    EXPECT_TRUE(r->ordered && r->serve == efarm_rta_recv && r->atomic == EFARM_ATOMIC_FETCH);
    r = efarm_pkt_row(EFARM_PKT_COMPARE_RTA);
    EXPECT_TRUE(r->atomic == EFARM_ATOMIC_COMPARE && !r->dc);
    r = efarm_pkt_row(EFARM_PKT_DC_WRITE_RTA);
    EXPECT_TRUE(r->atomic == EFARM_ATOMIC_WRITE && r->dc);
    r = efarm_pkt_row(EFARM_PKT_EAGER_RTW);
    EXPECT_TRUE(r->trigger && r->serve == efarm_rtw_recv && !r->ordered);
    r = efarm_pkt_row(EFARM_PKT_LONGREAD_RTW);
    EXPECT_TRUE(r->rtw && r->serve == efarm_rtw_long_recv && (r->data & RX_ONLY_IOV));
    EXPECT_TRUE(r->on_nack == NULL);
    r = efarm_pkt_row(EFARM_PKT_LONGCTS_RTW);
    EXPECT_TRUE(r->rtw && r->on_nack == efarm_longcts_nack_recv && r->proto == EFARM_PROTO_LONGCTS);
    r = efarm_pkt_row(EFARM_PKT_DC_LONGCTS_RTW);
    EXPECT_TRUE(r->rtw && r->dc && r->on_nack == efarm_longcts_nack_recv);
    r = efarm_pkt_row(EFARM_PKT_RUNTCTS_RTW);
    EXPECT_TRUE(r->rtw && r->serve == efarm_rtw_long_recv && (r->data & RX_SEG_OFFSET) &&
                r->proto == EFARM_PROTO_LONGCTS && !r->read_iov && !r->dc);
    r = efarm_pkt_row(EFARM_PKT_RUNTREAD_RTW);
    EXPECT_TRUE(r->rtw && r->serve == efarm_rtw_long_recv && (r->data & RX_SEG_OFFSET) &&
                r->proto == EFARM_PROTO_RUNTREAD && r->read_iov && !r->dc);
    r = efarm_pkt_row(EFARM_PKT_LONGCTS_RTR);
    EXPECT_TRUE(r->serve == efarm_rtr_long_recv && !r->ordered);
    r = efarm_pkt_row(EFARM_PKT_RUNTCTS_TAGRTM);
    EXPECT_TRUE(r->serve == efarm_req_refuse && r->ordered);
    r = efarm_pkt_row(EFARM_PKT_HANDSHAKE);
    EXPECT_TRUE(r->ctrl == efarm_handshake_recv && r->lost_to_implicit_ok && r->lost_alone != NULL);
    r = efarm_pkt_row(EFARM_PKT_RECEIPT);
    EXPECT_TRUE(r->ctrl == efarm_receipt_recv && !r->lost_to_implicit_ok);
}

/*
 * The two-sided subprotocols' rows (g_efarm_msg_protos): each names its REQ
 * types, whose packet rows name it back, and its facts agree with those
 * packets' layouts; every read protocol falls back to one that needs neither
 * a registration nor a READ_NACK of its own.
 */
EFARM_TEST(msg_proto_rows)
{
    unsigned whole = 0, reads = 0, cts = 0;

    for (unsigned p = 0; p < EFARM_PROTO_COUNT; p++) {
        const struct efarm_msg_proto *mp = g_efarm_msg_protos[p];

        efarm_test_context("subprotocol %s", efarm_proto_name((enum efarm_proto_kind)p));
        EXPECT_TRUE(mp->build != NULL);
        for (unsigned q = 0; q < p; q++)
            EXPECT_TRUE(g_efarm_msg_protos[q]->counter != mp->counter); /* one counter each */
        for (unsigned dc = 0; dc < 2; dc++) {
            for (unsigned tagged = 0; tagged < 2; tagged++) {
                uint8_t t = mp->type[dc][tagged];
                const struct efarm_pkt_row *row = efarm_pkt_row(t);

                EXPECT_TRUE(row->rtm && row->proto == p && row->tagged == (tagged != 0));
                /* A read protocol's EOR says delivered: it has no DC types. */
                EXPECT_EQ(row->dc, dc && !mp->reads);
                /* What the first REQ gives: the whole message, or its length. */
                EXPECT_EQ(mp->whole, !has_field(t, EFARM_PKT_F_MSG_LENGTH));
                EXPECT_EQ(mp->segmented, has_field(t, EFARM_PKT_F_SEG_OFFSET));
                EXPECT_EQ(mp->reads, row->read_iov);
                EXPECT_EQ(mp->runt, has_field(t, EFARM_PKT_F_RUNT_LENGTH));
                /* A CTS protocol's REQ asks for credits; a READ_NACK variant needs CTS. */
                EXPECT_EQ(mp->cts, has_field(t, EFARM_PKT_F_CREDIT_REQUEST));
                if (row->on_nack != NULL)
                    EXPECT_TRUE(mp->cts);
            }
            if (mp->rtw[dc] != 0) {
                const struct efarm_pkt_row *row = efarm_pkt_row(mp->rtw[dc]);

                EXPECT_TRUE(row->rtw && row->proto == p && row->dc == (dc && !mp->reads));
            }
        }
        /* Only what the receiver grants by CTS or reads needs a step once matched. */
        EXPECT_EQ(mp->rx_start != NULL, mp->cts || mp->reads);
        if (mp->reads) {
            const struct efarm_msg_proto *fb = g_efarm_msg_protos[mp->fallback];

            EXPECT_TRUE(mp->fallback < EFARM_PROTO_COUNT && fb->cts && !fb->reads);
        }
        whole += mp->whole;
        reads += mp->reads;
        cts += mp->cts;
    }
    efarm_test_context("totals");
    EXPECT_TRUE(whole == 1 && cts == 1 && reads == 2);
}

/*
 * The rows' selection and profile rules (msg_proto.h): selection tries the
 * kinds in rank order and its last rule takes whatever is left; a profile
 * rule names real thresholds, races only rivals that may have curves, and
 * copies only a threshold derived before its own.
 */
EFARM_TEST(msg_proto_rules)
{
    const struct efarm_sel_rule *last =
        &g_efarm_msg_protos[g_efarm_msg_proto_order[EFARM_PROTO_COUNT - 1]]->select;
    unsigned seen = 0, races = 0;

    for (unsigned i = 0; i < EFARM_PROTO_COUNT; i++) {
        seen |= 1u << g_efarm_msg_proto_order[i];
        /* Strictly ascending: each rank once. */
        if (i > 0)
            EXPECT_TRUE(efarm_msg_proto_rank(g_efarm_msg_proto_order[i - 1]) <
                        efarm_msg_proto_rank(g_efarm_msg_proto_order[i]));
    }
    EXPECT_EQ(seen, (1u << EFARM_PROTO_COUNT) - 1);
    EXPECT_TRUE(last->min_len == EFARM_SEL_NONE && last->max_len == EFARM_SEL_NONE &&
                last->need == 0);
    for (unsigned p = 0; p < EFARM_PROTO_COUNT; p++) {
        const struct efarm_msg_proto *mp = g_efarm_msg_protos[p];
        const struct efarm_profile_rule *pf = &mp->profile;

        efarm_test_context("subprotocol %s", efarm_proto_name((enum efarm_proto_kind)p));
        /* What is forced still meets its facts: forced conditions are a part of the rule's. */
        EXPECT_EQ(mp->select.need_forced & ~mp->select.need, 0);
        EXPECT_TRUE(mp->select.fit != EFARM_FIT_ANY);
        for (unsigned set = 0; set < 2; set++)
            for (unsigned cold = 0; cold < 2; cold++) {
                unsigned t = pf->thr[set][cold];

                EXPECT_TRUE(t == 0 || ((t - 1) % sizeof(uint64_t) == 0 &&
                                       t - 1 < sizeof(struct efarm_thresholds)));
                /* Only a read protocol pays a registration: only it has a cold threshold. */
                if (cold && t)
                    EXPECT_TRUE(mp->reads && pf->thr[set][0] != 0);
            }
        if (pf->race != EFARM_RACE_NONE) {
            races++;
            EXPECT_TRUE(pf->curve && pf->thr[0][0] != 0 && pf->rivals != 0);
            EXPECT_EQ(pf->rivals & (1u << p), 0);
            for (unsigned q = 0; q < EFARM_PROTO_COUNT; q++)
                if (pf->rivals & (1u << q))
                    EXPECT_TRUE(g_efarm_msg_protos[q]->profile.curve);
        }
        if (pf->fallback_from) {
            const struct efarm_msg_proto *src = g_efarm_msg_protos[pf->fallback_from - 1];

            EXPECT_TRUE(pf->fallback_from - 1u < p && src->profile.thr[0][0] != 0);
            EXPECT_TRUE(pf->needs & (1u << (pf->fallback_from - 1)));
        }
    }
    efarm_test_context("totals");
    EXPECT_EQ(races, 3);
}

/*
 * The one-sided subprotocols' rules (g_efarm_rma_protos): what the caller
 * asks for has its rows tried by rank, each rank once, the last without
 * conditions; EFARM_RMA_PROTO may force one exactly when its kind of
 * operation has another to choose from (EFARM_RMA_PROTO_LIST's FORCE column).
 */
EFARM_TEST(rma_proto_rules)
{
    for (unsigned k = 0; k < EFARM_RMA_PROTO_COUNT; k++) {
        const struct efarm_rma_rule *r = &g_efarm_rma_protos[k].rule;
        unsigned rivals = 0, unconditional = 0, above = 0;
        uint32_t mask = 0;

        efarm_test_context("subprotocol %s", efarm_rma_proto_name((enum efarm_rma_proto)k));
        for (unsigned q = 0; q < EFARM_RMA_PROTO_COUNT; q++) {
            const struct efarm_rma_rule *o = &g_efarm_rma_protos[q].rule;

            if (o->want != r->want)
                continue;
            rivals += q != k;
            unconditional += o->need == 0;
            above += o->rank > r->rank;
            if (q != k)
                EXPECT_TRUE(o->rank != r->rank);
        }
        EXPECT_EQ(unconditional, 1);
        if (r->need == 0)
            EXPECT_EQ(above, 0); /* the one without conditions is tried last */
        /* A name EFARM_RMA_PROTO accepts (FORCE column F) is one with a rival. */
        EXPECT_EQ(efarm_rma_proto_parse(efarm_rma_proto_name((enum efarm_rma_proto)k), &mask) == 0,
                  rivals > 0);
    }
}

/*
 * The roles an operation plays (g_efarm_op_roles): each is run by one of
 * three machineries and has that machinery's hooks; an origin's errors are
 * its user's, a target has no request and nothing waits for it at the
 * HANDSHAKE; the one-sided roles are the origins the rma column names.
 */
EFARM_TEST(op_role_rows)
{
    unsigned targets = 0, rma = 0;

    for (unsigned k = EFARM_OP_FREE + 1; k < EFARM_OP_ROLE_COUNT; k++) {
        const struct efarm_op_role_ops *c = &g_efarm_op_roles[k];

        efarm_test_context("role %u (%s)", k, c->name ? c->name : "?");
        EXPECT_TRUE(c->name != NULL && c->work != NULL && c->pkt_done != NULL &&
                    c->peer_failed != NULL);
        EXPECT_TRUE(c->runs_as == EFARM_OP_TX || c->runs_as == EFARM_OP_RX ||
                    c->runs_as == EFARM_OP_RMA);
        /* A role shares its machinery's hooks. */
        EXPECT_TRUE(c->work == g_efarm_op_roles[c->runs_as].work &&
                    c->pkt_done == g_efarm_op_roles[c->runs_as].pkt_done &&
                    c->peer_failed == g_efarm_op_roles[c->runs_as].peer_failed);
        if (c->target)
            EXPECT_TRUE(!c->origin && !c->rma && c->begin == NULL && c->receipt == NULL &&
                        c->readrsp == NULL);
        /* Filed under the peer's send_id: a write we serve run as a receive (no msg_id). */
        if (c->keyed_by_send_id)
            EXPECT_TRUE(c->target && c->runs_as == EFARM_OP_RX);
        if (c->rma)
            EXPECT_TRUE(c->origin);
        /* Our long read learns its target's op id from the READRSP. */
        if (c->rma && c->runs_as == EFARM_OP_RX)
            EXPECT_TRUE(c->readrsp == efarm_rtr_long_readrsp);
        targets += c->target;
        rma += c->rma;
    }
    efarm_test_context("totals");
    EXPECT_TRUE(targets == 2 && rma == 3);
    EXPECT_TRUE(!g_efarm_op_roles[EFARM_OP_RX].origin && g_efarm_op_roles[EFARM_OP_TX].origin);
}

/*
 * The states each role lists (efarm_op_role_ops.states), which efarm_op_set_state
 * holds its ops to: every op starts running (efarm_op_alloc's zeroes); a role
 * with a request completes it, and so does the long write we serve (run as a
 * receive) before its replies go; only a send can be NACKed (a read
 * protocol's READ_NACK turns it into long-CTS), and not the long read we
 * serve, which is long-CTS from its start. Every state is some role's and has
 * a name.
 */
EFARM_TEST(op_role_states)
{
    const unsigned running = EFARM_OPS_BIT(EFARM_OPS_RUNNING),
                   nacked = EFARM_OPS_BIT(EFARM_OPS_NACKED),
                   completed = EFARM_OPS_BIT(EFARM_OPS_COMPLETED);
    unsigned all = 0;

    EXPECT_EQ(g_efarm_op_roles[EFARM_OP_FREE].states, 0);
    for (unsigned k = EFARM_OP_FREE + 1; k < EFARM_OP_ROLE_COUNT; k++) {
        const struct efarm_op_role_ops *c = &g_efarm_op_roles[k];

        efarm_test_context("role %u (%s), states %#x", k, c->name ? c->name : "?", c->states);
        EXPECT_TRUE(c->states & running);
        EXPECT_EQ(c->states & ~(EFARM_OPS_BIT(EFARM_OPS_COUNT) - 1), 0);
        EXPECT_EQ((c->states & completed) != 0, !c->target || c->runs_as == EFARM_OP_RX);
        EXPECT_EQ((c->states & nacked) != 0, !c->target && c->runs_as == EFARM_OP_TX);
        all |= c->states;
    }
    for (unsigned s = 0; s < EFARM_OPS_COUNT; s++) {
        efarm_test_context("state %u", s);
        EXPECT_TRUE(efarm_op_state_names[s] != NULL);
        for (unsigned t = 0; t < s; t++)
            EXPECT_TRUE(strcmp(efarm_op_state_names[t], efarm_op_state_names[s]) != 0);
    }
    efarm_test_context("totals");
    EXPECT_EQ(all, EFARM_OPS_BIT(EFARM_OPS_COUNT) - 1);
}
