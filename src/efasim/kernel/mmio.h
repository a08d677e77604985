/*
 * The device's memory as the driver maps it (mmio.c): the queues the kernel
 * hands out with mmap (LLQ send descriptors, receive descriptors, completion
 * rings) and the doorbell pages. Each is a region: memory shared between the
 * device's own view and the mapping user space makes of it through the uverbs
 * file. A doorbell page is never accessible to user space: every store to it
 * faults, and the fault handler hands the value to the device, as a write to
 * a BAR reaches the NIC. A completion ring can be armed: then its pages fault
 * on reads, and the handler lets the device run before the driver reads the
 * next entry (the reader's thread drives the latency path, as efasim's
 * drop-in does with its poll; see efa.c, "Completion rings").
 */
#ifndef EFASIM_MMIO_H
#define EFASIM_MMIO_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct efasim_mmio;

struct efasim_mmio_ops {
    /* A store of `size` bytes of `value` at `offset` into a doorbell region. */
    void (*store)(void *owner, size_t offset, uint64_t value, unsigned size);
    /*
     * A load at `offset` from an armed ring: run the device. If the owner
     * disarmed the ring meanwhile, the load is executed again as it is;
     * otherwise it is answered from the device's view and the ring stays armed.
     */
    void (*load)(void *owner, size_t offset);
};

enum efasim_mmio_kind {
    EFASIM_MMIO_MEMORY,   /* plain shared memory (LLQ, receive ring): never faults */
    EFASIM_MMIO_DOORBELL, /* every access faults; stores reach ops->store */
    EFASIM_MMIO_RING,     /* read-only; faults while armed, reaching ops->load */
};

/*
 * A region of len bytes (a page multiple) of zeroed memory. ops and owner are
 * used by doorbells and rings. NULL and errno on failure. The region lives
 * until efasim_mmio_release and the user's munmap of its mapping, whichever
 * comes last.
 */
struct efasim_mmio *efasim_mmio_create(size_t len, enum efasim_mmio_kind kind,
                                       const struct efasim_mmio_ops *ops, void *owner);
/* The kernel object that owned the region is gone: faults on it do nothing from now on. */
void efasim_mmio_release(struct efasim_mmio *m);
/* The device's view of the region's memory (read and write). */
uint8_t *efasim_mmio_device_view(const struct efasim_mmio *m);
size_t efasim_mmio_length(const struct efasim_mmio *m);

/*
 * The user's mmap of the region (len must be its length; prot as asked): the
 * address, or MAP_FAILED with errno. A region is mapped at most once at a time.
 */
void *efasim_mmio_map_user(struct efasim_mmio *m, size_t len, int prot);
/* Whether [addr, addr + len) touches a mapping efasim made; the munmap interposer asks. */
bool efasim_mmio_owns(const void *addr, size_t len);
/* munmap of efasim's mappings in [addr, addr + len): 0 or -1 with errno. */
int efasim_mmio_unmap_user(void *addr, size_t len);

/* Arm (reads fault) or disarm a ring region's user mapping. Cheap when unchanged. */
void efasim_mmio_arm(struct efasim_mmio *m, bool armed);
bool efasim_mmio_armed(const struct efasim_mmio *m);

/*
 * The signal dispositions the application sees for SIGSEGV and SIGTRAP: efasim
 * keeps its own handler installed and passes on the faults that are not its
 * own to the handler the application installed (the sigaction interposer).
 * Returns true when it handled the call (sig is one of the two and efasim's
 * handler is installed).
 */
bool efasim_mmio_sigaction(int sig, const struct sigaction *act, struct sigaction *old);

/* Faults taken on trapped pages since the process started (for the benchmarks). */
struct efasim_mmio_stats {
    uint64_t doorbells, ring_loads, emulated, stepped;
};
void efasim_mmio_stats(struct efasim_mmio_stats *out);

#endif /* EFASIM_MMIO_H */
