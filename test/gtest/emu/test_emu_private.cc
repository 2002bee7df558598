/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * libibverbs' private node (IBVERBS_PRIVATE_34), the providers' interface,
 * on the emulation: a provider library that registers itself when loaded
 * is accepted and matches no device, the GID type query rdma-core's tools
 * call works, and the kernel commands a bound provider would issue fail
 * with EOPNOTSUPP and one log line.  Each entry point is taken by its
 * versioned name, as a program linked against rdma-core 44 binds it.
 */
#include "emu_fixture.h"

#include <dlfcn.h>
#include <errno.h>
#include <string.h>

#define EMU_PRIVATE_NODE "IBVERBS_PRIVATE_34"

namespace {

void *private_sym(const char *name)
{
    return dlvsym(RTLD_DEFAULT, name, EMU_PRIVATE_NODE);
}

} // namespace

/* rdma-core's tools call it for every GID they print */
TEST_F(emu_test, query_gid_type)
{
    typedef int (*fn_t)(struct ibv_context *, uint8_t, unsigned, int *);
    fn_t query = (fn_t)private_sym("ibv_query_gid_type");
    int type   = 7;

    ASSERT_NE(nullptr, (void *)query) << dlerror();
    EXPECT_EQ(0, query(m_ctx, 1, 0, &type));
    EXPECT_EQ(0, type); /* IBV_GID_TYPE_SYSFS_IB_ROCE_V1: an IB port */
    errno = 0;
    EXPECT_EQ(-1, query(m_ctx, 1, 1, &type)); /* one GID in the table */
    EXPECT_NE(0, errno);
    errno = 0;
    EXPECT_EQ(-1, query(m_ctx, 2, 0, &type)); /* no port 2 */
    EXPECT_NE(0, errno);
}

/* A provider registering from its constructor (libefa, linked by
 * perftest, does so when it is loaded) is accepted and binds no device:
 * the list is the emulation's, and a device opens as before. */
TEST_F(emu_test, provider_registers_and_matches_nothing)
{
    struct ibv_device **list;
    struct ibv_context *ctx;
    void *efa;
    int num = 0;

    efa = dlopen("libefa.so.1", RTLD_NOW | RTLD_LOCAL);
    if (efa == nullptr) {
        GTEST_SKIP() << "no libefa.so.1 here: " << dlerror();
    }
    list = ibv_get_device_list(&num);
    ASSERT_NE(nullptr, list);
    EXPECT_EQ(EMU_TEST_DEVICES, num);
    for (int i = 0; i < num; ++i) {
        EXPECT_EQ(0, strncmp(ibv_get_device_name(list[i]), "mlx5_", 5));
    }
    ctx = (num > 0) ? ibv_open_device(list[0]) : nullptr;
    EXPECT_NE(nullptr, ctx);
    if (ctx != nullptr) {
        EXPECT_EQ(0, ibv_close_device(ctx));
    }
    ibv_free_device_list(list);
    dlclose(efa);
}

/* The registration itself, with a provider description of our own: no
 * error line, whatever its name */
TEST_F(emu_test, register_driver_silent)
{
    struct {
        const char *name;
        char rest[256];
    } ops = {"dcx-test", {0}};
    typedef void (*fn_t)(const void *);
    fn_t reg = (fn_t)private_sym("verbs_register_driver_34");
    log_capture log;

    ASSERT_NE(nullptr, (void *)reg) << dlerror();
    reg(&ops);
    EXPECT_EQ(0u, log.count());
}

/* Kernel commands: refused, one line each */
TEST_F(emu_test, kernel_commands_refused_bad_flow)
{
    typedef int (*fn_t)(void);

    for (const char *name : {"ibv_cmd_alloc_pd", "ibv_cmd_create_qp_ex2",
                             "ibv_cmd_reg_mr", "execute_ioctl"}) {
        fn_t cmd = (fn_t)private_sym(name);
        log_capture log;

        ASSERT_NE(nullptr, (void *)cmd) << name << ": " << dlerror();
        errno = 0;
        EXPECT_EQ(EOPNOTSUPP, cmd()) << name;
        EXPECT_EQ(EOPNOTSUPP, errno) << name;
        EXPECT_EQ(1u, log.count()) << name;
    }
}
