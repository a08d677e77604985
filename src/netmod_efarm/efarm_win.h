/*
 * What a window and the operations on it share (efarm_win.c, efarm_rma.c;
 * included by those two only): a dynamic window's directory of attached
 * regions, as its member exposes it (efarm_win.c keeps it up to date) and as
 * origins cache their copies of each target's (efarm_rma.c reads them to
 * address an access).
 */
#ifndef EFARM_WIN_H_INCLUDED
#define EFARM_WIN_H_INCLUDED

/*
 * MPI_Win_attach is not collective, so a dynamic window's members cannot
 * exchange keys when memory is attached. Instead each member keeps a
 * directory of its attached regions (base, size, key) in exposed memory:
 * a fixed header, exchanged at creation as the window's "memory", pointing
 * to an entry array that doubles when full. An origin that has no region
 * covering an access in its cached copy of the target's directory reads the
 * header and then the entries with efarm_read (RDMA read when negotiated, so
 * the target's CPU is not needed), then looks again. Cached copies turn
 * stale whenever an epoch opens (fence, start, lock, lock_all) and at
 * MPI_Win_sync, the points at which MPI lets a process rely on another's
 * attach; a stale copy is checked by reading the header alone (the count of
 * attaches and detaches tells whether the entries changed). A stale key can only make an access
 * fail (the target checks every key and range), never land elsewhere: target addresses are
 * absolute.
 */
typedef struct {
    uint64_t count;       /* entries in use */
    uint64_t entries;     /* address of the entry array */
    uint64_t entries_key; /* its key */
    uint64_t gen;         /* attaches and detaches so far */
} dyn_header_t;

typedef struct {
    uint64_t base, size, key;
} dyn_entry_t;

/* An entry array replaced by a larger one: kept exposed until the window is freed. */
typedef struct dyn_retired {
    struct dyn_retired *next;
    dyn_entry_t *ent;
    struct efarm_region *region;
} dyn_retired_t;

/* This process's copy of one target's directory. */
typedef struct {
    dyn_entry_t *ent;
    uint64_t count, cap;
    uint64_t gen, entries; /* the header's when the entries were read */
    unsigned epoch;        /* valid while equal to the window's epoch; 0: never read */
} dyn_cache_t;

struct MPIDI_EFARM_dyn {
    dyn_header_t *hdr; /* exposed read-only: the window's region */
    dyn_entry_t *ent;  /* the entry array, capacity cap */
    struct efarm_region *ent_region;
    struct efarm_region **attached; /* parallel to ent: each attached region's exposure */
    uint64_t cap;
    dyn_retired_t *retired;
    dyn_cache_t *cache; /* per target rank */
    unsigned epoch;     /* bumped at synchronisation: cached directories are stale */
    int vci;            /* the window's: its endpoint exposes the directory and attached memory */
};

#endif /* EFARM_WIN_H_INCLUDED */
