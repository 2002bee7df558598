/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Discovery through the real rdma-core on the machine running the tests.
 * Without RDMA in the kernel (this project's CI), listing must find no
 * mlx5 device, succeed, and say so at debug level only.  On a machine with
 * ConnectX devices the listing test checks the entries instead.
 */
#include <gtest/gtest.h>

extern "C" {
#include "dcx_dev.h"
}

#include <errno.h>
#include <string.h>

#include <infiniband/verbs.h>

#include <string>
#include <vector>

namespace {

struct log_line {
    dcx_log_level_t level;
    std::string msg;
};

std::vector<log_line> g_log;

void capture(dcx_log_level_t level, const char *file, int line, const char *msg)
{
    g_log.push_back({level, msg});
}

class mlx5_list : public ::testing::Test {
protected:
    void SetUp() override
    {
        g_log.clear();
        dcx_log_set_handler(capture, DCX_LOG_TRACE);
    }

    void TearDown() override { dcx_log_set_handler(NULL, DCX_LOG_WARN); }

    static unsigned count_above(dcx_log_level_t level)
    {
        unsigned n = 0;

        for (const log_line &l : g_log) {
            n += (l.level < level);
        }
        return n;
    }

    /* Whether this machine has an RDMA stack at all. */
    static bool have_rdma()
    {
        int num           = 0;
        ibv_device **list = ibv_get_device_list(&num);

        if (list == NULL) {
            return false;
        }
        ibv_free_device_list(list);
        return num > 0;
    }
};

TEST_F(mlx5_list, no_devices_is_not_an_error_and_logs_only_debug)
{
    dcx_dev_config_t *config;
    dcx_dev_info_t *list = NULL;
    unsigned count       = 1234;

    if (have_rdma()) {
        GTEST_SKIP() << "this machine has RDMA devices";
    }
    ASSERT_EQ(0, dcx_dev_config_create(NULL, &config));
    ASSERT_EQ(0, dcx_dev_config_set_num(config, "MLX5", 1));
    ASSERT_EQ(0, dcx_dev_config_set_num(config, "SOFT_DEVICES", 0));

    ASSERT_EQ(0, dcx_dev_list(config, &list, &count));
    EXPECT_EQ(0u, count);
    dcx_dev_list_free(list);
    EXPECT_EQ(0u, count_above(DCX_LOG_DEBUG));
    for (const log_line &l : g_log) {
        if (l.level < DCX_LOG_DEBUG) {
            ADD_FAILURE() << "level " << l.level << ": " << l.msg;
        }
    }

    /* a second listing succeeds the same way, and does not repeat it */
    g_log.clear();
    ASSERT_EQ(0, dcx_dev_list(config, &list, &count));
    EXPECT_EQ(0u, count);
    dcx_dev_list_free(list);
    EXPECT_EQ(0u, g_log.size());
    dcx_dev_config_destroy(config);
}

TEST_F(mlx5_list, soft_devices_still_listed_when_mlx5_finds_none)
{
    dcx_dev_config_t *config;
    dcx_dev_info_t *list = NULL;
    unsigned count       = 0;

    if (have_rdma()) {
        GTEST_SKIP() << "this machine has RDMA devices";
    }
    ASSERT_EQ(0, dcx_dev_config_create(NULL, &config));
    ASSERT_EQ(0, dcx_dev_config_set_num(config, "MLX5", 1));
    ASSERT_EQ(0, dcx_dev_config_set_num(config, "SOFT_DEVICES", 2));

    ASSERT_EQ(0, dcx_dev_list(config, &list, &count));
    dcx_dev_config_destroy(config);
    ASSERT_EQ(2u, count);
    EXPECT_STREQ("soft", list[0].backend->name);
    EXPECT_STREQ("soft", list[1].backend->name);
    dcx_dev_list_free(list);
    EXPECT_EQ(0u, count_above(DCX_LOG_DEBUG));
}

TEST_F(mlx5_list, open_of_absent_device_fails_with_one_error_line)
{
    dcx_dev_info_t info;
    dcx_dev_t *dev = NULL;
    int ret;

    if (have_rdma()) {
        GTEST_SKIP() << "this machine has RDMA devices";
    }
    memset(&info, 0, sizeof(info));
    strcpy(info.name, "mlx5_0");
    info.backend = dcx_backend_find("mlx5");
    ASSERT_TRUE(info.backend != nullptr);

    ret = dcx_dev_open(&info, &dev);
    EXPECT_NE(0, ret);
    EXPECT_GT(ret, 0);
    EXPECT_EQ(nullptr, dev);
    EXPECT_EQ(1u, count_above(DCX_LOG_INFO));
}

TEST_F(mlx5_list, listed_devices_are_mlx5)
{
    dcx_dev_config_t *config;
    dcx_dev_info_t *list = NULL;
    unsigned count       = 0;

    if (!have_rdma()) {
        GTEST_SKIP() << "no RDMA devices on this machine";
    }
    ASSERT_EQ(0, dcx_dev_config_create(NULL, &config));
    ASSERT_EQ(0, dcx_dev_list(config, &list, &count));
    dcx_dev_config_destroy(config);
    for (unsigned i = 0; i < count; ++i) {
        EXPECT_STREQ("mlx5", list[i].backend->name);
        EXPECT_NE(0u, strlen(list[i].name));
    }
    dcx_dev_list_free(list);
    EXPECT_EQ(0u, count_above(DCX_LOG_INFO));
}

} // namespace
