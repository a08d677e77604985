/*
 * RDMA between processes of one host by one direct copy.
 *
 * A NIC moves RDMA data between the two hosts' memories once; efasim's
 * datagram path copies it three times (into a socket, out of it, into place)
 * in MTU-sized pieces. When initiator and target share a host and a pid
 * namespace, the initiator sends a small request instead (struct
 * efasim_fast_req: who it is, where its side of the chunk lies) and the
 * target's emulated NIC, after the checks it makes of any RDMA request (Q-Key,
 * rkey, bounds, access), copies the chunk with process_vm_writev (read) or
 * process_vm_readv (write) and answers with an ACK. Keys are validated by the
 * process that owns them, as on EFA; everything around the copy (sequence
 * numbers, the receive window, retransmission, the fault injector) is the
 * datagram path's, so a lost, delayed, duplicated or reordered request or
 * answer is handled as any other datagram, and the receive window settles
 * each request once: no copy of a request moves data twice.
 *
 * Same host: /proc/sys/kernel/random/boot_id names the boot, and the pid
 * namespace's inode and device tell whether a pid means the same process on
 * both sides. The pid is proven by the WR's nonce: 64 bits drawn from a secret
 * of the initiator's, kept in its send queue entry while the WR is in flight
 * and sent in the request; the target reads it back from that pid, at the
 * address the request names, before it moves a byte. A process that did not
 * send the request (say, another user's, forging one) cannot name a process
 * whose nonces it does not know, so the target never becomes its deputy; and a
 * copy of a request that outlives its WR (the WR completed, failed, or its QP
 * was destroyed: the nonce is zeroed) moves nothing, even where the target's
 * receive window no longer knows it (a new target QP at that number).
 *
 * Permission: the target attaches to the initiator as a debugger would
 * (PTRACE_MODE_ATTACH), so the initiator lets processes of its user do so:
 * PR_SET_PTRACER_ANY where Yama restricts ptrace to descendants, and
 * PR_SET_DUMPABLE where the process was not dumpable (never for a set-id
 * process). When the kernel refuses anyway (EPERM, ENOSYS, seccomp) the
 * target answers EFASIM_ST_FAST_REFUSED and the initiator uses datagrams with
 * it from then on; a fault on either side (EFAULT) answers
 * EFASIM_ST_FAST_RETRY and the WR is redone by datagrams, which report the
 * error the datagram path reports. Neither is ever a completion.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "efasim_model.h"

struct fast_identity {
    bool known;
    uint8_t boot_id[16];
    uint64_t pidns_ino, pidns_dev;
    uint32_t pid;
};

static struct fast_identity g_identity;
static uint64_t g_fast_secret; /* seeds the WRs' nonces */
static uint64_t g_fast_counter;
static pthread_once_t g_fast_once = PTHREAD_ONCE_INIT;

/* The 32 hex digits of a boot id ("8a115f8a-5a86-...") as 16 bytes. */
static bool boot_id_parse(const char *text, uint8_t out[16])
{
    unsigned n = 0;

    for (const char *c = text; *c && n < 32; c++) {
        unsigned v;

        if (*c == '-')
            continue;
        if (*c >= '0' && *c <= '9')
            v = (unsigned)(*c - '0');
        else if (*c >= 'a' && *c <= 'f')
            v = (unsigned)(*c - 'a' + 10);
        else
            return false;
        out[n / 2] = (uint8_t)(n % 2 ? out[n / 2] | v : v << 4);
        n++;
    }
    return n == 32;
}

static bool identity_read(struct fast_identity *id)
{
    char text[64] = {0};
    struct stat st;
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    ssize_t n;

    if (fd < 0)
        return false;
    n = read(fd, text, sizeof(text) - 1);
    close(fd);
    if (n <= 0 || !boot_id_parse(text, id->boot_id))
        return false;
    if (stat("/proc/self/ns/pid", &st))
        return false;
    id->pidns_ino = st.st_ino;
    id->pidns_dev = st.st_dev;
    id->pid = (uint32_t)getpid();
    return true;
}

/* Let the target processes of this user attach to this one (see the top of the file). */
static void fast_permit(void)
{
    if (!access("/proc/sys/kernel/yama/ptrace_scope", F_OK))
        (void)prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
    if (prctl(PR_GET_DUMPABLE, 0, 0, 0, 0) == 0 && getuid() == geteuid() && getgid() == getegid())
        (void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
}

/* A forked child is another process: its own pid, and Yama's exception is per process. */
static void fast_atfork_child(void)
{
    g_identity.pid = (uint32_t)getpid();
    fast_permit();
}

static void fast_initialize(void)
{
    if (!efasim_config()->fastpath || !identity_read(&g_identity))
        return;
    if (getrandom(&g_fast_secret, sizeof(g_fast_secret), 0) != (ssize_t)sizeof(g_fast_secret))
        return;
    fast_permit();
    if (pthread_atfork(NULL, NULL, fast_atfork_child))
        return;
    __atomic_store_n(&g_identity.known, true, __ATOMIC_RELEASE);
}

bool efasim_fast_usable(void)
{
    pthread_once(&g_fast_once, fast_initialize);
    return __atomic_load_n(&g_identity.known, __ATOMIC_ACQUIRE);
}

/* splitmix64's finalizer over the secret and a counter: distinct, and unguessable without it. */
uint64_t efasim_fast_nonce(void)
{
    uint64_t z = g_fast_secret +
                 0x9e3779b97f4a7c15ull * (__atomic_add_fetch(&g_fast_counter, 1, __ATOMIC_RELAXED));

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return z ? z : 1;
}

void efasim_fast_req_build(struct efasim_fast_req *req, const uint64_t *nonce,
                           const struct iovec *local, int n)
{
    memset(req, 0, sizeof(*req));
    memcpy(req->boot_id, g_identity.boot_id, sizeof(req->boot_id));
    req->pidns_ino = g_identity.pidns_ino;
    req->pidns_dev = g_identity.pidns_dev;
    memcpy(req->token, nonce, sizeof(*nonce));
    req->token_addr = (uintptr_t)nonce;
    req->pid = g_identity.pid;
    req->niov = (uint32_t)n;
    for (int i = 0; i < n && i < EFASIM_MAX_SGE; i++)
        req->iov[i] = (struct efasim_fast_iov){(uintptr_t)local[i].iov_base, local[i].iov_len};
}

/* The request is well formed, from this host and pid namespace, and covers exactly len bytes. */
static bool fast_req_valid(const struct efasim_fast_req *req, uint64_t len)
{
    uint64_t sum = 0;

    if (req->niov < 1 || req->niov > EFASIM_MAX_SGE || !req->pid || req->pid > INT_MAX)
        return false;
    if (memcmp(req->boot_id, g_identity.boot_id, sizeof(req->boot_id)) ||
        req->pidns_ino != g_identity.pidns_ino || req->pidns_dev != g_identity.pidns_dev)
        return false;
    for (uint32_t i = 0; i < req->niov; i++) {
        if (req->iov[i].len > len - sum)
            return false;
        sum += req->iov[i].len;
    }
    return sum == len;
}

/* The kernel's verdict on a process_vm_* call that should have moved `want` bytes. */
static uint32_t fast_verdict(ssize_t n, uint64_t want)
{
    if (n >= 0 && (uint64_t)n == want)
        return EFASIM_ST_OK;
    if (n >= 0 || errno == EFAULT)
        return EFASIM_ST_FAST_RETRY; /* a fault on one side: the datagram path says which */
    return EFASIM_ST_FAST_REFUSED;   /* EPERM, ESRCH, ENOSYS (seccomp): not with this peer */
}

uint32_t efasim_fast_copy(const uint8_t *payload, size_t plen, void *mem, uint64_t len,
                          bool to_initiator)
{
    struct efasim_fast_req req;
    struct iovec remote[EFASIM_MAX_SGE];
    struct iovec local = {.iov_base = mem, .iov_len = len};
    uint64_t token, want;
    struct iovec tok_local = {&token, sizeof(token)}, tok_remote;
    pid_t pid;
    ssize_t n;

    if (!efasim_fast_usable() || plen != sizeof(req))
        return EFASIM_ST_FAST_REFUSED;
    memcpy(&req, payload, sizeof(req));
    if (!fast_req_valid(&req, len))
        return EFASIM_ST_FAST_REFUSED;
    pid = (pid_t)req.pid;
    /* The proof that pid is the sender and its WR still waits, before a byte moves. */
    memcpy(&want, req.token, sizeof(want));
    tok_remote = (struct iovec){(void *)(uintptr_t)req.token_addr, sizeof(token)};
    n = process_vm_readv(pid, &tok_local, 1, &tok_remote, 1, 0);
    if (!want || n != (ssize_t)sizeof(token) || token != want)
        return EFASIM_ST_FAST_REFUSED;
    for (uint32_t i = 0; i < req.niov; i++)
        remote[i] = (struct iovec){(void *)(uintptr_t)req.iov[i].addr, req.iov[i].len};
    if (to_initiator)
        n = process_vm_writev(pid, &local, 1, remote, req.niov, 0);
    else
        n = process_vm_readv(pid, &local, 1, remote, req.niov, 0);
    return fast_verdict(n, len);
}
