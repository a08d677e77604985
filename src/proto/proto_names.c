/*
 * Subprotocol names, both ways: for logs, counters and tools, and for the
 * tunables and hints that force one (EFARM_PROTO, EFARM_RMA_PROTO,
 * efarm_protocol). Generated from the lists in efarm_proto_names.h; the
 * bottom of the engine, called by selection, profiles, logs and the netmod.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "efarm_proto.h"
#include "efarm_rma.h"

const char *efarm_proto_name(enum efarm_proto_kind proto)
{
    static const char *const names[] = {
#define EFARM_PROTO_NAME_(id, name, rank) #name,
        EFARM_PROTO_LIST(EFARM_PROTO_NAME_)
#undef EFARM_PROTO_NAME_
    };

    return (unsigned)proto < EFARM_PROTO_COUNT ? names[proto] : "unknown";
}

int efarm_proto_parse(const char *name)
{
    if (name == NULL || !strcmp(name, "auto") || !*name)
        return -1;
    for (int k = 0; k < EFARM_PROTO_COUNT; k++)
        if (!strcmp(name, efarm_proto_name((enum efarm_proto_kind)k)))
            return k;
    return -EINVAL;
}

/* EFARM_RMA_PROTO_LIST's FORCE column: whether EFARM_RMA_PROTO may name it. */
#define RMA_FORCE_F true
#define RMA_FORCE_N false
static const struct {
    const char *name;
    bool forceable;
} g_rma_names[EFARM_RMA_PROTO_COUNT] = {
#define RMA_NAME_(id, name_, force, doc) [EFARM_RMA_##id] = {#name_, RMA_FORCE_##force},
    EFARM_RMA_PROTO_LIST(RMA_NAME_)
#undef RMA_NAME_
};

const char *efarm_rma_proto_name(enum efarm_rma_proto proto)
{
    return (unsigned)proto < EFARM_RMA_PROTO_COUNT ? g_rma_names[proto].name : "unknown";
}

int efarm_rma_proto_parse(const char *list, uint32_t *mask_p)
{
    uint32_t mask = 0;
    const char *s = list ? list : "";

    while (*s) {
        size_t n = strcspn(s, ",");
        unsigned k = 0;

        while (k < EFARM_RMA_PROTO_COUNT &&
               (!g_rma_names[k].forceable || strlen(g_rma_names[k].name) != n ||
                strncmp(s, g_rma_names[k].name, n)))
            k++;
        if (k < EFARM_RMA_PROTO_COUNT)
            mask |= 1u << k;
        else if (n != 4 || strncmp(s, "auto", 4))
            return -EINVAL;
        s += n + (s[n] == ',');
    }
    *mask_p = mask;
    return 0;
}
