/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulation as a drop-in for rdma-core's libraries: the same entry
 * points at the same version nodes, a program built against the system's
 * libraries runs on it, and what is not modelled fails cleanly.
 */
#include "emu_fixture.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <fstream>
#include <set>
#include <string>

namespace {

const char *k_sys_dir = "/usr/lib/x86_64-linux-gnu/";

/* "VERSION NAME" of every function lib defines, as objdump lists them;
 * compat versions keep objdump's parentheses.  rdma-core's private node
 * (its providers' interface) is compared too; the emulation's own
 * (DCX_EMU_PRIVATE_1) is left out. */
std::set<std::string> exported_functions(const std::string &path)
{
    std::set<std::string> out;
    std::string cmd = "objdump -T '" + path + "' 2>/dev/null";
    char line[1024];
    FILE *p = popen(cmd.c_str(), "r");

    if (p == nullptr) {
        return out;
    }
    while (fgets(line, sizeof(line), p) != nullptr) {
        char ver[128], name[256];
        const char *df = strstr(line, " DF ");

        if ((df == nullptr) || (strstr(line, "*UND*") != nullptr) ||
            (sscanf(df + 4, "%*s %*s %127s %255s", ver, name) != 2)) {
            continue;
        }
        if (strstr(ver, "IBVERBS_") || strstr(ver, "MLX5_")) {
            if (strstr(ver, "DCX_EMU_PRIVATE") == nullptr) {
                out.insert(std::string(ver) + " " + name);
            }
        }
    }
    pclose(p);
    return out;
}

std::string mapped_path(const char *lib)
{
    std::ifstream maps("/proc/self/maps");
    std::string line;
    size_t pos;

    while (std::getline(maps, line)) {
        if ((line.find(lib) != std::string::npos) &&
            ((pos = line.find('/')) != std::string::npos)) {
            return line.substr(pos);
        }
    }
    return "";
}

std::string run(const std::string &cmd)
{
    std::string out;
    char buf[512];
    FILE *p = popen(cmd.c_str(), "r");

    if (p == nullptr) {
        return out;
    }
    while (fgets(buf, sizeof(buf), p) != nullptr) {
        out += buf;
    }
    pclose(p);
    return out;
}

} // namespace

TEST(emu_abi, same_functions_same_versions)
{
    for (const char *lib : {"libibverbs.so.1", "libmlx5.so.1"}) {
        std::string real           = std::string(k_sys_dir) + lib;
        std::set<std::string> want = exported_functions(real);
        std::set<std::string> have = exported_functions(mapped_path(lib));

        if (want.empty()) {
            GTEST_SKIP() << "no " << real << " (or no objdump) to compare with";
        }
        for (const std::string &s : want) {
            EXPECT_TRUE(have.count(s)) << lib << ": missing " << s;
        }
        for (const std::string &s : have) {
            EXPECT_TRUE(want.count(s)) << lib << ": extra " << s;
        }
    }
}

TEST(emu_abi, program_built_for_rdma_core_runs_on_it)
{
    std::string env = std::string("env -u LD_PRELOAD DCX_EMU_FABRIC=") +
                      emu_test_fabric() + " DCX_EMU_DEVICES=2 ";
    std::string with, without;

    with = run(env + "LD_LIBRARY_PATH=" EMU_LIB_DIR " " EMU_LIST_DEVICES);
    EXPECT_NE(std::string::npos, with.find("2 devices")) << with;
    EXPECT_NE(std::string::npos, with.find("mlx5_0 ")) << with;
    EXPECT_NE(std::string::npos, with.find("mlx5_1 ")) << with;
    EXPECT_NE(std::string::npos, with.find(" active")) << with;

    /* the same program on the system's libraries: not the emulation */
    without = run(env + "-u LD_LIBRARY_PATH " EMU_LIST_DEVICES);
    EXPECT_EQ(std::string::npos, without.find("mlx5_0 1 ")) << without;
    EXPECT_NE(with, without);
}

TEST_F(emu_test, not_modelled_bad_flow)
{
    struct mlx5dv_obj obj;
    typedef struct ibv_device **(*list_fn_t)(int *);
    void *handle;
    list_fn_t old_list;

    memset(&obj, 0, sizeof(obj));
    {
        /* an object type the emulation does not give out */
        log_capture log;
        EXPECT_EQ(EOPNOTSUPP, mlx5dv_init_obj(&obj, MLX5DV_OBJ_RWQ));
        EXPECT_EQ(1u, log.count());
    }
    {
        /* no object where one is asked for */
        log_capture log;
        EXPECT_EQ(EINVAL, mlx5dv_init_obj(&obj, MLX5DV_OBJ_QP));
        EXPECT_EQ(1u, log.count());
    }
    {
        log_capture log;
        errno = 0;
        EXPECT_EQ(nullptr, ibv_import_pd(m_ctx, 1));
        EXPECT_EQ(EOPNOTSUPP, errno);
        EXPECT_EQ(1u, log.count());
    }
    {
        /* an inline verb of rdma-core's headers, through the context's op
         * (test_emu_ctx_ops.cc has them all) */
        struct ibv_xrcd_init_attr xrcd;
        log_capture log;

        memset(&xrcd, 0, sizeof(xrcd));
        errno = 0;
        EXPECT_EQ(nullptr, ibv_open_xrcd(m_ctx, &xrcd));
        EXPECT_EQ(EOPNOTSUPP, errno);
        EXPECT_EQ(1u, log.count());
    }
    /* the IBVERBS_1.0 compat version of a symbol exists and refuses */
    handle = dlopen(mapped_path("libibverbs.so.1").c_str(),
                    RTLD_NOW | RTLD_NOLOAD);
    ASSERT_NE(nullptr, handle) << dlerror();
    old_list = (list_fn_t)dlvsym(handle, "ibv_get_device_list", "IBVERBS_1.0");
    ASSERT_NE(nullptr, (void *)old_list);
    EXPECT_NE((void *)old_list, (void *)&ibv_get_device_list);
    {
        log_capture log;
        int num = 7;

        errno = 0;
        EXPECT_EQ(nullptr, old_list(&num));
        EXPECT_EQ(EOPNOTSUPP, errno);
        EXPECT_EQ(1u, log.count());
    }
    dlclose(handle);
}
