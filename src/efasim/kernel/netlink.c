/*
 * The kernel's RDMA netlink (NETLINK_RDMA) as far as rdma-core asks it: the
 * nldev client's device list (RDMA_NLDEV_CMD_GET), the system's settings
 * (RDMA_NLDEV_CMD_SYS_GET: namespace mode, copy-on-fork) and the uverbs
 * character device of a device (RDMA_NLDEV_CMD_GET_CHARDEV), answered as
 * Linux 6.1 answers them (drivers/infiniband/core/netlink.c: rdma_nl_rcv_skb,
 * rdma_nl_rcv_msg; nldev.c: fill_dev_info, nldev_get_doit, nldev_get_dumpit,
 * nldev_sys_get_doit, nldev_get_chardev; uverbs_main.c: ib_uverbs_get_nl_info;
 * net/netlink/af_netlink.c: netlink_ack, netlink_dump_done). rdma-core 44's
 * libibverbs lists devices (ibdev_nl.c: find_sysfs_devs_nl) and learns
 * whether the kernel copies pinned pages at fork (get_copy_on_fork) through
 * it, with libnl-3.
 *
 * A socket is one end of an AF_UNIX SOCK_DGRAM socket pair: the user's end is
 * the descriptor socket() returns, so poll, blocking and non-blocking reads and
 * close-on-exec behave as on any socket; the other end is the kernel's. What
 * the process sends (sendmsg, sendto, send, write) never reaches the pair: it
 * is parsed here, and the answers are written from the kernel's end as
 * datagrams, one per netlink skb Linux would queue, which the process then
 * receives with the C library's own recvmsg (the interposed receives only add
 * the kernel's address). Answers are made at the send, where Linux makes a
 * dump's later parts as the reader drains the socket; the reader sees the
 * same datagrams.
 *
 *   command (client NLDEV)  Linux 6.1            here
 *   GET, doit               DEV_INDEX's device   the same; no DEV_INDEX or an unknown one EINVAL
 *   GET, dump               every device         the same: datagrams up to 3776 bytes, NLM_F_MULTI,
 *                                                then NLMSG_DONE alone
 *   SYS_GET                 NETNS_MODE,          NETNS_MODE 1 (shared), COPY_ON_FORK 1 unless
 *                           COPY_ON_FORK 1       EFASIM_COPY_ON_FORK=0 (a kernel before 5.13)
 *   GET_CHARDEV             the client's file    "uverbs" with DEV_INDEX only; any other EOPNOTSUPP
 *   other Linux commands    their answers        EOPNOTSUPP, EPERM first where Linux wants
 *                                                CAP_NET_ADMIN (euid 0 stands for it)
 *   no such command         EINVAL               EINVAL
 *
 * Requests are parsed as rdma_nl_rcv_skb parses them: messages are taken in
 * turn while a whole header fits; one whose nlmsg_len is below the header or
 * beyond the data ends the datagram without an answer; what is not a request
 * (NLM_F_REQUEST) or is a control message is only acknowledged when
 * NLM_F_ACK asks; a failed request gets an NLMSG_ERROR with the request
 * copied after it (only its header with NETLINK_CAP_ACK, NLM_F_CAPPED), a
 * successful one with NLM_F_ACK an NLMSG_ERROR of 0, a started dump none.
 * Attributes are parsed as nlmsg_parse_deprecated does: iteration stops at
 * the first attribute that does not fit, unknown types are skipped, and the
 * attributes of g_nldev_policy are checked (a short integer ERANGE, a string
 * without its NUL EINVAL, a long one ERANGE; the handlers turn those into
 * EINVAL, except SYS_GET).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "../model/efasim_model.h"
#include "kernel.h"
#include "uverbs.h"

#define NL_GOODSIZE         3776 /* NLMSG_GOODSIZE with 4 KiB pages: a dump's datagram */
#define NL_MSG_MAX          512  /* room for one emulated answer message */
#define NL_CHARDEV_TYPE_MAX 16   /* RDMA_NLDEV_ATTR_CHARDEV_TYPE_SIZE */
#define NL_NETNS_SHARED     1    /* ib_devices_shared_netns: Linux's default */
#define NL_MAX_GROUPS       32   /* netlink_kernel_create gives every protocol at least 32 */
#define NL_AUTOBIND_ROVER   (-4096)
#define UVERBS_MAJOR        231 /* as interpose.c's stat gives /dev/infiniband/uverbsN */
#define UVERBS_BASE_MINOR   192
#define EFA_UVERBS_ABI      1 /* EFA_UVERBS_ABI_VERSION, what the sysfs view's abi_version says */
#define NODE_UNSPECIFIED    7 /* RDMA_NODE_UNSPECIFIED: EFA's node type */

_Static_assert(RDMA_NLDEV_NUM_OPS == 25, "new nldev commands: add them to g_nldev_cmds");

/* A NETLINK_RDMA socket; its descriptors point at it. */
struct nl_sock {
    unsigned refs; /* descriptors of this process on it */
    int kernel_fd; /* the kernel's end of the pair */
    dev_t dev;     /* the user's end, to tell a descriptor reused after a close we missed */
    ino_t ino;
    int type; /* SOCK_RAW or SOCK_DGRAM */
    uint32_t portid;
    uint32_t groups; /* multicast groups joined (nothing is ever sent to them) */
    bool bound;
    bool overrun;  /* an answer did not fit: the next receive is ENOBUFS */
    uint32_t opts; /* SOL_NETLINK flags set, a bit per option number */
};

struct nl_fd {
    int fd;
    struct nl_sock *s;
};

static pthread_mutex_t g_nl_lock = PTHREAD_MUTEX_INITIALIZER;
static struct nl_fd *g_nl_fds; /* under g_nl_lock */
static unsigned g_nl_nfds;     /* atomic: the fast check of every descriptor call */
static unsigned g_nl_cap;
static int32_t g_nl_rover = NL_AUTOBIND_ROVER;
/*
 * This thread holds g_nl_lock: the C library calls efasim makes meanwhile (the
 * model writes its sysfs view at the first device list) are not the process's
 * and go straight to the C library.
 */
static __thread bool t_nl_locked;

static void nl_lock(void)
{
    pthread_mutex_lock(&g_nl_lock);
    t_nl_locked = true;
}

static void nl_unlock(void)
{
    t_nl_locked = false;
    pthread_mutex_unlock(&g_nl_lock);
}

/* The C library's functions (the public ones are interposed and would take g_nl_lock again). */
static ssize_t (*g_real_sendto)(int, const void *, size_t, int, const struct sockaddr *, socklen_t);
static ssize_t (*g_real_recvmsg)(int, struct msghdr *, int);
static int (*g_real_close)(int);
static pthread_once_t g_real_once = PTHREAD_ONCE_INIT;

static void real_resolve(void)
{
    g_real_sendto = (__typeof__(g_real_sendto))dlsym(RTLD_NEXT, "sendto");
    g_real_recvmsg = (__typeof__(g_real_recvmsg))dlsym(RTLD_NEXT, "recvmsg");
    g_real_close = (__typeof__(g_real_close))dlsym(RTLD_NEXT, "close");
}

/* ---- Descriptors ----------------------------------------------------------------------------- */

static void sock_put(struct nl_sock *s) /* g_nl_lock held */
{
    if (--s->refs)
        return;
    g_real_close(s->kernel_fd);
    free(s);
}

static void fd_remove(unsigned i) /* g_nl_lock held */
{
    struct nl_sock *s = g_nl_fds[i].s;

    g_nl_fds[i] = g_nl_fds[g_nl_nfds - 1];
    __atomic_store_n(&g_nl_nfds, g_nl_nfds - 1, __ATOMIC_RELEASE);
    sock_put(s);
}

static int fd_add(int fd, struct nl_sock *s) /* g_nl_lock held */
{
    if (g_nl_nfds == g_nl_cap) {
        unsigned cap = g_nl_cap ? 2 * g_nl_cap : 8;
        struct nl_fd *p = realloc(g_nl_fds, cap * sizeof(*p));

        if (!p)
            return -ENOMEM;
        g_nl_fds = p;
        g_nl_cap = cap;
    }
    s->refs++;
    g_nl_fds[g_nl_nfds] = (struct nl_fd){fd, s};
    __atomic_store_n(&g_nl_nfds, g_nl_nfds + 1, __ATOMIC_RELEASE);
    return 0;
}

/*
 * The socket of fd, or NULL. A descriptor closed behind the interposed calls
 * (close_range, a raw system call) and reused is told by its inode, and
 * forgotten. g_nl_lock held.
 */
static struct nl_sock *fd_sock(int fd)
{
    int saved = errno;
    struct stat st;

    for (unsigned i = 0; i < g_nl_nfds; i++) {
        struct nl_sock *s = g_nl_fds[i].s;

        if (g_nl_fds[i].fd != fd)
            continue;
        if (fstat(fd, &st) || st.st_dev != s->dev || st.st_ino != s->ino) {
            fd_remove(i);
            s = NULL;
        }
        errno = saved;
        return s;
    }
    return NULL;
}

/* Whether a call on a descriptor must look for it here (a netlink socket exists). */
static bool nl_any(void)
{
    return __atomic_load_n(&g_nl_nfds, __ATOMIC_ACQUIRE) != 0 && !t_nl_locked;
}

/* fd's netlink socket with g_nl_lock held, or NULL (lock not held): not one of ours. */
static struct nl_sock *sock_lock(int fd)
{
    struct nl_sock *s;

    if (!nl_any())
        return NULL;
    nl_lock();
    s = fd_sock(fd);
    if (!s)
        nl_unlock();
    return s;
}

static bool portid_taken(uint32_t portid) /* g_nl_lock held */
{
    for (unsigned i = 0; i < g_nl_nfds; i++)
        if (g_nl_fds[i].s->bound && g_nl_fds[i].s->portid == portid)
            return true;
    return false;
}

/* netlink_autobind: the process id first, then numbers down from -4096. g_nl_lock held. */
static void autobind(struct nl_sock *s)
{
    uint32_t portid = (uint32_t)getpid();

    while (portid_taken(portid)) {
        portid = (uint32_t)g_nl_rover;
        g_nl_rover = g_nl_rover == INT32_MIN ? NL_AUTOBIND_ROVER : g_nl_rover - 1;
    }
    s->portid = portid;
    s->bound = true;
}

int efasim_nl_socket(int type)
{
    int base = type & ~(SOCK_CLOEXEC | SOCK_NONBLOCK), sv[2], err;
    struct nl_sock *s;
    struct stat st;

    pthread_once(&g_real_once, real_resolve);
    if (base != SOCK_RAW && base != SOCK_DGRAM)
        return -ESOCKTNOSUPPORT; /* netlink_create */
    s = calloc(1, sizeof(*s));
    if (!s)
        return -ENOMEM;
    if (socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sv)) {
        err = -errno;
        free(s);
        return err;
    }
    if ((!(type & SOCK_CLOEXEC) && fcntl(sv[0], F_SETFD, 0)) ||
        ((type & SOCK_NONBLOCK) && fcntl(sv[0], F_SETFL, O_NONBLOCK)) ||
        fcntl(sv[1], F_SETFL, O_NONBLOCK) || fstat(sv[0], &st)) {
        err = -errno;
        goto err_close;
    }
    s->kernel_fd = sv[1];
    s->dev = st.st_dev;
    s->ino = st.st_ino;
    s->type = base;
    nl_lock();
    err = fd_add(sv[0], s);
    nl_unlock();
    if (err)
        goto err_close;
    return sv[0];

err_close:
    g_real_close(sv[0]);
    g_real_close(sv[1]);
    free(s);
    return err;
}

void efasim_nl_dup(int oldfd, int newfd)
{
    struct nl_sock *s;

    if (!nl_any() || oldfd == newfd || newfd < 0)
        return;
    nl_lock();
    s = fd_sock(oldfd);
    for (unsigned i = 0; i < g_nl_nfds; i++)
        if (g_nl_fds[i].fd == newfd) { /* dup2 over one of ours closed it */
            fd_remove(i);
            break;
        }
    if (s && fd_add(newfd, s))
        fprintf(stderr, "efasim: no memory for descriptor %d of a netlink socket\n", newfd);
    nl_unlock();
}

void efasim_nl_close(int fd)
{
    if (!nl_any())
        return;
    nl_lock();
    for (unsigned i = 0; i < g_nl_nfds; i++)
        if (g_nl_fds[i].fd == fd) {
            fd_remove(i);
            break;
        }
    nl_unlock();
}

/* ---- Addresses and options ------------------------------------------------------------------- */

/* move_addr_to_user: at most the caller's room, and the length the address has. */
static int addr_out(struct sockaddr *addr, socklen_t *len_p, const struct sockaddr_nl *nl)
{
    socklen_t room;

    if (efasim_copy_from_user(&room, (uintptr_t)len_p, sizeof(room)))
        return -EFAULT;
    if ((int)room < 0)
        return -EINVAL;
    if (room > sizeof(*nl))
        room = sizeof(*nl);
    if (efasim_copy_to_user((uintptr_t)addr, nl, room))
        return -EFAULT;
    room = sizeof(*nl);
    return efasim_copy_to_user((uintptr_t)len_p, &room, sizeof(room));
}

/* netlink_bind, without multicast (groups are recorded; nothing is sent to them). */
static int sock_bind(struct nl_sock *s, const struct sockaddr *addr, socklen_t len)
{
    struct sockaddr_nl nl;

    if (len < sizeof(nl))
        return -EINVAL;
    if (efasim_copy_from_user(&nl, (uintptr_t)addr, sizeof(nl)))
        return -EFAULT;
    if (nl.nl_family != AF_NETLINK)
        return -EINVAL;
    if (nl.nl_groups && geteuid())
        return -EPERM; /* NETLINK_RDMA lets only CAP_NET_ADMIN receive multicast */
    if (s->bound && nl.nl_pid != s->portid)
        return -EINVAL;
    if (!s->bound && nl.nl_pid) {
        if (portid_taken(nl.nl_pid))
            return -EADDRINUSE;
        s->portid = nl.nl_pid;
        s->bound = true;
    } else if (!s->bound) {
        autobind(s);
    }
    s->groups = nl.nl_groups;
    return 0;
}

bool efasim_nl_bind(int fd, const struct sockaddr *addr, socklen_t len, int *ret_p)
{
    struct nl_sock *s = sock_lock(fd);

    if (!s)
        return false;
    *ret_p = sock_bind(s, addr, len);
    nl_unlock();
    return true;
}

bool efasim_nl_getsockname(int fd, struct sockaddr *addr, socklen_t *len_p, int *ret_p)
{
    struct sockaddr_nl nl = {.nl_family = AF_NETLINK};
    struct nl_sock *s = sock_lock(fd);

    if (!s)
        return false;
    nl.nl_pid = s->portid; /* 0 until bound */
    nl.nl_groups = s->groups;
    nl_unlock();
    *ret_p = addr_out(addr, len_p, &nl);
    return true;
}

/*
 * SOL_NETLINK options (netlink_setsockopt): the flags are kept, and those that
 * change an answer act (NETLINK_CAP_ACK, NETLINK_NO_ENOBUFS); memberships are
 * recorded. Unknown options ENOPROTOOPT, a value shorter than an int EINVAL.
 */
static int sock_setopt(struct nl_sock *s, int name, const void *val, socklen_t len)
{
    int v = 0;

    if (len >= sizeof(v) && efasim_copy_from_user(&v, (uintptr_t)val, sizeof(v)))
        return -EFAULT;
    switch (name) {
    case NETLINK_ADD_MEMBERSHIP:
    case NETLINK_DROP_MEMBERSHIP:
        if (geteuid())
            return -EPERM;
        if (v <= 0 || v > NL_MAX_GROUPS)
            return -EINVAL;
        if (name == NETLINK_ADD_MEMBERSHIP)
            s->groups |= 1u << (v - 1);
        else
            s->groups &= ~(1u << (v - 1));
        return 0;
    case NETLINK_LISTEN_ALL_NSID:
        if (geteuid())
            return -EPERM;
        break;
    case NETLINK_PKTINFO:
    case NETLINK_BROADCAST_ERROR:
    case NETLINK_NO_ENOBUFS:
    case NETLINK_CAP_ACK:
    case NETLINK_EXT_ACK:
    case NETLINK_GET_STRICT_CHK:
        break;
    default:
        return -ENOPROTOOPT;
    }
    if (len < sizeof(v))
        return -EINVAL;
    if (v)
        s->opts |= 1u << name;
    else
        s->opts &= ~(1u << name);
    if (name == NETLINK_NO_ENOBUFS && v)
        s->overrun = false;
    return 0;
}

bool efasim_nl_setsockopt(int fd, int level, int name, const void *val, socklen_t len, int *ret_p)
{
    struct nl_sock *s = level == SOL_NETLINK ? sock_lock(fd) : NULL;

    if (!s)
        return false;
    *ret_p = sock_setopt(s, name, val, len);
    nl_unlock();
    return true;
}

/* An int option's value: SOL_NETLINK flags, and what SOL_SOCKET says of the socket's kind. */
static int sock_getopt(const struct nl_sock *s, int level, int name, int *v_p)
{
    if (level == SOL_SOCKET) {
        *v_p = name == SO_DOMAIN ? AF_NETLINK : name == SO_PROTOCOL ? NETLINK_RDMA : s->type;
        return 0;
    }
    switch (name) {
    case NETLINK_LIST_MEMBERSHIPS:
        *v_p = (int)s->groups;
        return 0;
    case NETLINK_PKTINFO:
    case NETLINK_BROADCAST_ERROR:
    case NETLINK_NO_ENOBUFS:
    case NETLINK_CAP_ACK:
    case NETLINK_EXT_ACK:
    case NETLINK_GET_STRICT_CHK:
        *v_p = !!(s->opts & (1u << name));
        return 0;
    default:
        return -ENOPROTOOPT;
    }
}

bool efasim_nl_getsockopt(int fd, int level, int name, void *val, socklen_t *len_p, int *ret_p)
{
    bool mine =
        level == SOL_NETLINK ||
        (level == SOL_SOCKET && (name == SO_DOMAIN || name == SO_PROTOCOL || name == SO_TYPE));
    struct nl_sock *s;
    socklen_t room;
    int v = 0, err;

    s = mine ? sock_lock(fd) : NULL;
    if (!s)
        return false;
    err = sock_getopt(s, level, name, &v);
    nl_unlock();
    if (!err && efasim_copy_from_user(&room, (uintptr_t)len_p, sizeof(room)))
        err = -EFAULT;
    if (!err && room < sizeof(v))
        err = -EINVAL;
    room = sizeof(v);
    if (!err && (efasim_copy_to_user((uintptr_t)val, &v, sizeof(v)) ||
                 efasim_copy_to_user((uintptr_t)len_p, &room, sizeof(room))))
        err = -EFAULT;
    *ret_p = err;
    return true;
}

/* ---- Answers --------------------------------------------------------------------------------- */

/* The datagram being built: finished messages, then the one being built (msg..end). */
struct nl_out {
    struct nl_sock *s;
    size_t len, msg, end;
    bool full; /* the message outgrew NL_MSG_MAX: it is dropped (never for what is emulated) */
    uint8_t buf[NL_GOODSIZE + NL_MSG_MAX] __attribute__((aligned(8)));
};

/* One datagram from the kernel's end; one that does not fit overruns the socket (ENOBUFS). */
static void datagram_send(struct nl_sock *s, const void *data, size_t len)
{
    if (!s->overrun && g_real_sendto(s->kernel_fd, data, len, MSG_DONTWAIT, NULL, 0) < 0)
        s->overrun = true;
}

static void out_flush(struct nl_out *o)
{
    if (o->len)
        datagram_send(o->s, o->buf, o->len);
    o->len = o->msg = o->end = 0;
}

static void out_begin(struct nl_out *o, uint16_t type, uint16_t flags, uint32_t seq)
{
    struct nlmsghdr h = {
        .nlmsg_type = type, .nlmsg_flags = flags, .nlmsg_seq = seq, .nlmsg_pid = o->s->portid};

    o->msg = o->len;
    o->end = o->msg + NLMSG_HDRLEN;
    o->full = false;
    memcpy(o->buf + o->msg, &h, sizeof(h));
}

static void out_put(struct nl_out *o, const void *data, size_t len)
{
    size_t total = NLMSG_ALIGN(len);

    if (o->full || o->end + total - o->msg > NL_MSG_MAX) {
        o->full = true;
        return;
    }
    memset(o->buf + o->end, 0, total);
    memcpy(o->buf + o->end, data, len);
    o->end += total;
}

static void out_attr(struct nl_out *o, uint16_t type, const void *data, size_t len)
{
    struct nlattr a = {.nla_len = (uint16_t)(NLA_HDRLEN + len), .nla_type = type};
    uint8_t tmp[NLA_HDRLEN + 64];

    if (len > sizeof(tmp) - NLA_HDRLEN) {
        o->full = true;
        return;
    }
    memcpy(tmp, &a, sizeof(a));
    memcpy(tmp + NLA_HDRLEN, data, len);
    out_put(o, tmp, NLA_HDRLEN + len);
}

static void out_u8(struct nl_out *o, uint16_t type, uint8_t v)
{
    out_attr(o, type, &v, sizeof(v));
}

static void out_u32(struct nl_out *o, uint16_t type, uint32_t v)
{
    out_attr(o, type, &v, sizeof(v));
}

/* nla_put_u64_64bit: x86-64 and arm64 need no pad attribute before it. */
static void out_u64(struct nl_out *o, uint16_t type, uint64_t v)
{
    out_attr(o, type, &v, sizeof(v));
}

static void out_str(struct nl_out *o, uint16_t type, const char *v)
{
    out_attr(o, type, v, strlen(v) + 1);
}

/*
 * The message is done: its length set. A dump's datagram that would outgrow
 * NL_GOODSIZE leaves with the messages before this one, as nldev's dump stops
 * at a full skb and goes on in the next.
 */
static void out_end(struct nl_out *o)
{
    struct nlmsghdr *h = (struct nlmsghdr *)(o->buf + o->msg);
    size_t n = o->end - o->msg;

    if (o->full) {
        fprintf(stderr, "efasim: a netlink answer outgrew %d bytes; dropped\n", NL_MSG_MAX);
        o->end = o->msg;
        return;
    }
    h->nlmsg_len = (uint32_t)n;
    if (o->end > NL_GOODSIZE && o->msg) {
        datagram_send(o->s, o->buf, o->msg);
        memmove(o->buf, o->buf + o->msg, n);
        o->msg = 0;
    }
    o->len = o->end = o->msg + n;
}

/*
 * netlink_ack: NLMSG_ERROR with err and the request after it; only the
 * request's header for a success or with NETLINK_CAP_ACK (NLM_F_CAPPED).
 */
static void nl_ack(struct nl_sock *s, const struct nlmsghdr *req, int err)
{
    bool capped = !err || (s->opts & (1u << NETLINK_CAP_ACK));
    size_t copy = capped ? sizeof(*req) : req->nlmsg_len;
    size_t len = NLMSG_LENGTH(sizeof(int) + copy);
    struct nlmsghdr h = {.nlmsg_len = (uint32_t)len,
                         .nlmsg_type = NLMSG_ERROR,
                         .nlmsg_flags = capped ? NLM_F_CAPPED : 0,
                         .nlmsg_seq = req->nlmsg_seq,
                         .nlmsg_pid = s->portid};
    uint8_t *buf = calloc(1, NLMSG_ALIGN(len));

    if (!buf) {
        s->overrun = true; /* the kernel's allocation failure loses the answer too */
        return;
    }
    memcpy(buf, &h, sizeof(h));
    memcpy(buf + NLMSG_HDRLEN, &err, sizeof(err));
    memcpy(buf + NLMSG_HDRLEN + sizeof(err), req, copy);
    datagram_send(s, buf, NLMSG_ALIGN(len));
    free(buf);
}

/* ---- Attributes ------------------------------------------------------------------------------ */

enum nl_attr_kind { NL_ANY, NL_U8, NL_U32, NL_U64, NL_NUL_STRING };

struct nl_policy {
    uint8_t kind;
    uint8_t max; /* NL_NUL_STRING: the longest string (nla_policy.len) */
};

/* nldev_policy's entries for what the emulated commands read and answer. */
static const struct nl_policy g_nldev_policy[RDMA_NLDEV_ATTR_MAX] = {
    [RDMA_NLDEV_ATTR_DEV_INDEX] = {NL_U32, 0},
    [RDMA_NLDEV_ATTR_DEV_NAME] = {NL_NUL_STRING, 64}, /* IB_DEVICE_NAME_MAX */
    [RDMA_NLDEV_ATTR_PORT_INDEX] = {NL_U32, 0},
    [RDMA_NLDEV_ATTR_CAP_FLAGS] = {NL_U64, 0},
    [RDMA_NLDEV_ATTR_FW_VERSION] = {NL_NUL_STRING, 64}, /* IB_FW_VERSION_NAME_MAX */
    [RDMA_NLDEV_ATTR_NODE_GUID] = {NL_U64, 0},
    [RDMA_NLDEV_ATTR_SYS_IMAGE_GUID] = {NL_U64, 0},
    [RDMA_NLDEV_ATTR_DEV_NODE_TYPE] = {NL_U8, 0},
    [RDMA_NLDEV_ATTR_NDEV_INDEX] = {NL_U32, 0},
    [RDMA_NLDEV_ATTR_NDEV_NAME] = {NL_NUL_STRING, 16}, /* IFNAMSIZ */
    [RDMA_NLDEV_SYS_ATTR_NETNS_MODE] = {NL_U8, 0},
    [RDMA_NLDEV_NET_NS_FD] = {NL_U32, 0},
    [RDMA_NLDEV_ATTR_CHARDEV_TYPE] = {NL_NUL_STRING, NL_CHARDEV_TYPE_MAX},
    [RDMA_NLDEV_ATTR_CHARDEV] = {NL_U64, 0},
    [RDMA_NLDEV_ATTR_CHARDEV_ABI] = {NL_U64, 0},
    [RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID] = {NL_U32, 0},
    [RDMA_NLDEV_ATTR_DEV_DIM] = {NL_U8, 0},
    [RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK] = {NL_U8, 0},
};

/* validate_nla without NL_VALIDATE_STRICT: 0, -ERANGE or -EINVAL. */
static int attr_check(const struct nlattr *a, const struct nl_policy *p)
{
    static const uint8_t minlen[] = {[NL_U8] = 1, [NL_U32] = 4, [NL_U64] = 8};
    const char *str = (const char *)a + NLA_HDRLEN;
    size_t len = a->nla_len - NLA_HDRLEN;

    if (p->kind != NL_NUL_STRING)
        return len < minlen[p->kind] ? -ERANGE : 0;
    if (!len || !memchr(str, '\0', len < (size_t)p->max + 1 ? len : (size_t)p->max + 1))
        return -EINVAL;
    if (str[len - 1] == '\0')
        len--;
    return len > p->max ? -ERANGE : 0;
}

/* nlmsg_parse_deprecated of a request with no family header: tb[type], the last of each type. */
static int attrs_parse(const struct nlmsghdr *h, const struct nlattr **tb)
{
    const uint8_t *p = (const uint8_t *)h + NLMSG_HDRLEN;
    size_t rem = h->nlmsg_len - NLMSG_HDRLEN;

    memset(tb, 0, RDMA_NLDEV_ATTR_MAX * sizeof(*tb));
    while (rem >= NLA_HDRLEN) {
        const struct nlattr *a = (const struct nlattr *)p;
        unsigned type = a->nla_type & NLA_TYPE_MASK;
        size_t step = NLA_ALIGN(a->nla_len);
        int err;

        if (a->nla_len < NLA_HDRLEN || a->nla_len > rem)
            break;
        if (type && type < RDMA_NLDEV_ATTR_MAX) {
            err = g_nldev_policy[type].kind ? attr_check(a, &g_nldev_policy[type]) : 0;
            if (err)
                return err;
            tb[type] = a;
        }
        if (step >= rem)
            break;
        p += step;
        rem -= step;
    }
    return 0;
}

static uint32_t attr_u32(const struct nlattr *a)
{
    uint32_t v;

    memcpy(&v, (const uint8_t *)a + NLA_HDRLEN, sizeof(v));
    return v;
}

/* ib_device_get_by_index: efasim's device N has index N. */
static const struct efasim_device *device_by_index(uint32_t index)
{
    unsigned n;
    struct efasim_device *devs = efasim_devices(&n);

    return index < n ? &devs[index] : NULL;
}

/* ---- nldev commands -------------------------------------------------------------------------- */

/*
 * fill_dev_info for an EFA device: what its driver registers (no firmware
 * string, so no FW_VERSION; no port protocol, so no DEV_PROTOCOL; no
 * device_cap_flags or sys_image_guid, as the uverbs answers of efa.c say).
 */
static void dev_info(struct nl_out *o, const struct efasim_device *d)
{
    out_u32(o, RDMA_NLDEV_ATTR_DEV_INDEX, d->index);
    out_str(o, RDMA_NLDEV_ATTR_DEV_NAME, d->name);
    out_u32(o, RDMA_NLDEV_ATTR_PORT_INDEX, 1); /* rdma_end_port: the number of ports */
    out_u64(o, RDMA_NLDEV_ATTR_CAP_FLAGS, 0);
    out_u64(o, RDMA_NLDEV_ATTR_NODE_GUID, d->guid);
    out_u64(o, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, 0);
    out_u8(o, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, NODE_UNSPECIFIED);
    out_u8(o, RDMA_NLDEV_ATTR_DEV_DIM, 0); /* EFA does not moderate CQ interrupts */
}

static int nldev_get_doit(struct nl_sock *s, const struct nlmsghdr *h)
{
    const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
    const struct efasim_device *d;
    struct nl_out o = {.s = s};

    if (attrs_parse(h, tb) || !tb[RDMA_NLDEV_ATTR_DEV_INDEX])
        return -EINVAL;
    d = device_by_index(attr_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]));
    if (!d)
        return -EINVAL;
    out_begin(&o, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), 0, h->nlmsg_seq);
    dev_info(&o, d);
    out_end(&o);
    out_flush(&o);
    return 0;
}

/* Every device, then NLMSG_DONE with the dump's status 0; -EINTR: a dump started, no ack. */
static int nldev_get_dump(struct nl_sock *s, const struct nlmsghdr *h)
{
    struct nl_out o = {.s = s};
    unsigned n;
    const struct efasim_device *devs = efasim_devices(&n);
    int status = 0;

    for (unsigned i = 0; i < n; i++) {
        out_begin(&o, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET), NLM_F_MULTI,
                  h->nlmsg_seq);
        dev_info(&o, &devs[i]);
        out_end(&o);
    }
    out_flush(&o);
    out_begin(&o, NLMSG_DONE, NLM_F_MULTI, h->nlmsg_seq);
    out_put(&o, &status, sizeof(status));
    out_end(&o);
    out_flush(&o);
    return -EINTR;
}

static int nldev_sys_get_doit(struct nl_sock *s, const struct nlmsghdr *h)
{
    const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX];
    struct nl_out o = {.s = s};
    int err = attrs_parse(h, tb);

    if (err)
        return err;
    out_begin(&o, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_SYS_GET), 0, h->nlmsg_seq);
    out_u8(&o, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, NL_NETNS_SHARED);
    /* Linux 5.13 and later report copy-on-fork; older kernels do not have the attribute. */
    if (efasim_config()->copy_on_fork)
        out_u8(&o, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1);
    out_end(&o);
    out_flush(&o);
    return 0;
}

/*
 * nldev_get_chardev and ib_get_client_nl_info: the only client efasim has is
 * uverbs, and it has no global file (another type, or none of DEV_INDEX,
 * EOPNOTSUPP); a port is valid only on a device, and uverbs wants none (EINVAL).
 */
static int nldev_get_chardev(struct nl_sock *s, const struct nlmsghdr *h)
{
    const struct nlattr *tb[RDMA_NLDEV_ATTR_MAX], *type;
    const struct efasim_device *d = NULL;
    char client[NL_CHARDEV_TYPE_MAX], name[32];
    struct nl_out o = {.s = s};
    size_t len;

    if (attrs_parse(h, tb) || !tb[RDMA_NLDEV_ATTR_CHARDEV_TYPE])
        return -EINVAL;
    type = tb[RDMA_NLDEV_ATTR_CHARDEV_TYPE];
    len = strnlen((const char *)type + NLA_HDRLEN, type->nla_len - NLA_HDRLEN);
    len = len < sizeof(client) - 1 ? len : sizeof(client) - 1; /* nla_strscpy */
    memcpy(client, (const char *)type + NLA_HDRLEN, len);
    client[len] = '\0';
    if (tb[RDMA_NLDEV_ATTR_DEV_INDEX]) {
        d = device_by_index(attr_u32(tb[RDMA_NLDEV_ATTR_DEV_INDEX]));
        if (!d)
            return -EINVAL;
        if (tb[RDMA_NLDEV_ATTR_PORT_INDEX] && attr_u32(tb[RDMA_NLDEV_ATTR_PORT_INDEX]) != 1)
            return -EINVAL; /* rdma_is_port_valid */
    } else if (tb[RDMA_NLDEV_ATTR_PORT_INDEX]) {
        return -EINVAL;
    }
    if (!d || strcmp(client, "uverbs"))
        return -EOPNOTSUPP;
    if (tb[RDMA_NLDEV_ATTR_PORT_INDEX])
        return -EINVAL; /* ib_uverbs_get_nl_info */
    snprintf(name, sizeof(name), "uverbs%u", d->index);
    out_begin(&o, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_GET_CHARDEV), 0, h->nlmsg_seq);
    out_u32(&o, RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, RDMA_DRIVER_EFA);
    /* huge_encode_dev(MKDEV(231, 192 + N)) */
    out_u64(&o, RDMA_NLDEV_ATTR_CHARDEV,
            ((UVERBS_BASE_MINOR + d->index) & 0xffu) | (UVERBS_MAJOR << 8) |
                (((uint64_t)(UVERBS_BASE_MINOR + d->index) & ~0xffu) << 12));
    out_u64(&o, RDMA_NLDEV_ATTR_CHARDEV_ABI, EFA_UVERBS_ABI);
    out_str(&o, RDMA_NLDEV_ATTR_CHARDEV_NAME, name);
    out_end(&o);
    out_flush(&o);
    return 0;
}

/* A command Linux answers and efasim does not. */
static int nl_not_emulated(struct nl_sock *s, const struct nlmsghdr *h)
{
    (void)s;
    (void)h;
    return -EOPNOTSUPP;
}

/* No handler in Linux's table (rdma_nl_rcv_msg: EINVAL). */
static int nl_no_handler(struct nl_sock *s, const struct nlmsghdr *h)
{
    (void)s;
    (void)h;
    return -EINVAL;
}

typedef int (*nl_handler_fn)(struct nl_sock *s, const struct nlmsghdr *h);

struct nl_cmd {
    nl_handler_fn doit, dump;
    bool admin; /* RDMA_NL_ADMIN_PERM: CAP_NET_ADMIN or EPERM */
};

#define CMD(op, doit_fn, dump_fn, is_admin) \
    [RDMA_NLDEV_CMD_##op] = {.doit = doit_fn, .dump = dump_fn, .admin = is_admin}

/* Linux 6.1's nldev_cb_table, command by command. */
static const struct nl_cmd g_nldev_cmds[RDMA_NLDEV_NUM_OPS] = {
    CMD(UNSPEC, nl_no_handler, nl_no_handler, false),
    CMD(GET, nldev_get_doit, nldev_get_dump, false),
    CMD(SET, nl_not_emulated, nl_no_handler, true),
    CMD(NEWLINK, nl_not_emulated, nl_no_handler, true),
    CMD(DELLINK, nl_not_emulated, nl_no_handler, true),
    CMD(PORT_GET, nl_not_emulated, nl_not_emulated, false),
    CMD(SYS_GET, nldev_sys_get_doit, nl_no_handler, false),
    CMD(SYS_SET, nl_not_emulated, nl_no_handler, true),
    [8] = {.doit = nl_no_handler, .dump = nl_no_handler, .admin = false}, /* never assigned */
    CMD(RES_GET, nl_not_emulated, nl_not_emulated, false),
    CMD(RES_QP_GET, nl_not_emulated, nl_not_emulated, false),
    CMD(RES_CM_ID_GET, nl_not_emulated, nl_not_emulated, false),
    CMD(RES_CQ_GET, nl_not_emulated, nl_not_emulated, false),
    CMD(RES_MR_GET, nl_not_emulated, nl_not_emulated, false),
    CMD(RES_PD_GET, nl_not_emulated, nl_not_emulated, false),
    CMD(GET_CHARDEV, nldev_get_chardev, nl_no_handler, false),
    CMD(STAT_SET, nl_not_emulated, nl_no_handler, true),
    CMD(STAT_GET, nl_not_emulated, nl_not_emulated, false),
    CMD(STAT_DEL, nl_not_emulated, nl_no_handler, true),
    CMD(RES_QP_GET_RAW, nl_not_emulated, nl_not_emulated, true),
    CMD(RES_CQ_GET_RAW, nl_not_emulated, nl_not_emulated, true),
    CMD(RES_MR_GET_RAW, nl_not_emulated, nl_not_emulated, true),
    CMD(RES_CTX_GET, nl_not_emulated, nl_not_emulated, false),
    CMD(RES_SRQ_GET, nl_not_emulated, nl_not_emulated, false),
    CMD(STAT_GET_STATUS, nl_not_emulated, nl_not_emulated, false),
};

/* rdma_nl_rcv_msg: the client and command, then the handler (NLM_F_DUMP: any of its bits). */
static int nl_rcv_msg(struct nl_sock *s, const struct nlmsghdr *h)
{
    unsigned client = RDMA_NL_GET_CLIENT(h->nlmsg_type), op = RDMA_NL_GET_OP(h->nlmsg_type);
    const struct nl_cmd *cmd;

    /* The iWARP port mapper's and local services' clients serve daemons (iwpmd, ibacm). */
    if ((client == RDMA_NL_IWCM && op < RDMA_NL_IWPM_NUM_OPS) ||
        (client == RDMA_NL_LS && op < RDMA_NL_LS_NUM_OPS))
        return -EOPNOTSUPP;
    if (client != RDMA_NL_NLDEV || op >= RDMA_NLDEV_NUM_OPS)
        return -EINVAL;
    cmd = &g_nldev_cmds[op];
    if (cmd->admin && geteuid())
        return -EPERM;
    return (h->nlmsg_flags & NLM_F_DUMP) ? cmd->dump(s, h) : cmd->doit(s, h);
}

/* rdma_nl_rcv_skb over one datagram the process sent. g_nl_lock held. */
static void nl_rcv(struct nl_sock *s, const uint8_t *buf, size_t len)
{
    while (len >= NLMSG_HDRLEN) {
        const struct nlmsghdr *h = (const struct nlmsghdr *)buf;
        size_t step;
        int err = 0;

        if (h->nlmsg_len < NLMSG_HDRLEN || len < h->nlmsg_len)
            return;
        if ((h->nlmsg_flags & NLM_F_REQUEST) && h->nlmsg_type >= NLMSG_MIN_TYPE)
            err = nl_rcv_msg(s, h);
        if (err != -EINTR && ((h->nlmsg_flags & NLM_F_ACK) || err))
            nl_ack(s, h, err);
        step = NLMSG_ALIGN(h->nlmsg_len);
        if (step >= len)
            return;
        buf += step;
        len -= step;
    }
}

/* ---- Sending and receiving ------------------------------------------------------------------- */

/* The datagram of a sendmsg, copied in from the caller's iovecs: its length or a negative errno. */
static ssize_t gather(int fd, const struct msghdr *msg, uint8_t **buf_p)
{
    int sndbuf = 0;
    socklen_t optlen = sizeof(sndbuf);
    size_t total = 0, off = 0;
    struct iovec *iov;
    uint8_t *buf = NULL;
    ssize_t ret;

    if (msg->msg_iovlen > UIO_MAXIOV)
        return -EMSGSIZE; /* import_iovec */
    iov = malloc((msg->msg_iovlen ? msg->msg_iovlen : 1) * sizeof(*iov));
    if (!iov)
        return -ENOBUFS;
    ret = efasim_copy_from_user(iov, (uintptr_t)msg->msg_iov, msg->msg_iovlen * sizeof(*iov));
    for (size_t i = 0; !ret && i < msg->msg_iovlen; i++) {
        if (iov[i].iov_len > (size_t)SSIZE_MAX - total)
            ret = -EINVAL;
        total += iov[i].iov_len;
    }
    /* netlink_sendmsg: EMSGSIZE beyond the socket's send buffer less 32 bytes. */
    if (!ret && getsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, &optlen))
        ret = -errno;
    if (!ret && total + 32 > (size_t)sndbuf)
        ret = -EMSGSIZE;
    if (!ret && !(buf = malloc(total ? total : 1)))
        ret = -ENOBUFS;
    for (size_t i = 0; !ret && i < msg->msg_iovlen; i++) {
        ret = efasim_copy_from_user(buf + off, (uintptr_t)iov[i].iov_base, iov[i].iov_len);
        off += iov[i].iov_len;
    }
    free(iov);
    if (ret) {
        free(buf);
        return ret;
    }
    *buf_p = buf;
    return (ssize_t)total;
}

/* netlink_sendmsg's checks of the destination: only the kernel (port 0) answers. */
static int dest_check(const struct msghdr *msg)
{
    struct sockaddr_nl nl;

    if (!msg->msg_name)
        return 0;
    if (msg->msg_namelen < sizeof(nl))
        return -EINVAL;
    if (efasim_copy_from_user(&nl, (uintptr_t)msg->msg_name, sizeof(nl)))
        return -EFAULT;
    if (nl.nl_family != AF_NETLINK)
        return -EINVAL;
    if ((nl.nl_pid || nl.nl_groups) && geteuid())
        return -EPERM;                    /* NETLINK_RDMA: no NL_CFG_F_NONROOT_SEND */
    return nl.nl_pid ? -ECONNREFUSED : 0; /* efasim knows no other process's sockets */
}

bool efasim_nl_sendmsg(int fd, const struct msghdr *umsg, int flags, ssize_t *ret_p)
{
    struct msghdr msg;
    struct nl_sock *s;
    uint8_t *buf = NULL;
    ssize_t len;

    s = sock_lock(fd);
    if (!s)
        return false;
    len = efasim_copy_from_user(&msg, (uintptr_t)umsg, sizeof(msg));
    if (!len)
        len = (flags & MSG_OOB) ? -EOPNOTSUPP : dest_check(&msg);
    if (!len)
        len = gather(fd, &msg, &buf);
    if (len >= 0) {
        if (!s->bound)
            autobind(s);
        nl_rcv(s, buf, (size_t)len);
    }
    nl_unlock();
    free(buf);
    *ret_p = len;
    return true;
}

bool efasim_nl_recvmsg(int fd, struct msghdr *umsg, int flags, ssize_t *ret_p)
{
    static const struct sockaddr_nl kernel = {.nl_family = AF_NETLINK}; /* port 0 */
    struct msghdr msg, m;
    struct nl_sock *s;
    bool overrun = false;
    ssize_t n;

    s = sock_lock(fd);
    if (!s)
        return false;
    if (s->overrun && !(s->opts & (1u << NETLINK_NO_ENOBUFS))) {
        overrun = true; /* sock_error: reported once, before the queue */
        s->overrun = false;
    }
    nl_unlock();
    *ret_p = overrun ? -ENOBUFS : efasim_copy_from_user(&msg, (uintptr_t)umsg, sizeof(msg));
    if (*ret_p)
        return true;
    m = msg;
    m.msg_name = NULL;
    m.msg_namelen = 0;
    n = g_real_recvmsg(fd, &m, flags);
    if (n < 0) {
        *ret_p = -errno;
        return true;
    }
    msg.msg_flags = m.msg_flags;
    msg.msg_controllen = m.msg_controllen;
    if (msg.msg_name) {
        socklen_t room = msg.msg_namelen < sizeof(kernel) ? msg.msg_namelen : sizeof(kernel);

        if (efasim_copy_to_user((uintptr_t)msg.msg_name, &kernel, room))
            n = -EFAULT;
        msg.msg_namelen = sizeof(kernel);
    }
    if (efasim_copy_to_user((uintptr_t)umsg, &msg, sizeof(msg)))
        n = -EFAULT;
    *ret_p = n;
    return true;
}
