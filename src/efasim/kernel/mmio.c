/*
 * The device's memory-mapped side (mmio.h): regions of shared memory with a
 * device view and a user view, the address range user views live in, and the
 * fault handler that turns an access to a trapped page into the device's
 * work.
 *
 * Every user view is placed in one arena of address space reserved when the
 * first region is mapped, so "is this fault ours" is a range check and the
 * region is found by its 64 KiB granule in a table, without locks, from the
 * signal handler. munmap of a user view puts the reservation back, so nobody
 * else is ever given an address in the arena.
 *
 * A fault is handled in the faulting thread, synchronously, like the
 * exception a store to a BAR or a read of unmapped memory raises: the
 * instruction is decoded (x86.c); a doorbell store reaches ops->store and the
 * instruction is skipped; a read of an armed ring runs the device
 * (ops->load) and is either re-executed, when the ring was disarmed, or
 * answered from the device's view. An instruction the decoder does not know
 * is single-stepped with the page opened for that one instruction (the trap
 * flag, then SIGTRAP). Faults elsewhere go to the handler the application
 * installed, which efasim keeps behind its own (efasim_mmio_sigaction).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "mmio.h"
#include "x86.h"

#define ARENA_SIZE     (1ull << 32) /* 4 GiB of address space, reserved, never backed */
#define GRANULE_SHIFT  16           /* user views start on 64 KiB boundaries */
#define ARENA_GRANULES (ARENA_SIZE >> GRANULE_SHIFT)
#define EFL_TF         0x100ull /* the trap flag */

struct efasim_mmio {
    size_t len;
    enum efasim_mmio_kind kind;
    const struct efasim_mmio_ops *ops; /* atomic: NULL once the owner released the region */
    void *owner;
    int memfd;
    uint8_t *dev;  /* the device's view */
    uint8_t *user; /* the user's view in the arena, or NULL; under g_lock */
    int user_prot; /* what the user view allows while not trapped */
    bool armed;    /* a ring whose reads fault; changed by the ring's owner under its lock */
    int refs;      /* the owner and the user view; under g_lock */
};

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static uint8_t *g_arena;                              /* set once, under g_lock */
static struct efasim_mmio *g_granule[ARENA_GRANULES]; /* the view holding each granule */
static uint64_t g_used[ARENA_GRANULES / 64];          /* granules in use; under g_lock */
static struct efasim_mmio_stats g_stats;              /* atomics */
static size_t g_page;                                 /* set by the first region */
static struct sigaction g_app_segv, g_app_trap;       /* the application's; under g_lock */
static bool g_handlers;                               /* efasim's are installed */

/* A single step in progress in this thread (the trap flag is set). */
static __thread struct {
    struct efasim_mmio *m;
    size_t offset;
    bool store;
} t_step __attribute__((tls_model("initial-exec")));

static long raw_mprotect(void *addr, size_t len, int prot)
{
    return syscall(SYS_mprotect, addr, len, prot);
}

static void *raw_mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
    return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
}

static int real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    static int (*fn)(int, const struct sigaction *, struct sigaction *);

    if (!fn)
        fn = (int (*)(int, const struct sigaction *, struct sigaction *))dlsym(RTLD_NEXT,
                                                                               "sigaction");
    return fn ? fn(sig, act, old) : -1;
}

static void handlers_install(void);
static pthread_once_t g_handlers_once = PTHREAD_ONCE_INIT;

/* ---- Regions ------------------------------------------------------------------ */

struct efasim_mmio *efasim_mmio_create(size_t len, enum efasim_mmio_kind kind,
                                       const struct efasim_mmio_ops *ops, void *owner)
{
    struct efasim_mmio *m = calloc(1, sizeof(*m));

    if (!m)
        return NULL;
    pthread_once(&g_handlers_once, handlers_install);
    if (!len || len % g_page) {
        free(m);
        errno = EINVAL;
        return NULL;
    }
    m->len = len;
    m->kind = kind;
    m->ops = ops;
    m->owner = owner;
    m->refs = 1;
    m->memfd = memfd_create("efasim-queue", MFD_CLOEXEC);
    if (m->memfd < 0)
        goto err_free;
    if (ftruncate(m->memfd, (off_t)len))
        goto err_close;
    m->dev = raw_mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, m->memfd, 0);
    if (m->dev == MAP_FAILED)
        goto err_close;
    /* A forked child does not share the device's queues (EFA's mappings are not copied). */
    madvise(m->dev, len, MADV_DONTFORK);
    return m;

err_close:
    close(m->memfd);
err_free:
    free(m);
    errno = ENOMEM;
    return NULL;
}

static void mmio_put(struct efasim_mmio *m) /* g_lock held */
{
    if (--m->refs)
        return;
    munmap(m->dev, m->len);
    close(m->memfd);
    free(m);
}

void efasim_mmio_release(struct efasim_mmio *m)
{
    if (!m)
        return;
    __atomic_store_n(&m->ops, NULL, __ATOMIC_RELEASE);
    pthread_mutex_lock(&g_lock);
    mmio_put(m);
    pthread_mutex_unlock(&g_lock);
}

uint8_t *efasim_mmio_device_view(const struct efasim_mmio *m)
{
    return m->dev;
}

size_t efasim_mmio_length(const struct efasim_mmio *m)
{
    return m->len;
}

/* ---- The arena ------------------------------------------------------------------ */

static bool arena_reserve(void) /* g_lock held */
{
    void *a;

    if (g_arena)
        return true;
    a = raw_mmap(NULL, ARENA_SIZE, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (a == MAP_FAILED)
        return false;
    g_arena = a;
    return true;
}

static struct efasim_mmio *arena_lookup(const void *addr)
{
    uintptr_t a = (uintptr_t)addr, base = (uintptr_t)__atomic_load_n(&g_arena, __ATOMIC_ACQUIRE);

    if (!base || a < base || a - base >= ARENA_SIZE)
        return NULL;
    return __atomic_load_n(&g_granule[(a - base) >> GRANULE_SHIFT], __ATOMIC_ACQUIRE);
}

static bool used(size_t g)
{
    return g_used[g / 64] >> (g % 64) & 1;
}

static void set_used(size_t g, size_t n, bool on)
{
    for (size_t i = g; i < g + n; i++) {
        if (on)
            g_used[i / 64] |= 1ull << (i % 64);
        else
            g_used[i / 64] &= ~(1ull << (i % 64));
    }
}

/* The first run of n free granules, or ARENA_GRANULES. g_lock held. */
static size_t arena_find(size_t n)
{
    size_t run = 0;

    for (size_t g = 0; g < ARENA_GRANULES; g++) {
        run = used(g) ? 0 : run + 1;
        if (run == n)
            return g + 1 - n;
    }
    return ARENA_GRANULES;
}

static int effective_prot(const struct efasim_mmio *m)
{
    switch (m->kind) {
    case EFASIM_MMIO_DOORBELL:
        return PROT_NONE;
    case EFASIM_MMIO_RING:
        return m->armed ? PROT_NONE : m->user_prot;
    case EFASIM_MMIO_MEMORY:
    default:
        return m->user_prot;
    }
}

void *efasim_mmio_map_user(struct efasim_mmio *m, size_t len, int prot)
{
    size_t n = (len + (1u << GRANULE_SHIFT) - 1) >> GRANULE_SHIFT, g;
    uint8_t *addr;

    pthread_mutex_lock(&g_lock);
    if (len != m->len || m->user) {
        pthread_mutex_unlock(&g_lock);
        errno = EINVAL;
        return MAP_FAILED;
    }
    if (!arena_reserve() || (g = arena_find(n)) == ARENA_GRANULES) {
        pthread_mutex_unlock(&g_lock);
        errno = ENOMEM;
        return MAP_FAILED;
    }
    addr = g_arena + (g << GRANULE_SHIFT);
    m->user_prot = prot;
    if (raw_mmap(addr, len, effective_prot(m), MAP_SHARED | MAP_FIXED, m->memfd, 0) == MAP_FAILED) {
        pthread_mutex_unlock(&g_lock);
        errno = ENOMEM;
        return MAP_FAILED;
    }
    madvise(addr, len, MADV_DONTFORK);
    set_used(g, n, true);
    for (size_t i = g; i < g + n; i++)
        __atomic_store_n(&g_granule[i], m, __ATOMIC_RELEASE);
    m->user = addr;
    m->refs++;
    pthread_mutex_unlock(&g_lock);
    return addr;
}

bool efasim_mmio_owns(const void *addr, size_t len)
{
    uintptr_t a = (uintptr_t)addr, base = (uintptr_t)__atomic_load_n(&g_arena, __ATOMIC_ACQUIRE);

    return base && a + len > base && a < base + ARENA_SIZE;
}

int efasim_mmio_unmap_user(void *addr, size_t len)
{
    uintptr_t a = (uintptr_t)addr, base;
    size_t first, last;

    pthread_mutex_lock(&g_lock);
    base = (uintptr_t)g_arena;
    if (a < base || len > ARENA_SIZE || a - base > ARENA_SIZE - len || (a & 0xfff)) {
        pthread_mutex_unlock(&g_lock);
        errno = EINVAL;
        return -1;
    }
    first = (a - base) >> GRANULE_SHIFT;
    last = (a - base + len - 1) >> GRANULE_SHIFT;
    for (size_t g = first; g <= last; g++) {
        struct efasim_mmio *m = g_granule[g];
        size_t n;

        if (!m || m->user != g_arena + (g << GRANULE_SHIFT))
            continue; /* a view is released from its first granule */
        n = (m->len + (1u << GRANULE_SHIFT) - 1) >> GRANULE_SHIFT;
        raw_mmap(m->user, n << GRANULE_SHIFT, PROT_NONE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
        for (size_t i = g; i < g + n; i++)
            __atomic_store_n(&g_granule[i], NULL, __ATOMIC_RELEASE);
        set_used(g, n, false);
        m->user = NULL;
        mmio_put(m);
    }
    pthread_mutex_unlock(&g_lock);
    return 0;
}

void efasim_mmio_arm(struct efasim_mmio *m, bool armed)
{
    if (m->armed == armed)
        return;
    m->armed = armed;
    if (m->user)
        raw_mprotect(m->user, m->len, effective_prot(m));
}

bool efasim_mmio_armed(const struct efasim_mmio *m)
{
    return m->armed;
}

void efasim_mmio_stats(struct efasim_mmio_stats *out)
{
    out->doorbells = __atomic_load_n(&g_stats.doorbells, __ATOMIC_RELAXED);
    out->ring_loads = __atomic_load_n(&g_stats.ring_loads, __ATOMIC_RELAXED);
    out->emulated = __atomic_load_n(&g_stats.emulated, __ATOMIC_RELAXED);
    out->stepped = __atomic_load_n(&g_stats.stepped, __ATOMIC_RELAXED);
}

/* ---- Registers ------------------------------------------------------------------- */

static const int g_greg[16] = {REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP,
                               REG_RSI, REG_RDI, REG_R8,  REG_R9,  REG_R10, REG_R11,
                               REG_R12, REG_R13, REG_R14, REG_R15};

static uint64_t reg_read(const ucontext_t *uc, const struct efasim_x86_insn *in)
{
    uint64_t v = (uint64_t)uc->uc_mcontext.gregs[g_greg[in->reg]];

    return in->high8 ? v >> 8 : v;
}

static void reg_write(ucontext_t *uc, const struct efasim_x86_insn *in, uint64_t v)
{
    greg_t *r = &uc->uc_mcontext.gregs[g_greg[in->reg]];
    uint64_t old = (uint64_t)*r;

    switch (in->reg_size) {
    case 1:
        if (in->high8)
            old = (old & ~0xff00ull) | (v & 0xff) << 8;
        else
            old = (old & ~0xffull) | (v & 0xff);
        break;
    case 2:
        old = (old & ~0xffffull) | (v & 0xffff);
        break;
    case 4:
        old = v & 0xffffffffull; /* a 32-bit write clears the upper half */
        break;
    default:
        old = v;
        break;
    }
    *r = (greg_t)old;
}

static uint64_t mem_read(const uint8_t *p, unsigned size)
{
    uint64_t v = 0;

    memcpy(&v, p, size); /* little endian */
    return v;
}

static uint64_t extend(uint64_t v, unsigned from, bool sign)
{
    if (from >= 8)
        return v;
    v &= (1ull << (8 * from)) - 1;
    if (sign && (v >> (8 * from - 1)) & 1)
        v |= ~0ull << (8 * from);
    return v;
}

/* ---- Faults ----------------------------------------------------------------------- */

static void step_begin(ucontext_t *uc, struct efasim_mmio *m, size_t offset, bool store)
{
    size_t off = offset & ~(g_page - 1);

    t_step.m = m;
    t_step.offset = offset;
    t_step.store = store;
    raw_mprotect(m->user + off, g_page, store ? PROT_READ | PROT_WRITE : PROT_READ);
    uc->uc_mcontext.gregs[REG_EFL] |= (greg_t)EFL_TF;
    __atomic_fetch_add(&g_stats.stepped, 1, __ATOMIC_RELAXED);
}

static void step_end(ucontext_t *uc)
{
    struct efasim_mmio *m = t_step.m;
    size_t off = t_step.offset & ~(g_page - 1);
    const struct efasim_mmio_ops *ops;

    uc->uc_mcontext.gregs[REG_EFL] &= ~(greg_t)EFL_TF;
    t_step.m = NULL;
    raw_mprotect(m->user + off, g_page, effective_prot(m));
    ops = __atomic_load_n(&m->ops, __ATOMIC_ACQUIRE);
    if (t_step.store && ops && ops->store)
        ops->store(m->owner, t_step.offset, mem_read(m->dev + t_step.offset, 4), 4);
}

static bool doorbell_fault(ucontext_t *uc, struct efasim_mmio *m, size_t offset,
                           const struct efasim_x86_insn *in, bool decoded)
{
    const struct efasim_mmio_ops *ops = __atomic_load_n(&m->ops, __ATOMIC_ACQUIRE);
    uint64_t v;

    __atomic_fetch_add(&g_stats.doorbells, 1, __ATOMIC_RELAXED);
    if (!decoded || offset + in->mem_size > m->len) {
        step_begin(uc, m, offset, true);
        return true;
    }
    switch (in->kind) {
    case EFASIM_X86_STORE_REG:
    case EFASIM_X86_STORE_IMM:
        v = in->kind == EFASIM_X86_STORE_REG ? reg_read(uc, in) : in->imm;
        v = extend(v, in->mem_size, false);
        memcpy(m->dev + offset, &v, in->mem_size);
        if (ops && ops->store)
            ops->store(m->owner, offset, v, in->mem_size);
        break;
    default: /* a read of a doorbell: the device's view */
        v = mem_read(m->dev + offset, in->mem_size);
        reg_write(uc, in, extend(v, in->mem_size, in->kind == EFASIM_X86_LOAD_SX));
        break;
    }
    uc->uc_mcontext.gregs[REG_RIP] += in->len;
    return true;
}

static bool ring_fault(ucontext_t *uc, struct efasim_mmio *m, size_t offset,
                       const struct efasim_x86_insn *in, bool decoded)
{
    const struct efasim_mmio_ops *ops = __atomic_load_n(&m->ops, __ATOMIC_ACQUIRE);
    bool is_load = decoded && (in->kind == EFASIM_X86_LOAD || in->kind == EFASIM_X86_LOAD_ZX ||
                               in->kind == EFASIM_X86_LOAD_SX);

    __atomic_fetch_add(&g_stats.ring_loads, 1, __ATOMIC_RELAXED);
    if (decoded && !is_load)
        return false; /* a write to a read-only ring: the application's own fault */
    if (ops && ops->load)
        ops->load(m->owner, offset);
    if (!__atomic_load_n(&m->armed, __ATOMIC_ACQUIRE))
        return true; /* disarmed: the load runs again and reads the ring as it is now */
    if (!is_load || offset + in->mem_size > m->len) {
        step_begin(uc, m, offset, false);
        return true;
    }
    reg_write(uc, in,
              extend(mem_read(m->dev + offset, in->mem_size), in->mem_size,
                     in->kind == EFASIM_X86_LOAD_SX));
    uc->uc_mcontext.gregs[REG_RIP] += in->len;
    __atomic_fetch_add(&g_stats.emulated, 1, __ATOMIC_RELAXED);
    return true;
}

/* Hand a fault that is not efasim's to the application's handler, or to the default action. */
static void chain(int sig, siginfo_t *si, void *uc, const struct sigaction *app)
{
    if (app->sa_flags & SA_SIGINFO) {
        app->sa_sigaction(sig, si, uc);
        return;
    }
    if (app->sa_handler != SIG_DFL && app->sa_handler != SIG_IGN) {
        app->sa_handler(sig);
        return;
    }
    /* The default action: restore it; the faulting instruction runs again and gets it. */
    struct sigaction dfl = {.sa_handler = SIG_DFL};

    real_sigaction(sig, &dfl, NULL);
}

static void on_segv(int sig, siginfo_t *si, void *uc_)
{
    ucontext_t *uc = uc_;
    struct efasim_mmio *m = si->si_code == SEGV_ACCERR ? arena_lookup(si->si_addr) : NULL;
    struct efasim_x86_insn in;
    bool decoded;
    size_t offset;
    int saved = errno;

    if (m && m->user && (uint8_t *)si->si_addr >= m->user) {
        offset = (size_t)((uint8_t *)si->si_addr - m->user);
        decoded = efasim_x86_decode((const uint8_t *)uc->uc_mcontext.gregs[REG_RIP], 15, &in);
        if (offset < m->len &&
            (m->kind == EFASIM_MMIO_DOORBELL ? doorbell_fault(uc, m, offset, &in, decoded)
                                             : ring_fault(uc, m, offset, &in, decoded))) {
            errno = saved;
            return;
        }
    }
    errno = saved;
    chain(sig, si, uc_, &g_app_segv);
}

static void on_trap(int sig, siginfo_t *si, void *uc_)
{
    int saved = errno;

    if (t_step.m) {
        step_end(uc_);
        errno = saved;
        return;
    }
    errno = saved;
    chain(sig, si, uc_, &g_app_trap);
}

/* Install efasim's handlers once, keeping what the application had as the next ones. */
static void handlers_install(void)
{
    struct sigaction sa = {.sa_flags = SA_SIGINFO | SA_RESTART};

    g_page = (size_t)sysconf(_SC_PAGESIZE);
    pthread_mutex_lock(&g_lock);
    if (!g_handlers) {
        sigemptyset(&sa.sa_mask);
        sa.sa_sigaction = on_segv;
        real_sigaction(SIGSEGV, &sa, &g_app_segv);
        sa.sa_sigaction = on_trap;
        real_sigaction(SIGTRAP, &sa, &g_app_trap);
        __atomic_store_n(&g_handlers, true, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&g_lock);
}

bool efasim_mmio_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    struct sigaction *app;

    if ((sig != SIGSEGV && sig != SIGTRAP) || !__atomic_load_n(&g_handlers, __ATOMIC_ACQUIRE))
        return false;
    app = sig == SIGSEGV ? &g_app_segv : &g_app_trap;
    pthread_mutex_lock(&g_lock);
    if (old)
        *old = *app;
    if (act)
        *app = *act;
    pthread_mutex_unlock(&g_lock);
    return true;
}
