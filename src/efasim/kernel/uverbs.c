/*
 * The uverbs core (uverbs.h): a uverbs file's life, its handle table, the
 * three ways a call arrives (an ioctl's attributes, a written legacy
 * command, a legacy command inside ioctl's INVOKE_WRITE), mmap of the
 * driver's entries, and event files. What each call does is a row of the
 * tables in uverbs_cmds.c; this file only parses, checks what the kernel's
 * core checks for every call, resolves handles and writes answers back.
 *
 * User memory is read and written with process_vm_readv/writev on this
 * process, so a bad pointer in a call is EFAULT, as copy_from_user makes it,
 * never a crash of the caller.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "kernel.h"
#include "mmio.h"
#include "uverbs_cmds.h"

/* ---- User memory ------------------------------------------------------------------------ */

int efasim_copy_from_user(void *dst, uint64_t src, size_t len)
{
    struct iovec local = {dst, len}, remote = {(void *)(uintptr_t)src, len};

    if (!len)
        return 0;
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

int efasim_copy_to_user(uint64_t dst, const void *src, size_t len)
{
    struct iovec local = {(void *)src, len}, remote = {(void *)(uintptr_t)dst, len};

    if (!len)
        return 0;
    return process_vm_writev(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)len ? 0 : -EFAULT;
}

/* ---- Files and handles ------------------------------------------------------------------ */

struct efasim_kfile *efasim_kfile_open(unsigned dev_index)
{
    struct efasim_kfile *f = calloc(1, sizeof(*f));

    if (!f) {
        errno = ENOMEM;
        return NULL;
    }
    pthread_mutex_init(&f->lock, NULL);
    f->dev_index = dev_index;
    f->async.user_fd = f->async.device_fd = -1;
    f->next_key = 0;
    return f;
}

struct efasim_kobj *efasim_kobj_new(struct efasim_kfile *f, enum efasim_kobj_type type)
{
    struct efasim_kobj *o = calloc(1, sizeof(*o));
    uint32_t h;

    if (!o)
        return NULL;
    for (h = 0; h < f->nobjs_slots && f->objs[h]; h++)
        ;
    if (h == f->nobjs_slots) {
        uint32_t n = f->nobjs_slots ? f->nobjs_slots * 2 : 64;
        struct efasim_kobj **objs = realloc(f->objs, n * sizeof(*objs));

        if (!objs) {
            free(o);
            return NULL;
        }
        memset(objs + f->nobjs_slots, 0, (n - f->nobjs_slots) * sizeof(*objs));
        f->objs = objs;
        f->nobjs_slots = n;
    }
    o->file = f;
    o->type = type;
    o->handle = h;
    return o;
}

/* A new object becomes visible under its handle once its driver object exists. */
void efasim_kobj_commit(struct efasim_kobj *o)
{
    o->file->objs[o->handle] = o;
}

void efasim_kobj_free(struct efasim_kobj *o)
{
    if (o->file->objs && o->handle < o->file->nobjs_slots && o->file->objs[o->handle] == o)
        o->file->objs[o->handle] = NULL;
    free(o);
}

struct efasim_kobj *efasim_kobj_get(struct efasim_kfile *f, uint64_t handle,
                                    enum efasim_kobj_type type)
{
    struct efasim_kobj *o;

    if (handle >= f->nobjs_slots)
        return NULL;
    o = f->objs[handle];
    return o && o->type == type ? o : NULL;
}

/* Destroy what a file still holds, users before what they use (QPs, then CQs, ...). */
static void kfile_destroy_objects(struct efasim_kfile *f)
{
    static const enum efasim_kobj_type order[] = {EFASIM_KOBJ_QP, EFASIM_KOBJ_AH,
                                                  EFASIM_KOBJ_MR, EFASIM_KOBJ_CQ,
                                                  EFASIM_KOBJ_PD, EFASIM_KOBJ_COMP_CHANNEL};

    for (size_t t = 0; t < sizeof(order) / sizeof(order[0]); t++)
        for (uint32_t h = 0; h < f->nobjs_slots; h++)
            if (f->objs[h] && f->objs[h]->type == order[t])
                efasim_kobj_destroy(f->objs[h], true);
}

void efasim_kfile_release(struct efasim_kfile *f)
{
    pthread_mutex_lock(&f->lock);
    if (f->ctx && !f->forked) {
        kfile_destroy_objects(f);
        efasim_efa_dealloc_ucontext(f);
    }
    pthread_mutex_unlock(&f->lock);
    if (f->async.device_fd >= 0) {
        if (efasim_kevents_of_fd(f->async.user_fd) == &f->async)
            efasim_kevents_fd_set(f->async.user_fd, NULL);
        close(f->async.device_fd);
        pthread_mutex_destroy(&f->async.lock);
    }
    free(f->objs);
    free(f->maps);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

void efasim_kernel_forked(struct efasim_kfile *f)
{
    f->forked = true;
}

/* ---- Event files --------------------------------------------------------------------------- */

int efasim_kevents_open(struct efasim_kevents *ev, bool is_async)
{
    int sv[2];

    /* Datagrams: a read returns whole events, as the uverbs event file's read does. */
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
        return -errno;
    ev->user_fd = sv[0];
    ev->device_fd = sv[1];
    ev->is_async = is_async;
    pthread_mutex_init(&ev->lock, NULL);
    ev->pending = NULL;
    ev->head = ev->count = ev->cap = 0;
    shutdown(sv[0], SHUT_WR); /* user space only reads its end */
    efasim_kevents_fd_set(sv[0], ev);
    return 0;
}

void efasim_kevents_free(struct efasim_kevents *ev)
{
    if (efasim_kevents_of_fd(ev->user_fd) == ev)
        efasim_kevents_fd_set(ev->user_fd, NULL);
    close(ev->device_fd);
    pthread_mutex_destroy(&ev->lock);
    free(ev->pending);
    free(ev);
}

/* Append cq to the events not yet read; false when there is no memory for it. ev->lock held. */
static bool pending_push(struct efasim_kevents *ev, struct efasim_kobj *cq)
{
    if (ev->count == ev->cap) {
        uint32_t cap = ev->cap ? ev->cap * 2 : 64;
        struct efasim_kobj **p = malloc(cap * sizeof(*p));

        if (!p)
            return false;
        for (uint32_t i = 0; i < ev->count; i++)
            p[i] = ev->pending[(ev->head + i) % ev->cap];
        free(ev->pending);
        ev->pending = p;
        ev->head = 0;
        ev->cap = cap;
    }
    ev->pending[(ev->head + ev->count++) % ev->cap] = cq;
    return true;
}

void efasim_kevents_comp(struct efasim_kevents *ev, struct efasim_kobj *cq)
{
    struct ib_uverbs_comp_event_desc d = {.cq_handle = cq->user_handle};

    if (!ev || ev->device_fd < 0)
        return;
    pthread_mutex_lock(&ev->lock);
    /* Recorded first: a reader that gets the event finds its CQ. */
    if (pending_push(ev, cq) &&
        send(ev->device_fd, &d, sizeof(d), MSG_DONTWAIT | MSG_NOSIGNAL) != (ssize_t)sizeof(d))
        ev->count--; /* the file is full: the event is lost, as the kernel's allocation failure */
    pthread_mutex_unlock(&ev->lock);
}

ssize_t efasim_kevents_read(struct efasim_kevents *ev, void *buf, size_t count)
{
    size_t size = ev->is_async ? sizeof(struct ib_uverbs_async_event_desc)
                               : sizeof(struct ib_uverbs_comp_event_desc);
    ssize_t n;

    if (count < size) {
        errno = EINVAL; /* ib_uverbs_event_read: the event does not fit; it stays */
        return -1;
    }
    n = recv(ev->user_fd, buf, size, 0); /* blocks, or EAGAIN, as the file's flags say */
    if (n == (ssize_t)size && !ev->is_async) {
        pthread_mutex_lock(&ev->lock);
        if (ev->count) {
            struct efasim_kobj *cq = ev->pending[ev->head];

            ev->head = (ev->head + 1) % ev->cap;
            ev->count--;
            if (cq)
                cq->events_read++; /* the kernel counts an event when it is read */
        }
        pthread_mutex_unlock(&ev->lock);
    }
    return n;
}

void efasim_kevents_forget(struct efasim_kevents *ev, struct efasim_kobj *cq)
{
    struct ib_uverbs_comp_event_desc d;
    uint32_t queued = 0, inflight, kept;

    if (!ev)
        return;
    pthread_mutex_lock(&ev->lock);
    if (efasim_kevents_of_fd(ev->user_fd) != ev) {
        /* User space closed its end (and the number may name another file now):
         * nothing is read any more, so the CQ's entries just go. */
        kept = 0;
        for (uint32_t i = 0; i < ev->count; i++) {
            struct efasim_kobj *o = ev->pending[(ev->head + i) % ev->cap];

            if (o != cq)
                ev->pending[(ev->head + kept++) % ev->cap] = o;
        }
        ev->count = kept;
        pthread_mutex_unlock(&ev->lock);
        return;
    }
    /* Take every queued event out of the socket; events already taken by a reader
     * that has yet to count them are the oldest entries, and stay. */
    while (recv(ev->user_fd, &d, sizeof(d), MSG_DONTWAIT) == (ssize_t)sizeof(d))
        queued++;
    inflight = ev->count > queued ? ev->count - queued : 0;
    for (uint32_t i = 0; i < inflight; i++) {
        struct efasim_kobj **o = &ev->pending[(ev->head + i) % ev->cap];

        if (*o == cq) { /* being read now: counted here, and its reader finds no CQ */
            cq->events_read++;
            *o = NULL;
        }
    }
    kept = inflight;
    for (uint32_t i = inflight; i < ev->count; i++) {
        struct efasim_kobj *o = ev->pending[(ev->head + i) % ev->cap];

        if (o == cq)
            continue;
        d.cq_handle = o->user_handle;
        if (send(ev->device_fd, &d, sizeof(d), MSG_DONTWAIT | MSG_NOSIGNAL) == (ssize_t)sizeof(d))
            ev->pending[(ev->head + kept++) % ev->cap] = o;
    }
    ev->count = kept;
    pthread_mutex_unlock(&ev->lock);
}

void efasim_kevents_async(struct efasim_kfile *f, uint64_t element, uint32_t type)
{
    struct ib_uverbs_async_event_desc d = {.element = element, .event_type = type};

    if (f->async.device_fd >= 0)
        (void)send(f->async.device_fd, &d, sizeof(d), MSG_DONTWAIT | MSG_NOSIGNAL);
}

/* ---- mmap entries -------------------------------------------------------------------------- */

int efasim_kfile_add_map(struct efasim_kfile *f, struct efasim_mmio *region, uint64_t *key_p)
{
    long page = sysconf(_SC_PAGESIZE);

    if (f->nmaps == f->maps_slots) {
        uint32_t n = f->maps_slots ? f->maps_slots * 2 : 32;
        struct efasim_kmap *maps = realloc(f->maps, n * sizeof(*maps));

        if (!maps)
            return -ENOMEM;
        f->maps = maps;
        f->maps_slots = n;
    }
    /* As rdma_user_mmap_entry_insert: page-numbered keys, never reused in a file's life. */
    *key_p = f->next_key;
    f->next_key +=
        (efasim_mmio_length(region) + (uint64_t)page - 1) / (uint64_t)page * (uint64_t)page;
    f->maps[f->nmaps++] = (struct efasim_kmap){.key = *key_p, .region = region};
    return 0;
}

void efasim_kfile_remove_map(struct efasim_kfile *f, struct efasim_mmio *region)
{
    for (uint32_t i = 0; i < f->nmaps; i++) {
        if (f->maps[i].region == region) {
            f->maps[i] = f->maps[--f->nmaps];
            return;
        }
    }
}

void *efasim_uverbs_mmap(struct efasim_kfile *f, size_t len, int prot, int flags, off_t off,
                         int *err_p)
{
    struct efasim_mmio *region = NULL;
    void *addr;

    pthread_mutex_lock(&f->lock);
    if (f->forked || !f->ctx) {
        *err_p = f->forked ? EIO : EINVAL;
        goto err;
    }
    for (uint32_t i = 0; i < f->nmaps; i++)
        if (f->maps[i].key == (uint64_t)off)
            region = f->maps[i].region;
    /* rdma_user_mmap_entry_get: shared, at an entry's start, of its exact length. */
    if (!(flags & MAP_SHARED) || !region ||
        (len + (size_t)sysconf(_SC_PAGESIZE) - 1) / (size_t)sysconf(_SC_PAGESIZE) !=
            efasim_mmio_length(region) / (size_t)sysconf(_SC_PAGESIZE)) {
        *err_p = EINVAL;
        goto err;
    }
    addr = efasim_mmio_map_user(region, len, prot);
    if (addr == MAP_FAILED)
        *err_p = errno;
    pthread_mutex_unlock(&f->lock);
    return addr;

err:
    pthread_mutex_unlock(&f->lock);
    return MAP_FAILED;
}

/* ---- Attributes ------------------------------------------------------------------------------ */

static int attr_slot(uint16_t id)
{
    if (id < EFASIM_KATTR_CORE)
        return id;
    if (id == UVERBS_ATTR_UHW_IN)
        return EFASIM_KATTR_UHW_IN;
    if (id == UVERBS_ATTR_UHW_OUT)
        return EFASIM_KATTR_UHW_OUT;
    return -1;
}

bool efasim_kattr_has(const struct efasim_kcall *c, unsigned id)
{
    int s = attr_slot((uint16_t)id);

    return s >= 0 && c->attr[s];
}

/* An attribute's bytes: inline in data up to 8 bytes, else at the pointer in data. */
static int attr_read(const struct ib_uverbs_attr *a, void *dst, size_t len)
{
    if (a->len <= sizeof(a->data)) {
        memcpy(dst, &a->data, len);
        return 0;
    }
    return efasim_copy_from_user(dst, a->data, len);
}

int efasim_kattr_in(const struct efasim_kcall *c, unsigned id, void *dst, size_t len)
{
    int s = attr_slot((uint16_t)id);
    const struct ib_uverbs_attr *a = s >= 0 ? c->attr[s] : NULL;

    memset(dst, 0, len);
    if (!a)
        return -EINVAL;
    return attr_read(a, dst, a->len < len ? a->len : len);
}

int efasim_kattr_u64(const struct efasim_kcall *c, unsigned id, uint64_t *v_p)
{
    int s = attr_slot((uint16_t)id);
    const struct ib_uverbs_attr *a = s >= 0 ? c->attr[s] : NULL;

    if (!a)
        return -EINVAL;
    *v_p = a->data;
    return 0;
}

int efasim_kattr_out(struct efasim_kcall *c, unsigned id, const void *src, size_t len)
{
    int s = attr_slot((uint16_t)id);
    struct ib_uverbs_attr *a = s >= 0 ? c->attr[s] : NULL;
    uint16_t flags;
    int err;

    if (!a)
        return -EINVAL;
    if (len > a->len)
        len = a->len; /* as uverbs_copy_to: at most the user's room */
    err = efasim_copy_to_user(a->data, src, len);
    if (err)
        return err;
    flags = a->flags | UVERBS_ATTR_F_VALID_OUTPUT;
    return efasim_copy_to_user((uint64_t)(uintptr_t)&a->flags, &flags, sizeof(flags));
}

int efasim_kattr_out_struct(struct efasim_kcall *c, unsigned id, const void *src, size_t len)
{
    int s = attr_slot((uint16_t)id);
    struct ib_uverbs_attr *a = s >= 0 ? c->attr[s] : NULL;
    uint8_t zero[256] = {0};
    int err;

    if (!a)
        return -EINVAL;
    /* uverbs_copy_to_struct_or_zero: the user's room beyond the struct is cleared. */
    for (size_t off = len; off < a->len; off += sizeof(zero)) {
        size_t n = a->len - off < sizeof(zero) ? a->len - off : sizeof(zero);

        err = efasim_copy_to_user(a->data + off, zero, n);
        if (err)
            return err;
    }
    return efasim_kattr_out(c, id, src, len);
}

/* Write an IDR or FD attribute's new value back into the user's attribute. */
int efasim_kattr_out_data(struct efasim_kcall *c, unsigned id, uint64_t value)
{
    int s = attr_slot((uint16_t)id);
    struct ib_uverbs_attr *a = s >= 0 ? c->attr[s] : NULL;

    if (!a)
        return -EINVAL;
    return efasim_copy_to_user((uint64_t)(uintptr_t)&a->data, &value, sizeof(value));
}

/* ---- ioctl ------------------------------------------------------------------------------------
 */

/*
 * Check one user attribute against the method's spec, as uverbs_process_attr
 * does: its slot, -ENOENT for an attribute to ignore, or -errno.
 */
static int attr_check(const struct efasim_kmethod *m, const struct ib_uverbs_attr *ua,
                      const struct efasim_kattr_spec **spec_p)
{
    const struct efasim_kattr_spec *sp = NULL;
    int s = attr_slot(ua->attr_id);

    for (const struct efasim_kattr_spec *x = m->attrs; x->kind; x++)
        if (x->id == ua->attr_id)
            sp = x;
    if (!sp || s < 0) {
        *spec_p = NULL;
        /* An unknown attribute is ignored unless user space says it must be understood. */
        return (ua->flags & UVERBS_ATTR_F_MANDATORY) ? -EPROTONOSUPPORT : -ENOENT;
    }
    switch (sp->kind) {
    case EFASIM_KATTR_PTR_IN:
    case EFASIM_KATTR_UHW:
        if (ua->len < sp->min_len || (sp->max_len && ua->len > sp->max_len))
            return -EINVAL;
        break;
    case EFASIM_KATTR_PTR_OUT:
        if (ua->len < sp->min_len || (sp->max_len && ua->len > sp->max_len))
            return -EINVAL;
        break;
    case EFASIM_KATTR_CONST_IN:
        if (ua->len != sizeof(ua->data))
            return -EINVAL;
        break;
    case EFASIM_KATTR_FLAGS_IN:
        if (ua->len != sizeof(uint32_t) && ua->len != sizeof(uint64_t))
            return -EINVAL;
        break;
    case EFASIM_KATTR_ENUM_IN:
        break;
    case EFASIM_KATTR_IDR:
    case EFASIM_KATTR_FD:
        if (ua->len)
            return -EINVAL;
        break;
    default:
        return -EINVAL;
    }
    if (ua->attr_data.reserved && sp->kind != EFASIM_KATTR_ENUM_IN)
        return -EINVAL;
    *spec_p = sp;
    return s;
}

static int do_ioctl(struct efasim_kfile *f, struct ib_uverbs_ioctl_hdr *uhdr)
{
    struct ib_uverbs_ioctl_hdr hdr;
    struct ib_uverbs_attr *uattrs = uhdr->attrs;
    const struct efasim_kmethod *m;
    struct efasim_kcall c = {.file = f};
    struct ib_uverbs_attr ua;
    uint64_t seen = 0;
    int err;

    err = efasim_copy_from_user(&hdr, (uint64_t)(uintptr_t)uhdr, sizeof(hdr));
    if (err)
        return err;
    if (hdr.length > 4096 ||
        hdr.length != sizeof(hdr) + (size_t)hdr.num_attrs * sizeof(struct ib_uverbs_attr))
        return -EINVAL;
    if (hdr.reserved1 || hdr.reserved2)
        return -EPROTONOSUPPORT;
    if (hdr.driver_id != RDMA_DRIVER_EFA)
        return -EINVAL;
    m = efasim_kmethod_find(hdr.object_id, hdr.method_id);
    if (!m)
        return -EPROTONOSUPPORT;
    for (unsigned i = 0; i < hdr.num_attrs; i++) {
        const struct efasim_kattr_spec *sp;
        int s;

        err = efasim_copy_from_user(&ua, (uint64_t)(uintptr_t)&uattrs[i], sizeof(ua));
        if (err)
            return err;
        s = attr_check(m, &ua, &sp);
        if (s == -ENOENT)
            continue;
        if (s < 0)
            return s;
        if (c.attr[s])
            return -EINVAL; /* an attribute given twice */
        c.attr[s] = &uattrs[i];
        seen |= 1ull << (sp - m->attrs);
    }
    for (const struct efasim_kattr_spec *x = m->attrs; x->kind; x++)
        if (x->mandatory && !(seen & (1ull << (x - m->attrs))))
            return -EINVAL;
    if (c.attr[EFASIM_KATTR_UHW_IN] || c.attr[EFASIM_KATTR_UHW_OUT]) {
        err = efasim_kcall_uhw(&c);
        if (err)
            return err;
    }
    err = m->fn(&c);
    efasim_kcall_uhw_done(&c, err);
    /* EPROTONOSUPPORT means "not understood by the framework" only (ib_uverbs_run_method). */
    return err == -EPROTONOSUPPORT ? -EINVAL : err;
}

int efasim_uverbs_ioctl(struct efasim_kfile *f, unsigned long request, void *arg)
{
    int err;

    if (request != RDMA_VERBS_IOCTL)
        return -ENOTTY;
    if (!efasim_kernel_ioctl_enabled())
        return -ENOTTY; /* a kernel without the ioctl interface (EFASIM_UVERBS_IOCTL=write) */
    pthread_mutex_lock(&f->lock);
    err = f->forked ? -EIO : do_ioctl(f, arg);
    pthread_mutex_unlock(&f->lock);
    return err;
}

/* ---- write ------------------------------------------------------------------------------------
 */

ssize_t efasim_uverbs_write(struct efasim_kfile *f, const void *buf, size_t count)
{
    struct ib_uverbs_cmd_hdr hdr;
    struct ib_uverbs_ex_cmd_hdr ex;
    const struct efasim_kwrite *w;
    uint8_t in[512], out[512];
    struct efasim_kcall c = {.file = f};
    size_t in_len, out_len;
    uint64_t resp_ptr;
    bool extended;
    int err;

    if (count < sizeof(hdr))
        return -EINVAL;
    err = efasim_copy_from_user(&hdr, (uint64_t)(uintptr_t)buf, sizeof(hdr));
    if (err)
        return err;
    extended = hdr.command & IB_USER_VERBS_CMD_FLAG_EXTENDED;
    if (hdr.command & ~(uint32_t)(IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_CMD_COMMAND_MASK))
        return -EINVAL;
    w = efasim_kwrite_find(hdr.command & IB_USER_VERBS_CMD_COMMAND_MASK, extended);
    if (!w)
        return -EOPNOTSUPP;
    if (!extended) {
        /* in_words counts the whole command, header included; out_words the response. */
        if (count != (size_t)hdr.in_words * 4)
            return -EINVAL;
        in_len = count - sizeof(hdr);
        out_len = (size_t)hdr.out_words * 4;
        if (in_len < w->req_size || out_len < w->resp_size)
            return -ENOSPC;
        if (in_len > sizeof(in) || out_len > sizeof(out))
            return -EINVAL;
        err = efasim_copy_from_user(in, (uint64_t)(uintptr_t)buf + sizeof(hdr), in_len);
        if (err)
            return err;
        resp_ptr = 0;
        if (w->resp_size)
            memcpy(&resp_ptr, in, sizeof(resp_ptr)); /* the legacy request's first field */
        c.core_in = in;
        c.core_in_len = w->udata ? w->req_size : in_len;
        c.uhw_in = in + c.core_in_len;
        c.uhw_in_len = in_len - c.core_in_len;
        c.core_out_len = w->udata ? w->resp_size : out_len;
        c.uhw_out_len = out_len - c.core_out_len;
    } else {
        if (count < sizeof(hdr) + sizeof(ex))
            return -EINVAL;
        err = efasim_copy_from_user(&ex, (uint64_t)(uintptr_t)buf + sizeof(hdr), sizeof(ex));
        if (err)
            return err;
        in_len = ((size_t)hdr.in_words + ex.provider_in_words) * 8;
        out_len = ((size_t)hdr.out_words + ex.provider_out_words) * 8;
        if (count - sizeof(hdr) - sizeof(ex) != in_len)
            return -EINVAL;
        if ((size_t)hdr.in_words * 8 < w->req_size)
            return -ENOSPC;
        if (ex.cmd_hdr_reserved)
            return -EINVAL;
        if (ex.response) {
            if (!hdr.out_words && !ex.provider_out_words)
                return -EINVAL;
            if ((size_t)hdr.out_words * 8 < w->resp_size)
                return -ENOSPC;
        } else if (hdr.out_words || ex.provider_out_words) {
            return -EINVAL;
        }
        if (in_len > sizeof(in) || out_len > sizeof(out))
            return -EINVAL;
        err =
            efasim_copy_from_user(in, (uint64_t)(uintptr_t)buf + sizeof(hdr) + sizeof(ex), in_len);
        if (err)
            return err;
        resp_ptr = ex.response;
        c.core_in = in;
        c.core_in_len = (size_t)hdr.in_words * 8;
        c.uhw_in = in + c.core_in_len;
        c.uhw_in_len = (size_t)ex.provider_in_words * 8;
        c.core_out_len = (size_t)hdr.out_words * 8;
        c.uhw_out_len = (size_t)ex.provider_out_words * 8;
    }
    memset(out, 0, sizeof(out));
    c.core_out = out;
    c.uhw_out = out + c.core_out_len;
    pthread_mutex_lock(&f->lock);
    err = f->forked ? -EIO : w->fn(&c);
    pthread_mutex_unlock(&f->lock);
    if (err)
        return err;
    if (resp_ptr && c.core_out_len + c.uhw_out_len) {
        err = efasim_copy_to_user(resp_ptr, out, c.core_out_len + c.uhw_out_len);
        if (err)
            return err;
    }
    return (ssize_t)count;
}
