/*
 * RDMA netlink on efasim's kernel front end (src/efasim/kernel/netlink.c):
 * what rdma-core 44's libibverbs learns through it (copy-on-fork, the device
 * list), and the nldev answers themselves, read from a raw NETLINK_RDMA
 * socket, with the mistakes libnl never makes answered as Linux 6.1 answers
 * them. The fork tests run on both front ends (the drop-in answers from its
 * own libibverbs); the raw-socket tests need the kernel front end, where the
 * socket is efasim's and not the host kernel's.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <poll.h>
#include <rdma/rdma_netlink.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "efasim_common.h"

#define NLDEV(cmd)       RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, RDMA_NLDEV_CMD_##cmd)
#define DRIVER_EFA       17 /* RDMA_DRIVER_EFA */
#define NODE_UNSPECIFIED 7  /* RDMA_NODE_UNSPECIFIED */
#define DUMP_DATAGRAM    3776
#define DEV_MESSAGE      100  /* a device's message in a dump (names up to 11 bytes) */
#define LIBNL_BUFFER     4096 /* libnl's nl_recv without MSG_PEEK reads a page */

/* A request being built, and the answers to it. */
struct req {
    uint32_t buf[256];
    size_t len;
};

struct answers {
    uint8_t buf[64 * 1024];
    size_t len;
    unsigned datagrams;
    size_t largest; /* the largest datagram */
};

static void req_init(struct req *r, uint16_t type, uint16_t flags, uint32_t seq)
{
    struct nlmsghdr h = {.nlmsg_len = NLMSG_HDRLEN,
                         .nlmsg_type = type,
                         .nlmsg_flags = (uint16_t)(NLM_F_REQUEST | flags),
                         .nlmsg_seq = seq};

    memset(r, 0, sizeof(*r));
    memcpy(r->buf, &h, sizeof(h));
    r->len = NLMSG_HDRLEN;
}

/* An attribute of len bytes (nla_len as given, so a test can lie about it). */
static void req_attr_len(struct req *r, uint16_t type, const void *data, size_t len,
                         uint16_t nla_len)
{
    struct nlattr a = {.nla_len = nla_len, .nla_type = type};
    uint8_t *p = (uint8_t *)r->buf + r->len;

    memcpy(p, &a, sizeof(a));
    memcpy(p + NLA_HDRLEN, data, len);
    r->len += NLA_ALIGN(NLA_HDRLEN + len);
    ((struct nlmsghdr *)r->buf)->nlmsg_len = (uint32_t)r->len;
}

static void req_attr(struct req *r, uint16_t type, const void *data, size_t len)
{
    req_attr_len(r, type, data, len, (uint16_t)(NLA_HDRLEN + len));
}

static void req_u32(struct req *r, uint16_t type, uint32_t v)
{
    req_attr(r, type, &v, sizeof(v));
}

static void req_str(struct req *r, uint16_t type, const char *s)
{
    req_attr(r, type, s, strlen(s) + 1);
}

static int nl_open(void)
{
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_RDMA);

    if (fd < 0)
        efarm_test_fail(__FILE__, __LINE__, "socket(NETLINK_RDMA): %s", strerror(errno));
    return fd;
}

static void nl_send(int fd, const void *buf, size_t len)
{
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};

    EXPECT_EQ(sendto(fd, buf, len, 0, (struct sockaddr *)&kernel, sizeof(kernel)), len);
}

/* Every datagram queued (the answers are there once the send returned). */
static void nl_collect(int fd, struct answers *a)
{
    memset(a, 0, sizeof(*a));
    for (;;) {
        struct sockaddr_nl from;
        socklen_t fromlen = sizeof(from);
        ssize_t n = recvfrom(fd, a->buf + a->len, sizeof(a->buf) - a->len, 0,
                             (struct sockaddr *)&from, &fromlen);

        if (n < 0) {
            EXPECT_EQ(errno, EAGAIN);
            return;
        }
        EXPECT_EQ(fromlen, sizeof(from));
        EXPECT_EQ(from.nl_family, AF_NETLINK);
        EXPECT_EQ(from.nl_pid, 0); /* the kernel */
        a->len += (size_t)n;
        a->datagrams++;
        a->largest = (size_t)n > a->largest ? (size_t)n : a->largest;
    }
}

/* The answers' messages in turn: NULL after the last. */
static const struct nlmsghdr *next_msg(const struct answers *a, size_t *off_p)
{
    const struct nlmsghdr *h = (const struct nlmsghdr *)(a->buf + *off_p);

    if (*off_p + NLMSG_HDRLEN > a->len)
        return NULL;
    EXPECT_TRUE(h->nlmsg_len >= NLMSG_HDRLEN && *off_p + h->nlmsg_len <= a->len);
    *off_p += NLMSG_ALIGN(h->nlmsg_len);
    return h;
}

/* The attribute of type in message h, or NULL. */
static const struct nlattr *msg_attr(const struct nlmsghdr *h, uint16_t type)
{
    size_t off = NLMSG_HDRLEN;

    while (off + NLA_HDRLEN <= h->nlmsg_len) {
        const struct nlattr *a = (const struct nlattr *)((const uint8_t *)h + off);

        EXPECT_TRUE(a->nla_len >= NLA_HDRLEN && off + a->nla_len <= h->nlmsg_len);
        if (a->nla_type == type)
            return a;
        off += NLA_ALIGN(a->nla_len);
    }
    return NULL;
}

static uint64_t attr_uint(const struct nlmsghdr *h, uint16_t type, size_t size)
{
    const struct nlattr *a = msg_attr(h, type);
    uint64_t v = 0;

    if (!a)
        efarm_test_fail(__FILE__, __LINE__, "message %u has no attribute %u", h->nlmsg_type, type);
    EXPECT_EQ(a->nla_len, NLA_HDRLEN + size);
    memcpy(&v, (const uint8_t *)a + NLA_HDRLEN, size);
    return v;
}

static const char *attr_str(const struct nlmsghdr *h, uint16_t type)
{
    const struct nlattr *a = msg_attr(h, type);

    if (!a)
        efarm_test_fail(__FILE__, __LINE__, "message %u has no attribute %u", h->nlmsg_type, type);
    EXPECT_EQ(((const char *)a)[a->nla_len - 1], '\0');
    return (const char *)a + NLA_HDRLEN;
}

/* The one answer of a request that fails: NLMSG_ERROR with err, the request's seq. */
static void expect_error(int fd, const struct req *r, int err)
{
    struct answers a;
    const struct nlmsghdr *h;
    const struct nlmsgerr *e;
    size_t off = 0;

    nl_send(fd, r->buf, r->len);
    nl_collect(fd, &a);
    EXPECT_EQ(a.datagrams, 1);
    h = next_msg(&a, &off);
    EXPECT_EQ(h->nlmsg_type, NLMSG_ERROR);
    e = NLMSG_DATA(h);
    if (e->error != -err)
        efarm_test_fail(__FILE__, __LINE__, "request type %u: error %d (%s), expected -%d (%s)",
                        ((const struct nlmsghdr *)r->buf)->nlmsg_type, e->error,
                        strerror(-e->error), err, strerror(err));
    EXPECT_EQ(h->nlmsg_seq, ((const struct nlmsghdr *)r->buf)->nlmsg_seq);
    /* Not capped: the whole request follows. */
    EXPECT_EQ(h->nlmsg_len, NLMSG_LENGTH(sizeof(int) + r->len));
    EXPECT_MEM_EQ(&e->msg, r->buf, r->len);
}

static void kernel_only(void)
{
    if (!efasim_kernel_front_end())
        efarm_test_skip("RDMA netlink is efasim's only on the kernel front end");
}

/* ---- What libibverbs learns --------------------------------------------------------------- */

/*
 * EFA's kernels copy pinned pages at fork and say so over RDMA netlink
 * (RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK): rdma-core 44 then needs no ibv_fork_init.
 */
EFARM_TEST(efasim_netlink_fork_unneeded)
{
    efasim_setenv("EFASIM_COPY_ON_FORK", "1");
    EXPECT_EQ(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
}

/* A kernel before 5.13 reports no copy-on-fork: fork support is off until ibv_fork_init. */
EFARM_TEST(efasim_netlink_fork_disabled)
{
    efasim_setenv("EFASIM_COPY_ON_FORK", "0");
    EXPECT_EQ(ibv_is_fork_initialized(), IBV_FORK_DISABLED);
}

/*
 * libibverbs lists the devices from netlink: each has its kernel index
 * (ibv_get_device_index, -1 for a device found in sysfs), and the GUID the
 * dump gave.
 */
EFARM_TEST(efasim_netlink_device_list)
{
    struct ibv_device **list;
    int n = 0;

    kernel_only();
    efasim_private_sysfs();
    efasim_setenv("EFASIM_NDEV", "3");
    list = ibv_get_device_list(&n);
    EXPECT_TRUE(list != NULL);
    EXPECT_EQ(n, 3);
    for (int i = 0; i < n; i++) {
        int index = ibv_get_device_index(list[i]);
        char want[32];

        EXPECT_TRUE(index >= 0 && index < 3);
        snprintf(want, sizeof(want), "efasim_%d", index);
        EXPECT_EQ(strcmp(ibv_get_device_name(list[i]), want), 0);
        EXPECT_EQ(be64toh(ibv_get_device_guid(list[i])), 0x000efa5100000000ull + (unsigned)index);
    }
    ibv_free_device_list(list);
}

/* ---- The nldev answers ------------------------------------------------------------------- */

/* A dump lists every device as fill_dev_info does; GET by index answers the same. */
static void check_dev(const struct nlmsghdr *h, uint32_t index, uint16_t flags)
{
    char name[32];

    EXPECT_EQ(h->nlmsg_type, NLDEV(GET));
    EXPECT_EQ(h->nlmsg_flags, flags);
    snprintf(name, sizeof(name), "efasim_%u", index);
    EXPECT_EQ(attr_uint(h, RDMA_NLDEV_ATTR_DEV_INDEX, 4), index);
    EXPECT_EQ(strcmp(attr_str(h, RDMA_NLDEV_ATTR_DEV_NAME), name), 0);
    EXPECT_EQ(attr_uint(h, RDMA_NLDEV_ATTR_PORT_INDEX, 4), 1);
    EXPECT_EQ(attr_uint(h, RDMA_NLDEV_ATTR_NODE_GUID, 8), 0x000efa5100000000ull + index);
    EXPECT_EQ(attr_uint(h, RDMA_NLDEV_ATTR_SYS_IMAGE_GUID, 8), 0);
    EXPECT_EQ(attr_uint(h, RDMA_NLDEV_ATTR_CAP_FLAGS, 8), 0);
    EXPECT_EQ(attr_uint(h, RDMA_NLDEV_ATTR_DEV_NODE_TYPE, 1), NODE_UNSPECIFIED);
    EXPECT_TRUE(msg_attr(h, RDMA_NLDEV_ATTR_FW_VERSION) == NULL); /* EFA has no firmware string */
}

static void dump_check(unsigned ndev)
{
    struct answers *a = malloc(sizeof(*a));
    const struct nlmsghdr *h;
    struct req r;
    size_t off = 0;
    int fd = nl_open();

    EXPECT_TRUE(a != NULL);
    req_init(&r, NLDEV(GET), NLM_F_DUMP, 77);
    nl_send(fd, r.buf, r.len);
    nl_collect(fd, a);
    EXPECT_TRUE(a->largest <= DUMP_DATAGRAM);
    for (unsigned i = 0; i < ndev; i++) {
        h = next_msg(a, &off);
        EXPECT_TRUE(h != NULL);
        EXPECT_EQ(h->nlmsg_seq, 77);
        check_dev(h, i, NLM_F_MULTI);
    }
    h = next_msg(a, &off);
    EXPECT_TRUE(h != NULL);
    EXPECT_EQ(h->nlmsg_type, NLMSG_DONE);
    EXPECT_EQ(h->nlmsg_flags, NLM_F_MULTI);
    EXPECT_EQ(h->nlmsg_len, NLMSG_LENGTH(sizeof(int)));
    EXPECT_EQ(*(const int *)NLMSG_DATA(h), 0);
    EXPECT_TRUE(next_msg(a, &off) == NULL);
    /* The devices, then NLMSG_DONE alone, as nldev's dump and netlink_dump_done make them. */
    EXPECT_EQ(a->datagrams,
              (ndev + DUMP_DATAGRAM / DEV_MESSAGE - 1) / (DUMP_DATAGRAM / DEV_MESSAGE) + 1);
    close(fd);
    free(a);
}

EFARM_TEST(efasim_netlink_dump)
{
    kernel_only();
    efasim_private_sysfs();
    efasim_setenv("EFASIM_NDEV", "3");
    dump_check(3);
}

/* 64 devices take three datagrams, each within what libnl reads at once. */
EFARM_TEST(efasim_netlink_dump_64)
{
    struct ibv_device **list;
    int n = 0;

    kernel_only();
    efasim_private_sysfs();
    efasim_setenv("EFASIM_NDEV", "64");
    dump_check(64);
    EXPECT_TRUE(DUMP_DATAGRAM <= LIBNL_BUFFER);
    list = ibv_get_device_list(&n);
    EXPECT_EQ(n, 64);
    ibv_free_device_list(list);
}

EFARM_TEST(efasim_netlink_get_and_sys_get)
{
    struct answers a;
    const struct nlmsghdr *h;
    struct req r;
    size_t off = 0;
    int fd;

    kernel_only();
    efasim_private_sysfs();
    efasim_setenv("EFASIM_NDEV", "2");
    efasim_setenv("EFASIM_COPY_ON_FORK", "1");
    fd = nl_open();
    req_init(&r, NLDEV(GET), 0, 5);
    req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 1);
    nl_send(fd, r.buf, r.len);
    nl_collect(fd, &a);
    EXPECT_EQ(a.datagrams, 1);
    h = next_msg(&a, &off);
    EXPECT_EQ(h->nlmsg_seq, 5);
    check_dev(h, 1, 0);

    /* SYS_GET with NLM_F_ACK: the answer, then an acknowledgement (capped: the header only). */
    req_init(&r, NLDEV(SYS_GET), NLM_F_ACK, 6);
    nl_send(fd, r.buf, r.len);
    nl_collect(fd, &a);
    EXPECT_EQ(a.datagrams, 2);
    off = 0;
    h = next_msg(&a, &off);
    EXPECT_EQ(h->nlmsg_type, NLDEV(SYS_GET));
    EXPECT_EQ(attr_uint(h, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1), 1);
    EXPECT_EQ(attr_uint(h, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK, 1), 1);
    h = next_msg(&a, &off);
    EXPECT_EQ(h->nlmsg_type, NLMSG_ERROR);
    EXPECT_EQ(h->nlmsg_flags, NLM_F_CAPPED);
    EXPECT_EQ(((const struct nlmsgerr *)NLMSG_DATA(h))->error, 0);
    EXPECT_EQ(h->nlmsg_len, NLMSG_LENGTH(sizeof(struct nlmsgerr)));
    close(fd);
}

/* SYS_GET of a kernel before 5.13: no COPY_ON_FORK attribute at all. */
EFARM_TEST(efasim_netlink_sys_get_old_kernel)
{
    struct answers a;
    const struct nlmsghdr *h;
    struct req r;
    size_t off = 0;
    int fd;

    kernel_only();
    efasim_setenv("EFASIM_COPY_ON_FORK", "0");
    fd = nl_open();
    req_init(&r, NLDEV(SYS_GET), 0, 1);
    nl_send(fd, r.buf, r.len);
    nl_collect(fd, &a);
    h = next_msg(&a, &off);
    EXPECT_EQ(h->nlmsg_type, NLDEV(SYS_GET));
    EXPECT_EQ(attr_uint(h, RDMA_NLDEV_SYS_ATTR_NETNS_MODE, 1), 1);
    EXPECT_TRUE(msg_attr(h, RDMA_NLDEV_SYS_ATTR_COPY_ON_FORK) == NULL);
    close(fd);
}

/* GET_CHARDEV "uverbs": the device node the interposed stat shows, ABI 1, EFA's driver id. */
EFARM_TEST(efasim_netlink_chardev)
{
    struct answers a;
    const struct nlmsghdr *h;
    struct req r;
    struct stat st;
    int fd;

    kernel_only();
    efasim_private_sysfs();
    efasim_setenv("EFASIM_NDEV", "2");
    fd = nl_open();
    for (uint32_t i = 0; i < 2; i++) {
        char path[64], name[32];
        uint64_t cdev;
        size_t off = 0;

        req_init(&r, NLDEV(GET_CHARDEV), 0, 10 + i);
        req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, i);
        req_str(&r, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs");
        nl_send(fd, r.buf, r.len);
        nl_collect(fd, &a);
        EXPECT_EQ(a.datagrams, 1);
        h = next_msg(&a, &off);
        EXPECT_EQ(h->nlmsg_type, NLDEV(GET_CHARDEV));
        EXPECT_EQ(h->nlmsg_seq, 10 + i);
        snprintf(path, sizeof(path), "/dev/infiniband/uverbs%u", i);
        snprintf(name, sizeof(name), "uverbs%u", i);
        EXPECT_EQ(stat(path, &st), 0);
        cdev = attr_uint(h, RDMA_NLDEV_ATTR_CHARDEV, 8);
        /* rdma-core's decoding of huge_encode_dev (find_uverbs_nl_cb) */
        EXPECT_EQ(makedev((cdev & 0xfff00) >> 8, (cdev & 0xff) | ((cdev >> 12) & 0xfff00)),
                  st.st_rdev);
        EXPECT_EQ(attr_uint(h, RDMA_NLDEV_ATTR_CHARDEV_ABI, 8), 1);
        EXPECT_EQ(strcmp(attr_str(h, RDMA_NLDEV_ATTR_CHARDEV_NAME), name), 0);
        EXPECT_EQ(attr_uint(h, RDMA_NLDEV_ATTR_UVERBS_DRIVER_ID, 4), DRIVER_EFA);
    }
    close(fd);
}

/* Requests Linux refuses, refused with its errno; none ends the socket. */
EFARM_TEST(efasim_netlink_refusals)
{
    uint16_t short_index = 1;
    char unterminated[20];
    struct req r;
    int fd;

    kernel_only();
    efasim_private_sysfs();
    fd = nl_open();
    req_init(&r, NLDEV(GET), 0, 1); /* doit without DEV_INDEX */
    expect_error(fd, &r, EINVAL);
    req_init(&r, NLDEV(GET), 0, 2);
    req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 99);
    expect_error(fd, &r, EINVAL);
    req_init(&r, RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, 200), 0, 3); /* no such command */
    expect_error(fd, &r, EINVAL);
    req_init(&r, RDMA_NL_GET_TYPE(9, 1), 0, 4); /* no such client */
    expect_error(fd, &r, EINVAL);
    req_init(&r, NLDEV(SYS_GET), NLM_F_DUMP, 5); /* no dump */
    expect_error(fd, &r, EINVAL);
    req_init(&r, NLDEV(PORT_GET), 0, 6); /* Linux's, not emulated */
    req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
    expect_error(fd, &r, EOPNOTSUPP);
    req_init(&r, NLDEV(GET_CHARDEV), 0, 7); /* uverbs has no global file */
    req_str(&r, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs");
    expect_error(fd, &r, EOPNOTSUPP);
    req_init(&r, NLDEV(GET_CHARDEV), 0, 8);
    req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
    req_str(&r, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "umad");
    expect_error(fd, &r, EOPNOTSUPP);
    req_init(&r, NLDEV(GET_CHARDEV), 0, 9); /* uverbs wants no port */
    req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
    req_u32(&r, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
    req_str(&r, RDMA_NLDEV_ATTR_CHARDEV_TYPE, "uverbs");
    expect_error(fd, &r, EINVAL);
    req_init(&r, NLDEV(GET_CHARDEV), 0, 10); /* no CHARDEV_TYPE */
    req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
    expect_error(fd, &r, EINVAL);
    /* Attributes against nldev_policy: SYS_GET returns the parse's errno, GET_CHARDEV EINVAL. */
    req_init(&r, NLDEV(SYS_GET), 0, 11);
    req_attr(&r, RDMA_NLDEV_ATTR_DEV_INDEX, &short_index, sizeof(short_index));
    expect_error(fd, &r, ERANGE);
    memset(unterminated, 'u', sizeof(unterminated));
    req_init(&r, NLDEV(GET_CHARDEV), 0, 12);
    req_u32(&r, RDMA_NLDEV_ATTR_DEV_INDEX, 0);
    req_attr(&r, RDMA_NLDEV_ATTR_CHARDEV_TYPE, unterminated, sizeof(unterminated));
    expect_error(fd, &r, EINVAL);
    /* A string within 16 bytes, but an attribute of 20 (NULs after it): too long. */
    memset(unterminated, 0, sizeof(unterminated));
    memcpy(unterminated, "abc", 3);
    req_init(&r, NLDEV(SYS_GET), 0, 13);
    req_attr(&r, RDMA_NLDEV_ATTR_CHARDEV_TYPE, unterminated, sizeof(unterminated));
    expect_error(fd, &r, ERANGE);
    close(fd);
}

/* Malformed datagrams: what rdma_nl_rcv_skb drops gets no answer; nothing hangs or crashes. */
EFARM_TEST(efasim_netlink_malformed)
{
    struct answers a;
    const struct nlmsghdr *h;
    struct req r, two;
    size_t off = 0;
    int fd;
    uint32_t cap = 1;

    kernel_only();
    efasim_private_sysfs();
    fd = nl_open();
    nl_send(fd, "\x10\0\0\0\x06\x14\x01\0", 8); /* shorter than a header */
    nl_collect(fd, &a);
    EXPECT_EQ(a.datagrams, 0);
    req_init(&r, NLDEV(SYS_GET), 0, 1);
    ((struct nlmsghdr *)r.buf)->nlmsg_len = 64; /* beyond the datagram */
    nl_send(fd, r.buf, r.len);
    nl_collect(fd, &a);
    EXPECT_EQ(a.datagrams, 0);
    ((struct nlmsghdr *)r.buf)->nlmsg_len = 8; /* below the header */
    nl_send(fd, r.buf, r.len);
    nl_collect(fd, &a);
    EXPECT_EQ(a.datagrams, 0);
    req_init(&r, NLDEV(SYS_GET), 0, 2); /* not a request: ignored */
    ((struct nlmsghdr *)r.buf)->nlmsg_flags = 0;
    nl_send(fd, r.buf, r.len);
    nl_collect(fd, &a);
    EXPECT_EQ(a.datagrams, 0);
    nl_send(fd, "", 0);
    nl_collect(fd, &a);
    EXPECT_EQ(a.datagrams, 0);

    /* An attribute that overruns the message ends the parse: the request is answered. */
    req_init(&r, NLDEV(SYS_GET), 0, 3);
    req_attr_len(&r, RDMA_NLDEV_ATTR_DEV_INDEX, &cap, sizeof(cap), 200);
    nl_send(fd, r.buf, r.len);
    nl_collect(fd, &a);
    h = next_msg(&a, &off);
    EXPECT_EQ(h->nlmsg_type, NLDEV(SYS_GET));

    /* Two requests in one datagram: two answers, in order. */
    req_init(&two, NLDEV(SYS_GET), 0, 4);
    req_init(&r, NLDEV(GET), 0, 5);
    memcpy((uint8_t *)two.buf + two.len, r.buf, r.len);
    nl_send(fd, two.buf, two.len + r.len);
    nl_collect(fd, &a);
    EXPECT_EQ(a.datagrams, 2);
    off = 0;
    EXPECT_EQ(next_msg(&a, &off)->nlmsg_seq, 4);
    h = next_msg(&a, &off);
    EXPECT_EQ(h->nlmsg_type, NLMSG_ERROR);
    EXPECT_EQ(h->nlmsg_seq, 5);

    /* NETLINK_CAP_ACK: an error carries the request's header only. */
    EXPECT_EQ(setsockopt(fd, SOL_NETLINK, NETLINK_CAP_ACK, &cap, sizeof(cap)), 0);
    req_init(&r, NLDEV(GET), 0, 6);
    req_u32(&r, RDMA_NLDEV_ATTR_PORT_INDEX, 1);
    nl_send(fd, r.buf, r.len);
    nl_collect(fd, &a);
    off = 0;
    h = next_msg(&a, &off);
    EXPECT_EQ(h->nlmsg_flags, NLM_F_CAPPED);
    EXPECT_EQ(h->nlmsg_len, NLMSG_LENGTH(sizeof(struct nlmsgerr)));
    EXPECT_EQ(((const struct nlmsgerr *)NLMSG_DATA(h))->error, -EINVAL);
    close(fd);
}

/* The socket calls libnl makes, as Linux's netlink sockets answer them. */
EFARM_TEST(efasim_netlink_socket_calls)
{
    struct sockaddr_nl addr = {.nl_family = AF_NETLINK}, got;
    socklen_t len = sizeof(got);
    struct answers a;
    struct req r;
    int fd, fd2, dupfd, v = 0;

    kernel_only();
    EXPECT_EQ(socket(AF_NETLINK, SOCK_STREAM, NETLINK_RDMA), -1);
    EXPECT_EQ(errno, ESOCKTNOSUPPORT);
    fd = nl_open();
    EXPECT_EQ(fcntl(fd, F_GETFD) & FD_CLOEXEC, FD_CLOEXEC);
    EXPECT_EQ(fcntl(fd, F_GETFL) & O_NONBLOCK, O_NONBLOCK);
    len = sizeof(v);
    EXPECT_EQ(getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &v, &len), 0);
    EXPECT_EQ(v, NETLINK_RDMA);
    EXPECT_EQ(getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &v, &len), 0);
    EXPECT_EQ(v, AF_NETLINK);
    EXPECT_EQ(setsockopt(fd, SOL_NETLINK, 99, &v, sizeof(v)), -1);
    EXPECT_EQ(errno, ENOPROTOOPT);

    /* Unbound: port 0; bound: the port asked for, taken for the process's other sockets. */
    len = sizeof(got);
    EXPECT_EQ(getsockname(fd, (struct sockaddr *)&got, &len), 0);
    EXPECT_EQ(len, sizeof(got));
    EXPECT_EQ(got.nl_family, AF_NETLINK);
    EXPECT_EQ(got.nl_pid, 0);
    addr.nl_pid = 0x12345;
    EXPECT_EQ(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), 0);
    len = sizeof(got);
    EXPECT_EQ(getsockname(fd, (struct sockaddr *)&got, &len), 0);
    EXPECT_EQ(got.nl_pid, 0x12345);
    addr.nl_pid = 0x6789;
    EXPECT_EQ(bind(fd, (struct sockaddr *)&addr, sizeof(addr)), -1);
    EXPECT_EQ(errno, EINVAL);
    fd2 = nl_open();
    addr.nl_pid = 0x12345;
    EXPECT_EQ(bind(fd2, (struct sockaddr *)&addr, sizeof(addr)), -1);
    EXPECT_EQ(errno, EADDRINUSE);
    EXPECT_EQ(bind(fd2, (struct sockaddr *)&addr, sizeof(addr) - 1), -1);
    EXPECT_EQ(errno, EINVAL);
    /* A send autobinds: the process id first. */
    req_init(&r, NLDEV(SYS_GET), 0, 1);
    nl_send(fd2, r.buf, r.len);
    len = sizeof(got);
    EXPECT_EQ(getsockname(fd2, (struct sockaddr *)&got, &len), 0);
    EXPECT_EQ(got.nl_pid, (uint32_t)getpid());
    nl_collect(fd2, &a);
    EXPECT_EQ(((const struct nlmsghdr *)a.buf)->nlmsg_pid, (uint32_t)getpid());
    close(fd2);

    /* Only the kernel answers: another port is refused. */
    addr.nl_pid = 4242;
    EXPECT_EQ(sendto(fd, r.buf, r.len, 0, (struct sockaddr *)&addr, sizeof(addr)), -1);
    EXPECT_TRUE(errno == (geteuid() ? EPERM : ECONNREFUSED));

    /* A duplicate is the same socket, also once the first descriptor is closed. */
    dupfd = dup(fd);
    EXPECT_TRUE(dupfd >= 0);
    close(fd);
    EXPECT_EQ(write(dupfd, r.buf, r.len), r.len);
    nl_collect(dupfd, &a);
    EXPECT_EQ(a.datagrams, 1);
    EXPECT_EQ(((const struct nlmsghdr *)a.buf)->nlmsg_pid, 0x12345);
    close(dupfd);
}
