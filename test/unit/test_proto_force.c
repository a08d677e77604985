/*
 * The engine suite: EFARM_PROTO forces one two-sided subprotocol for every
 * message it may carry (efarm_ep_attr.proto stands for the variable). Over
 * sizes around a packet, the medium size and the read size, plain and
 * delivery complete, each forced subprotocol carries exactly the messages
 * the documented facts allow (eager: one packet; medium: not empty;
 * long-CTS, long-read and
 * runting read: more than one; reads: negotiated; runting read: not DC),
 * the others go as without it, every message arrives intact, the
 * proto_forced counter counts what the forced one carried, and an unknown
 * name refuses the endpoint.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "efarm_errno.h"
#include "efarm_proto.h"
#include "efarm_test.h"
#include "proto_common.h"

/* What auto picks on efasim with the defaults (RDMA read, medium 64 KiB, reads from 1 MiB). */
static enum efarm_proto_kind auto_pick(uint64_t len, uint64_t fit, bool dc)
{
    if (len <= fit)
        return EFARM_PROTO_EAGER;
    if (len <= 65536)
        return EFARM_PROTO_MEDIUM;
    if (len < 1048576)
        return EFARM_PROTO_LONGCTS;
    return dc ? EFARM_PROTO_LONGREAD : EFARM_PROTO_RUNTREAD;
}

static enum efarm_proto_kind want(enum efarm_proto_kind force, uint64_t len, uint64_t fit, bool dc)
{
    switch (force) {
    case EFARM_PROTO_EAGER:
        return len <= fit ? force : auto_pick(len, fit, dc);
    case EFARM_PROTO_MEDIUM:
        return len ? force : auto_pick(len, fit, dc); /* a medium message of 0 bytes has no
                                                          packet to go in */
    case EFARM_PROTO_RUNTREAD:
        return len > fit && !dc ? force : auto_pick(len, fit, dc);
    default: /* long-CTS, long-read */
        return len > fit ? force : auto_pick(len, fit, dc);
    }
}

EFARM_TEST(proto_force_each_subprotocol)
{
    const uint64_t sizes[] = {0, 1, 100, 8000, 20000, 65537, 300000, 1 << 21};
    uint8_t *src = malloc(1 << 21), *dst = malloc(1 << 21);

    proto_use_efasim();
    for (int f = 0; f < EFARM_PROTO_COUNT; f++) {
        struct efarm_ep_attr attr = {.proto = efarm_proto_name((enum efarm_proto_kind)f)};
        struct proto_pair p;
        uint64_t fit, forced = 0;

        proto_pair_open(&p, &attr, &attr);
        /* What one eager REQ carries to this peer: 8928-byte MTU less the tagged header. */
        fit = efarm_ep_caps(p.a)->max_msg_size - 32 - 4;
        for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
            for (unsigned dc = 0; dc < 2; dc++) {
                uint64_t n = sizes[i];
                enum efarm_proto_kind w = want((enum efarm_proto_kind)f, n, fit, dc);
                struct efarm_req sreq = {0}, rreq = {0};
                struct efarm_req *reqs[] = {&sreq, &rreq};

                efarm_test_context("EFARM_PROTO=%s, %llu bytes, %s: %s", attr.proto,
                                   (unsigned long long)n, dc ? "DC" : "plain", efarm_proto_name(w));
                proto_fill(src, n, n + dc);
                memset(dst, 0, n);
                EXPECT_RET(efarm_trecv(p.b, dst, n, 1, 2, 3, &rreq), 0);
                EXPECT_RET(
                    efarm_tsend(p.a, p.a_to_b, src, n, 1, 2, 3, dc ? EFARM_SEND_DC : 0, 0, &sreq),
                    0);
                proto_pair_wait(&p, reqs, 2, 20);
                EXPECT_RET(sreq.status, 0);
                EXPECT_RET(rreq.status, 0);
                EXPECT_EQ(sreq.proto, w);
                proto_expect_pattern(dst, n, n + dc);
                forced += w == (enum efarm_proto_kind)f;
            }
        }
        EXPECT_EQ(efarm_ep_counters(p.a)->proto_forced, forced);
        EXPECT_TRUE(forced >= 2);
        proto_pair_close(&p);
    }
    free(src);
    free(dst);
}

EFARM_TEST(proto_force_unknown_name)
{
    struct efarm_ep_attr attr = {.proto = "bulk"};
    struct efarm_ep *ep = NULL;

    proto_use_efasim();
    EXPECT_RET(efarm_ep_open(&attr, &ep), -EINVAL);
    EXPECT_TRUE(ep == NULL);
    attr.proto = "auto";
    EXPECT_RET(efarm_ep_open(&attr, &ep), 0);
    efarm_ep_close(ep);
}
