/*
 * The calls of the uverbs core as tables (uverbs_cmds.c): one row per ioctl
 * method, with the attributes it takes, and one per legacy command, with the
 * sizes of its request and response. uverbs.c parses a call and runs its row.
 */
#ifndef EFASIM_UVERBS_CMDS_H
#define EFASIM_UVERBS_CMDS_H

#include "uverbs.h"

enum efasim_kattr_kind {
    EFASIM_KATTR_END = 0,
    EFASIM_KATTR_PTR_IN,   /* bytes in (inline up to 8) */
    EFASIM_KATTR_PTR_OUT,  /* bytes out, to a user pointer */
    EFASIM_KATTR_CONST_IN, /* a value inline */
    EFASIM_KATTR_FLAGS_IN, /* flag bits inline */
    EFASIM_KATTR_ENUM_IN,  /* an enum selector and its data */
    EFASIM_KATTR_IDR,      /* an object handle: in, or written back for a new object */
    EFASIM_KATTR_FD,       /* a file descriptor: in, or written back for a new event file */
    EFASIM_KATTR_UHW,      /* the driver's data, in or out */
};

struct efasim_kattr_spec {
    uint16_t id;
    uint8_t kind;
    bool mandatory;
    uint16_t min_len, max_len; /* PTR_IN, PTR_OUT: allowed lengths (0: no maximum) */
};

struct efasim_kmethod {
    uint16_t object, method;
    int (*fn)(struct efasim_kcall *c);
    struct efasim_kattr_spec attrs[20]; /* ended by a zero kind */
};

struct efasim_kwrite {
    uint32_t cmd;
    bool extended;
    size_t req_size;  /* the core request (legacy: after the header, its response pointer first) */
    size_t resp_size; /* the core response; 0: none */
    bool udata;       /* the driver's data follows the core request and response */
    int (*fn)(struct efasim_kcall *c);
};

const struct efasim_kmethod *efasim_kmethod_find(uint16_t object, uint16_t method);
const struct efasim_kwrite *efasim_kwrite_find(uint32_t cmd, bool extended);

/* EFASIM_UVERBS_IOCTL: whether ioctl is offered (both, ioctl) or only write (write). */
bool efasim_kernel_ioctl_enabled(void);

/* Objects of a file (uverbs.c). */
struct efasim_kobj *efasim_kobj_new(struct efasim_kfile *f, enum efasim_kobj_type type);
void efasim_kobj_commit(struct efasim_kobj *o);
void efasim_kobj_free(struct efasim_kobj *o);
struct efasim_kobj *efasim_kobj_get(struct efasim_kfile *f, uint64_t handle,
                                    enum efasim_kobj_type type);
/* Destroy an object through its driver (force: the file is closing, even if in use). */
int efasim_kobj_destroy(struct efasim_kobj *o, bool force);

/* Event files (uverbs.c). */
int efasim_kevents_open(struct efasim_kevents *ev, bool is_async);
void efasim_kevents_async(struct efasim_kfile *f, uint64_t element, uint32_t type);

/* Attributes (uverbs.c). */
int efasim_kattr_u64(const struct efasim_kcall *c, unsigned id, uint64_t *v_p);
int efasim_kattr_out_data(struct efasim_kcall *c, unsigned id, uint64_t value);
/* A PTR_OUT struct: copied, the user's room beyond it zeroed. */
int efasim_kattr_out_struct(struct efasim_kcall *c, unsigned id, const void *src, size_t len);
/* Read an ioctl's UHW attributes into the call; write the driver's answer back afterwards. */
int efasim_kcall_uhw(struct efasim_kcall *c);
void efasim_kcall_uhw_done(struct efasim_kcall *c, int err);

#endif /* EFASIM_UVERBS_CMDS_H */
