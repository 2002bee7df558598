/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The dcx component and memory domain through the public UCT API: device
 * listing from UCX_DCX_* configuration, MD open/query, memory registration
 * with and without the registration cache, rkey pack/unpack/release, and
 * the bad flows (malformed and foreign rkeys, bad registrations, bad
 * configuration values), each of which must fail with a status and exactly
 * one error line.
 *
 * The test binary links libuct_dcx.so, so the module's constructor registers
 * the component exactly as it does when the module is preloaded.
 */
#include <gtest/gtest.h>

#include "log_counter.h"

#include <uct/api/uct.h>
#include <uct/api/v2/uct_v2.h>
#include <ucs/debug/log_def.h>

#include "dcx_ucx_features.h" /* what differs between UCX versions */

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#include <sys/mman.h>
#include <unistd.h>

/* Packing an rkey that can be invalidated: one flag in older UCX, one for
 * RMA and one for atomics in newer; newer uct_md_mkey_pack_v2() also takes
 * the address range to pack. */
#if DCX_UCX_HAVE_MKEY_PACK_FLAG_INVALIDATE_RMA
#define DCX_TEST_MKEY_PACK_FLAGS_INVALIDATE \
    (UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA | \
     UCT_MD_MKEY_PACK_FLAG_INVALIDATE_AMO)
#else
#define DCX_TEST_MKEY_PACK_FLAGS_INVALIDATE UCT_MD_MKEY_PACK_FLAG_INVALIDATE
#endif
#if DCX_UCX_HAVE_MKEY_PACK_V2_ADDRESS
#define DCX_TEST_MKEY_PACK_V2(_md, _memh, _addr, _len, _params, _buf) \
    uct_md_mkey_pack_v2(_md, _memh, _addr, _len, _params, _buf)
#else
#define DCX_TEST_MKEY_PACK_V2(_md, _memh, _addr, _len, _params, _buf) \
    uct_md_mkey_pack_v2(_md, _memh, _params, _buf)
#endif

namespace {

using dcx_test::log_counter;

class test_dcx_md : public testing::Test {
protected:
    void SetUp() override
    {
        char fabric[64];

        /* a fabric of our own, so that parallel runs never meet */
        snprintf(fabric, sizeof(fabric), "mdtest-%d", (int)getpid());
        setenv("UCX_DCX_SOFT_DEVICES", "1", 1);
        setenv("UCX_DCX_SOFT_FABRIC", fabric, 1);
        setenv("UCX_DCX_MLX5", "n", 1);
        unsetenv("UCX_DCX_RCACHE");

        m_component = find_component("dcx");
        ASSERT_NE(nullptr, m_component)
            << "the dcx component is not registered";

        log_counter::install();
        m_expected_errors = 0;
    }

    void TearDown() override
    {
        for (uct_md_h md : m_mds) {
            uct_md_close(md);
        }
        EXPECT_EQ((int)m_expected_errors, log_counter::errors())
            << "error lines:\n"
            << log_counter::joined();
        EXPECT_EQ(0, log_counter::warnings()) << "warning lines:\n"
                                              << log_counter::joined();
    }

    /* The next bad flow must log exactly one error line. */
    void expect_one_error() { ++m_expected_errors; }

    static uct_component_h find_component(const char *name)
    {
        uct_component_h *components, found = nullptr;
        unsigned i, count;

        if (uct_query_components(&components, &count) != UCS_OK) {
            return nullptr;
        }
        for (i = 0; i < count; ++i) {
            uct_component_attr_t attr;
            attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
            if ((uct_component_query(components[i], &attr) == UCS_OK) &&
                !strcmp(attr.name, name)) {
                found = components[i];
            }
        }
        uct_release_component_list(components);
        return found;
    }

    ucs_status_t md_resources(std::vector<std::string> &names)
    {
        uct_component_attr_t attr;
        ucs_status_t status;

        names.clear();
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        status          = uct_component_query(m_component, &attr);
        if (status != UCS_OK) {
            return status;
        }

        std::vector<uct_md_resource_desc_t> rsc(attr.md_resource_count + 1);
        attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources = rsc.data();
        status            = uct_component_query(m_component, &attr);
        if (status != UCS_OK) {
            return status;
        }

        for (unsigned i = 0; i < attr.md_resource_count; ++i) {
            names.push_back(rsc[i].md_name);
        }
        return UCS_OK;
    }

    /* Opens an MD; "settings" are NAME=VALUE pairs applied to its
     * configuration with uct_config_modify(). */
    ucs_status_t open_md(const char *name, uct_md_h *md_p,
                         const std::vector<std::pair<std::string, std::string>>
                             &settings = {})
    {
        uct_md_config_t *config;
        ucs_status_t status;

        status = uct_md_config_read(m_component, NULL, NULL, &config);
        if (status != UCS_OK) {
            return status;
        }

        for (const auto &s : settings) {
            status = uct_config_modify(config, s.first.c_str(),
                                       s.second.c_str());
            if (status == UCS_ERR_NO_ELEM) {
                /* UCX 1.18 and later match the name with the component's
                 * prefix, 1.13 without it */
                status = uct_config_modify(config, ("DCX_" + s.first).c_str(),
                                           s.second.c_str());
            }
            if (status != UCS_OK) {
                uct_config_release(config);
                return status;
            }
        }

        status = uct_md_open(m_component, name, config, md_p);
        uct_config_release(config);
        if (status == UCS_OK) {
            m_mds.push_back(*md_p);
        }
        return status;
    }

    uct_md_h open_soft0(const char *rcache = "try")
    {
        uct_md_h md = nullptr;
        EXPECT_EQ(UCS_OK, open_md("soft0", &md, {{"RCACHE", rcache}}));
        return md;
    }

    /* An MD with the registration cache on; nullptr (test skipped) where
     * UCX's memory events are off (UCX_MEM_EVENTS=no, valgrind): then the
     * cache cannot exist, and asking for it is one clear error. */
    uct_md_h open_soft0_rcache()
    {
        uct_md_h md = nullptr;
        ucs_status_t status;

        status = open_md("soft0", &md, {{"RCACHE", "yes"}});
        if (status == UCS_ERR_UNSUPPORTED) {
            expect_one_error();
            return nullptr;
        }
        EXPECT_EQ(UCS_OK, status);
        return md;
    }

    void close_md(uct_md_h md)
    {
        for (auto it = m_mds.begin(); it != m_mds.end(); ++it) {
            if (*it == md) {
                m_mds.erase(it);
                break;
            }
        }
        uct_md_close(md);
    }

    static size_t packed_size(uct_md_h md)
    {
        uct_md_attr_t attr;
        EXPECT_EQ(UCS_OK, uct_md_query(md, &attr));
        return attr.rkey_packed_size;
    }

    static void pack(uct_md_h md, uct_mem_h memh, std::vector<char> &buf)
    {
        buf.assign(packed_size(md), 0);
        ASSERT_EQ(UCS_OK, uct_md_mkey_pack(md, memh, buf.data()));
    }

    uct_component_h m_component = nullptr;
    std::vector<uct_md_h> m_mds;
    unsigned m_expected_errors = 0;
};


/* ------------------------------------------------------------------------
 * Device listing
 * ------------------------------------------------------------------------ */

TEST_F(test_dcx_md, lists_one_md_per_soft_device)
{
    std::vector<std::string> names;

    ASSERT_EQ(UCS_OK, md_resources(names));
    ASSERT_EQ(1u, names.size());
    EXPECT_EQ("soft0", names[0]);

    setenv("UCX_DCX_SOFT_DEVICES", "3", 1);
    ASSERT_EQ(UCS_OK, md_resources(names));
    ASSERT_EQ(3u, names.size());
    EXPECT_EQ("soft0", names[0]);
    EXPECT_EQ("soft1", names[1]);
    EXPECT_EQ("soft2", names[2]);
}

TEST_F(test_dcx_md, no_soft_devices_is_not_an_error)
{
    std::vector<std::string> names;

    setenv("UCX_DCX_SOFT_DEVICES", "0", 1);
    ASSERT_EQ(UCS_OK, md_resources(names));
    EXPECT_TRUE(names.empty());
}

TEST_F(test_dcx_md, bad_config_value_bad_flow)
{
    std::vector<std::string> names;

    /* rejected by UCX's parser */
    setenv("UCX_DCX_SOFT_DEVICES", "many", 1);
    expect_one_error();
    EXPECT_NE(UCS_OK, md_resources(names));

    /* rejected by dcx */
    setenv("UCX_DCX_SOFT_DEVICES", "1", 1);
    setenv("UCX_DCX_SOFT_FABRIC", "no spaces/slashes", 1);
    expect_one_error();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, md_resources(names));

    setenv("UCX_DCX_SOFT_FABRIC", "f", 1);
    setenv("UCX_DCX_SOFT_RETRY_COUNT", "9", 1);
    expect_one_error();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, md_resources(names));
    unsetenv("UCX_DCX_SOFT_RETRY_COUNT");

    setenv("UCX_DCX_SOFT_ACK_TIMEOUT", "inf", 1);
    expect_one_error();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, md_resources(names));
    unsetenv("UCX_DCX_SOFT_ACK_TIMEOUT");

    setenv("UCX_DCX_SOFT_MTU", "100", 1);
    expect_one_error();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, md_resources(names));
    unsetenv("UCX_DCX_SOFT_MTU");

    setenv("UCX_DCX_SOFT_DEVICES", "1000", 1);
    expect_one_error();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, md_resources(names));
    setenv("UCX_DCX_SOFT_DEVICES", "1", 1);

    /* values that wrapped a size or meant something else: refused with one
     * line naming the variable */
    const char *bad[][2] = {{"SOFT_MAX_INLINE", "4294967295"},
                            {"SOFT_MAX_INLINE", "65537"},
                            {"SOFT_MAX_INLINE", "-2"},
                            {"SOFT_MAX_INLINE", "1x"},
                            {"SOFT_MAX_INLINE", "inf"},
                            {"SOFT_MAX_QP_WR", "4294967295"},
                            {"SOFT_MAX_CQE", "0"},
                            {"SOFT_MAX_SRQ_WR", "-1"},
                            {"SOFT_MAX_SGE", "31"},
                            {"SOFT_MAX_RD_ATOMIC", "17"},
                            {"SOFT_MAX_DCI", "99999999999"},
                            {"SOFT_MTU", "2000000"},
                            {"SOFT_MAX_MSG_SIZE", "4g"},
                            {"SOFT_MAX_MSG_SIZE", "inf"},
                            {"SOFT_RNR_RETRY", "8"},
                            {"SOFT_DEVICES", "-1"},
                            {"SOFT_DEVICES", "1x"},
                            {"SOFT_MKEY_MAX_ENTRIES", "3"},
                            {"SOFT_MKEY_MAX_ENTRIES", "65536"}};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); ++i) {
        std::string var = std::string("UCX_DCX_") + bad[i][0];
        setenv(var.c_str(), bad[i][1], 1);
        int before = log_counter::errors();
        expect_one_error();
        EXPECT_NE(UCS_OK, md_resources(names)) << var << "=" << bad[i][1];
        EXPECT_EQ(before + 1, log_counter::errors())
            << var << "=" << bad[i][1] << "\n"
            << log_counter::joined();
        EXPECT_NE(std::string::npos,
                  log_counter::messages().back().find(bad[i][0]))
            << var << "=" << bad[i][1] << "\n"
            << log_counter::joined();
        unsetenv(var.c_str());
    }
    setenv("UCX_DCX_SOFT_DEVICES", "1", 1);
}

TEST_F(test_dcx_md, empty_fabric_name_is_the_default_fabric)
{
    std::vector<std::string> names;

    setenv("UCX_DCX_SOFT_FABRIC", "", 1);
    ASSERT_EQ(UCS_OK, md_resources(names));
    EXPECT_EQ(1u, names.size());
}

TEST_F(test_dcx_md, soft_limits_in_range)
{
    std::vector<std::string> names;
    uct_md_h md;

    setenv("UCX_DCX_SOFT_MAX_INLINE", "64", 1);
    setenv("UCX_DCX_SOFT_RETRY_COUNT", "3", 1);
    setenv("UCX_DCX_SOFT_ACK_TIMEOUT", "50ms", 1);
    EXPECT_EQ(UCS_OK, md_resources(names));
    EXPECT_EQ(UCS_OK, open_md("soft0", &md));
    unsetenv("UCX_DCX_SOFT_MAX_INLINE");
    unsetenv("UCX_DCX_SOFT_RETRY_COUNT");
    unsetenv("UCX_DCX_SOFT_ACK_TIMEOUT");
}

TEST_F(test_dcx_md, bad_config_modify_bad_flow)
{
    uct_md_h md;

    expect_one_error();
    EXPECT_NE(UCS_OK, open_md("soft0", &md, {{"SOFT_DEVICES", "-x"}}));
    expect_one_error();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              open_md("soft0", &md, {{"SOFT_RNR_RETRY", "0"}}));
}

/* ------------------------------------------------------------------------
 * MD open and query
 * ------------------------------------------------------------------------ */

TEST_F(test_dcx_md, open_query_close)
{
    uct_md_attr_t attr;
    uct_md_h md = open_soft0();

    ASSERT_NE(nullptr, md);
    ASSERT_EQ(UCS_OK, uct_md_query(md, &attr));
    EXPECT_STREQ("dcx", attr.component_name);
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_REG);
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_NEED_MEMH);
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_NEED_RKEY);
    /* the soft device's peers map SysV segments: the md allocates them
     * (dcx_md_alloc.c) */
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_ALLOC);
    EXPECT_TRUE(attr.cap.flags & UCT_MD_FLAG_FIXED);
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_HOST), attr.cap.alloc_mem_types);
    EXPECT_GT(attr.cap.max_alloc, 0u);
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_HOST), attr.cap.reg_mem_types);
    EXPECT_EQ(UCS_BIT(UCS_MEMORY_TYPE_HOST), attr.cap.access_mem_types);
    EXPECT_EQ(0u, attr.cap.detect_mem_types);
    EXPECT_GT(attr.cap.max_reg, 0u);
    EXPECT_GE(attr.rkey_packed_size, sizeof(uint32_t));
    EXPECT_GT(attr.reg_cost.c, 0.0);
}

TEST_F(test_dcx_md, two_devices_open_together)
{
    uct_md_h md0, md1;

    setenv("UCX_DCX_SOFT_DEVICES", "2", 1);
    ASSERT_EQ(UCS_OK, open_md("soft0", &md0, {{"SOFT_DEVICES", "2"}}));
    ASSERT_EQ(UCS_OK, open_md("soft1", &md1, {{"SOFT_DEVICES", "2"}}));
}

TEST_F(test_dcx_md, open_unknown_device_bad_flow)
{
    uct_md_h md;

    expect_one_error();
    EXPECT_EQ(UCS_ERR_NO_DEVICE, open_md("soft7", &md));
    expect_one_error();
    EXPECT_EQ(UCS_ERR_NO_DEVICE,
              open_md("soft0", &md, {{"SOFT_DEVICES", "0"}}));
}

TEST_F(test_dcx_md, unsupported_ops_answer)
{
    uct_md_mem_attr_t mem_attr;
    ucs_memory_type_t mem_type;
    char buf[64];
    uct_md_h md = open_soft0();

    ASSERT_NE(nullptr, md);
    mem_attr.field_mask = UCT_MD_MEM_ATTR_FIELD_MEM_TYPE;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_md_mem_query(md, buf, sizeof(buf), &mem_attr));
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              uct_md_detect_memory_type(md, buf, sizeof(buf), &mem_type));
}

/* ------------------------------------------------------------------------
 * Allocation (dcx_md_alloc.c)
 * ------------------------------------------------------------------------ */

/* uct_mem_alloc's "md" method takes the dcx md */
TEST_F(test_dcx_md, uct_mem_alloc_md_method)
{
    uct_md_h md               = open_soft0();
    uct_alloc_method_t method = UCT_ALLOC_METHOD_MD;
    uct_allocated_memory_t mem;
    uct_mem_alloc_params_t params;

    ASSERT_NE(nullptr, md);
    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_MEM_ALLOC_PARAM_FIELD_FLAGS |
                        UCT_MEM_ALLOC_PARAM_FIELD_MDS |
                        UCT_MEM_ALLOC_PARAM_FIELD_NAME;
    params.flags     = UCT_MD_MEM_ACCESS_ALL;
    params.mds.mds   = &md;
    params.mds.count = 1;
    params.name      = "test";
    ASSERT_EQ(UCS_OK, uct_mem_alloc(1 << 20, &method, 1, &params, &mem));
    EXPECT_EQ(UCT_ALLOC_METHOD_MD, mem.method);
    EXPECT_EQ(md, mem.md);
    EXPECT_NE(nullptr, (void *)mem.memh);
    EXPECT_GE(mem.length, 1u << 20);
    memset(mem.address, 1, mem.length);
    EXPECT_EQ(UCS_OK, uct_mem_free(&mem));
}

/* ------------------------------------------------------------------------
 * Registration and rkeys
 * ------------------------------------------------------------------------ */

class test_dcx_md_reg :
    public test_dcx_md,
    public testing::WithParamInterface<const char *> {};

TEST_P(test_dcx_md_reg, reg_pack_unpack_release)
{
    std::vector<char> buf(1 << 20, 'x'), packed;
    uct_rkey_bundle_t rkey;
    uct_mem_h memh;
    uct_md_h md = open_soft0(GetParam());

    ASSERT_NE(nullptr, md);
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(md, buf.data(), buf.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &memh));
    ASSERT_NE(nullptr, memh);

    pack(md, memh, packed);
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, packed.data(), &rkey));
    EXPECT_LE(rkey.rkey, (uint64_t)UINT32_MAX) << "rkey is a 32-bit key";

    /* unpacking the same buffer twice gives the same key */
    uct_rkey_bundle_t rkey2;
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, packed.data(), &rkey2));
    EXPECT_EQ(rkey.rkey, rkey2.rkey);

    EXPECT_EQ(UCS_OK, uct_rkey_release(m_component, &rkey2));
    EXPECT_EQ(UCS_OK, uct_rkey_release(m_component, &rkey));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md, memh));
}

TEST_P(test_dcx_md_reg, distinct_regions_distinct_keys)
{
    std::vector<char> a(8192), b(8192), pa, pb;
    uct_rkey_bundle_t ra, rb;
    uct_mem_h ma, mb;
    uct_md_h md = open_soft0(GetParam());

    ASSERT_NE(nullptr, md);
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(md, a.data(), a.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &ma));
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(md, b.data(), b.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &mb));
    pack(md, ma, pa);
    pack(md, mb, pb);
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, pa.data(), &ra));
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, pb.data(), &rb));
    EXPECT_NE(ra.rkey, rb.rkey);
    EXPECT_EQ(UCS_OK, uct_rkey_release(m_component, &ra));
    EXPECT_EQ(UCS_OK, uct_rkey_release(m_component, &rb));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md, ma));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md, mb));
}

TEST_P(test_dcx_md_reg, many_small_registrations)
{
    std::vector<char> buf(256 * 1024);
    std::vector<uct_mem_h> memhs;
    uct_md_h md = open_soft0(GetParam());

    ASSERT_NE(nullptr, md);
    for (size_t off = 0; off + 1000 <= buf.size(); off += 1000) {
        uct_mem_h memh;
        ASSERT_EQ(UCS_OK, uct_md_mem_reg(md, &buf[off], 1000,
                                         UCT_MD_MEM_ACCESS_ALL, &memh));
        memhs.push_back(memh);
    }
    for (uct_mem_h memh : memhs) {
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md, memh));
    }
}

/* Memory that peers only read may be read-only: a registration that asks
 * for no write access must not need writable pages. */
TEST_P(test_dcx_md_reg, read_only_memory_for_get)
{
    const size_t len = 2 * getpagesize();
    std::vector<char> packed;
    uct_rkey_bundle_t rkey;
    uct_mem_h memh, memh_rw;
    void *addr;
    uct_md_h md = open_soft0(GetParam());

    ASSERT_NE(nullptr, md);
    addr = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, addr);
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(md, addr, len,
                                     UCT_MD_MEM_ACCESS_REMOTE_GET |
                                         UCT_MD_MEM_ACCESS_LOCAL_READ,
                                     &memh));
    pack(md, memh, packed);
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, packed.data(), &rkey));
    EXPECT_EQ(UCS_OK, uct_rkey_release(m_component, &rkey));

    /* a writable registration of the same range is a registration of its
     * own (not the read-only one) once the memory is writable */
    ASSERT_EQ(0, mprotect(addr, len, PROT_READ | PROT_WRITE));
    ASSERT_EQ(UCS_OK,
              uct_md_mem_reg(md, addr, len, UCT_MD_MEM_ACCESS_ALL, &memh_rw));
    EXPECT_NE(memh, memh_rw);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md, memh_rw));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md, memh));
    munmap(addr, len);
}

/* A registration the device refuses (read-only memory asked for writes)
 * fails with one error line; with UCT_MD_MEM_FLAG_HIDE_ERRORS (UCP's
 * registrations that may fail and have a fallback) it fails with no error
 * or warning line at all (the soft device logged its reason as an error
 * regardless: UCX's test_ucp_mmap.reg_mem_type counted them). */
TEST_P(test_dcx_md_reg, hide_errors_bad_flow)
{
    const size_t len = 2 * getpagesize();
    uct_mem_h memh;
    uct_md_h md = open_soft0(GetParam());

    ASSERT_NE(nullptr, md);
    void *addr = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, addr);
    expect_one_error();
    EXPECT_NE(UCS_OK,
              uct_md_mem_reg(md, addr, len, UCT_MD_MEM_ACCESS_ALL, &memh));
    EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
    EXPECT_NE(UCS_OK, uct_md_mem_reg(md, addr, len,
                                     UCT_MD_MEM_ACCESS_ALL |
                                         UCT_MD_MEM_FLAG_HIDE_ERRORS,
                                     &memh));
    EXPECT_EQ(1, log_counter::errors()) << log_counter::joined();
    munmap(addr, len);
}

TEST_P(test_dcx_md_reg, zero_length_reg_bad_flow)
{
    char buf[64];
    uct_mem_h memh;
    uct_md_h md = open_soft0(GetParam());

    ASSERT_NE(nullptr, md);
    expect_one_error();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_md_mem_reg(md, buf, 0, UCT_MD_MEM_ACCESS_ALL, &memh));
    expect_one_error();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_md_mem_reg(md, NULL, 64, UCT_MD_MEM_ACCESS_ALL, &memh));
}

TEST_P(test_dcx_md_reg, dereg_bad_flow)
{
    std::vector<char> buf(4096);
    uct_md_mem_dereg_params_t params;
    uct_mem_h memh;
    uct_md_h md = open_soft0(GetParam());

    ASSERT_NE(nullptr, md);
    params.field_mask = UCT_MD_MEM_DEREG_FIELD_MEMH;
    params.memh       = NULL;
    expect_one_error();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mem_dereg_v2(md, &params));

    /* invalidation is not offered (no UCT_MD_FLAG_INVALIDATE) */
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(md, buf.data(), buf.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &memh));
    params.field_mask = UCT_MD_MEM_DEREG_FIELD_MEMH |
                        UCT_MD_MEM_DEREG_FIELD_FLAGS |
                        UCT_MD_MEM_DEREG_FIELD_COMPLETION;
    params.memh  = memh;
    params.flags = UCT_MD_MEM_DEREG_FLAG_INVALIDATE;
    params.comp  = NULL;
    /* refused quietly, as UCX's memory domains refuse what they do not
     * advertise: no error line */
    EXPECT_EQ(UCS_ERR_UNSUPPORTED, uct_md_mem_dereg_v2(md, &params));

    /* nor are rkeys made for it */
    uct_md_mkey_pack_params_t pack_params;
    std::vector<char> packed(packed_size(md));
    pack_params.field_mask = UCT_MD_MKEY_PACK_FIELD_FLAGS;
    pack_params.flags      = DCX_TEST_MKEY_PACK_FLAGS_INVALIDATE;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              DCX_TEST_MKEY_PACK_V2(md, memh, buf.data(), buf.size(),
                                    &pack_params, packed.data()));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md, memh));
}

TEST_P(test_dcx_md_reg, malformed_rkey_bad_flow)
{
    std::vector<char> buf(4096), packed;
    uct_rkey_bundle_t rkey;
    uct_mem_h memh;
    uct_md_h md = open_soft0(GetParam());

    ASSERT_NE(nullptr, md);
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(md, buf.data(), buf.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &memh));
    pack(md, memh, packed);

    /* any single flipped byte of the packed key is caught */
    for (size_t i = 0; i < packed.size(); ++i) {
        std::vector<char> bad(packed);
        bad[i] ^= 0x5a;
        expect_one_error();
        EXPECT_EQ(UCS_ERR_INVALID_PARAM,
                  uct_rkey_unpack(m_component, bad.data(), &rkey))
            << "byte " << i << " flipped";
    }

    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md, memh));
}

TEST_P(test_dcx_md_reg, foreign_rkey_bad_flow)
{
    uct_rkey_bundle_t rkey;
    uct_md_h md = open_soft0(GetParam());
    std::vector<char> foreign(packed_size(md) + 16, 0);

    /* all zeros, and what a shared-memory MD packs: a segment id followed
     * by an address */
    expect_one_error();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_rkey_unpack(m_component, foreign.data(), &rkey));

    uint64_t seg[2] = {0x1234, (uint64_t)(uintptr_t)&rkey};
    memcpy(foreign.data(), seg, sizeof(seg));
    expect_one_error();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              uct_rkey_unpack(m_component, foreign.data(), &rkey));

    /* a bundle that dcx did not unpack */
    rkey.rkey   = 0x123456789ull;
    rkey.handle = NULL;
    expect_one_error();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_rkey_release(m_component, &rkey));
}

INSTANTIATE_TEST_SUITE_P(rcache, test_dcx_md_reg, testing::Values("try"));
INSTANTIATE_TEST_SUITE_P(no_rcache, test_dcx_md_reg, testing::Values("no"));

/* The registration cache shares one registration between overlapping
 * requests; without it every request registers anew. */
TEST_F(test_dcx_md, rcache_shares_registrations)
{
    std::vector<char> buf(64 * 1024);
    uct_mem_h m1, m2;
    uct_md_h md = open_soft0_rcache();

    if (md == nullptr) {
        GTEST_SKIP() << "no registration cache without UCX memory events";
    }
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(md, buf.data(), buf.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &m1));
    ASSERT_EQ(UCS_OK,
              uct_md_mem_reg(md, &buf[100], 1000, UCT_MD_MEM_ACCESS_ALL, &m2));
    EXPECT_EQ(m1, m2);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md, m2));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md, m1));

    uct_md_h md_direct = open_soft0("no");
    ASSERT_NE(nullptr, md_direct);
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(md_direct, buf.data(), buf.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &m1));
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(md_direct, buf.data(), buf.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &m2));
    EXPECT_NE(m1, m2);
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md_direct, m1));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md_direct, m2));
    close_md(md_direct);
}

/* The cache first registers a request merged with the cached regions it
 * overlaps; when the device refuses the merged range (here a cached page
 * made read-only since) the cache registers the request's own range
 * instead.  The refused try is expected: it logs no error (UCS passes
 * UCS_RCACHE_MEM_REG_HIDE_ERRORS for it), and the request succeeds. */
TEST_F(test_dcx_md, rcache_refused_merge_is_quiet)
{
    const size_t page = getpagesize();
    uct_mem_h m1, m2;
    uct_md_h md = open_soft0_rcache();

    if (md == nullptr) {
        GTEST_SKIP() << "no registration cache without UCX memory events";
    }
    char *p = (char *)mmap(NULL, 3 * page, PROT_READ | PROT_WRITE,
                           MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, (void *)p);
    memset(p, 1, 3 * page);
    /* cached: page 0 and the start of page 1 */
    ASSERT_EQ(UCS_OK,
              uct_md_mem_reg(md, p, page + 100, UCT_MD_MEM_ACCESS_ALL, &m1));
    ASSERT_EQ(UCS_OK, uct_md_mem_dereg(md, m1));
    ASSERT_EQ(0, mprotect(p, page, PROT_READ));
    /* overlapping it: merged with it first, refused for page 0, then
     * registered alone */
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(md, p + page + 50, page,
                                     UCT_MD_MEM_ACCESS_ALL, &m2));
    EXPECT_EQ(0, log_counter::errors()) << log_counter::joined();
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md, m2));
    munmap(p, 3 * page);
}

/* Memory unmapped while registered leaves the cache: a new mapping at the
 * same address gets a registration of its own, not the stale one. */
TEST_F(test_dcx_md, rcache_forgets_unmapped_memory)
{
    const size_t len = 1 << 20;
    uct_mem_h m1, m2;
    void *addr, *again;
    uct_md_h md = open_soft0_rcache();

    if (md == nullptr) {
        GTEST_SKIP() << "no registration cache without UCX memory events";
    }
    addr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                -1, 0);
    ASSERT_NE(MAP_FAILED, addr);
    ASSERT_EQ(UCS_OK,
              uct_md_mem_reg(md, addr, len, UCT_MD_MEM_ACCESS_ALL, &m1));
    ASSERT_EQ(0, munmap(addr, len));

    again = mmap(addr, len, PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    if (again != addr) {
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md, m1));
        if (again != MAP_FAILED) {
            munmap(again, len);
        }
        GTEST_SKIP() << "the address range was taken by someone else";
    }

    ASSERT_EQ(UCS_OK,
              uct_md_mem_reg(md, addr, len, UCT_MD_MEM_ACCESS_ALL, &m2));
    EXPECT_NE(m1, m2) << "the cache returned a registration of unmapped "
                         "memory";
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md, m2));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(md, m1));
    munmap(addr, len);
}

} /* namespace */
