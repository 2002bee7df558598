/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx's mlx5 backend (src/mlx5) on the emulated ConnectX, through UCT: the
 * dcx MD on mlx5_0 registers a strided layout (include/uct/dcx/
 * dcx_strided.h), which the backend makes an indirect mkey configured by a
 * UMR on its loopback RC QP; a dcx endpoint puts into the packed rkey
 * (scatter) and gets from it (gather).  This binary links the emulated
 * libibverbs.so.1 and libmlx5.so.1, so libuct_dcx.so, loaded with it,
 * drives them; the soft devices of the transport are off, as under
 * dcx-run --mlx5-emu.
 */
#include <gtest/gtest.h>

extern "C" {
#include <uct/api/uct.h>
#include <uct/dcx/dcx_strided.h>
#include <ucs/async/async.h>
}

#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <numeric>
#include <string>
#include <vector>

namespace {

/* Before UCX or the emulation read them */
struct emu_uct_env {
    emu_uct_env()
    {
        std::string fabric = "gtest-emu-uct-" + std::to_string(getpid());

        setenv("DCX_EMU_FABRIC", fabric.c_str(), 1);
        setenv("DCX_EMU_DEVICES", "1", 1);
        setenv("UCX_DCX_SOFT_DEVICES", "0", 1);
        setenv("UCX_DCX_MLX5", "y", 1);
    }
} g_emu_uct_env;

/* The bound of a wait: a safety net, not a timing assertion */
const double WAIT_SEC = 20.0;

double now_sec()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

struct comp {
    uct_completion_t super;
    ucs_status_t status;
    bool done;
};

void comp_cb(uct_completion_t *self)
{
    comp *c   = (comp *)self;
    c->status = self->status;
    c->done   = true;
}

} // namespace

class emu_uct_strided : public ::testing::Test {
protected:
    struct entity {
        uct_worker_h worker = nullptr;
        uct_iface_h iface   = nullptr;
        uct_iface_attr_t attr;
        std::vector<char> dev_addr, iface_addr;
    };

    void SetUp() override
    {
        uct_component_h *components;
        uct_component_attr_t cattr;
        uct_md_config_t *md_config;
        unsigned num, i;

        ASSERT_EQ(UCS_OK, uct_query_components(&components, &num));
        for (i = 0; i < num; ++i) {
            cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
            ASSERT_EQ(UCS_OK, uct_component_query(components[i], &cattr));
            if (!strcmp(cattr.name, "dcx")) {
                m_comp = components[i];
            }
        }
        uct_release_component_list(components);
        ASSERT_NE(nullptr, m_comp) << "dcx component not registered";
        ASSERT_EQ(UCS_OK, uct_md_config_read(m_comp, NULL, NULL, &md_config));
        ucs_status_t status = uct_md_open(m_comp, "mlx5_0", md_config, &m_md);
        uct_config_release(md_config);
        ASSERT_EQ(UCS_OK, status) << "the mlx5 backend on mlx5_0";
        ASSERT_EQ(UCS_OK, uct_md_query(m_md, &m_md_attr));
        ASSERT_EQ(UCS_OK,
                  ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                           &m_async));
    }

    void TearDown() override
    {
        if (m_ep != nullptr) {
            uct_ep_destroy(m_ep);
        }
        for (entity &e : m_ents) {
            if (e.iface != nullptr) {
                uct_iface_close(e.iface);
            }
            if (e.worker != nullptr) {
                uct_worker_destroy(e.worker);
            }
        }
        for (uct_mem_h memh : m_memhs) {
            EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
        }
        if (m_async != nullptr) {
            ucs_async_context_destroy(m_async);
        }
        if (m_md != nullptr) {
            uct_md_close(m_md);
        }
    }

    void open_entity(entity &e)
    {
        uct_iface_config_t *config;
        uct_iface_params_t params;

        ASSERT_EQ(UCS_OK,
                  uct_md_iface_config_read(m_md, "dcx", NULL, NULL, &config));
        ASSERT_EQ(UCS_OK, uct_worker_create(m_async, UCS_THREAD_MODE_SINGLE,
                                            &e.worker));
        memset(&params, 0, sizeof(params));
        params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                            UCT_IFACE_PARAM_FIELD_DEVICE;
        params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
        params.mode.device.tl_name  = "dcx";
        params.mode.device.dev_name = "mlx5_0:1";
        ucs_status_t status = uct_iface_open(m_md, e.worker, &params, config,
                                             &e.iface);
        uct_config_release(config);
        ASSERT_EQ(UCS_OK, status);
        uct_iface_progress_enable(e.iface,
                                  UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
        ASSERT_EQ(UCS_OK, uct_iface_query(e.iface, &e.attr));
        e.dev_addr.resize(e.attr.device_addr_len);
        e.iface_addr.resize(e.attr.iface_addr_len);
        ASSERT_EQ(UCS_OK,
                  uct_iface_get_device_address(e.iface, (uct_device_addr_t *)
                                                            e.dev_addr.data()));
        ASSERT_EQ(UCS_OK,
                  uct_iface_get_address(e.iface, (uct_iface_addr_t *)
                                                     e.iface_addr.data()));
    }

    /* Two interfaces on mlx5_0:1 and an endpoint from the first to the
     * second */
    void connect()
    {
        uct_ep_params_t params;

        m_ents.resize(2);
        open_entity(m_ents[0]);
        open_entity(m_ents[1]);
        memset(&params, 0, sizeof(params));
        params.field_mask = UCT_EP_PARAM_FIELD_IFACE |
                            UCT_EP_PARAM_FIELD_DEV_ADDR |
                            UCT_EP_PARAM_FIELD_IFACE_ADDR;
        params.iface    = m_ents[0].iface;
        params.dev_addr = (const uct_device_addr_t *)m_ents[1].dev_addr.data();
        params.iface_addr =
            (const uct_iface_addr_t *)m_ents[1].iface_addr.data();
        ASSERT_EQ(UCS_OK, uct_ep_create(&params, &m_ep));
    }

    uct_mem_h reg(void *buf, size_t len)
    {
        uct_mem_h memh = nullptr;

        EXPECT_EQ(UCS_OK,
                  uct_md_mem_reg(m_md, buf, len, UCT_MD_MEM_ACCESS_ALL, &memh));
        if (memh != nullptr) {
            m_memhs.push_back(memh);
        }
        return memh;
    }

    /* A strided registration of the layout (memh NULL: the call registers
     * the memory) kept until TearDown, deregistered before the others */
    uct_mem_h reg_strided(void *base, size_t elem, size_t stride, size_t count,
                          size_t blocks, size_t block_stride,
                          uct_mem_h memh = nullptr)
    {
        uct_dcx_strided_desc_t desc;
        uct_mem_h smemh = nullptr;

        desc.base         = base;
        desc.elem_size    = elem;
        desc.stride       = stride;
        desc.count        = count;
        desc.block_count  = blocks;
        desc.block_stride = block_stride;
        EXPECT_EQ(blocks * count * elem, uct_dcx_strided_length(&desc));
        EXPECT_EQ(UCS_OK,
                  uct_dcx_md_mem_reg_strided(m_md, &desc, memh, 0, &smemh));
        if (smemh != nullptr) {
            m_memhs.insert(m_memhs.begin(), smemh);
        }
        return smemh;
    }

    /* The rkey a peer unpacks from memh's packed key */
    void unpack(uct_mem_h memh, uct_rkey_bundle_t *rkb)
    {
        std::vector<char> packed(m_md_attr.rkey_packed_size);

        ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, memh, packed.data()));
        ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_comp, packed.data(), rkb));
    }

    /* Waits for an operation that returned 'status' with completion c */
    ucs_status_t wait(ucs_status_t status, comp &c)
    {
        double deadline = now_sec() + WAIT_SEC;

        if (status != UCS_INPROGRESS) {
            return status;
        }
        while (!c.done && (now_sec() < deadline)) {
            for (entity &e : m_ents) {
                uct_worker_progress(e.worker);
            }
        }
        return c.done ? c.status : UCS_ERR_TIMED_OUT;
    }

    ucs_status_t rma(bool put, void *buf, size_t len, uct_mem_h memh,
                     uint64_t off, uct_rkey_t rkey)
    {
        uct_iov_t iov = {buf, len, memh, 0, 1};
        comp c;

        memset(&c, 0, sizeof(c));
        c.super.func        = comp_cb;
        c.super.count       = 1;
        c.super.status      = UCS_OK;
        ucs_status_t status = put ? uct_ep_put_zcopy(m_ep, &iov, 1, off, rkey,
                                                     &c.super) :
                                    uct_ep_get_zcopy(m_ep, &iov, 1, off, rkey,
                                                     &c.super);
        return wait(status, c);
    }

    uct_component_h m_comp = nullptr;
    uct_md_h m_md          = nullptr;
    uct_md_attr_t m_md_attr;
    ucs_async_context_t *m_async = nullptr;
    std::vector<entity> m_ents;
    uct_ep_h m_ep = nullptr;
    std::vector<uct_mem_h> m_memhs;
};

/* 16 elements of 8 bytes every 24 bytes, in 2 blocks 1 KiB apart: the
 * peer sees 256 contiguous bytes */
TEST_F(emu_uct_strided, put_get_through_strided_rkey)
{
    std::vector<char> tgt(4096, 0), src(256), dst(256, 0);
    uct_rkey_bundle_t rkb;
    uct_mem_h smemh;
    size_t b, i;

    connect();
    ASSERT_FALSE(HasFatalFailure());
    uct_mem_h tgt_memh = reg(tgt.data(), tgt.size());
    uct_mem_h src_memh = reg(src.data(), src.size());
    uct_mem_h dst_memh = reg(dst.data(), dst.size());
    ASSERT_NE(nullptr, tgt_memh);

    smemh = reg_strided(tgt.data(), 8, 24, 16, 2, 1024, tgt_memh);
    ASSERT_NE(nullptr, smemh);
    unpack(smemh, &rkb);
    ASSERT_FALSE(HasFatalFailure());

    std::iota(src.begin(), src.end(), 1);
    EXPECT_EQ(UCS_OK, rma(true, src.data(), src.size(), src_memh, 0, rkb.rkey));
    for (b = 0; b < 2; ++b) {
        for (i = 0; i < 16; ++i) {
            const char *el = &tgt[b * 1024 + i * 24];

            EXPECT_EQ(0, memcmp(el, &src[(b * 16 + i) * 8], 8)) << b << i;
            EXPECT_EQ(0, el[8]) << "bytes between elements untouched";
        }
    }
    EXPECT_EQ(UCS_OK,
              rma(false, dst.data(), dst.size(), dst_memh, 0, rkb.rkey));
    EXPECT_EQ(src, dst);
    /* an offset inside the layout */
    std::fill(dst.begin(), dst.end(), 0);
    EXPECT_EQ(UCS_OK, rma(false, dst.data(), 20, dst_memh, 130, rkb.rkey));
    EXPECT_EQ(0, memcmp(dst.data(), &src[130], 20));
    uct_rkey_release(m_comp, &rkb);
}

/* A list layout: three regions in an order other than the address one */
TEST_F(emu_uct_strided, put_get_through_list_rkey)
{
    std::vector<char> tgt(4096, 0), src(100), dst(100, 0);
    uct_dcx_strided_region_t regions[3];
    uct_rkey_bundle_t rkb;
    uct_mem_h smemh = nullptr;

    connect();
    ASSERT_FALSE(HasFatalFailure());
    uct_mem_h src_memh = reg(src.data(), src.size());
    uct_mem_h dst_memh = reg(dst.data(), dst.size());
    regions[0]         = {&tgt[2000], 40};
    regions[1]         = {&tgt[100], 50};
    regions[2]         = {&tgt[3000], 10};
    ASSERT_EQ(UCS_OK,
              uct_dcx_md_mem_reg_list(m_md, regions, 3, NULL, 0, &smemh));
    m_memhs.insert(m_memhs.begin(), smemh);
    unpack(smemh, &rkb);
    ASSERT_FALSE(HasFatalFailure());

    std::iota(src.begin(), src.end(), 7);
    EXPECT_EQ(UCS_OK, rma(true, src.data(), src.size(), src_memh, 0, rkb.rkey));
    EXPECT_EQ(0, memcmp(&tgt[2000], &src[0], 40));
    EXPECT_EQ(0, memcmp(&tgt[100], &src[40], 50));
    EXPECT_EQ(0, memcmp(&tgt[3000], &src[90], 10));
    EXPECT_EQ(UCS_OK,
              rma(false, dst.data(), dst.size(), dst_memh, 0, rkb.rkey));
    EXPECT_EQ(src, dst);
    uct_rkey_release(m_comp, &rkb);
}

/* A layout past the entries the backend's probe found is refused */
TEST_F(emu_uct_strided, layout_over_probed_limit_bad_flow)
{
    std::vector<char> tgt(1 << 16, 0);
    uct_dcx_strided_region_t regions[64];
    uct_mem_h smemh = nullptr;
    size_t i;

    for (i = 0; i < 64; ++i) {
        regions[i] = {&tgt[i * 512], 16};
    }
    EXPECT_EQ(UCS_ERR_EXCEEDS_LIMIT,
              uct_dcx_md_mem_reg_list(m_md, regions, 64, NULL, 0, &smemh));
    EXPECT_EQ(nullptr, smemh);
    /* good: within the limit */
    ASSERT_EQ(UCS_OK,
              uct_dcx_md_mem_reg_list(m_md, regions, 4, NULL, 0, &smemh));
    m_memhs.push_back(smemh);
}

/* A 64-bit fetch-and-add inside one element of a strided key (the probe
 * found atomics allowed through indirect keys) */
TEST_F(emu_uct_strided, atomic_in_element)
{
    std::vector<uint64_t> vals(30, 0);
    uct_rkey_bundle_t rkb;
    uct_mem_h smemh;
    uint64_t old = 0;
    size_t i;
    comp c;

    connect();
    ASSERT_FALSE(HasFatalFailure());
    for (i = 0; i < 10; ++i) {
        vals[i * 3] = 1000 + i;
    }
    smemh = reg_strided(vals.data(), 8, 24, 10, 1, 0);
    ASSERT_NE(nullptr, smemh);
    unpack(smemh, &rkb);
    ASSERT_FALSE(HasFatalFailure());

    memset(&c, 0, sizeof(c));
    c.super.func  = comp_cb;
    c.super.count = 1;
    EXPECT_EQ(UCS_OK,
              wait(uct_ep_atomic64_fetch(m_ep, UCT_ATOMIC_OP_ADD, 5, &old,
                                         4 * 8, rkb.rkey, &c.super),
                   c));
    EXPECT_EQ(1004u, old);
    for (i = 0; i < 10; ++i) {
        EXPECT_EQ(1000 + i + ((i == 4) ? 5 : 0), vals[i * 3]) << i;
        EXPECT_EQ(0u, vals[i * 3 + 1]) << i;
    }
    uct_rkey_release(m_comp, &rkb);
}
