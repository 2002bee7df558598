/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Strided registration on the dcx MD (include/uct/dcx/dcx_strided.h):
 * a peer in another process puts into and gets from the packed rkey of a
 * strided or list registration, which scatters / gathers the layout; every
 * element and every byte between elements is checked.  Bad flows: each
 * invalid argument is refused with a status and one error line, and an
 * rkey used after its owner deregistered it fails at the peer with nothing
 * written.
 *
 * The peer ("agent") is this test binary exec'ed with a filter on
 * uct_dcx_strided_agent.DISABLED_serve: it connects to the test's
 * interface and executes the commands it reads from a pipe (put/get/atomic
 * of a contiguous buffer at an offset of a packed rkey), answering with the
 * status and, for a get, the bytes it read.
 */
#include "uct_fixture.h"

extern "C" {
#include <uct/dcx/dcx_strided.h>
#include <ucs/sys/math.h>
}

#include <dlfcn.h>
#include <poll.h>
#include <sys/wait.h>

using namespace dcx_test;

namespace {

const uint32_t LIMIT   = 8;       /* UCX_DCX_SOFT_MKEY_MAX_ENTRIES */
const size_t AGENT_BUF = 1 << 20; /* the agent's registered buffer */

enum {
    CMD_PUT = 1,
    CMD_GET,
    CMD_FADD64,
    CMD_QUIT
};

struct agent_cmd {
    uint32_t op;
    uint32_t seed;
    uint64_t offset; /* remote address: offset in the layout */
    uint64_t length;
    uint64_t add; /* CMD_FADD64 */
    char rkey[64];
};

struct agent_reply {
    int32_t status;
    uint32_t reserved;
    uint64_t length; /* bytes following (GET data, FADD64 old value) */
};

/* The byte a put writes at position i of its source buffer */
uint8_t pattern(uint32_t seed, size_t i)
{
    return (uint8_t)((i * 131 + seed * 17 + (i >> 8)) ^ 0x5a);
}

} // namespace


/* The agent, in the child process */
class uct_dcx_strided_agent : public uct_dcx_test {
protected:
    ucs_status_t wait_op(ucs_status_t status, test_comp &comp, uct_ep_h ep)
    {
        size_t errors = m_errors.size();

        if (status == UCS_INPROGRESS) {
            wait_for([&] { return comp.done || (m_errors.size() > errors); });
            status = comp.done ? comp.status : m_errors.back().status;
        }
        if ((status == UCS_OK) && (m_errors.size() > errors)) {
            status = m_errors.back().status;
        }
        return status;
    }
};

TEST_F(uct_dcx_strided_agent, DISABLED_serve)
{
    const char *peer = getenv("DCX_SR_PEER");
    agent_cmd cmd;
    agent_reply rep;
    int in, out;

    if (!peer_fds(&in, &out) || (peer == NULL)) {
        GTEST_SKIP() << "run by the strided registration tests only";
    }
    entity *e = create_entity();
    ASSERT_TRUE(e != NULL);
    mem m       = alloc_mem(AGENT_BUF);
    uct_ep_h ep = connect_str(e, peer);
    ASSERT_TRUE(ep != NULL);

    while (read_full(in, &cmd, sizeof(cmd)) && (cmd.op != CMD_QUIT)) {
        uct_rkey_bundle_t rkb;
        uint8_t *buf = (uint8_t *)m.ptr;
        uint64_t old = 0;
        test_comp comp;
        ucs_status_t status;

        memset(&rep, 0, sizeof(rep));
        status = uct_rkey_unpack(m_component, cmd.rkey, &rkb);
        if (status == UCS_OK) {
            uct_iov_t iov = {buf, cmd.length, m.memh, 0, 1};
            if (cmd.op == CMD_PUT) {
                for (size_t i = 0; i < cmd.length; ++i) {
                    buf[i] = pattern(cmd.seed, i);
                }
            } else {
                memset(buf, 0xee, cmd.length);
            }
            do {
                if (cmd.op == CMD_PUT) {
                    status = uct_ep_put_zcopy(ep, &iov, 1, cmd.offset, rkb.rkey,
                                              &comp.uct);
                } else if (cmd.op == CMD_GET) {
                    status = uct_ep_get_zcopy(ep, &iov, 1, cmd.offset, rkb.rkey,
                                              &comp.uct);
                } else {
                    status = uct_ep_atomic64_fetch(ep, UCT_ATOMIC_OP_ADD,
                                                   cmd.add, &old, cmd.offset,
                                                   rkb.rkey, &comp.uct);
                }
                if (status == UCS_ERR_NO_RESOURCE) {
                    progress();
                }
            } while (status == UCS_ERR_NO_RESOURCE);
            status = wait_op(status, comp, ep);
            uct_rkey_release(m_component, &rkb);
        }
        rep.status = status;
        if (status == UCS_OK) {
            rep.length = (cmd.op == CMD_GET)    ? cmd.length :
                         (cmd.op == CMD_FADD64) ? 8 :
                                                  0;
        }
        ASSERT_TRUE(write_full(out, &rep, sizeof(rep)));
        if (rep.length > 0) {
            ASSERT_TRUE(write_full(out,
                                   (cmd.op == CMD_GET) ? (void *)buf :
                                                         (void *)&old,
                                   rep.length));
        }
    }
}


class uct_dcx_strided_reg : public uct_dcx_test {
protected:
    virtual void init_env(scoped_env &env)
    {
        env.set("UCX_DCX_SOFT_MKEY_MAX_ENTRIES", std::to_string(LIMIT));
    }

    virtual void SetUp()
    {
        uct_dcx_test::SetUp();
        if (!dev_has(DCX_CAP_MKEY_STRIDE)) {
            GTEST_SKIP() << "the device has no strided memory keys";
        }
        m_e = create_entity();
        ASSERT_TRUE(m_e != NULL);
        /* the memory layouts are cut from; filled with a known pattern
         * (room for entry_limit_bad_flow's largest layout: the device's
         * entry limit + 1 elements 70001 bytes apart), whole MiBs: an
         * rcache registration ends at a page boundary, and the bad flows
         * that reach past the end of m_mem must reach past it too */
        m_limit = device()->caps.mkey_max_entries;
        m_mem = alloc_mem(ucs_align_up(std::max<size_t>(1 << 20, (m_limit + 2) *
                                                                     70001ul),
                                       1 << 20));
        fill_original();
    }

    virtual void TearDown()
    {
        stop_agent();
        for (size_t i = 0; i < m_strided.size(); ++i) {
            EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, m_strided[i]));
        }
        m_strided.clear();
        uct_dcx_test::TearDown();
    }

    uint8_t original(size_t i) const { return (uint8_t)(i * 7 + 3); }

    void fill_original()
    {
        for (size_t i = 0; i < m_mem.length; ++i) {
            base()[i] = original(i);
        }
    }

    uint8_t *base() const { return (uint8_t *)m_mem.ptr; }

    void start_agent()
    {
        std::map<std::string, std::string> env;

        env["DCX_SR_PEER"] = addr_str(m_e);
        m_agent = spawn_peer("uct_dcx_strided_agent.DISABLED_serve", env);
        ASSERT_GT(m_agent.pid, 0);
    }

    void stop_agent()
    {
        agent_cmd cmd;
        int status;
        pid_t pid;

        if (m_agent.pid <= 0) {
            return;
        }
        memset(&cmd, 0, sizeof(cmd));
        cmd.op = CMD_QUIT;
        write_full(m_agent.to, &cmd, sizeof(cmd));
        pid         = m_agent.pid;
        m_agent.pid = -1;
        kill_peer(m_agent); /* pid < 0: only closes the pipes */
        /* the agent's own test must pass */
        EXPECT_EQ(pid, waitpid(pid, &status, 0));
        EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0))
            << "agent status 0x" << std::hex << status;
    }

    /* Sends cmd to the agent; waits (progressing) for its reply */
    bool agent_call(const agent_cmd &cmd, agent_reply *rep)
    {
        struct pollfd pfd = {m_agent.from, POLLIN, 0};

        if (!write_full(m_agent.to, &cmd, sizeof(cmd))) {
            return false;
        }
        wait_for([&] { return poll(&pfd, 1, 0) != 0; }, 60.0);
        return read_full(m_agent.from, rep, sizeof(*rep));
    }

    /* Runs one command at the agent; progresses while it waits */
    ucs_status_t agent(uint32_t op, uct_mem_h memh, uint64_t offset,
                       uint64_t length, uint32_t seed,
                       std::vector<uint8_t> *data = NULL, uint64_t add = 0)
    {
        agent_cmd cmd;
        agent_reply rep;

        if (m_agent.pid <= 0) {
            start_agent();
        }
        memset(&cmd, 0, sizeof(cmd));
        cmd.op     = op;
        cmd.seed   = seed;
        cmd.offset = offset;
        cmd.length = length;
        cmd.add    = add;
        EXPECT_EQ(UCS_OK, uct_md_mkey_pack(m_md, memh, cmd.rkey));
        EXPECT_TRUE(agent_call(cmd, &rep));
        if (data != NULL) {
            data->resize(rep.length);
        }
        if (rep.length > 0) {
            std::vector<uint8_t> tmp(rep.length);
            EXPECT_TRUE(read_full(m_agent.from, &tmp[0], rep.length));
            if (data != NULL) {
                *data = tmp;
            }
        }
        return (ucs_status_t)rep.status;
    }

    /* Addresses of the layout's bytes in key order */
    static std::vector<uint8_t *> layout(const uct_dcx_strided_desc_t &d)
    {
        size_t blocks = (d.block_count > 1) ? d.block_count : 1;
        std::vector<uint8_t *> out;

        for (size_t b = 0; b < blocks; ++b) {
            for (size_t i = 0; i < d.count; ++i) {
                uint8_t *p = (uint8_t *)d.base + b * d.block_stride +
                             i * d.stride;
                for (size_t k = 0; k < d.elem_size; ++k) {
                    out.push_back(p + k);
                }
            }
        }
        return out;
    }

    static std::vector<uint8_t *>
    layout(const std::vector<uct_dcx_strided_region_t> &regions)
    {
        std::vector<uint8_t *> out;

        for (size_t r = 0; r < regions.size(); ++r) {
            for (size_t k = 0; k < regions[r].length; ++k) {
                out.push_back((uint8_t *)regions[r].address + k);
            }
        }
        return out;
    }

    uct_mem_h reg(const uct_dcx_strided_desc_t &d, uct_mem_h base_memh,
                  unsigned flags = 0)
    {
        uct_mem_h memh = NULL;

        EXPECT_EQ(UCS_OK, uct_dcx_md_mem_reg_strided(m_md, &d, base_memh, flags,
                                                     &memh));
        if (memh != NULL) {
            m_strided.push_back(memh);
        }
        return memh;
    }

    void dereg(uct_mem_h memh)
    {
        for (size_t i = 0; i < m_strided.size(); ++i) {
            if (m_strided[i] == memh) {
                m_strided.erase(m_strided.begin() + i);
                break;
            }
        }
        EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    }

    /* Puts [offset, offset + len) of the layout from the agent and checks
     * every byte of the registered memory: written where the layout maps
     * it, unchanged everywhere else */
    void check_put(uct_mem_h memh, const std::vector<uint8_t *> &bytes,
                   size_t offset, size_t len, uint32_t seed)
    {
        std::vector<uint8_t> expect(m_mem.length);

        for (size_t i = 0; i < m_mem.length; ++i) {
            expect[i] = base()[i];
        }
        for (size_t i = 0; i < len; ++i) {
            expect[bytes[offset + i] - base()] = pattern(seed, i);
        }
        ASSERT_EQ(UCS_OK, agent(CMD_PUT, memh, offset, len, seed));
        size_t bad = 0;
        for (size_t i = 0; i < m_mem.length; ++i) {
            if (base()[i] != expect[i]) {
                if (++bad < 5) {
                    ADD_FAILURE() << "byte " << i << " is " << (int)base()[i]
                                  << ", expected " << (int)expect[i];
                }
            }
        }
        EXPECT_EQ(0u, bad);
    }

    /* Gets [offset, offset + len) of the layout at the agent: the layout's
     * bytes, gathered */
    void check_get(uct_mem_h memh, const std::vector<uint8_t *> &bytes,
                   size_t offset, size_t len)
    {
        std::vector<uint8_t> data;

        ASSERT_EQ(UCS_OK, agent(CMD_GET, memh, offset, len, 0, &data));
        ASSERT_EQ(len, data.size());
        size_t bad = 0;
        for (size_t i = 0; i < len; ++i) {
            if (data[i] != *bytes[offset + i]) {
                if (++bad < 5) {
                    ADD_FAILURE()
                        << "gathered byte " << i << " is " << (int)data[i]
                        << ", expected " << (int)*bytes[offset + i];
                }
            }
        }
        EXPECT_EQ(0u, bad);
    }

    /* One bad registration: the status and exactly one error line */
    void expect_bad(ucs_status_t expected,
                    const std::function<ucs_status_t(uct_mem_h *)> &call,
                    const char *what)
    {
        uct_mem_h memh = NULL;

        log_counter::reset();
        EXPECT_EQ(expected, call(&memh)) << what;
        EXPECT_EQ(NULL, memh) << what;
        EXPECT_EQ(1, log_counter::errors()) << what << ":\n"
                                            << log_counter::joined();
    }

    static uct_dcx_strided_desc_t desc(void *b, size_t elem, size_t stride,
                                       size_t count, size_t blocks = 0,
                                       size_t block_stride = 0)
    {
        uct_dcx_strided_desc_t d;

        memset(&d, 0, sizeof(d));
        d.base         = b;
        d.elem_size    = elem;
        d.stride       = stride;
        d.count        = count;
        d.block_count  = blocks;
        d.block_stride = block_stride;
        return d;
    }

    entity *m_e;
    mem m_mem;
    size_t m_limit; /* entries of one strided key on this device */
    std::vector<uct_mem_h> m_strided;
    peer_proc m_agent;
};

/* A vector of doubles (a matrix column): scatter, gather, partial ranges */
TEST_F(uct_dcx_strided_reg, column_put_get)
{
    /* column 5 of a 64 x 64 matrix of doubles */
    uct_dcx_strided_desc_t d = desc(base() + 5 * 8, 8, 64 * 8, 64);
    uct_mem_h memh           = reg(d, m_mem.memh);
    ASSERT_TRUE(memh != NULL);
    std::vector<uint8_t *> bytes = layout(d);

    check_put(memh, bytes, 0, bytes.size(), 1);
    check_get(memh, bytes, 0, bytes.size());
    /* ranges that start and end inside elements */
    check_put(memh, bytes, 13, 100, 2);
    check_get(memh, bytes, 3, 250);
    check_get(memh, bytes, bytes.size() - 1, 1);
}

/* Unaligned elements of odd size, and single bytes */
TEST_F(uct_dcx_strided_reg, unaligned_and_single_byte)
{
    uct_dcx_strided_desc_t d1 = desc(base() + 3, 5, 13, 300);
    uct_dcx_strided_desc_t d2 = desc(base() + 100001, 1, 3, 1000);
    uct_mem_h m1 = reg(d1, m_mem.memh), m2 = reg(d2, m_mem.memh);
    ASSERT_TRUE((m1 != NULL) && (m2 != NULL));

    check_put(m1, layout(d1), 0, layout(d1).size(), 3);
    check_get(m1, layout(d1), 0, layout(d1).size());
    check_put(m2, layout(d2), 0, 1000, 4);
    check_get(m2, layout(d2), 0, 1000);
    check_put(m2, layout(d2), 999, 1, 5);
}

/* Repeated blocks: a face of a 3-D array (x = 2 of 16 x 8 x 6 doubles) */
TEST_F(uct_dcx_strided_reg, halo_face_blocks)
{
    const size_t nx = 16, ny = 8, nz = 6;
    uct_dcx_strided_desc_t d = desc(base() + 2 * 8, 8, nx * 8, ny, nz,
                                    nx * ny * 8);
    /* ny + 1 > LIMIT entries: one list entry per element would not fit
     * either, so the face is cut in two layouts of 6 rows */
    d.count                  = LIMIT - 1;
    uct_mem_h memh           = reg(d, m_mem.memh);
    ASSERT_TRUE(memh != NULL);

    check_put(memh, layout(d), 0, layout(d).size(), 6);
    check_get(memh, layout(d), 0, layout(d).size());
    check_put(memh, layout(d), 60, 77, 7);
}

/* Element rows with a block stride past the 16-bit limit: one list entry
 * per element, up to the limit */
TEST_F(uct_dcx_strided_reg, large_strides_as_list)
{
    uct_dcx_strided_desc_t d = desc(base() + 10, 100, 70000, LIMIT);
    uct_mem_h memh           = reg(d, m_mem.memh);
    ASSERT_TRUE(memh != NULL);

    check_put(memh, layout(d), 0, layout(d).size(), 8);
    check_get(memh, layout(d), 0, layout(d).size());
}

/* A list of regions in non-address order, of odd sizes, up to the limit */
TEST_F(uct_dcx_strided_reg, list_put_get)
{
    std::vector<uct_dcx_strided_region_t> r;
    const size_t offs[LIMIT] = {50000, 7, 900, 300000, 1, 4096, 2000, 123456};
    const size_t lens[LIMIT] = {1, 33, 1000, 65536, 5, 17, 64, 3};

    for (size_t i = 0; i < LIMIT; ++i) {
        uct_dcx_strided_region_t x = {base() + offs[i], lens[i]};
        r.push_back(x);
    }
    std::vector<uct_mem_h> memhs(r.size(), m_mem.memh);
    uct_mem_h memh = NULL;
    ASSERT_EQ(UCS_OK, uct_dcx_md_mem_reg_list(m_md, &r[0], r.size(), &memhs[0],
                                              0, &memh));
    m_strided.push_back(memh);
    std::vector<uint8_t *> bytes = layout(r);

    check_put(memh, bytes, 0, bytes.size(), 9);
    check_get(memh, bytes, 0, bytes.size());
    check_put(memh, bytes, 30, 2000, 10);
}

/* Without a base memh, the call registers the memory itself and releases
 * it with the strided handle */
TEST_F(uct_dcx_strided_reg, self_registered)
{
    std::vector<uint8_t> own(40000);
    for (size_t i = 0; i < own.size(); ++i) {
        own[i] = (uint8_t)i;
    }
    uct_dcx_strided_desc_t d = desc(&own[1], 24, 400, 90);
    uct_mem_h memh           = reg(d, NULL);
    ASSERT_TRUE(memh != NULL);
    std::vector<uint8_t *> bytes = layout(d);

    ASSERT_EQ(UCS_OK, agent(CMD_PUT, memh, 0, bytes.size(), 11));
    for (size_t i = 0; i < own.size(); ++i) {
        bool in  = false;
        size_t k = 0;
        for (; k < bytes.size(); ++k) {
            if (bytes[k] == &own[i]) {
                in = true;
                break;
            }
        }
        ASSERT_EQ(in ? pattern(11, k) : (uint8_t)i, own[i]) << i;
    }
    check_get(memh, bytes, 0, bytes.size());

    std::vector<uct_dcx_strided_region_t> r(2);
    r[0].address    = &own[30000];
    r[0].length     = 10;
    r[1].address    = &own[100];
    r[1].length     = 3;
    uct_mem_h lmemh = NULL;
    ASSERT_EQ(UCS_OK, uct_dcx_md_mem_reg_list(m_md, &r[0], 2, NULL, 0, &lmemh));
    m_strided.push_back(lmemh);
    check_get(lmemh, layout(r), 0, 13);
    dereg(lmemh);
    dereg(memh);
}

/* Atomics inside one element operate on that element */
TEST_F(uct_dcx_strided_reg, atomic_in_element)
{
    uint64_t *vals = (uint64_t *)(base() + 8192);
    for (int i = 0; i < 10; ++i) {
        vals[i * 3] = 1000 + i;
    }
    uct_dcx_strided_desc_t d = desc(vals, 8, 24, 10);
    uct_mem_h memh           = reg(d, m_mem.memh);
    ASSERT_TRUE(memh != NULL);
    std::vector<uint8_t> old;

    ASSERT_EQ(UCS_OK, agent(CMD_FADD64, memh, 4 * 8, 8, 0, &old, 5));
    ASSERT_EQ(8u, old.size());
    EXPECT_EQ(1004u, *(uint64_t *)&old[0]);
    for (int i = 0; i < 10; ++i) {
        EXPECT_EQ((uint64_t)(1000 + i + ((i == 4) ? 5 : 0)), vals[i * 3]);
        EXPECT_EQ((uint64_t)(original((uint8_t *)&vals[i * 3 + 1] - base())),
                  *(uint8_t *)&vals[i * 3 + 1]);
    }
}

/* Accesses past the layout's end fail at the peer; nothing is written */
TEST_F(uct_dcx_strided_reg, past_end_bad_flow)
{
    uct_dcx_strided_desc_t d = desc(base() + 64, 8, 32, 16);
    uct_mem_h memh           = reg(d, m_mem.memh);
    ASSERT_TRUE(memh != NULL);
    std::vector<uint8_t> before(base(), base() + m_mem.length);

    EXPECT_NE(UCS_OK, agent(CMD_PUT, memh, 8 * 16 - 4, 8, 12));
    EXPECT_TRUE(std::equal(before.begin(), before.end(), base()));
}

/* The rkey of a deregistered strided handle: error at the peer, 0 bytes
 * written */
TEST_F(uct_dcx_strided_reg, used_after_dereg_bad_flow)
{
    uct_dcx_strided_desc_t d = desc(base() + 200, 16, 48, 20);
    uct_mem_h memh           = reg(d, m_mem.memh);
    ASSERT_TRUE(memh != NULL);

    check_put(memh, layout(d), 0, layout(d).size(), 13);
    /* the agent keeps the packed key; the owner releases it */
    agent_cmd keep;
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, memh, keep.rkey));
    dereg(memh);
    std::vector<uint8_t> before(base(), base() + m_mem.length);

    /* a put through the stale key: mkey_pack of the freed handle is not
     * allowed, so the command carries the saved key */
    agent_cmd cmd;
    agent_reply rep;
    memset(&cmd, 0, sizeof(cmd));
    cmd.op     = CMD_PUT;
    cmd.seed   = 14;
    cmd.length = layout(d).size();
    memcpy(cmd.rkey, keep.rkey, sizeof(cmd.rkey));
    ASSERT_TRUE(agent_call(cmd, &rep));
    EXPECT_EQ(UCS_ERR_CONNECTION_RESET, (ucs_status_t)rep.status);
    EXPECT_EQ(0u, rep.length);
    EXPECT_TRUE(std::equal(before.begin(), before.end(), base()))
        << "the stale key wrote into the owner's memory";
}

/* The symbols are exported from the module for dlsym */
TEST_F(uct_dcx_strided_reg, symbols_exported)
{
    EXPECT_EQ((void *)uct_dcx_md_mem_reg_strided,
              dlsym(RTLD_DEFAULT, UCT_DCX_MD_MEM_REG_STRIDED_SYMBOL));
    EXPECT_EQ((void *)uct_dcx_md_mem_reg_list,
              dlsym(RTLD_DEFAULT, UCT_DCX_MD_MEM_REG_LIST_SYMBOL));
}

/* At the entry limit and one past it */
TEST_F(uct_dcx_strided_reg, entry_limit_bad_flow)
{
    /* the device's limit: LIMIT on the soft device, what the backend
     * derived elsewhere */
    const size_t LIMIT = m_limit;
    std::vector<uct_dcx_strided_region_t> r;
    for (size_t i = 0; i <= LIMIT; ++i) {
        uct_dcx_strided_region_t x = {base() + i * 100, 10};
        r.push_back(x);
    }
    uct_mem_h memh = NULL;
    ASSERT_EQ(UCS_OK,
              uct_dcx_md_mem_reg_list(m_md, &r[0], LIMIT, NULL, 0, &memh));
    dereg(memh);
    expect_bad(
        UCS_ERR_EXCEEDS_LIMIT,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_list(m_md, &r[0], LIMIT + 1, NULL, 0, p);
        },
        "list of LIMIT + 1 regions");

    /* blocks of LIMIT - 1 elements: interleaved, LIMIT entries */
    uct_dcx_strided_desc_t d = desc(base(), 8, 16, LIMIT - 1, 4, 4096);
    memh                     = reg(d, m_mem.memh);
    ASSERT_TRUE(memh != NULL);
    dereg(memh);
    d.count = LIMIT;
    expect_bad(
        UCS_ERR_EXCEEDS_LIMIT,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_strided(m_md, &d, m_mem.memh, 0, p);
        },
        "blocks of LIMIT elements");

    /* a stride past 16 bits: one entry per element */
    d    = desc(base(), 8, 70000, LIMIT);
    memh = reg(d, m_mem.memh);
    ASSERT_TRUE(memh != NULL);
    dereg(memh);
    d.count = LIMIT + 1;
    expect_bad(
        UCS_ERR_EXCEEDS_LIMIT,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_strided(m_md, &d, m_mem.memh, 0, p);
        },
        "LIMIT + 1 elements at a 70000-byte stride");

    /* an element past 16 bits with several elements */
    d = desc(base(), 70000, 70001, LIMIT + 1);
    expect_bad(
        UCS_ERR_EXCEEDS_LIMIT,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_strided(m_md, &d, m_mem.memh, 0, p);
        },
        "LIMIT + 1 elements of 70000 bytes");
}

TEST_F(uct_dcx_strided_reg, bad_arguments_bad_flow)
{
    uct_dcx_strided_desc_t d;
    uct_mem_h memh;

    d = desc(base(), 0, 8, 4);
    expect_bad(
        UCS_ERR_INVALID_PARAM,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_strided(m_md, &d, m_mem.memh, 0, p);
        },
        "zero element size");
    d = desc(base(), 8, 8, 0);
    expect_bad(
        UCS_ERR_INVALID_PARAM,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_strided(m_md, &d, m_mem.memh, 0, p);
        },
        "zero elements");
    d = desc(base(), 8, 7, 4);
    expect_bad(
        UCS_ERR_INVALID_PARAM,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_strided(m_md, &d, m_mem.memh, 0, p);
        },
        "stride < element size");
    d = desc(base(), 8, 16, 4, 3, 50);
    expect_bad(
        UCS_ERR_INVALID_PARAM,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_strided(m_md, &d, m_mem.memh, 0, p);
        },
        "overlapping blocks");
    d = desc(base(), 8, SIZE_MAX / 2, 4);
    expect_bad(
        UCS_ERR_INVALID_PARAM,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_strided(m_md, &d, m_mem.memh, 0, p);
        },
        "layout wrapping the address space");
    expect_bad(
        UCS_ERR_INVALID_PARAM,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_strided(m_md, NULL, m_mem.memh, 0, p);
        },
        "no description");

    /* memory the given memh does not cover */
    d = desc(base() + m_mem.length - 64, 8, 16, 5);
    expect_bad(
        UCS_ERR_INVALID_ADDR,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_strided(m_md, &d, m_mem.memh, 0, p);
        },
        "past the end of the memh");
    std::vector<uint8_t> other(4096);
    d = desc(&other[0], 8, 16, 5);
    expect_bad(
        UCS_ERR_INVALID_ADDR,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_strided(m_md, &d, m_mem.memh, 0, p);
        },
        "memory not registered by the memh");

    /* a read-only registration under a key that peers write */
    uct_mem_h ro;
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, &other[0], other.size(),
                                     UCT_MD_MEM_ACCESS_REMOTE_GET, &ro));
    expect_bad(
        UCS_ERR_INVALID_ADDR,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_strided(m_md, &d, ro,
                                              UCT_MD_MEM_ACCESS_REMOTE_PUT, p);
        },
        "read-only memh, writable key");
    memh = NULL;
    EXPECT_EQ(UCS_OK,
              uct_dcx_md_mem_reg_strided(m_md, &d, ro,
                                         UCT_MD_MEM_ACCESS_REMOTE_GET, &memh));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, memh));
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, ro));

    /* a strided handle as the base */
    d           = desc(base(), 8, 16, 5);
    uct_mem_h s = reg(d, m_mem.memh);
    ASSERT_TRUE(s != NULL);
    expect_bad(
        UCS_ERR_INVALID_PARAM,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_strided(m_md, &d, s, 0, p);
        },
        "strided memh as the base");

    /* list: overlapping regions, an empty one, a missing memh */
    std::vector<uct_dcx_strided_region_t> r(2);
    r[0].address = base() + 100;
    r[0].length  = 50;
    r[1].address = base() + 120;
    r[1].length  = 8;
    expect_bad(
        UCS_ERR_INVALID_PARAM,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_list(m_md, &r[0], 2, NULL, 0, p);
        },
        "overlapping regions");
    r[1].address = base() + 400;
    r[1].length  = 0;
    expect_bad(
        UCS_ERR_INVALID_PARAM,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_list(m_md, &r[0], 2, NULL, 0, p);
        },
        "empty region");
    expect_bad(
        UCS_ERR_INVALID_PARAM,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_list(m_md, &r[0], 0, NULL, 0, p);
        },
        "no regions");
    r[1].length        = 8;
    uct_mem_h memhs[2] = {m_mem.memh, NULL};
    expect_bad(
        UCS_ERR_INVALID_PARAM,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_list(m_md, &r[0], 2, memhs, 0, p);
        },
        "region without memh");
    memhs[1]     = m_mem.memh;
    r[1].address = &other[0];
    expect_bad(
        UCS_ERR_INVALID_ADDR,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_list(m_md, &r[0], 2, memhs, 0, p);
        },
        "region outside its memh");
}

/* The memh of another md, and an md that is not dcx */
TEST_F(uct_dcx_strided_reg, wrong_md_bad_flow)
{
    uct_md_config_t *config;
    uct_md_h md2;

    ASSERT_EQ(UCS_OK, uct_md_config_read(m_component, NULL, NULL, &config));
    ucs_status_t status = uct_md_open(m_component, test_md_name().c_str(),
                                      config, &md2);
    uct_config_release(config);
    ASSERT_EQ(UCS_OK, status);

    uct_dcx_strided_desc_t d = desc(base(), 8, 16, 5);
    expect_bad(
        UCS_ERR_INVALID_PARAM,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_strided(md2, &d, m_mem.memh, 0, p);
        },
        "memh of another md");
    uct_md_close(md2);

    /* UCX's "self" component: an md of another transport */
    uct_component_h *comps;
    unsigned n;
    uct_md_h self_md = NULL;
    ASSERT_EQ(UCS_OK, uct_query_components(&comps, &n));
    for (unsigned i = 0; i < n; ++i) {
        uct_component_attr_t attr;
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        ASSERT_EQ(UCS_OK, uct_component_query(comps[i], &attr));
        if (!strcmp(attr.name, "self")) {
            ASSERT_EQ(UCS_OK,
                      uct_md_config_read(comps[i], NULL, NULL, &config));
            ASSERT_EQ(UCS_OK, uct_md_open(comps[i], "self", config, &self_md));
            uct_config_release(config);
        }
    }
    uct_release_component_list(comps);
    ASSERT_TRUE(self_md != NULL);
    expect_bad(
        UCS_ERR_INVALID_PARAM,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_strided(self_md, &d, NULL, 0, p);
        },
        "md of the self component");
    uct_md_close(self_md);

    expect_bad(
        UCS_ERR_INVALID_PARAM,
        [&](uct_mem_h *p) {
            return uct_dcx_md_mem_reg_strided(m_md, &d, m_mem.memh, 0, NULL);
        },
        "no memh_p");
}
