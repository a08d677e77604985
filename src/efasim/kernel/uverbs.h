/*
 * The uverbs character device as efasim's kernel front end presents it: an
 * open /dev/infiniband/uverbsN (a uverbs file), its objects and handles, the
 * calls that reach it (ioctl(RDMA_VERBS_IOCTL), write() of a legacy command,
 * ioctl's INVOKE_WRITE, mmap) and its event files. uverbs.c holds the core
 * (what drivers/infiniband/core does for every device: parsing, handles,
 * generic checks); efa.c the EFA driver behind it (what
 * drivers/infiniband/hw/efa checks and answers, and the device's queues).
 */
#ifndef EFASIM_UVERBS_H
#define EFASIM_UVERBS_H

#include <pthread.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/rdma_user_ioctl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct efasim_mmio;
struct efasim_context;

/* Object types, as uverbs numbers them (enum uverbs_default_objects). */
enum efasim_kobj_type {
    EFASIM_KOBJ_PD = UVERBS_OBJECT_PD,
    EFASIM_KOBJ_COMP_CHANNEL = UVERBS_OBJECT_COMP_CHANNEL,
    EFASIM_KOBJ_CQ = UVERBS_OBJECT_CQ,
    EFASIM_KOBJ_QP = UVERBS_OBJECT_QP,
    EFASIM_KOBJ_AH = UVERBS_OBJECT_AH,
    EFASIM_KOBJ_MR = UVERBS_OBJECT_MR,
    EFASIM_KOBJ_ASYNC_EVENT = UVERBS_OBJECT_ASYNC_EVENT,
};

struct efasim_kfile;

/* An object of a uverbs file: its handle, type and the driver's object. */
struct efasim_kobj {
    struct efasim_kfile *file;
    uint32_t handle;
    enum efasim_kobj_type type;
    uint64_t user_handle; /* what user space gave at creation (CQ, QP) */
    uint32_t events_read; /* a CQ's completion events user space has read (comp_events_reported) */
    int usecnt;           /* objects that use this one (a PD's MRs, a CQ's QPs): EBUSY to destroy */
    void *impl;           /* the driver's object (efa.c) */
};

/*
 * An event file (completion channel, async events): one end of a socket pair.
 * As the kernel's event file keeps each event with the object it is for, a
 * completion channel keeps the CQ of each event not yet read, in order: a
 * read (interpose.c) counts its event to its CQ, and a CQ destroyed takes
 * its unread events out of the file (efasim_kevents_forget).
 */
struct efasim_kevents {
    int user_fd;   /* the file descriptor user space reads */
    int device_fd; /* the end efasim writes events to */
    bool is_async;
    pthread_mutex_t lock;
    struct efasim_kobj **pending; /* the CQ of each event sent and not yet read, oldest first */
    uint32_t head, count, cap;
};

/* A call as the core hands it to a handler: its attributes by id, and the driver's data. */
#define EFASIM_KATTR_CORE 32 /* core attribute ids below this */
enum { EFASIM_KATTR_UHW_IN = EFASIM_KATTR_CORE, EFASIM_KATTR_UHW_OUT, EFASIM_KATTR_SLOTS };

struct efasim_kcall {
    struct efasim_kfile *file;
    struct ib_uverbs_attr *attr[EFASIM_KATTR_SLOTS]; /* ioctl: user memory, by id */
    /* The driver's data (udata): an ioctl's UHW attributes or a write's trailing words. */
    const void *uhw_in;
    size_t uhw_in_len;
    void *uhw_out;
    size_t uhw_out_len;
    /* A legacy command (write or INVOKE_WRITE): its core request and response. */
    const void *core_in;
    size_t core_in_len;
    void *core_out;
    size_t core_out_len;
    /* An ioctl's driver data, copied in and out around the handler. */
    uint8_t uhw_in_buf[256], uhw_out_buf[256];
};

/* The state of one open uverbs file. */
struct efasim_kfile {
    pthread_mutex_t lock; /* the handle table and the file's objects */
    unsigned dev_index;
    int refs;                   /* file descriptors open on it (dup) */
    bool forked;                /* a fork's copy in the child: every call fails with EIO */
    struct efasim_context *ctx; /* the model's device context, once GET_CONTEXT ran */
    void *driver;               /* efa.c's per-context state (ucontext) */
    struct efasim_kobj **objs;  /* by handle */
    uint32_t nobjs_slots;
    struct efasim_kevents async; /* user_fd < 0 until allocated */
    /* mmap entries: each a region with the key (offset) user space maps it at */
    struct efasim_kmap *maps;
    uint32_t nmaps, maps_slots;
    uint64_t next_key;
};

struct efasim_kmap {
    uint64_t key;
    struct efasim_mmio *region;
};

/* ---- The core (uverbs.c) ---------------------------------------------------------------- */

/* A new uverbs file for device dev_index; NULL and errno on failure. */
struct efasim_kfile *efasim_kfile_open(unsigned dev_index);
/* The last descriptor of the file closed: destroy its objects and context. */
void efasim_kfile_release(struct efasim_kfile *f);

/* The calls user space makes on the file: 0 / bytes, or a negative errno. */
int efasim_uverbs_ioctl(struct efasim_kfile *f, unsigned long request, void *arg);
ssize_t efasim_uverbs_write(struct efasim_kfile *f, const void *buf, size_t count);
void *efasim_uverbs_mmap(struct efasim_kfile *f, size_t len, int prot, int flags, off_t off,
                         int *err_p);

/* Copy from and to user memory without trusting it: 0 or -EFAULT. */
int efasim_copy_from_user(void *dst, uint64_t src, size_t len);
int efasim_copy_to_user(uint64_t dst, const void *src, size_t len);

/* Attributes of an ioctl call (the handlers of efa.c use them too). */
bool efasim_kattr_has(const struct efasim_kcall *c, unsigned id);
/* Read a PTR_IN attribute of exactly len bytes (or up to len when its size may be smaller). */
int efasim_kattr_in(const struct efasim_kcall *c, unsigned id, void *dst, size_t len);
/* Write a PTR_OUT attribute (at most its length); marks it valid. */
int efasim_kattr_out(struct efasim_kcall *c, unsigned id, const void *src, size_t len);

/* Register an mmap entry for region on the file; its key (the offset to mmap). */
int efasim_kfile_add_map(struct efasim_kfile *f, struct efasim_mmio *region, uint64_t *key_p);
/* Remove an entry (the object that made it is destroyed). */
void efasim_kfile_remove_map(struct efasim_kfile *f, struct efasim_mmio *region);

/* Queue a completion event for cq on its channel. */
void efasim_kevents_comp(struct efasim_kevents *ev, struct efasim_kobj *cq);
/*
 * The event file whose user end is fd, or NULL (interpose.c keeps the table).
 * Registered when the file is made; forgotten when user space closes fd or
 * the file is freed.
 */
struct efasim_kevents *efasim_kevents_of_fd(int fd);
void efasim_kevents_fd_set(int fd, struct efasim_kevents *ev);
/* read(2) of an event file: one whole event, or EINVAL when it does not fit; -1 with errno. */
ssize_t efasim_kevents_read(struct efasim_kevents *ev, void *buf, size_t count);
/* A CQ is destroyed: its unread events leave the channel. */
void efasim_kevents_forget(struct efasim_kevents *ev, struct efasim_kobj *cq);
/* Free a completion channel's event file (its user end is user space's to close). */
void efasim_kevents_free(struct efasim_kevents *ev);

/*
 * rebind.c: points rdma-core's own references to mmap, mmap64 and munmap (their
 * GOT entries in libibverbs and its providers) at these, which nothing can patch
 * (a memory monitor patches the public functions' code). Returns how many entries
 * it found.
 */
struct efasim_rebind_fns {
    void *(*mmap)(void *addr, size_t len, int prot, int flags, int fd, off_t off);
    void *(*mmap64)(void *addr, size_t len, int prot, int flags, int fd, off_t off);
    int (*munmap)(void *addr, size_t len);
};
unsigned efasim_rebind_rdma_core(const struct efasim_rebind_fns *fns);

#endif /* EFASIM_UVERBS_H */
