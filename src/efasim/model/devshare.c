/*
 * What a device holds for every process on its host: its address handle
 * numbers (max_ah) and the pages of its MRs (EFASIM_MAX_REG_PAGES).
 *
 * EFA's AH table and the pages its MRs are given belong to the device, not to
 * a process: ranks sharing a NIC share them (efa_com_create_ah and
 * efa_com_register_mr are the device's admin commands, refused with
 * RESOURCE_ALLOCATION_FAILURE when it is full). efasim's devices live in each
 * process, so each device keeps a small file under efasim's root,
 * efasim/devices/<name>-<address>.<layout> (the address tells emulated hosts apart),
 * that every process using it maps shared: one slot per process with what it
 * holds. A charge sums the slots, as the device sees one table.
 *
 * A slot is alive while its process holds an OFD lock on the slot's byte of
 * the file (through a close-on-exec descriptor): the kernel drops the lock
 * when the process exits or execs, as it releases a closed uverbs file's
 * objects then. A charge that would pass its limit first clears the slots of
 * processes that are gone. The slots are changed under a process-shared,
 * robust mutex in the file (a holder that dies gives it up), made once under
 * an OFD lock on one more byte: a charge costs no system call. A forked child closes its copy of
 * the descriptor and takes a slot of its own when it first charges; what its parent held stays the
 * parent's, and the child never takes it back (its copies of the parent's objects are not its own:
 * each charge names the process that made it, as pinned.c's epochs do). Where the file cannot be
 * made, the process counts alone and says so once.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "efasim_model.h"

#define SHARE_SLOTS 4096u /* processes on one device at once */

struct share_slot {
    int32_t pid; /* 0: free */
    uint32_t ahns;
    uint64_t pages;
};

struct efasim_share_file {
    uint32_t used;  /* every taken slot lies below */
    uint32_t ready; /* lock made (SHARE_READY): a new file is zeros */
    union {
        pthread_mutex_t m; /* process-shared, robust: a holder that dies gives it up */
        uint8_t pad[64];
    } lock;
    struct share_slot slot[SHARE_SLOTS];
};

#define SHARE_READY 0x65667331u /* "efs1" */
/* The file's layout, in its name: a process of another efasim never reads this one. */
#define SHARE_LAYOUT 2u

/* The lock bytes: slot i's is byte i; the one after them guards making the table's lock. */
#define SHARE_INIT_BYTE SHARE_SLOTS

static uint32_t g_share_epoch; /* which process charged: new in each child (atomic) */
static pthread_once_t g_share_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t g_share_list_lock = PTHREAD_MUTEX_INITIALIZER;
static struct efasim_share *g_share_list[EFASIM_MAX_DEVICES]; /* opened shares, for the child */
static unsigned g_share_nlist;

static void share_reset(struct efasim_share *s)
{
    if (s->file && s->fd < 0)
        free(s->file);
    else if (s->file)
        munmap(s->file, sizeof(*s->file));
    if (s->fd >= 0)
        close(s->fd);
    s->file = NULL;
    s->fd = -1;
    s->me = -1;
}

/* The child holds nothing yet; its parent's slots stay the parent's. */
static void share_atfork_child(void)
{
    __atomic_add_fetch(&g_share_epoch, 1, __ATOMIC_RELAXED);
    pthread_mutex_init(&g_share_list_lock, NULL);
    for (unsigned i = 0; i < g_share_nlist; i++) {
        pthread_mutex_init(&g_share_list[i]->mu, NULL);
        share_reset(g_share_list[i]);
    }
}

static void share_init(void)
{
    if (pthread_atfork(NULL, NULL, share_atfork_child))
        fprintf(stderr, "efasim: pthread_atfork failed: a forked child counts in its parent's "
                        "slot of the device's tables\n");
}

void efasim_share_construct(struct efasim_share *s)
{
    memset(s, 0, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    s->fd = -1;
    s->me = -1;
}

static int ofd_lock(int fd, short type, int cmd, uint32_t byte, struct flock *fl)
{
    *fl = (struct flock){.l_type = type, .l_whence = SEEK_SET, .l_start = byte, .l_len = 1};
    return fcntl(fd, cmd, fl);
}

/*
 * The table's lock, once per file: made by the first process under the init
 * byte's OFD lock (which the kernel drops if that process dies meanwhile).
 */
static int table_lock_make(struct efasim_share *s)
{
    struct efasim_share_file *f = s->file;
    pthread_mutexattr_t a;
    struct flock fl;
    int err = 0;

    while (ofd_lock(s->fd, F_WRLCK, F_OFD_SETLKW, SHARE_INIT_BYTE, &fl))
        if (errno != EINTR)
            return -errno;
    if (__atomic_load_n(&f->ready, __ATOMIC_ACQUIRE) != SHARE_READY) {
        err = pthread_mutexattr_init(&a);
        err = err ? err : pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
        err = err ? err : pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST);
        err = err ? err : pthread_mutex_init(&f->lock.m, &a);
        if (!err)
            __atomic_store_n(&f->ready, SHARE_READY, __ATOMIC_RELEASE);
    }
    ofd_lock(s->fd, F_UNLCK, F_OFD_SETLK, SHARE_INIT_BYTE, &fl);
    return -err;
}

/*
 * The table's lock: every process's threads. A holder that died left the
 * table as it stood (a sum of slots, each its process's own): it is taken on.
 */
static void table_lock(struct efasim_share *s)
{
    if (s->fd >= 0 && pthread_mutex_lock(&s->file->lock.m) == EOWNERDEAD)
        pthread_mutex_consistent(&s->file->lock.m);
}

static void table_unlock(struct efasim_share *s)
{
    if (s->fd >= 0)
        pthread_mutex_unlock(&s->file->lock.m);
}

/* Clear the slots whose processes are gone (no lock on their byte). Under the table's lock. */
static void share_reap(struct efasim_share *s)
{
    struct efasim_share_file *f = s->file;
    struct flock fl;

    if (s->fd < 0)
        return;
    for (uint32_t i = 0; i < f->used; i++) {
        if (!f->slot[i].pid || (int32_t)i == s->me)
            continue;
        if (!ofd_lock(s->fd, F_WRLCK, F_OFD_GETLK, i, &fl) && fl.l_type == F_UNLCK)
            f->slot[i] = (struct share_slot){0};
    }
    while (f->used && !f->slot[f->used - 1].pid && (int32_t)(f->used - 1) != s->me)
        f->used--;
}

/* This process's slot: a free one, locked. false when every slot is held. Under the table's lock.
 */
static bool share_slot_take(struct efasim_share *s)
{
    struct efasim_share_file *f = s->file;
    struct flock fl;

    share_reap(s); /* once per process: the table stays as long as the live processes */
    for (int pass = 0; pass < 2; pass++) {
        for (uint32_t i = 0; i < SHARE_SLOTS; i++) {
            if (f->slot[i].pid)
                continue;
            if (s->fd >= 0 && ofd_lock(s->fd, F_WRLCK, F_OFD_SETLK, i, &fl))
                continue; /* a process is about to let it go */
            f->slot[i] = (struct share_slot){.pid = getpid()};
            if (i >= f->used)
                f->used = i + 1;
            s->me = (int32_t)i;
            return true;
        }
        share_reap(s);
    }
    return false;
}

/* Count alone: a table of this process's own. */
static bool share_alone(struct efasim_share *s, const struct efasim_device *dev, const char *why)
{
    share_reset(s);
    s->file = calloc(1, sizeof(*s->file));
    if (!s->file)
        return false;
    s->file->slot[0].pid = getpid();
    s->file->used = 1;
    s->me = 0;
    fprintf(stderr,
            "efasim: %s: %s; its address handles and registered pages are counted for this "
            "process only\n",
            dev->name, why);
    return true;
}

/* The device's table mapped and this process's slot taken. false: nothing can be counted. */
static bool share_ready(struct efasim_share *s, const struct efasim_device *dev)
{
    char name[IBV_SYSFS_NAME_MAX + 32], addr[INET_ADDRSTRLEN];
    void *map;
    int fd, err;

    if (s->file && s->me >= 0)
        return true;
    if (s->file) { /* mapped, but every slot was held: try again */
        bool ok;

        table_lock(s);
        ok = share_slot_take(s);
        table_unlock(s);
        return ok || share_alone(s, dev, "more processes than its table has slots (4096)");
    }
    pthread_once(&g_share_once, share_init);
    if (!s->listed) {
        pthread_mutex_lock(&g_share_list_lock);
        if (g_share_nlist < EFASIM_MAX_DEVICES)
            g_share_list[g_share_nlist++] = s;
        pthread_mutex_unlock(&g_share_list_lock);
        s->listed = true;
    }
    inet_ntop(AF_INET, &dev->addr, addr, sizeof(addr));
    snprintf(name, sizeof(name), "%s-%s.%u", dev->name, addr, SHARE_LAYOUT);
    fd = efasim_state_file("devices", name, sizeof(struct efasim_share_file));
    if (fd < 0)
        return share_alone(s, dev, strerror(-fd));
    map = mmap(NULL, sizeof(struct efasim_share_file), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (map == MAP_FAILED) {
        close(fd);
        return share_alone(s, dev, strerror(errno));
    }
    s->file = map;
    s->fd = fd;
    err = table_lock_make(s);
    if (err)
        return share_alone(s, dev, strerror(-err));
    table_lock(s);
    if (!share_slot_take(s)) {
        table_unlock(s);
        return share_alone(s, dev, "more processes than its table has slots (4096)");
    }
    table_unlock(s);
    return true;
}

static uint64_t share_sum(const struct efasim_share_file *f, enum efasim_share_kind kind)
{
    uint64_t sum = 0;

    for (uint32_t i = 0; i < f->used; i++)
        sum += kind == EFASIM_SHARE_AHNS ? f->slot[i].ahns : f->slot[i].pages;
    return sum;
}

int efasim_share_charge(struct efasim_device *dev, enum efasim_share_kind kind, uint64_t n,
                        uint64_t limit, uint32_t *epoch_p)
{
    struct efasim_share *s = &dev->share;
    struct share_slot *me;
    int err = 0;

    pthread_mutex_lock(&s->mu);
    if (!share_ready(s, dev)) {
        pthread_mutex_unlock(&s->mu);
        return -ENOMEM;
    }
    table_lock(s);
    if (n > limit || share_sum(s->file, kind) > limit - n) {
        share_reap(s);
        if (n > limit || share_sum(s->file, kind) > limit - n)
            err = -ENOMEM;
    }
    if (!err) {
        me = &s->file->slot[s->me];
        if (kind == EFASIM_SHARE_AHNS)
            me->ahns += (uint32_t)n;
        else
            me->pages += n;
        *epoch_p = __atomic_load_n(&g_share_epoch, __ATOMIC_RELAXED);
    }
    table_unlock(s);
    pthread_mutex_unlock(&s->mu);
    return err;
}

void efasim_share_release(struct efasim_device *dev, enum efasim_share_kind kind, uint64_t n,
                          uint32_t epoch)
{
    struct efasim_share *s = &dev->share;
    struct share_slot *me;

    if (!n || epoch != __atomic_load_n(&g_share_epoch, __ATOMIC_RELAXED))
        return; /* charged by the parent of this forked child: the parent's to release */
    pthread_mutex_lock(&s->mu);
    if (s->file && s->me >= 0) {
        table_lock(s);
        me = &s->file->slot[s->me];
        if (kind == EFASIM_SHARE_AHNS)
            me->ahns -= me->ahns < n ? me->ahns : (uint32_t)n;
        else
            me->pages -= me->pages < n ? me->pages : n;
        table_unlock(s);
    }
    pthread_mutex_unlock(&s->mu);
}
