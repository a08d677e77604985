/*
 * Multi-rail: a rank with more than one NIC tied for nearest opens an
 * endpoint on each (EFARM_RAILS, at most MPIDI_EFARM_RAILS_MAX; the NIC
 * choice lists them from its own NIC on, so ranks sharing a set start on
 * different NICs), and a contiguous message of EFARM_STRIPE_MIN bytes or
 * more to a rank that has as many is striped over them:
 *
 *   - the head, the first len - (k - 1) x t bytes, goes on rail 0 as the
 *     message itself (context, source, tag), so MPI's matching and order are
 *     rail 0's; its CQ data says it is striped, into how many tails of t
 *     bytes (a multiple of 4 KiB), and the stripe's id (efarm_impl.h);
 *   - tail r (1 <= r < k) carries the next t bytes on rail r, tagged (0, the
 *     sender's rank in MPI_COMM_WORLD, id): nothing else travels on the
 *     rails above 0, so that key is unique while fewer than 2^22 stripes of
 *     one sender are in flight;
 *   - each part goes by the subprotocol the engine picks for its size.
 *
 * The receiver matches the head like any message; when it completes with the
 * stripe flag, it posts the tails' receives at their offsets in the same
 * buffer (a tail that finds no engine slot waits in a list that progress
 * retries) and completes the MPI request when every part is done, with the
 * whole length, and the first error. A buffer shorter than the message takes
 * what fits of each part (the engine truncates and still runs each part to
 * its end), so the sender and the rails are never left waiting. A probe of a
 * head reports the whole length.
 *
 * The sender's request completes when every part has; the first error is its
 * status. Only ranks of MPI_COMM_WORLD that published the same number of
 * rails are striped to (init_world); efarm's own peers only: libfabric's
 * provider has one rail.
 */
/* MPICH's headers first: mpichconf.h sets the feature macros the system headers read. */
#include "efarm_impl.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "efarm_p2p.h"

_Static_assert(MPIDI_EFARM_RAILS_MAX == EFARM_NIC_RAILS_MAX, "one limit for rails");

/* A striped message's state, on its MPI request (MPIDI_EFARM_REQ(req).stripe). */
struct MPIDI_EFARM_stripe {
    MPIR_Request *req;
    MPIDI_EFARM_vci_t *vci;               /* whose rails carry the parts */
    struct MPIDI_EFARM_stripe *post_next; /* receives: in the list of tails to post */
    int pending;                          /* engine requests not yet complete */
    int status;                           /* the first error, or 0 */
    unsigned ntails, posted;              /* receives: tails, and how many are posted */
    unsigned long waits;                  /* receives: retries of a tail without a slot */
    uint64_t length, msg_length;          /* receives: bytes delivered, bytes sent */
    uint64_t head_len, tail_len;
    int32_t source, id;     /* receives: the tails' key (sender's world rank, id) */
    bool partner_cancelled; /* receives: the any-source partner went when the head matched */
    uint8_t *buf;           /* receives: where the message lands (user or pack buffer) */
    uint64_t buf_len;       /* ... and its length */
    struct efarm_req tails[MPIDI_EFARM_RAILS_MAX - 1];
};

/* ---- Sending ------------------------------------------------------------------------- */

static void stripe_send_part_done(struct efarm_req *ereq)
{
    MPIR_Request *sreq = ereq->ctx;
    struct MPIDI_EFARM_stripe *st = MPIDI_EFARM_REQ(sreq).stripe;

    if (ereq->status < 0 && st->status == 0)
        st->status = ereq->status;
    if (--st->pending)
        return;
    /* Every part is done: complete as an ordinary send with the first error. */
    MPIDI_EFARM_REQ(sreq).ereq.status = st->status;
    MPIDI_EFARM_REQ(sreq).stripe = NULL;
    MPL_free(st);
    MPIDI_EFARM_send_done(&MPIDI_EFARM_REQ(sreq).ereq);
}

int MPIDI_EFARM_stripe_send(MPIR_Request *sreq, const void *buf, uint64_t len, uint32_t context,
                            int source, int tag, uint32_t flags, uint64_t cq_data,
                            const MPIDI_av_entry_t *addr)
{
    const MPIDI_EFARM_addr_t *a = &MPIDI_EFARM_AV(addr);
    unsigned k = a->nrails;
    /* A tail's pages must fit the CQ data's 29 bits (2 TiB); the head takes the rest. */
    const uint64_t t_max = ((1ull << 29) - 1) << 12;
    uint64_t t = (len / k) & ~(uint64_t)4095, h;
    struct MPIDI_EFARM_stripe *st;
    MPIDI_EFARM_vci_t *v = MPIDI_EFARM_VCI(0); /* striping is VCI 0's (its rails) */
    uint32_t id;
    int ret, mpi_errno;

    if (t > t_max)
        t = t_max;
    h = len - (uint64_t)(k - 1) * t;
    st = MPL_calloc(1, sizeof(*st), MPL_MEM_BUFFER);
    if (st == NULL)
        return MPIDI_EFARM_ERROR(-ENOMEM, "striped send");
    id = v->stripe_id = (v->stripe_id + 1) & MPIDI_EFARM_STRIPE_ID_MASK;
    st->req = sreq;
    st->vci = v;
    st->pending = (int)k;
    MPIDI_EFARM_REQ(sreq).stripe = st;
    MPIDI_EFARM_REQ(sreq).ereq.cb = stripe_send_part_done;
    MPIDI_EFARM_REQ(sreq).ereq.ctx = sreq;
    cq_data |= MPIDI_EFARM_STRIPE_FLAG | (uint64_t)(k - 2) << 61 | (t >> 12) << 32 | id;
    ret = MPIDI_EFARM_tsend_wait(v, v->ep, a->peer, buf, h, context, source, tag,
                                 flags | EFARM_SEND_CQ_DATA, cq_data, &MPIDI_EFARM_REQ(sreq).ereq,
                                 &mpi_errno);
    if (mpi_errno || ret < 0) {
        /* Nothing is in flight: the caller frees the request. */
        MPIDI_EFARM_REQ(sreq).stripe = NULL;
        MPL_free(st);
        return mpi_errno ? mpi_errno : MPIDI_EFARM_ERROR(ret, "efarm_tsend (striped head)");
    }
    for (unsigned r = 1; r < k; r++) {
        struct efarm_req *tail = &st->tails[r - 1];

        tail->cb = stripe_send_part_done;
        tail->ctx = sreq;
        ret = MPIDI_EFARM_tsend_wait(
            v, v->rails[r], a->rail_peer[r - 1], (const uint8_t *)buf + h + (uint64_t)(r - 1) * t,
            t, 0, MPIR_Process.rank, (int32_t)id, flags & EFARM_SEND_INJECT, 0, tail, &mpi_errno);
        if (mpi_errno)
            ret = -EIO; /* polling failed: the endpoint did */
        if (ret < 0) {
            /*
             * The head is on its way: the request ends with this error once
             * the parts in flight are done (the receiver waits for the
             * missing tail: MPI's error handler ends the job first).
             */
            fprintf(stderr,
                    "efarm: MPI rank %d: rail %u: a striped message's tail could not "
                    "start: %s\n",
                    MPIR_Process.rank, r, efarm_strerror(ret));
            tail->status = ret;
            stripe_send_part_done(tail);
        }
    }
    v->nm_counters.stripe_sends++;
    v->nm_counters.send_msgs++;
    v->nm_counters.send_bytes += len;
    return MPI_SUCCESS;
}

/* ---- Receiving ----------------------------------------------------------------------- */

/*
 * One fewer part (or the poster's hold) outstanding; the last completes the
 * MPI request and frees st.
 */
static void stripe_recv_release(struct MPIDI_EFARM_stripe *st)
{
    MPIR_Request *rreq = st->req;
    uint64_t length = st->length, msg_length = st->msg_length;
    int status = st->status;
    bool partner_cancelled = st->partner_cancelled;

    if (--st->pending)
        return;
    if (msg_length > st->buf_len && status == 0)
        status = -EMSGSIZE;
    MPIDI_EFARM_REQ(rreq).stripe = NULL;
    MPL_free(st);
    MPIDI_EFARM_VCI(0)->nm_counters.stripe_recvs++;
    MPIDI_EFARM_recv_finish(rreq, status, length, msg_length, partner_cancelled);
}

static void stripe_recv_part_done(struct efarm_req *ereq)
{
    MPIR_Request *rreq = ereq->ctx;
    struct MPIDI_EFARM_stripe *st = MPIDI_EFARM_REQ(rreq).stripe;

    if (ereq->status < 0 && ereq->status != -EMSGSIZE && st->status == 0)
        st->status = ereq->status;
    st->length += ereq->length;
    stripe_recv_release(st);
}

/*
 * Post the tails not yet posted; false if one found no engine slot (retry
 * later). The caller holds one count of st->pending, so a tail completing
 * inside efarm_trecv cannot free st here.
 */
static bool stripe_post_tails(struct MPIDI_EFARM_stripe *st)
{
    while (st->posted < st->ntails) {
        unsigned r = st->posted + 1;
        struct efarm_req *tail = &st->tails[r - 1];
        uint64_t off = st->head_len + (uint64_t)(r - 1) * st->tail_len;
        uint64_t room = off < st->buf_len ? st->buf_len - off : 0;
        int ret;

        tail->cb = stripe_recv_part_done;
        tail->ctx = st->req;
        ret = efarm_trecv(st->vci->rails[r], room ? st->buf + off : st->buf,
                          room < st->tail_len ? room : st->tail_len, 0, st->source, st->id, tail);
        if (ret == -EAGAIN) {
            st->vci->nm_counters.eagain_waits++;
            MPIDI_EFARM_slot_wait_warning(++st->waits);
            return false;
        }
        st->posted++;
        if (ret < 0) {
            fprintf(stderr,
                    "efarm: MPI rank %d: rail %u: a striped message's tail cannot be "
                    "received: %s\n",
                    MPIR_Process.rank, r, efarm_strerror(ret));
            if (st->status == 0)
                st->status = ret;
            st->pending--; /* never completes; the hold keeps st */
        }
    }
    return true;
}

void MPIDI_EFARM_stripe_recv_head(MPIR_Request *rreq)
{
    MPIDI_EFARM_request_t *r = &MPIDI_EFARM_REQ(rreq);
    const struct efarm_req *head = &r->ereq;
    struct MPIDI_EFARM_stripe *st;
    unsigned k = MPIDI_EFARM_STRIPE_TAILS(head->cq_data) + 1;
    int nsrc = rreq->comm->comm_kind == MPIR_COMM_KIND__INTERCOMM ? rreq->comm->remote_size
                                                                  : rreq->comm->local_size;
    /* The source is the sender's word: a rank of the communicator, or the message is refused. */
    int lpid = head->source >= 0 && head->source < nsrc
                   ? MPIDI_EFARM_world_rank(head->source, rreq->comm)
                   : -1;
    bool partner_cancelled;

    /* The message matched: an any-source partner must not match too (efarm_p2p.h). */
    partner_cancelled = !r->posting || MPIDI_EFARM_MPICH_43;
    MPIDI_EFARM_recv_cancel_partner(rreq);
    st = MPL_calloc(1, sizeof(*st), MPL_MEM_BUFFER);
    if (st == NULL || k > MPIDI_EFARM_global.nrails || lpid < 0) {
        /* Only a peer that saw our rails stripes to us: this one is not such a peer. */
        fprintf(stderr,
                "efarm: MPI rank %d: a striped message (%u parts) from rank %d that cannot be "
                "received here (%s)\n",
                MPIR_Process.rank, k, head->source,
                st == NULL ? "no memory"
                : lpid < 0 ? "not a rank of MPI_COMM_WORLD in this communicator"
                           : "fewer rails");
        MPL_free(st);
        MPIDI_EFARM_recv_finish(rreq, -EPROTO, head->length,
                                MPIDI_EFARM_stripe_msg_length(head->msg_length, head->cq_data),
                                partner_cancelled);
        return;
    }
    st->req = rreq;
    st->vci = MPIDI_EFARM_VCI(0); /* striped heads arrive on VCI 0 */
    st->ntails = k - 1;
    st->pending = (int)k; /* the tails and the poster's hold */
    st->status = head->status == -EMSGSIZE ? 0 : head->status;
    st->length = head->length;
    st->head_len = head->msg_length;
    st->tail_len = MPIDI_EFARM_STRIPE_TAIL_LEN(head->cq_data);
    st->msg_length = MPIDI_EFARM_stripe_msg_length(head->msg_length, head->cq_data);
    st->source = lpid;
    st->id = MPIDI_EFARM_STRIPE_ID(head->cq_data);
    st->buf = head->buf;
    st->buf_len = head->buf_len;
    st->partner_cancelled = partner_cancelled;
    r->stripe = st;
    if (stripe_post_tails(st)) {
        stripe_recv_release(st);
        return;
    }
    st->vci->nm_counters.stripe_tail_waits++;
    if (st->vci->post_tail)
        st->vci->post_tail->post_next = st;
    else
        st->vci->post_head = st;
    st->vci->post_tail = st;
}

/* ---- Progress, opening and closing ---------------------------------------------------- */

int MPIDI_EFARM_rails_progress(MPIDI_EFARM_vci_t *v)
{
    int events = 0;

    for (unsigned r = 0; r < MPIDI_EFARM_global.nrails; r++) {
        int ret = efarm_ep_progress(v->rails[r]);

        /* Inside one of this rail's callbacks (efarm_progress.h): the others may go on. */
        if (ret == -EDEADLK)
            continue;
        if (ret < 0)
            return ret;
        events += ret;
    }
    while (v->post_head) {
        struct MPIDI_EFARM_stripe *st = v->post_head;
        struct MPIDI_EFARM_stripe *next = st->post_next;

        if (!stripe_post_tails(st))
            break;
        v->post_head = next;
        if (next == NULL)
            v->post_tail = NULL;
        stripe_recv_release(st); /* the poster's hold */
        events++;
    }
    return events;
}

/*
 * Open rails 1.. on the NICs the choice tied with this rank's own (init_local,
 * after rail 0), as many as EFARM_RAILS asks and the choice has. Fewer than
 * asked is not an error: striping needs the same count on both sides, which
 * init_world compares.
 */
int MPIDI_EFARM_rails_open(const struct efarm_ep_attr *attr0)
{
    const struct efarm_nic_choice *c = &MPIDI_EFARM_global.nic;
    uint64_t want = efarm_config()->rails, min = efarm_config()->stripe_min;
    struct efarm_device_caps caps[64];
    MPIDI_EFARM_vci_t *v = MPIDI_EFARM_VCI(0);
    unsigned n;
    int ndev;

    v->rails[0] = v->ep;
    MPIDI_EFARM_global.nrails = 1;
    snprintf(MPIDI_EFARM_global.rail_device[0], sizeof(MPIDI_EFARM_global.rail_device[0]), "%s",
             attr0->device);
    MPIDI_EFARM_global.stripe_min = UINT64_MAX;
    /* efarm_config checked EFARM_RAILS against the table's range, 1 to 4. */
    _Static_assert(MPIDI_EFARM_RAILS_MAX == 4, "EFARM_RAILS's range in efarm_config.h is 1-4");
    n = c->nrails < want ? c->nrails : (unsigned)want;
    if (n < 2 || min == 0)
        return MPI_SUCCESS;
    if ((unsigned)MPIDI_EFARM_TAG_ERROR_BITS & MPIDI_EFARM_STRIPE_ID_MASK) {
        /* MPICH's error bits would land in the stripe id: not with this tag width. */
        fprintf(stderr, "efarm: MPI rank %d: EFARM_RAILS ignored (tag error bits 0x%x)\n",
                MPIR_Process.rank, (unsigned)MPIDI_EFARM_TAG_ERROR_BITS);
        return MPI_SUCCESS;
    }
    ndev = efarm_device_query_all(caps, sizeof(caps) / sizeof(caps[0]));
    if (ndev < 0)
        return MPIDI_EFARM_ERROR(ndev, "efarm_device_query_all");
    for (unsigned r = 1; r < n; r++) {
        struct efarm_ep_attr attr = *attr0;
        int ret;

        if (c->rails[r] >= (unsigned)ndev || c->rails[r] >= sizeof(caps) / sizeof(caps[0]))
            break;
        attr.device = caps[c->rails[r]].name;
        ret = efarm_ep_open(&attr, &v->rails[r]);
        if (ret < 0)
            return MPIDI_EFARM_ERROR(ret, "efarm_ep_open (a rail)");
        snprintf(MPIDI_EFARM_global.rail_device[r], sizeof(MPIDI_EFARM_global.rail_device[r]), "%s",
                 caps[c->rails[r]].name);
        MPIDI_EFARM_global.nrails = r + 1;
    }
    /* Every rail carries at least 4 KiB of a striped message. */
    MPIDI_EFARM_global.stripe_min =
        min > 4096 * MPIDI_EFARM_global.nrails ? min : 4096 * MPIDI_EFARM_global.nrails;
    if (efarm_config()->nic_verbose) {
        fprintf(stderr, "efarm: MPI rank %d: %llu rails:", MPIR_Process.rank,
                MPIDI_EFARM_global.nrails);
        for (unsigned r = 0; r < MPIDI_EFARM_global.nrails; r++)
            fprintf(stderr, " %s", caps[c->rails[r]].name);
        fprintf(stderr, "; striping from %llu B\n",
                (unsigned long long)MPIDI_EFARM_global.stripe_min);
    }
    return MPI_SUCCESS;
}

/* Flush every rail (finalize, before its barrier); the first error. */
int MPIDI_EFARM_rails_flush(uint64_t timeout_ms)
{
    int first = 0;

    for (unsigned r = 1; r < MPIDI_EFARM_global.nrails; r++) {
        int ret = efarm_ep_flush(MPIDI_EFARM_VCI(0)->rails[r], timeout_ms);

        if (ret < 0 && first == 0)
            first = ret;
    }
    return first;
}

int MPIDI_EFARM_rails_close(void)
{
    MPIDI_EFARM_vci_t *v = MPIDI_EFARM_VCI(0);

    for (unsigned r = 1; r < MPIDI_EFARM_global.nrails; r++) {
        efarm_ep_close(v->rails[r]);
        v->rails[r] = NULL;
    }
    MPIDI_EFARM_global.nrails = 1;
    v->rails[0] = NULL;
    v->post_head = v->post_tail = NULL;
    return MPI_SUCCESS;
}
