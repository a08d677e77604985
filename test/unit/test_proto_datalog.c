/*
 * The engine suite, part 13 (see proto_rig.h): EFARM_LOG_LEVEL=data prints
 * every packet, on send and on receive, without crashing.
 *
 * The engine's log is captured while traffic of every subprotocol runs (the
 * matrix of part 1, tagged and untagged, after a DC send that needs the
 * handshake trigger; READ_NACK with the registration limit of part 9), then
 * parsed: for each endpoint and packet type, the lines "efarm[PID] data: ep
 * <qpn> tx <type>" and "rx <type>" must number exactly what the per-type
 * counters count, each followed by a hex line that decodes to that type (what
 * efarm-pktdump --log reads), every type that crossed the wire in either
 * direction is printed,
 * and the HANDSHAKE's extra_info is printed on send as on receive. Before,
 * printing a RUNTREAD packet on send read its read_iov through the packet
 * description's NULL payload (SIGSEGV), and the HANDSHAKE sent left out its
 * extra_info.
 *
 * And the printer alone: a description of every packet type, as a sender
 * fills it before encoding (no payload), prints in both forms.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "efarm_byteorder.h"
#include "efarm_errno.h"
#include "efarm_log.h"
#include "efarm_pkt.h"
#include "efarm_proto.h"
#include "efarm_proto_v4.h"
#include "efarm_test.h"
#include "proto_common.h"
#include "proto_rig.h"

static uint16_t ep_qpn(const struct efarm_ep *ep)
{
    uint8_t raw[EFARM_RAW_ADDR_LEN];

    efarm_ep_addr(ep, raw);
    return efarm_load_le16(raw + offsetof(struct efarm_wire_raw_addr, qpn));
}

/* Per endpoint and packet type: the log lines for sends and receives. */
struct printed {
    uint64_t tx[256], rx[256];
};

/* Parse the captured log into lines per packet type for the endpoints with QPNs qa and qb. */
static void parse_log(const char *path, uint16_t qa, uint16_t qb, struct printed *pa,
                      struct printed *pb)
{
    static char line[65536];
    char dir[8], name[64];
    FILE *f = fopen(path, "r");
    unsigned qpn;

    EXPECT_TRUE(f != NULL);
    memset(pa, 0, sizeof(*pa));
    memset(pb, 0, sizeof(*pb));
    while (fgets(line, sizeof(line), f)) {
        const char *at = strstr(line, "] data: ep ");
        struct printed *p;
        int type;

        if (!strncmp(line, "efarm[", 6) && strstr(line, "] hex:")) {
            /* The hex line after each header decodes to the type the header named. */
            uint8_t bytes[16384];
            unsigned n = 0, v;
            int used;
            struct efarm_pkt pkt;

            for (const char *h = strstr(line, "] hex:") + 6; sscanf(h, " %2x%n", &v, &used) == 1;
                 h += used)
                if (n < sizeof(bytes))
                    bytes[n++] = (uint8_t)v;
            EXPECT_EQ(efarm_pkt_decode(bytes, n, &pkt), 0);
            EXPECT_TRUE(!strcmp(efarm_pkt_type_info(pkt.type)->name, name));
            continue;
        }
        if (!at || strncmp(line, "efarm[", 6) ||
            sscanf(at, "] data: ep %u %7s %63s", &qpn, dir, name) != 3)
            continue;
        p = qpn == qa ? pa : qpn == qb ? pb : NULL;
        type = efarm_pkt_type_lookup(name);
        EXPECT_TRUE(p != NULL);
        EXPECT_TRUE(type >= 0);
        if (!strcmp(dir, "tx"))
            p->tx[type]++;
        else if (!strcmp(dir, "rx"))
            p->rx[type]++;
        else
            efarm_test_fail(__FILE__, __LINE__, "log line with direction %s: %s", dir, line);
    }
    fclose(f);
}

/* Every packet counted was printed, once, with its direction; returns the types that crossed. */
static unsigned expect_printed(const char *who, const struct efarm_counters *c,
                               const struct printed *p, uint8_t *crossed)
{
    unsigned n = 0;

    for (unsigned t = 0; t < 256; t++) {
        efarm_test_context("endpoint %s, %s", who, efarm_pkt_type_info((uint8_t)t)->name);
        EXPECT_EQ(p->tx[t], c->tx_by_type[t]);
        EXPECT_EQ(p->rx[t], c->rx_by_type[t]);
        if (c->tx_by_type[t] || c->rx_by_type[t]) {
            crossed[t] = 1;
            n++;
        }
    }
    efarm_test_context("after the packet counts");
    return n;
}

/* A DC send before either side heard the other: a's trigger, both HANDSHAKEs, the RECEIPT. */
static void dc_first_contact(struct rig *r)
{
    struct msg m;

    msg_init(&m, 10, 10, EFARM_SEND_DC, true, EFARM_PROTO_EAGER, 41);
    msg_post(r, &m);
    msg_send(r, &m);
    proto_pair_wait(&r->p, (struct efarm_req *[]){&m.sreq, &m.rreq}, 2, WAIT_S);
    msg_check(r, &m);
    msg_free(&m);
    EXPECT_EQ(cnt(r->p.a)->tx_by_type[EFARM_PKT_EAGER_RTW], 1);
}

/* Capture the log of fn's traffic on a fresh rig at the data level and check every line. */
static void datalog_run(const struct efarm_ep_attr *attr, void (*fn)(struct rig *),
                        const uint8_t *must_cross, unsigned nmust)
{
    char path[256];
    struct printed pa, pb;
    uint8_t crossed[256] = {0};
    struct rig r;
    int saved;

    proto_tmp_path(path, sizeof(path), "datalog");
    setenv("EFARM_LOG_LEVEL", "data", 1);
    saved = proto_stderr_capture(path);
    rig_open(&r, attr, attr);
    EXPECT_EQ(efarm_log_level(), EFARM_LOG_DATA);
    fn(&r);
    proto_stderr_restore(saved);
    parse_log(path, ep_qpn(r.p.a), ep_qpn(r.p.b), &pa, &pb);
    expect_printed("a", cnt(r.p.a), &pa, crossed);
    expect_printed("b", cnt(r.p.b), &pb, crossed);
    for (unsigned i = 0; i < nmust; i++) {
        efarm_test_context("%s must have crossed", efarm_pkt_type_info(must_cross[i])->name);
        EXPECT_TRUE(crossed[must_cross[i]]);
    }
    /* The HANDSHAKE's features, printed on send (a's and b's) and on receive. */
    efarm_test_context("extra_info lines");
    EXPECT_EQ(proto_file_count(path, "extra_info[0]: "),
              cnt(r.p.a)->tx_by_type[EFARM_PKT_HANDSHAKE] +
                  cnt(r.p.a)->rx_by_type[EFARM_PKT_HANDSHAKE] +
                  cnt(r.p.b)->tx_by_type[EFARM_PKT_HANDSHAKE] +
                  cnt(r.p.b)->rx_by_type[EFARM_PKT_HANDSHAKE]);
    /* Read REQs show their read_iov on both sides. */
    EXPECT_TRUE(proto_file_count(path, "read_iov[0]: addr=") >=
                2 * (cnt(r.p.a)->tx_by_type[EFARM_PKT_RUNTREAD_TAGRTM] +
                     cnt(r.p.a)->tx_by_type[EFARM_PKT_LONGREAD_TAGRTM]));
    unlink(path);
    rig_close(&r);
}

static void traffic_matrix(struct rig *r)
{
    dc_first_contact(r);
    rig_handshake(r);
    matrix_run(r, true);
    matrix_run(r, false);
}

/*
 * Every subprotocol with the data level on: no crash, and every packet of
 * every type printed once on send and once on receive.
 */
EFARM_TEST_TIMEOUT(proto_datalog_every_subprotocol, 120)
{
    static const uint8_t must[] = {
        EFARM_PKT_HANDSHAKE,
        EFARM_PKT_EAGER_RTW,
        EFARM_PKT_CTS,
        EFARM_PKT_CTSDATA,
        EFARM_PKT_EOR,
        EFARM_PKT_RECEIPT,
        EFARM_PKT_EAGER_MSGRTM,
        EFARM_PKT_EAGER_TAGRTM,
        EFARM_PKT_MEDIUM_MSGRTM,
        EFARM_PKT_MEDIUM_TAGRTM,
        EFARM_PKT_LONGCTS_MSGRTM,
        EFARM_PKT_LONGCTS_TAGRTM,
        EFARM_PKT_LONGREAD_MSGRTM,
        EFARM_PKT_LONGREAD_TAGRTM,
        EFARM_PKT_RUNTREAD_MSGRTM,
        EFARM_PKT_RUNTREAD_TAGRTM,
        EFARM_PKT_DC_EAGER_MSGRTM,
        EFARM_PKT_DC_EAGER_TAGRTM,
        EFARM_PKT_DC_MEDIUM_MSGRTM,
        EFARM_PKT_DC_MEDIUM_TAGRTM,
        EFARM_PKT_DC_LONGCTS_MSGRTM,
        EFARM_PKT_DC_LONGCTS_TAGRTM,
    };

    datalog_run(&g_small, traffic_matrix, must, sizeof(must));
}

/* READ_NACK, as part 9 makes it (EFASIM_MAX_MR = 3): b cannot register a's message. */
static void traffic_read_nack(struct rig *r)
{
    struct proto_pair *p = &r->p;
    uint64_t len = r->read_min + 100;
    uint8_t *bsrc = malloc(len), *adst = malloc(len);
    struct efarm_req bs = {0}, ar = {0};
    struct msg m;

    rig_handshake(r);
    proto_fill(bsrc, len, 180);
    EXPECT_RET(efarm_tsend(p->b, p->b_to_a, bsrc, len, CTX, SRC, 1, 0, 0, &bs), 0);
    SPIN_UNTIL(p, efarm_tprobe(p->a, CTX, SRC, 1, false, &(struct efarm_probe_info){0}) == 1,
               WAIT_S);
    msg_init(&m, len, len, 0, true, EFARM_PROTO_RUNTREAD, 181);
    msg_post(r, &m);
    msg_send(r, &m);
    proto_pair_wait(p, (struct efarm_req *[]){&m.sreq, &m.rreq}, 2, WAIT_S);
    msg_check(r, &m);
    EXPECT_EQ(cnt(p->b)->read_nacks_sent, 1);
    EXPECT_RET(efarm_trecv(p->a, adst, len, CTX, SRC, 1, &ar), 0);
    proto_pair_wait(p, (struct efarm_req *[]){&bs, &ar}, 2, WAIT_S);
    proto_expect_pattern(adst, len, 180);
    msg_free(&m);
    free(bsrc);
    free(adst);
}

EFARM_TEST_TIMEOUT(proto_datalog_read_nack, 60)
{
    static const uint8_t must[] = {EFARM_PKT_READ_NACK, EFARM_PKT_LONGCTS_TAGRTM,
                                   EFARM_PKT_RUNTREAD_TAGRTM};

    setenv("EFASIM_MAX_MR", "3", 1);
    datalog_run(&g_small, traffic_read_nack, must, sizeof(must));
}

/* Fill a description of `type` as a sender does: every field of its table, no payload. */
static void describe(uint8_t type, struct efarm_pkt *pkt, uint8_t *extra)
{
    const struct efarm_pkt_type_info *info = efarm_pkt_type_info(type);

    efarm_pkt_init(pkt, type);
    for (unsigned i = 0; i < info->nfields; i++)
        efarm_pkt_set(pkt, (enum efarm_pkt_field)info->fields[i].id, 1 + i);
    if (info->traits & EFARM_PKT_T_READ_IOV)
        efarm_pkt_set(pkt, EFARM_PKT_F_READ_IOV_COUNT, 2); /* the sender appends them later */
    if (info->traits & EFARM_PKT_T_RMA_IOV)
        efarm_pkt_set(pkt, EFARM_PKT_F_RMA_IOV_COUNT, 0);
    if (type == EFARM_PKT_HANDSHAKE) {
        efarm_store_le64(extra, 0x1f);
        efarm_pkt_set(pkt, EFARM_PKT_F_NEXTRA_P3, 4);
        pkt->extra_info = extra;
    }
    if (info->traits & EFARM_PKT_T_REQ)
        pkt->flags |= EFARM_REQ_OPT_RAW_ADDR_HDR;
}

/*
 * Every packet type with a wire format, as a description to encode, prints
 * in both forms: read_iov only where the payload holds it, the HANDSHAKE's
 * extra_info from the words it points at.
 */
EFARM_TEST(proto_datalog_print_descriptions)
{
    char path[256];
    unsigned ntypes = 0;

    proto_tmp_path(path, sizeof(path), "describe");
    for (unsigned t = 0; t < 256; t++) {
        const struct efarm_pkt_type_info *info = efarm_pkt_type_info((uint8_t)t);
        uint8_t extra[8];
        struct efarm_pkt pkt;
        FILE *f;

        if (!(info->traits & EFARM_PKT_T_SUPPORTED))
            continue;
        efarm_test_context("%s", info->name);
        describe((uint8_t)t, &pkt, extra);
        f = fopen(path, "w");
        EXPECT_TRUE(f != NULL);
        efarm_pkt_print_text(f, &pkt);
        efarm_pkt_print_json(f, &pkt);
        fclose(f);
        EXPECT_EQ(proto_file_count(path, "version: 4"), 1);
        EXPECT_EQ(proto_file_count(path, "\"type_name\":"), 1);
        EXPECT_EQ(proto_file_count(path, "read_iov["), 0);
        if (t == EFARM_PKT_HANDSHAKE) {
            EXPECT_EQ(proto_file_count(path, "extra_info[0]: 0x000000000000001f"), 1);
            EXPECT_EQ(proto_file_count(path, "\"extra_info\":[31]"), 1);
        }
        if (info->traits & EFARM_PKT_T_REQ)
            EXPECT_EQ(proto_file_count(path, "raw_addr.qpn: "), 1);
        ntypes++;
    }
    EXPECT_TRUE(ntypes > 30);
    unlink(path);
}
