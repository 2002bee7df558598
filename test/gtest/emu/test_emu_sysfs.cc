/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The emulated devices' sysfs view: dev_path and ibdev_path name
 * directories that exist, hold the attributes rdma-core's clients and
 * UCX's ib module read (the PCI function two components above the
 * resolved ibdev_path, as UCX finds it; the port's state, link layer,
 * GID type and P_Key), and agree with what the verbs queries answer.
 */
#include "emu_fixture.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <string>

/* exported at IBVERBS_1.0, declared in rdma-core's driver.h only */
extern "C" int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
                                   size_t size);

namespace {

std::string read_attr(const std::string &path)
{
    std::ifstream f(path);
    std::string line;

    std::getline(f, line);
    return f ? line : "<" + path + " unreadable>";
}

/* The directory two components above the resolved path */
std::string pci_function(const char *ibdev_path)
{
    char real[PATH_MAX];
    std::string p;

    if (realpath(ibdev_path, real) == nullptr) {
        return "";
    }
    p = real;
    p = p.substr(0, p.rfind('/'));
    return p.substr(0, p.rfind('/'));
}

} // namespace

TEST_F(emu_test, sysfs_paths_lead_to_a_connectx)
{
    for (int i = 0; i < m_num; ++i) {
        struct ibv_device *dev = m_list[i];
        std::string ib(dev->ibdev_path), uv(dev->dev_path);
        std::string fn = pci_function(dev->ibdev_path);
        struct stat st;

        SCOPED_TRACE(ibv_get_device_name(dev));
        ASSERT_EQ(0, stat(dev->ibdev_path, &st)) << dev->ibdev_path;
        ASSERT_EQ(0, stat(dev->dev_path, &st)) << dev->dev_path;
        ASSERT_FALSE(fn.empty());
        /* the function as UCX's ib module reads it */
        EXPECT_EQ("0x15b3", read_attr(fn + "/vendor"));
        EXPECT_EQ("0x101b", read_attr(fn + "/device"));
        EXPECT_EQ("16", read_attr(fn + "/current_link_width"));
        EXPECT_EQ("16.0 GT/s PCIe", read_attr(fn + "/current_link_speed"));
        EXPECT_FALSE(read_attr(fn + "/numa_node").empty());
        EXPECT_EQ(read_attr(fn + "/vendor"), read_attr(ib + "/device/vendor"));
        /* the uverbs node names the device */
        EXPECT_EQ(ibv_get_device_name(dev), read_attr(uv + "/ibdev"));
        EXPECT_EQ(std::to_string(231) + ":" + std::to_string(192 + i),
                  read_attr(uv + "/dev"));
        EXPECT_EQ("1: CA", read_attr(ib + "/node_type"));
        EXPECT_EQ("MT4123", read_attr(ib + "/hca_type"));
    }
}

TEST_F(emu_test, sysfs_agrees_with_queries)
{
    std::string ib(m_list[0]->ibdev_path);
    struct ibv_device_attr dattr;
    struct ibv_port_attr pattr;
    union ibv_gid gid;
    char buf[64];
    char guid[24];
    uint64_t g;

    ASSERT_EQ(0, ibv_query_device(m_ctx, &dattr));
    ASSERT_EQ(0, ibv_query_port(m_ctx, 1, &pattr));
    ASSERT_EQ(0, ibv_query_gid(m_ctx, 1, 0, &gid));
    EXPECT_EQ(std::string(dattr.fw_ver), read_attr(ib + "/fw_ver"));
    g = be64toh(dattr.node_guid);
    snprintf(guid, sizeof(guid), "%04x:%04x:%04x:%04x",
             (unsigned)(g >> 48) & 0xffff, (unsigned)(g >> 32) & 0xffff,
             (unsigned)(g >> 16) & 0xffff, (unsigned)g & 0xffff);
    EXPECT_EQ(guid, read_attr(ib + "/node_guid"));
    EXPECT_EQ(IBV_PORT_ACTIVE, pattr.state);
    EXPECT_EQ("4: ACTIVE", read_attr(ib + "/ports/1/state"));
    EXPECT_EQ(IBV_LINK_LAYER_INFINIBAND, pattr.link_layer);
    EXPECT_EQ("InfiniBand", read_attr(ib + "/ports/1/link_layer"));
    /* the GID is the process's port's own (made from its LID) */
    EXPECT_NE(0u, gid.global.interface_id);
    EXPECT_EQ("IB/RoCE v1", read_attr(ib + "/ports/1/gid_attrs/types/0"));
    EXPECT_EQ("0xffff", read_attr(ib + "/ports/1/pkeys/0"));
    /* rdma-core's reader goes through the same files */
    ASSERT_GT(ibv_read_sysfs_file(ib.c_str(), "node_type", buf, sizeof(buf)),
              0);
    EXPECT_STREQ("1: CA", buf);
}

/* A file the view does not have reads as absent, with errno */
TEST_F(emu_test, sysfs_absent_attribute_bad_flow)
{
    char buf[16];

    errno = 0;
    EXPECT_EQ(-1, ibv_read_sysfs_file(m_list[0]->ibdev_path, "no_such_attr",
                                      buf, sizeof(buf)));
    EXPECT_EQ(ENOENT, errno);
}
