/*
 * efarm's tunables: one table (name, type, default, why), read once from the
 * environment at first use. An EFARM_* variable that is not in the table is
 * reported, because a misspelt knob that silently does nothing costs hours.
 * `efarm-info` prints the table with the values in force.
 */
#ifndef EFARM_CONFIG_H
#define EFARM_CONFIG_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* X(NAME, member, kind, default, why); kind is STR, BOOL or U64. */
#define EFARM_CONFIG_LIST(X)                                                                   \
    X(DEVICE, device, STR, "auto",                                                             \
      "verbs libraries: efa (system rdma-core), sim (efasim), auto (efa if sysfs has one)")    \
    X(EFASIM_PATH, efasim_path, STR, "",                                                       \
      "directory of efasim's libibverbs.so.1 and libefa.so.1 (empty: the installed one)")      \
    X(IFACE, iface, STR, "",                                                                   \
      "comma-separated EFA devices this rank may use, like FI_EFA_IFACE (empty: all)")         \
    X(NIC_VERBOSE, nic_verbose, BOOL, "0", "print rank -> NIC -> reason when a NIC is chosen") \
    X(MR_CACHE, mr_cache, BOOL, "1",                                                           \
      "cache registrations of long/runt-read send buffers; 0 registers on every use")          \
    X(MR_CACHE_MAX_ENTRIES, mr_cache_max_entries, U64, "0",                                    \
      "registrations the cache may hold (0: from the device's MR limit)")                      \
    X(MR_CACHE_MAX_BYTES, mr_cache_max_bytes, U64, "0",                                        \
      "bytes the cache may keep registered (0: from the device's limits)")                     \
    X(TEST_SEED, test_seed, U64, "0", "seed of the unit-test runner's random streams (tests only)")

struct efarm_config {
#define EFARM_CONFIG_MEMBER_STR(name, member)             const char *member;
#define EFARM_CONFIG_MEMBER_BOOL(name, member)            bool member;
#define EFARM_CONFIG_MEMBER_U64(name, member)             uint64_t member;
#define EFARM_CONFIG_MEMBER(name, member, kind, def, why) EFARM_CONFIG_MEMBER_##kind(name, member)
    EFARM_CONFIG_LIST(EFARM_CONFIG_MEMBER)
#undef EFARM_CONFIG_MEMBER
};

/* The configuration, read on first use; never NULL, never changes afterwards. */
const struct efarm_config *efarm_config(void);

/* Print every tunable: name, default, value in force, why. */
void efarm_config_print(FILE *out);

#endif /* EFARM_CONFIG_H */
