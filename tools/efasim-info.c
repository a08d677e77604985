/*
 * efasim-info: print every efasim knob (EFASIM_* environment variable) with
 * its default, the value in force and what it is for, then the devices the
 * emulator presents. Links efasim's libibverbs directly, so it describes the
 * emulator even when the system's rdma-core is first on the loader path.
 */
#include <arpa/inet.h>
#include <infiniband/verbs.h>
#include <stdio.h>

#include "../src/efasim/efasim.h"

int main(void)
{
    struct ibv_device **list;
    int n = 0;

    efasim_config_print(stdout);
    list = ibv_get_device_list(&n);
    printf("\n%d emulated device(s):\n", n);
    for (int i = 0; list && i < n; i++) {
        struct ibv_context *ctx = ibv_open_device(list[i]);
        union ibv_gid gid;
        char addr[INET6_ADDRSTRLEN] = "?";

        if (ctx && !ibv_query_gid(ctx, 1, 0, &gid))
            inet_ntop(AF_INET6, gid.raw, addr, sizeof(addr));
        printf("  %s  gid %s\n", ibv_get_device_name(list[i]), addr);
        if (ctx)
            ibv_close_device(ctx);
    }
    ibv_free_device_list(list);
    return 0;
}
