/*
 * efasim's libraries as binaries built against Debian's rdma-core bind to
 * them: librdmacm and libfabric load with every symbol resolved at once
 * (RTLD_NOW) when efasim's libibverbs.so.1 and libefa.so.1 come first on the
 * loader path, and the kernel-ABI helpers librdmacm imports exist at the
 * versions it asks for and convert as rdma-core's do.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>

#include "efasim_common.h"

/*
 * dlopen with immediate binding: an undefined symbol or a missing version
 * fails here, as it kills fi_info at start-up. A library that is not
 * installed at all is reported and not counted as a failure.
 */
static void expect_binds(const char *soname)
{
    void *h;

    dlerror();
    h = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *why = dlerror();

        if (why && strstr(why, "cannot open shared object file")) {
            fprintf(stderr, "  note: %s is not installed; not checked\n", soname);
            return;
        }
        efarm_test_fail(__FILE__, __LINE__, "dlopen(%s) on efasim: %s", soname,
                        why ? why : "(no reason)");
    }
    /* Left loaded: libfabric's constructors allocate what only its unloading would leak. */
    (void)h;
}

/* The loader really uses efasim's libibverbs (not the system's) in this process. */
static void expect_efasim_loaded(void)
{
    struct ibv_device **list;
    int n = 0;

    list = ibv_get_device_list(&n);
    EXPECT_TRUE(list != NULL);
    EXPECT_TRUE(n >= 1);
    EXPECT_TRUE(!strncmp(ibv_get_device_name(list[0]), "efasim_", 7));
    ibv_free_device_list(list);
}

EFARM_TEST(efasim_abi_librdmacm_binds)
{
    expect_efasim_loaded();
    expect_binds("librdmacm.so.1");
}

EFARM_TEST(efasim_abi_libfabric_binds)
{
    expect_efasim_loaded();
    expect_binds("libfabric.so.1");
}

/* A versioned symbol of the libibverbs.so.1 loaded in this process, or fail. */
static void *versioned(const char *name, const char *version)
{
    void *h = dlopen("libibverbs.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *sym;

    if (!h)
        efarm_test_fail(__FILE__, __LINE__, "libibverbs.so.1 not loaded: %s", dlerror());
    sym = dlvsym(h, name, version);
    dlclose(h);
    if (!sym)
        efarm_test_fail(__FILE__, __LINE__, "%s@%s is not exported", name, version);
    return sym;
}

EFARM_TEST(efasim_abi_kern_helpers)
{
    void (*ah_from)(struct ibv_ah_attr *, struct ib_uverbs_ah_attr *) =
        (void (*)(struct ibv_ah_attr *, struct ib_uverbs_ah_attr *))versioned(
            "ibv_copy_ah_attr_from_kern", "IBVERBS_1.1");
    void (*qp_from)(struct ibv_qp_attr *, struct ib_uverbs_qp_attr *) =
        (void (*)(struct ibv_qp_attr *, struct ib_uverbs_qp_attr *))versioned(
            "ibv_copy_qp_attr_from_kern", "IBVERBS_1.0");
    void (*path_from)(struct ibv_sa_path_rec *, struct ib_user_path_rec *) =
        (void (*)(struct ibv_sa_path_rec *, struct ib_user_path_rec *))versioned(
            "ibv_copy_path_rec_from_kern", "IBVERBS_1.0");
    void (*path_to)(struct ib_user_path_rec *, struct ibv_sa_path_rec *) =
        (void (*)(struct ib_user_path_rec *, struct ibv_sa_path_rec *))versioned(
            "ibv_copy_path_rec_to_kern", "IBVERBS_1.0");
    struct ib_uverbs_qp_attr kqp;
    struct ib_user_path_rec kpath, back;
    struct ibv_sa_path_rec path;
    struct ibv_qp_attr qp;
    struct ibv_ah_attr ah;

    /* Also at the versions librdmacm imports them from the real library. */
    versioned("ibv_create_comp_channel", "IBVERBS_1.0");
    versioned("ibv_destroy_comp_channel", "IBVERBS_1.0");

    memset(&kqp, 0, sizeof(kqp));
    kqp.qkey = 0x11223344;
    kqp.dest_qp_num = 77;
    kqp.max_send_wr = 4096;
    kqp.max_recv_wr = 8192;
    kqp.max_inline_data = 32;
    kqp.rnr_retry = 7;
    kqp.port_num = 1;
    kqp.ah_attr.is_global = 1;
    kqp.ah_attr.grh.dgid[15] = 9;
    kqp.ah_attr.grh.hop_limit = 64;
    kqp.alt_ah_attr.dlid = 0x1234;
    memset(&qp, 0xa5, sizeof(qp));
    qp_from(&qp, &kqp);
    EXPECT_EQ(qp.qkey, 0x11223344);
    EXPECT_EQ(qp.dest_qp_num, 77);
    EXPECT_EQ(qp.cap.max_send_wr, 4096);
    EXPECT_EQ(qp.cap.max_recv_wr, 8192);
    EXPECT_EQ(qp.cap.max_inline_data, 32);
    EXPECT_EQ(qp.rnr_retry, 7);
    EXPECT_EQ(qp.port_num, 1);
    EXPECT_EQ(qp.ah_attr.is_global, 1);
    EXPECT_EQ(qp.ah_attr.grh.dgid.raw[15], 9);
    EXPECT_EQ(qp.ah_attr.grh.hop_limit, 64);
    EXPECT_EQ(qp.alt_ah_attr.dlid, 0x1234);

    memset(&ah, 0, sizeof(ah));
    ah_from(&ah, &kqp.ah_attr);
    EXPECT_EQ(ah.grh.dgid.raw[15], 9);

    memset(&kpath, 0, sizeof(kpath));
    kpath.sgid[0] = 0xfe;
    kpath.dgid[15] = 2;
    kpath.pkey = htobe16(0xffff);
    kpath.mtu = 5;
    kpath.packet_life_time = 18;
    memset(&path, 0, sizeof(path));
    path_from(&path, &kpath);
    EXPECT_EQ(path.sgid.raw[0], 0xfe);
    EXPECT_EQ(path.dgid.raw[15], 2);
    EXPECT_EQ(path.pkey, htobe16(0xffff));
    EXPECT_EQ(path.mtu, 5);
    EXPECT_EQ(path.packet_life_time, 18);
    memset(&back, 0x5a, sizeof(back));
    path_to(&back, &path);
    EXPECT_MEM_EQ(back.dgid, kpath.dgid, sizeof(back.dgid));
    EXPECT_EQ(back.pkey, kpath.pkey);
    EXPECT_EQ(back.packet_life_time, 18);
}
