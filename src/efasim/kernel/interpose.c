/*
 * The kernel front end's entry: the C library calls through which a program
 * reaches a uverbs device, taken over for efasim's devices only. This library
 * is preloaded (LD_PRELOAD) into unmodified programs; rdma-core's libibverbs
 * and libefa then find efasim's devices in its sysfs view, open
 * /dev/infiniband/uverbsN, issue their commands with ioctl() and write(), map
 * the queues with mmap() and release them with munmap() and close(), exactly
 * as they do on a host with an EFA device. Every other path, descriptor and
 * address goes to the C library untouched, after one table lookup.
 *
 * A uverbs file is a real descriptor (an O_PATH descriptor of "/", so any call
 * that escaped this table fails with EBADF instead of doing something) mapped
 * to efasim's state for the file in a table indexed by descriptor. dup() and
 * its relatives share the file, as the kernel's do.
 *
 * Also here: the socket calls of NETLINK_RDMA sockets, which netlink.c
 * answers as Linux's RDMA netlink does (libibverbs lists devices and learns
 * whether the kernel copies pinned pages at fork through it, and would trust
 * the host kernel's answers, which know nothing of efasim's devices); and
 * SIGSEGV/SIGTRAP dispositions, which efasim's doorbells need (mmio.c), are
 * kept behind efasim's own handlers.
 */
#include <dlfcn.h>
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "../model/efasim_model.h"
#include "kernel.h"
#include "mmio.h"
#include "uverbs.h"

#define EFASIM_EXPORT __attribute__((visibility("default")))

#define UVERBS_MAJOR      231 /* the uverbs character devices */
#define UVERBS_BASE_MINOR 192
#define FD_TOP            1024 /* the descriptor table: 1024 x 1024 entries, made on use */
#define FD_LEAF           1024

static struct efasim_kfile **g_fd_table[FD_TOP];
static pthread_mutex_t g_fd_lock = PTHREAD_MUTEX_INITIALIZER;
static bool g_any; /* a uverbs file was ever opened: the fast check on every call */

/* ---- The C library's own functions ------------------------------------------------------ */

#define REAL(name)                      real_##name
#define DECLARE_REAL(ret, name, params) static ret(*real_##name) params

DECLARE_REAL(int, open, (const char *, int, ...));
DECLARE_REAL(int, open64, (const char *, int, ...));
DECLARE_REAL(int, openat, (int, const char *, int, ...));
DECLARE_REAL(int, openat64, (int, const char *, int, ...));
DECLARE_REAL(int, __open_2, (const char *, int));
DECLARE_REAL(int, __open64_2, (const char *, int));
DECLARE_REAL(int, __openat_2, (int, const char *, int));
DECLARE_REAL(int, __openat64_2, (int, const char *, int));
DECLARE_REAL(int, close, (int));
DECLARE_REAL(int, dup, (int));
DECLARE_REAL(int, dup2, (int, int));
DECLARE_REAL(int, dup3, (int, int, int));
DECLARE_REAL(int, fcntl, (int, int, ...));
DECLARE_REAL(int, fcntl64, (int, int, ...));
DECLARE_REAL(int, ioctl, (int, unsigned long, ...));
DECLARE_REAL(ssize_t, write, (int, const void *, size_t));
DECLARE_REAL(ssize_t, read, (int, void *, size_t));
DECLARE_REAL(void *, mmap, (void *, size_t, int, int, int, off_t));
DECLARE_REAL(void *, mmap64, (void *, size_t, int, int, int, off_t));
DECLARE_REAL(int, munmap, (void *, size_t));
DECLARE_REAL(int, stat, (const char *, struct stat *));
DECLARE_REAL(int, stat64, (const char *, struct stat64 *));
DECLARE_REAL(int, lstat, (const char *, struct stat *));
DECLARE_REAL(int, lstat64, (const char *, struct stat64 *));
DECLARE_REAL(int, fstat, (int, struct stat *));
DECLARE_REAL(int, fstat64, (int, struct stat64 *));
DECLARE_REAL(int, fstatat, (int, const char *, struct stat *, int));
DECLARE_REAL(int, fstatat64, (int, const char *, struct stat64 *, int));
DECLARE_REAL(int, access, (const char *, int));
DECLARE_REAL(int, faccessat, (int, const char *, int, int));
DECLARE_REAL(int, socket, (int, int, int));
DECLARE_REAL(int, bind, (int, const struct sockaddr *, socklen_t));
DECLARE_REAL(int, getsockname, (int, struct sockaddr *, socklen_t *));
DECLARE_REAL(int, setsockopt, (int, int, int, const void *, socklen_t));
DECLARE_REAL(int, getsockopt, (int, int, int, void *, socklen_t *));
DECLARE_REAL(ssize_t, send, (int, const void *, size_t, int));
DECLARE_REAL(ssize_t, sendto, (int, const void *, size_t, int, const struct sockaddr *, socklen_t));
DECLARE_REAL(ssize_t, sendmsg, (int, const struct msghdr *, int));
DECLARE_REAL(ssize_t, recv, (int, void *, size_t, int));
DECLARE_REAL(ssize_t, recvfrom, (int, void *, size_t, int, struct sockaddr *, socklen_t *));
DECLARE_REAL(ssize_t, recvmsg, (int, struct msghdr *, int));
DECLARE_REAL(DIR *, opendir, (const char *));
DECLARE_REAL(int, sigaction, (int, const struct sigaction *, struct sigaction *));
DECLARE_REAL(sighandler_t, signal, (int, sighandler_t));

/* The C library's fortified open entries (bits/fcntl2.h declares them only under fortify). */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

static void resolve(void)
{
#define RESOLVE(name) real_##name = (__typeof__(real_##name))dlsym(RTLD_NEXT, #name)
    RESOLVE(open);
    RESOLVE(open64);
    RESOLVE(openat);
    RESOLVE(openat64);
    RESOLVE(__open_2);
    RESOLVE(__open64_2);
    RESOLVE(__openat_2);
    RESOLVE(__openat64_2);
    RESOLVE(close);
    RESOLVE(dup);
    RESOLVE(dup2);
    RESOLVE(dup3);
    RESOLVE(fcntl);
    RESOLVE(fcntl64);
    RESOLVE(ioctl);
    RESOLVE(write);
    RESOLVE(read);
    RESOLVE(mmap);
    RESOLVE(mmap64);
    RESOLVE(munmap);
    RESOLVE(stat);
    RESOLVE(stat64);
    RESOLVE(lstat);
    RESOLVE(lstat64);
    RESOLVE(fstat);
    RESOLVE(fstat64);
    RESOLVE(fstatat);
    RESOLVE(fstatat64);
    RESOLVE(access);
    RESOLVE(faccessat);
    RESOLVE(socket);
    RESOLVE(bind);
    RESOLVE(getsockname);
    RESOLVE(setsockopt);
    RESOLVE(getsockopt);
    RESOLVE(send);
    RESOLVE(sendto);
    RESOLVE(sendmsg);
    RESOLVE(recv);
    RESOLVE(recvfrom);
    RESOLVE(recvmsg);
    RESOLVE(opendir);
    RESOLVE(sigaction);
    RESOLVE(signal);
#undef RESOLVE
}

static pthread_once_t g_resolve_once = PTHREAD_ONCE_INIT;
#define NEED(name) (real_##name ? (void)0 : (void)pthread_once(&g_resolve_once, resolve))

/* ---- The descriptor table ------------------------------------------------------------------ */

static struct efasim_kfile *fd_file(int fd)
{
    struct efasim_kfile **leaf;

    if (!__atomic_load_n(&g_any, __ATOMIC_RELAXED) || fd < 0 || fd >= FD_TOP * FD_LEAF)
        return NULL;
    leaf = __atomic_load_n(&g_fd_table[fd / FD_LEAF], __ATOMIC_ACQUIRE);
    return leaf ? __atomic_load_n(&leaf[fd % FD_LEAF], __ATOMIC_ACQUIRE) : NULL;
}

/* Set fd's entry (f may be NULL); the old one, which the caller releases. g_fd_lock held. */
static struct efasim_kfile *fd_table_set(int fd, struct efasim_kfile *f)
{
    struct efasim_kfile **leaf = g_fd_table[fd / FD_LEAF], *old;

    if (!leaf) {
        if (!f)
            return NULL;
        leaf = calloc(FD_LEAF, sizeof(*leaf));
        if (!leaf)
            return NULL;
        __atomic_store_n(&g_fd_table[fd / FD_LEAF], leaf, __ATOMIC_RELEASE);
    }
    old = leaf[fd % FD_LEAF];
    __atomic_store_n(&leaf[fd % FD_LEAF], f, __ATOMIC_RELEASE);
    if (f) {
        f->refs++;
        __atomic_store_n(&g_any, true, __ATOMIC_RELEASE);
    }
    return old;
}

static void file_put(struct efasim_kfile *f) /* g_fd_lock held */
{
    if (f && --f->refs == 0)
        efasim_kfile_release(f);
}

/* After fork, the child shares no device state with its parent (efasim_kernel_forked). */
static void atfork_child(void)
{
    for (int t = 0; t < FD_TOP; t++) {
        struct efasim_kfile **leaf = g_fd_table[t];

        for (int i = 0; leaf && i < FD_LEAF; i++)
            if (leaf[i])
                efasim_kernel_forked(leaf[i]);
    }
}

/* ---- Paths ------------------------------------------------------------------------------------
 */

/* The index N of "/dev/infiniband/uverbsN" when it names one of efasim's devices, else -1. */
static int uverbs_path(const char *path)
{
    static const char prefix[] = "/dev/infiniband/uverbs";
    const char *p;
    unsigned long n;
    char *end;

    if (!path || strncmp(path, prefix, sizeof(prefix) - 1))
        return -1;
    p = path + sizeof(prefix) - 1;
    if (*p < '0' || *p > '9')
        return -1;
    n = strtoul(p, &end, 10);
    if (*end || n >= efasim_config()->ndev)
        return -1;
    return (int)n;
}

static void rebind_if_patched(bool opening);

static int uverbs_open(int dev, int flags)
{
    struct efasim_kfile *f, *old;
    int fd;

    NEED(open);
    if ((flags & O_ACCMODE) != O_RDWR && (flags & O_ACCMODE) != O_WRONLY) {
        errno = EACCES; /* ib_uverbs_open needs write access (commands are written) */
        return -1;
    }
    f = efasim_kfile_open((unsigned)dev);
    if (!f)
        return -1;
    fd = REAL(open)("/", O_PATH | O_DIRECTORY | (flags & O_CLOEXEC));
    if (fd < 0) {
        efasim_kfile_release(f);
        return -1;
    }
    if (fd >= FD_TOP * FD_LEAF) {
        REAL(close)(fd);
        efasim_kfile_release(f);
        errno = EMFILE;
        return -1;
    }
    pthread_mutex_lock(&g_fd_lock);
    old = fd_table_set(fd, f);
    file_put(old);
    pthread_mutex_unlock(&g_fd_lock);
    if (fd_file(fd) != f) {
        REAL(close)(fd);
        errno = ENOMEM;
        return -1;
    }
    rebind_if_patched(true); /* rdma-core's providers are loaded by now */
    return fd;
}

static void uverbs_stat(int dev, struct stat *st)
{
    memset(st, 0, sizeof(*st));
    st->st_mode = S_IFCHR | 0666;
    st->st_rdev = makedev(UVERBS_MAJOR, UVERBS_BASE_MINOR + (unsigned)dev);
    st->st_nlink = 1;
    st->st_blksize = 4096;
}

static void uverbs_stat64(int dev, struct stat64 *st)
{
    struct stat s;

    uverbs_stat(dev, &s);
    memset(st, 0, sizeof(*st));
    st->st_mode = s.st_mode;
    st->st_rdev = s.st_rdev;
    st->st_nlink = s.st_nlink;
    st->st_blksize = s.st_blksize;
}

static int fd_dev(int fd)
{
    struct efasim_kfile *f = fd_file(fd);

    return f ? (int)f->dev_index : -1;
}

/* ---- open and friends ------------------------------------------------------------------------ */

static mode_t va_mode(int flags, va_list ap)
{
    return (flags & (O_CREAT | __O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

EFASIM_EXPORT int open(const char *path, int flags, ...)
{
    int dev = uverbs_path(path);
    va_list ap;
    mode_t mode;

    if (dev >= 0)
        return uverbs_open(dev, flags);
    va_start(ap, flags);
    mode = va_mode(flags, ap);
    va_end(ap);
    NEED(open);
    return REAL(open)(path, flags, mode);
}

EFASIM_EXPORT int open64(const char *path, int flags, ...)
{
    int dev = uverbs_path(path);
    va_list ap;
    mode_t mode;

    if (dev >= 0)
        return uverbs_open(dev, flags);
    va_start(ap, flags);
    mode = va_mode(flags, ap);
    va_end(ap);
    NEED(open64);
    return REAL(open64)(path, flags, mode);
}

EFASIM_EXPORT int openat(int dirfd, const char *path, int flags, ...)
{
    int dev = uverbs_path(path);
    va_list ap;
    mode_t mode;

    if (dev >= 0)
        return uverbs_open(dev, flags);
    va_start(ap, flags);
    mode = va_mode(flags, ap);
    va_end(ap);
    NEED(openat);
    return REAL(openat)(dirfd, path, flags, mode);
}

EFASIM_EXPORT int openat64(int dirfd, const char *path, int flags, ...)
{
    int dev = uverbs_path(path);
    va_list ap;
    mode_t mode;

    if (dev >= 0)
        return uverbs_open(dev, flags);
    va_start(ap, flags);
    mode = va_mode(flags, ap);
    va_end(ap);
    NEED(openat64);
    return REAL(openat64)(dirfd, path, flags, mode);
}

EFASIM_EXPORT int __open_2(const char *path, int flags)
{
    int dev = uverbs_path(path);

    if (dev >= 0)
        return uverbs_open(dev, flags);
    NEED(__open_2);
    return REAL(__open_2)(path, flags);
}

EFASIM_EXPORT int __open64_2(const char *path, int flags)
{
    int dev = uverbs_path(path);

    if (dev >= 0)
        return uverbs_open(dev, flags);
    NEED(__open64_2);
    return REAL(__open64_2)(path, flags);
}

EFASIM_EXPORT int __openat_2(int dirfd, const char *path, int flags)
{
    int dev = uverbs_path(path);

    if (dev >= 0)
        return uverbs_open(dev, flags);
    NEED(__openat_2);
    return REAL(__openat_2)(dirfd, path, flags);
}

EFASIM_EXPORT int __openat64_2(int dirfd, const char *path, int flags)
{
    int dev = uverbs_path(path);

    if (dev >= 0)
        return uverbs_open(dev, flags);
    NEED(__openat64_2);
    return REAL(__openat64_2)(dirfd, path, flags);
}

EFASIM_EXPORT int close(int fd)
{
    struct efasim_kfile *f = fd_file(fd);
    int ret;

    NEED(close);
    if (!f) {
        if (efasim_kevents_of_fd(fd)) /* user space closes an event file: reads end */
            efasim_kevents_fd_set(fd, NULL);
        efasim_nl_close(fd);
        return REAL(close)(fd);
    }
    pthread_mutex_lock(&g_fd_lock);
    f = fd_table_set(fd, NULL);
    ret = REAL(close)(fd);
    file_put(f);
    pthread_mutex_unlock(&g_fd_lock);
    return ret;
}

/* newfd now refers to what oldfd does; a netlink socket gains a descriptor. */
static int nl_dup_done(int oldfd, int newfd)
{
    efasim_nl_dup(oldfd, newfd);
    return newfd;
}

/* newfd now refers to what oldfd does; a uverbs file gains a descriptor. */
static int dup_done(int oldfd, int newfd)
{
    struct efasim_kfile *f = fd_file(oldfd), *old;

    if (newfd < 0)
        return newfd;
    efasim_nl_dup(oldfd, newfd); /* newfd may have been a netlink socket's */
    pthread_mutex_lock(&g_fd_lock);
    if (newfd < FD_TOP * FD_LEAF) {
        old = fd_table_set(newfd, f);
        file_put(old);
    }
    pthread_mutex_unlock(&g_fd_lock);
    return newfd;
}

EFASIM_EXPORT int dup(int oldfd)
{
    NEED(dup);
    if (!fd_file(oldfd))
        return nl_dup_done(oldfd, REAL(dup)(oldfd));
    return dup_done(oldfd, REAL(dup)(oldfd));
}

EFASIM_EXPORT int dup2(int oldfd, int newfd)
{
    NEED(dup2);
    if (!fd_file(oldfd) && !fd_file(newfd))
        return nl_dup_done(oldfd, REAL(dup2)(oldfd, newfd));
    if (oldfd == newfd)
        return REAL(dup2)(oldfd, newfd);
    return dup_done(oldfd, REAL(dup2)(oldfd, newfd));
}

EFASIM_EXPORT int dup3(int oldfd, int newfd, int flags)
{
    NEED(dup3);
    if (!fd_file(oldfd) && !fd_file(newfd))
        return nl_dup_done(oldfd, REAL(dup3)(oldfd, newfd, flags));
    return dup_done(oldfd, REAL(dup3)(oldfd, newfd, flags));
}

static int fcntl_common(int (*fn)(int, int, ...), int fd, int cmd, va_list ap)
{
    void *arg = va_arg(ap, void *);
    int ret = fn(fd, cmd, arg);

    if ((cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC) && fd_file(fd))
        return dup_done(fd, ret);
    if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
        return nl_dup_done(fd, ret);
    return ret;
}

EFASIM_EXPORT int fcntl(int fd, int cmd, ...)
{
    va_list ap;
    int ret;

    NEED(fcntl);
    va_start(ap, cmd);
    ret = fcntl_common(REAL(fcntl), fd, cmd, ap);
    va_end(ap);
    return ret;
}

EFASIM_EXPORT int fcntl64(int fd, int cmd, ...)
{
    va_list ap;
    int ret;

    NEED(fcntl64);
    va_start(ap, cmd);
    ret = fcntl_common(REAL(fcntl64) ? REAL(fcntl64) : REAL(fcntl), fd, cmd, ap);
    va_end(ap);
    return ret;
}

/* ---- The calls on a uverbs file or a netlink socket -------------------------------------- */

/* A netlink call's result as the C library returns it: -1 and errno for a negative errno. */
static ssize_t nl_ret(ssize_t ret)
{
    if (ret < 0) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}

/* One buffer sent to a netlink socket (write, send, sendto): false when fd is not one. */
static bool nl_send(int fd, const void *buf, size_t len, int flags, const struct sockaddr *addr,
                    socklen_t addrlen, ssize_t *ret_p)
{
    struct iovec iov = {(void *)buf, len};
    struct msghdr msg = {.msg_name = (void *)addr,
                         .msg_namelen = addr ? addrlen : 0,
                         .msg_iov = &iov,
                         .msg_iovlen = 1};

    if (!efasim_nl_sendmsg(fd, &msg, flags, ret_p))
        return false;
    *ret_p = nl_ret(*ret_p);
    return true;
}

/*
 * One buffer received from a netlink socket (read, recv, recvfrom): false when
 * fd is not one. As __sys_recvfrom, the datagram is taken before the address
 * goes out (move_addr_to_user: at most the caller's room, then its length).
 */
static bool nl_recv(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
                    socklen_t *addrlen_p, ssize_t *ret_p)
{
    struct sockaddr_nl from;
    struct iovec iov = {buf, len};
    struct msghdr msg = {
        .msg_name = &from, .msg_namelen = sizeof(from), .msg_iov = &iov, .msg_iovlen = 1};
    socklen_t room;

    if (!efasim_nl_recvmsg(fd, &msg, flags, ret_p))
        return false;
    if (*ret_p >= 0 && addr) {
        if (!addrlen_p || efasim_copy_from_user(&room, (uintptr_t)addrlen_p, sizeof(room)))
            *ret_p = -EFAULT;
        else if ((int)room < 0)
            *ret_p = -EINVAL;
        else if (efasim_copy_to_user((uintptr_t)addr, &from,
                                     room < msg.msg_namelen ? room : msg.msg_namelen) ||
                 efasim_copy_to_user((uintptr_t)addrlen_p, &msg.msg_namelen, sizeof(room)))
            *ret_p = -EFAULT;
    }
    *ret_p = nl_ret(*ret_p);
    return true;
}

EFASIM_EXPORT int ioctl(int fd, unsigned long request, ...)
{
    struct efasim_kfile *f = fd_file(fd);
    va_list ap;
    void *arg;
    int ret;

    va_start(ap, request);
    arg = va_arg(ap, void *);
    va_end(ap);
    if (!f) {
        NEED(ioctl);
        return REAL(ioctl)(fd, request, arg);
    }
    rebind_if_patched(false);
    ret = efasim_uverbs_ioctl(f, request, arg);
    if (ret < 0) {
        errno = -ret;
        return -1;
    }
    return ret;
}

EFASIM_EXPORT ssize_t write(int fd, const void *buf, size_t count)
{
    struct efasim_kfile *f = fd_file(fd);
    ssize_t ret;

    if (!f) {
        if (nl_send(fd, buf, count, 0, NULL, 0, &ret))
            return ret;
        NEED(write);
        return REAL(write)(fd, buf, count);
    }
    rebind_if_patched(false);
    ret = efasim_uverbs_write(f, buf, count);
    if (ret < 0) {
        errno = (int)-ret;
        return -1;
    }
    return ret;
}

/*
 * Event files by user descriptor: a short list, searched only while one
 * exists (g_nevents), so a read of any other descriptor costs one load.
 */
struct ev_fd {
    int fd;
    struct efasim_kevents *ev;
};
static pthread_mutex_t g_ev_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ev_fd *g_evs;
static unsigned g_nevents, g_evs_cap;

struct efasim_kevents *efasim_kevents_of_fd(int fd)
{
    struct efasim_kevents *ev = NULL;

    if (!__atomic_load_n(&g_nevents, __ATOMIC_ACQUIRE) || fd < 0)
        return NULL;
    pthread_mutex_lock(&g_ev_lock);
    for (unsigned i = 0; i < g_nevents && !ev; i++)
        if (g_evs[i].fd == fd)
            ev = g_evs[i].ev;
    pthread_mutex_unlock(&g_ev_lock);
    return ev;
}

void efasim_kevents_fd_set(int fd, struct efasim_kevents *ev)
{
    unsigned i;

    if (fd < 0)
        return;
    pthread_mutex_lock(&g_ev_lock);
    for (i = 0; i < g_nevents && g_evs[i].fd != fd; i++)
        ;
    if (!ev) {
        if (i < g_nevents)
            g_evs[i] = g_evs[g_nevents - 1];
        if (i < g_nevents)
            __atomic_store_n(&g_nevents, g_nevents - 1, __ATOMIC_RELEASE);
    } else if (i < g_nevents) {
        g_evs[i].ev = ev;
    } else {
        if (g_nevents == g_evs_cap) {
            unsigned cap = g_evs_cap ? g_evs_cap * 2 : 16;
            struct ev_fd *p = realloc(g_evs, cap * sizeof(*p));

            if (!p) { /* its reads are not counted: destroying its CQs reports what was sent */
                pthread_mutex_unlock(&g_ev_lock);
                return;
            }
            g_evs = p;
            g_evs_cap = cap;
        }
        g_evs[g_nevents] = (struct ev_fd){fd, ev};
        __atomic_store_n(&g_nevents, g_nevents + 1, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_ev_lock);
}

EFASIM_EXPORT ssize_t read(int fd, void *buf, size_t count)
{
    struct efasim_kevents *ev;

    if (!fd_file(fd)) {
        ssize_t ret;

        ev = efasim_kevents_of_fd(fd);
        if (ev)
            return efasim_kevents_read(ev, buf, count);
        if (nl_recv(fd, buf, count, 0, NULL, NULL, &ret))
            return ret;
        NEED(read);
        return REAL(read)(fd, buf, count);
    }
    errno = EINVAL; /* the uverbs file has no read */
    return -1;
}

static void *mmap_common(void *(*fn)(void *, size_t, int, int, int, off_t), void *addr, size_t len,
                         int prot, int flags, int fd, off_t off)
{
    struct efasim_kfile *f = fd_file(fd);
    void *ret;
    int err = 0;

    if (!f || (flags & MAP_ANONYMOUS))
        return fn(addr, len, prot, flags, fd, off);
    ret = efasim_uverbs_mmap(f, len, prot, flags, off, &err);
    if (ret == MAP_FAILED)
        errno = err;
    return ret;
}

EFASIM_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    NEED(mmap);
    return mmap_common(REAL(mmap), addr, len, prot, flags, fd, off);
}

EFASIM_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    NEED(mmap64);
    return mmap_common(REAL(mmap64) ? REAL(mmap64) : REAL(mmap), addr, len, prot, flags, fd, off);
}

EFASIM_EXPORT int munmap(void *addr, size_t len)
{
    NEED(munmap);
    if (efasim_mmio_owns(addr, len))
        return efasim_mmio_unmap_user(addr, len);
    return REAL(munmap)(addr, len);
}

/*
 * rdma-core's own mmap, mmap64 and munmap (rebind.c): uverbs files and queue
 * mappings here, every other call through the public functions, which a memory
 * monitor (libfabric's memhooks) may have patched to reach it instead.
 */
static void *rdma_core_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mmap_common(mmap, addr, len, prot, flags, fd, off);
}

static void *rdma_core_mmap64(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return mmap_common(mmap64, addr, len, prot, flags, fd, off);
}

static int rdma_core_munmap(void *addr, size_t len)
{
    if (efasim_mmio_owns(addr, len))
        return efasim_mmio_unmap_user(addr, len);
    return munmap(addr, len);
}

static const struct efasim_rebind_fns g_rdma_core_fns = {
    .mmap = rdma_core_mmap, .mmap64 = rdma_core_mmap64, .munmap = rdma_core_munmap};

/*
 * Whether someone overwrote the entry of the public mmap, mmap64 or munmap: their
 * first bytes against a copy taken when the library was loaded. Only then are
 * rdma-core's references rebound (rebind.c): left alone otherwise, so a program
 * that binds them itself (efarm's memory hook patches GOT entries, and checks
 * that they stay its own) sees the usual bindings. Checked at each uverbs open and
 * command (a command's objects are mapped after it); once rebound, again only at
 * opens, for libraries loaded since.
 */
#define ENTRY_BYTES 16
static void *local_mmap(void *, size_t, int, int, int, off_t)
    __attribute__((alias("mmap"), nothrow));
static void *local_mmap64(void *, size_t, int, int, int, off_t)
    __attribute__((alias("mmap64"), nothrow));
static int local_munmap(void *, size_t) __attribute__((alias("munmap"), nothrow));
static uint8_t g_entries[3][ENTRY_BYTES];
static bool g_rebound; /* atomic */

static const void *entry_of(int i)
{
    return i == 0   ? (const void *)local_mmap
           : i == 1 ? (const void *)local_mmap64
                    : (const void *)local_munmap;
}

static void entries_save(void)
{
    for (int i = 0; i < 3; i++)
        memcpy(g_entries[i], entry_of(i), ENTRY_BYTES);
}

static void rebind_if_patched(bool opening)
{
    bool patched = false;

    if (!opening && __atomic_load_n(&g_rebound, __ATOMIC_ACQUIRE))
        return;
    for (int i = 0; i < 3 && !patched; i++)
        patched = memcmp(g_entries[i], entry_of(i), ENTRY_BYTES) != 0;
    if (!patched)
        return;
    efasim_rebind_rdma_core(&g_rdma_core_fns);
    __atomic_store_n(&g_rebound, true, __ATOMIC_RELEASE);
}

/* ---- stat and access ---------------------------------------------------------------------- */

EFASIM_EXPORT int stat(const char *path, struct stat *st)
{
    int dev = uverbs_path(path);

    if (dev >= 0) {
        uverbs_stat(dev, st);
        return 0;
    }
    NEED(stat);
    return REAL(stat)(path, st);
}

EFASIM_EXPORT int stat64(const char *path, struct stat64 *st)
{
    int dev = uverbs_path(path);

    if (dev >= 0) {
        uverbs_stat64(dev, st);
        return 0;
    }
    NEED(stat64);
    return REAL(stat64)(path, st);
}

EFASIM_EXPORT int lstat(const char *path, struct stat *st)
{
    int dev = uverbs_path(path);

    if (dev >= 0) {
        uverbs_stat(dev, st);
        return 0;
    }
    NEED(lstat);
    return REAL(lstat)(path, st);
}

EFASIM_EXPORT int lstat64(const char *path, struct stat64 *st)
{
    int dev = uverbs_path(path);

    if (dev >= 0) {
        uverbs_stat64(dev, st);
        return 0;
    }
    NEED(lstat64);
    return REAL(lstat64)(path, st);
}

EFASIM_EXPORT int fstat(int fd, struct stat *st)
{
    int dev = fd_dev(fd);

    if (dev >= 0) {
        uverbs_stat(dev, st);
        return 0;
    }
    NEED(fstat);
    return REAL(fstat)(fd, st);
}

EFASIM_EXPORT int fstat64(int fd, struct stat64 *st)
{
    int dev = fd_dev(fd);

    if (dev >= 0) {
        uverbs_stat64(dev, st);
        return 0;
    }
    NEED(fstat64);
    return REAL(fstat64)(fd, st);
}

EFASIM_EXPORT int fstatat(int dirfd, const char *path, struct stat *st, int flags)
{
    int dev = (flags & AT_EMPTY_PATH) && !*path ? fd_dev(dirfd) : uverbs_path(path);

    if (dev >= 0) {
        uverbs_stat(dev, st);
        return 0;
    }
    NEED(fstatat);
    return REAL(fstatat)(dirfd, path, st, flags);
}

EFASIM_EXPORT int fstatat64(int dirfd, const char *path, struct stat64 *st, int flags)
{
    int dev = (flags & AT_EMPTY_PATH) && !*path ? fd_dev(dirfd) : uverbs_path(path);

    if (dev >= 0) {
        uverbs_stat64(dev, st);
        return 0;
    }
    NEED(fstatat64);
    return REAL(fstatat64)(dirfd, path, st, flags);
}

EFASIM_EXPORT int access(const char *path, int mode)
{
    if (uverbs_path(path) >= 0)
        return (mode & X_OK) ? (errno = EACCES, -1) : 0;
    NEED(access);
    return REAL(access)(path, mode);
}

EFASIM_EXPORT int faccessat(int dirfd, const char *path, int mode, int flags)
{
    if (uverbs_path(path) >= 0)
        return (mode & X_OK) ? (errno = EACCES, -1) : 0;
    NEED(faccessat);
    return REAL(faccessat)(dirfd, path, mode, flags);
}

/*
 * libibverbs lists devices by reading SYSFS_PATH/class/infiniband_verbs: efasim's
 * view of its devices is written then (once per process), as the kernel's
 * sysfs is there before anyone looks.
 */
EFASIM_EXPORT DIR *opendir(const char *path)
{
    static const char tail[] = "/class/infiniband_verbs";
    size_t len = strlen(path);
    unsigned n;

    if (len >= sizeof(tail) - 1 && !strcmp(path + len - (sizeof(tail) - 1), tail))
        (void)efasim_devices(&n);
    NEED(opendir);
    return REAL(opendir)(path);
}

/* ---- Netlink sockets and signals ---------------------------------------------------------- */

/*
 * NETLINK_RDMA sockets are netlink.c's (its table of commands); the calls on
 * their descriptors go there, every other socket's to the C library.
 */
EFASIM_EXPORT int socket(int domain, int type, int protocol)
{
    if (domain == AF_NETLINK && protocol == NETLINK_RDMA) {
        if (type & ~(0xf | SOCK_CLOEXEC | SOCK_NONBLOCK)) /* __sys_socket: SOCK_TYPE_MASK */
            return (int)nl_ret(-EINVAL);
        return (int)nl_ret(efasim_nl_socket(type));
    }
    NEED(socket);
    return REAL(socket)(domain, type, protocol);
}

EFASIM_EXPORT int bind(int fd, const struct sockaddr *addr, socklen_t len)
{
    int ret;

    if (efasim_nl_bind(fd, addr, len, &ret))
        return (int)nl_ret(ret);
    NEED(bind);
    return REAL(bind)(fd, addr, len);
}

EFASIM_EXPORT int getsockname(int fd, struct sockaddr *addr, socklen_t *len_p)
{
    int ret;

    if (efasim_nl_getsockname(fd, addr, len_p, &ret))
        return (int)nl_ret(ret);
    NEED(getsockname);
    return REAL(getsockname)(fd, addr, len_p);
}

EFASIM_EXPORT int setsockopt(int fd, int level, int name, const void *val, socklen_t len)
{
    int ret;

    if (efasim_nl_setsockopt(fd, level, name, val, len, &ret))
        return (int)nl_ret(ret);
    NEED(setsockopt);
    return REAL(setsockopt)(fd, level, name, val, len);
}

EFASIM_EXPORT int getsockopt(int fd, int level, int name, void *val, socklen_t *len_p)
{
    int ret;

    if (efasim_nl_getsockopt(fd, level, name, val, len_p, &ret))
        return (int)nl_ret(ret);
    NEED(getsockopt);
    return REAL(getsockopt)(fd, level, name, val, len_p);
}

EFASIM_EXPORT ssize_t send(int fd, const void *buf, size_t len, int flags)
{
    ssize_t ret;

    if (nl_send(fd, buf, len, flags, NULL, 0, &ret))
        return ret;
    NEED(send);
    return REAL(send)(fd, buf, len, flags);
}

EFASIM_EXPORT ssize_t sendto(int fd, const void *buf, size_t len, int flags,
                             const struct sockaddr *addr, socklen_t addrlen)
{
    ssize_t ret;

    if (nl_send(fd, buf, len, flags, addr, addrlen, &ret))
        return ret;
    NEED(sendto);
    return REAL(sendto)(fd, buf, len, flags, addr, addrlen);
}

EFASIM_EXPORT ssize_t sendmsg(int fd, const struct msghdr *msg, int flags)
{
    ssize_t ret;

    if (efasim_nl_sendmsg(fd, msg, flags, &ret))
        return nl_ret(ret);
    NEED(sendmsg);
    return REAL(sendmsg)(fd, msg, flags);
}

EFASIM_EXPORT ssize_t recv(int fd, void *buf, size_t len, int flags)
{
    ssize_t ret;

    if (nl_recv(fd, buf, len, flags, NULL, NULL, &ret))
        return ret;
    NEED(recv);
    return REAL(recv)(fd, buf, len, flags);
}

EFASIM_EXPORT ssize_t recvfrom(int fd, void *buf, size_t len, int flags, struct sockaddr *addr,
                               socklen_t *addrlen_p)
{
    ssize_t ret;

    if (nl_recv(fd, buf, len, flags, addr, addrlen_p, &ret))
        return ret;
    NEED(recvfrom);
    return REAL(recvfrom)(fd, buf, len, flags, addr, addrlen_p);
}

EFASIM_EXPORT ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    ssize_t ret;

    if (efasim_nl_recvmsg(fd, msg, flags, &ret))
        return nl_ret(ret);
    NEED(recvmsg);
    return REAL(recvmsg)(fd, msg, flags);
}

EFASIM_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (efasim_mmio_sigaction(sig, act, old))
        return 0;
    NEED(sigaction);
    return REAL(sigaction)(sig, act, old);
}

EFASIM_EXPORT sighandler_t signal(int sig, sighandler_t handler)
{
    struct sigaction act = {.sa_handler = handler, .sa_flags = SA_RESTART}, old;

    if (efasim_mmio_sigaction(sig, &act, &old))
        return old.sa_handler;
    NEED(signal);
    return REAL(signal)(sig, handler);
}

__attribute__((constructor)) static void interpose_init(void)
{
    entries_save(); /* before anyone could patch them */
    pthread_once(&g_resolve_once, resolve);
    pthread_atfork(NULL, NULL, atfork_child);
}
