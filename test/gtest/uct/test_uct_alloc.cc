/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory the dcx md allocates (dcx_md_alloc.c: a System V segment) used as
 * UCX uses it: uct_iface_mem_alloc picks the md method first, and puts and
 * gets into such memory are copies through the initiator's attachment of
 * the segment, in this process or in a peer's (uct_dcx_alloc.DISABLED_peer,
 * this binary run again, puts into an allocation of the test's).
 */
#include "uct_fixture.h"

#include "dcx_soft.h"
#include "log_counter.h"

#include "dcx_ucx_features.h" /* what differs between UCX versions */

#include <map>
#include <poll.h>
#include <sys/mman.h>
#include <sys/wait.h>

extern "C" {
#include <uct/base/uct_md.h> /* uct_md_mem_alloc, uct_md_mem_free */
}

using namespace dcx_test;

namespace {

/* What the test asks its peer (uct_dcx_alloc.DISABLED_peer) to put */
struct alloc_peer_cmd {
    uint64_t address; /* remote address */
    uint64_t length;
    char rkey[64];
};

struct alloc_peer_reply {
    int32_t status;
    uint32_t reserved;
    uint64_t mapped; /* the peer's direct copies through an attachment */
};

} // namespace

/* uct_md_mem_alloc as of the UCX at hand: from 1.15 on it also takes the
 * system device the memory should be near */
static ucs_status_t md_mem_alloc(uct_md_h md, size_t *length_p,
                                 void **address_p, ucs_memory_type_t mem_type,
                                 unsigned flags, uct_mem_h *memh_p)
{
#if DCX_UCX_HAVE_MEM_ALLOC_SYS_DEV
    return uct_md_mem_alloc(md, length_p, address_p, mem_type,
                            UCS_SYS_DEVICE_ID_UNKNOWN, flags, "test", memh_p);
#else
    return uct_md_mem_alloc(md, length_p, address_p, mem_type, flags, "test",
                            memh_p);
#endif
}

class uct_dcx_alloc : public uct_dcx_test {
protected:
    virtual void SetUp()
    {
        uct_dcx_test::SetUp();
        if (!(m_md_attr.cap.flags & UCT_MD_FLAG_ALLOC)) {
            GTEST_SKIP() << "the memory domain allocates no memory";
        }
    }

    template <typename F> ucs_status_t retry(F op)
    {
        ucs_status_t status;

        while ((status = op()) == UCS_ERR_NO_RESOURCE) {
            progress();
        }
        return status;
    }

    void wait_comp(test_comp &comp, ucs_status_t status)
    {
        if (status == UCS_INPROGRESS) {
            ASSERT_TRUE(wait_for([&] { return comp.done > 0; }));
            status = comp.status;
        }
        ASSERT_EQ(UCS_OK, status);
    }

    static uint8_t pattern(size_t i)
    {
        return (uint8_t)((i * 131u + (i >> 9)) | 1u);
    }

    /* An allocation of len bytes (a multiple of the page) with
     * UCT_MD_MEM_FLAG_FIXED at a free range, *at_p: there, of that
     * length */
    void alloc_at_free_range(size_t len, char **at_p, uct_mem_h *memh_p)
    {
        char *at      = free_range(len);
        void *address = at;
        size_t length = len;

        ASSERT_NE(nullptr, at);
        ASSERT_EQ(UCS_OK,
                  md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST,
                               UCT_MD_MEM_ACCESS_ALL | UCT_MD_MEM_FLAG_FIXED,
                               memh_p));
        ASSERT_EQ((void *)at, address);
        ASSERT_EQ(len, length);
        *at_p = at;
    }

    /* A free page-aligned range of len bytes (mapped, then unmapped) */
    static char *free_range(size_t len)
    {
        void *p = mmap(nullptr, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
                       0);

        if ((p == MAP_FAILED) || (munmap(p, len) != 0)) {
            return nullptr;
        }
        return (char *)p;
    }

    /* Whether any byte of [p, p + len) is mapped in this process */
    static bool any_mapped(const void *p, size_t len)
    {
        for (size_t off = 0; off < len; off += 4096) {
            if (msync((char *)p + off, 4096, MS_ASYNC) == 0) {
                return true;
            }
        }
        return false;
    }

    /* Whether [p, p + len) is mapped from one System V segment */
    static bool in_sysv(const void *p, size_t len)
    {
        uintptr_t lo, hi, a = (uintptr_t)p;
        char line[512];
        bool found = false;
        FILE *f    = fopen("/proc/self/maps", "r");

        if (f == nullptr) {
            return false;
        }
        while (!found && (fgets(line, sizeof(line), f) != nullptr)) {
            found = (sscanf(line, "%lx-%lx", &lo, &hi) == 2) && (lo <= a) &&
                    (a + len <= hi) && (strstr(line, "/SYSV") != nullptr);
        }
        fclose(f);
        return found;
    }

    /* put_zcopy of pattern() bytes to [remote, remote + len) and a get of
     * them back, through a connected ep of this process */
    void put_get(uct_ep_h ep, uct_mem_h memh, void *remote, size_t len)
    {
        std::vector<char> packed(m_md_attr.rkey_packed_size);
        uct_rkey_bundle_t rkb;
        test_comp put, get;

        ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, memh, packed.data()));
        ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, packed.data(), &rkb));
        uct_dcx_test::mem src = alloc_mem(len);
        for (size_t i = 0; i < len; ++i) {
            ((uint8_t *)src.ptr)[i] = pattern(i);
        }
        uct_iov_t iov = {src.ptr, len, src.memh, 0, 1};
        ASSERT_NO_FATAL_FAILURE(wait_comp(
            put, retry([&] {
                return uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)remote,
                                        rkb.rkey, &put.uct);
            })));
        flush_ep(ep);
        for (size_t i = 0; i < len; ++i) {
            ASSERT_EQ(pattern(i), ((uint8_t *)remote)[i]) << "byte " << i;
        }
        memset(src.ptr, 0, len);
        ASSERT_NO_FATAL_FAILURE(wait_comp(
            get, retry([&] {
                return uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)remote,
                                        rkb.rkey, &get.uct);
            })));
        for (size_t i = 0; i < len; ++i) {
            ASSERT_EQ(pattern(i), ((uint8_t *)src.ptr)[i]) << "byte " << i;
        }
        uct_rkey_release(m_component, &rkb);
    }
};

/* put_zcopy into and get_zcopy out of memory uct_iface_mem_alloc gave,
 * every byte checked, both executed by the initiator through the
 * allocation's mapping */
TEST_F(uct_dcx_alloc, iface_mem_alloc_put_get)
{
    const size_t len = (1u << 20) + 5;
    entity *a = create_entity(), *b = create_entity();
    uct_ep_h ep = connect(a, b);
    std::vector<char> packed(m_md_attr.rkey_packed_size);
    uct_allocated_memory_t am;
    uct_rkey_bundle_t rkb;
    dcx_soft_stats_t st0, st1;

    ASSERT_EQ(UCS_OK, uct_iface_mem_alloc(b->iface, len, UCT_MD_MEM_ACCESS_ALL,
                                          "test", &am));
    EXPECT_EQ(UCT_ALLOC_METHOD_MD, am.method);
    EXPECT_EQ(m_md, am.md);
    ASSERT_NE(nullptr, (void *)am.memh);
    ASSERT_GE(am.length, len);
    memset(am.address, 0x5a, am.length);
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, am.memh, packed.data()));
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, packed.data(), &rkb));

    uct_dcx_test::mem src = alloc_mem(len);
    for (size_t i = 0; i < len; ++i) {
        ((uint8_t *)src.ptr)[i] = pattern(i);
    }
    ASSERT_EQ(0, dcx_soft_stats(device(), &st0));

    test_comp put;
    uct_iov_t iov = {src.ptr, len - 3, src.memh, 0, 1};
    ASSERT_NO_FATAL_FAILURE(wait_comp(
        put, retry([&] {
            return uct_ep_put_zcopy(ep, &iov, 1, (uintptr_t)am.address + 3,
                                    rkb.rkey, &put.uct);
        })));
    flush_ep(ep);
    const uint8_t *m = (const uint8_t *)am.address;
    for (size_t i = 0; i < 3; ++i) {
        ASSERT_EQ(0x5a, m[i]);
    }
    for (size_t i = 0; i < len - 3; ++i) {
        ASSERT_EQ(pattern(i), m[3 + i]) << "byte " << i;
    }
    for (size_t i = len; i < am.length; ++i) {
        ASSERT_EQ(0x5a, m[i]);
    }

    test_comp get;
    memset(src.ptr, 0, len);
    ASSERT_NO_FATAL_FAILURE(wait_comp(
        get, retry([&] {
            return uct_ep_get_zcopy(ep, &iov, 1, (uintptr_t)am.address + 3,
                                    rkb.rkey, &get.uct);
        })));
    for (size_t i = 0; i < len - 3; ++i) {
        ASSERT_EQ(pattern(i), ((uint8_t *)src.ptr)[i]) << "byte " << i;
    }
    ASSERT_EQ(0, dcx_soft_stats(device(), &st1));
    EXPECT_EQ(st0.direct_mapped + 2, st1.direct_mapped);

    uct_rkey_release(m_component, &rkb);
    uct_iface_mem_free(&am);
}

/* uct_md_mem_alloc gives zeroed, writable memory of at least the length
 * asked for, registered (its rkey packs); mem_free releases it. */
TEST_F(uct_dcx_alloc, md_mem_alloc_free)
{
    std::vector<char> packed(m_md_attr.rkey_packed_size);
    size_t length = 10000;
    void *address = nullptr;
    uct_mem_h memh;

    ASSERT_EQ(UCS_OK,
              md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST,
                           UCT_MD_MEM_ACCESS_ALL, &memh));
    EXPECT_GE(length, 10000u);
    ASSERT_NE(nullptr, address);
    for (size_t i = 0; i < length; ++i) {
        ASSERT_EQ(0, ((char *)address)[i]);
    }
    memset(address, 0x7e, length);
    EXPECT_EQ(UCS_OK, uct_md_mkey_pack(m_md, memh, packed.data()));
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));
}

/* An allocation's memh is not a registration's and vice versa (one error
 * line each); what the md cannot allocate is refused quietly. */
TEST_F(uct_dcx_alloc, md_mem_alloc_bad_flow)
{
    std::vector<char> buf(4096);
    size_t length = 4096;
    void *address = nullptr;
    uct_mem_h memh, reg;

    ASSERT_EQ(UCS_OK,
              md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST,
                           UCT_MD_MEM_ACCESS_ALL, &memh));
    ASSERT_EQ(UCS_OK, uct_md_mem_reg(m_md, buf.data(), buf.size(),
                                     UCT_MD_MEM_ACCESS_ALL, &reg));
    log_counter::reset();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mem_dereg(m_md, memh));
    EXPECT_EQ(1, log_counter::errors());
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, uct_md_mem_free(m_md, reg));
    EXPECT_EQ(2, log_counter::errors());
    EXPECT_EQ(UCS_OK, uct_md_mem_dereg(m_md, reg));
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));

    length = 4096;
    EXPECT_EQ(UCS_ERR_UNSUPPORTED,
              md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_CUDA,
                           UCT_MD_MEM_ACCESS_ALL, &memh));
    /* at a fixed address that is not a page's: refused, one line */
    address = (char *)buf.data() + 1;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST,
                           UCT_MD_MEM_ACCESS_ALL | UCT_MD_MEM_FLAG_FIXED,
                           &memh));
    EXPECT_EQ(3, log_counter::errors());
    length = 0;
    EXPECT_EQ(UCS_ERR_INVALID_PARAM,
              md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST,
                           UCT_MD_MEM_ACCESS_ALL, &memh));
    EXPECT_EQ(4, log_counter::errors());
    log_counter::reset();
}

/* UCT_MD_MEM_FLAG_FIXED (as OpenSHMEM's symmetric heap asks UCP): the
 * allocation lies at the address asked, and peers map it as any other; a
 * range already mapped is never replaced: refused quietly (the caller's
 * next allocator may try), what was there untouched. */
TEST_F(uct_dcx_alloc, fixed_address)
{
    const size_t len = 4 * 4096;
    size_t length    = len - 10;
    uct_mem_h memh;
    void *address;
    char *hole;

    EXPECT_TRUE(m_md_attr.cap.flags & UCT_MD_FLAG_FIXED);
    hole = (char *)mmap(nullptr, len, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, (void *)hole);
    memset(hole, 0x3c, len);
    log_counter::reset();
    address = hole + 4096;
    EXPECT_EQ(UCS_ERR_NO_MEMORY,
              md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST,
                           UCT_MD_MEM_ACCESS_ALL | UCT_MD_MEM_FLAG_FIXED,
                           &memh));
    EXPECT_EQ(0, log_counter::errors());
    for (size_t i = 0; i < len; ++i) {
        ASSERT_EQ(0x3c, hole[i]) << "byte " << i << " of the mapping changed";
    }

    ASSERT_EQ(0, munmap(hole, len)); /* the range is free now */
    address = hole;
    length  = len - 10;
    ASSERT_EQ(UCS_OK,
              md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST,
                           UCT_MD_MEM_ACCESS_ALL | UCT_MD_MEM_FLAG_FIXED,
                           &memh));
    EXPECT_EQ((void *)hole, address);
    EXPECT_EQ(len, length);
    for (size_t i = 0; i < len; ++i) {
        ASSERT_EQ(0, hole[i]);
    }
    memset(hole, 0x7e, len);
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));
    EXPECT_EQ(0, log_counter::errors());
}

/* UCT_MD_MEM_FLAG_FIXED at a free address: the memory is there, zeroed,
 * one SysV attachment, and puts and gets through an ep reach it as the
 * initiator's copies through its attachment. */
TEST_F(uct_dcx_alloc, fixed_address_put_get)
{
    const size_t len = 64 * 1024;
    entity *a = create_entity(), *b = create_entity();
    uct_ep_h ep = connect(a, b);
    dcx_soft_stats_t st0, st1;
    uct_mem_h memh;
    char *at;

    ASSERT_NO_FATAL_FAILURE(alloc_at_free_range(len, &at, &memh));
    EXPECT_TRUE(in_sysv(at, len));
    for (size_t i = 0; i < len; ++i) {
        ASSERT_EQ(0, at[i]) << "byte " << i;
    }
    ASSERT_EQ(0, dcx_soft_stats(device(), &st0));
    ASSERT_NO_FATAL_FAILURE(put_get(ep, memh, at + 8, len - 8));
    for (size_t i = 0; i < 8; ++i) {
        ASSERT_EQ(0, at[i]);
    }
    ASSERT_EQ(0, dcx_soft_stats(device(), &st1));
    EXPECT_EQ(st0.direct_mapped + 2, st1.direct_mapped);
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));
}

/* mem_free unmaps the allocation (fixed or not): nothing of it is left
 * mapped, and a fixed range is free for the next mapping. */
TEST_F(uct_dcx_alloc, free_unmaps)
{
    const size_t len = 3 * 4096;
    size_t length    = len;
    void *address    = nullptr;
    uct_mem_h memh;
    char *at;

    ASSERT_EQ(UCS_OK,
              md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST,
                           UCT_MD_MEM_ACCESS_ALL, &memh));
    EXPECT_TRUE(any_mapped(address, length));
    EXPECT_TRUE(in_sysv(address, length));
    memset(address, 0x11, length);
    ASSERT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));
    EXPECT_FALSE(any_mapped(address, length));

    ASSERT_NO_FATAL_FAILURE(alloc_at_free_range(len, &at, &memh));
    ASSERT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));
    EXPECT_FALSE(any_mapped(at, len));
    void *again = mmap(at, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
                       0);
    EXPECT_EQ((void *)at, again) << "the freed range is still taken";
    if (again != MAP_FAILED) {
        munmap(again, len);
    }
}

/* The peer: puts pattern() bytes where the test says, reports the status
 * and how many of its direct copies went through an attachment. */
TEST_F(uct_dcx_alloc, DISABLED_peer)
{
    const char *target = getenv("DCX_ALLOC_PEER");
    alloc_peer_reply rep;
    alloc_peer_cmd cmd;
    dcx_soft_stats_t st0, st1;
    uct_rkey_bundle_t rkb;
    test_comp put;
    int in, out;

    if (!peer_fds(&in, &out) || (target == nullptr)) {
        GTEST_SKIP() << "run by uct_dcx_alloc.peer_put_lands only";
    }
    entity *e   = create_entity();
    uct_ep_h ep = connect_str(e, target);
    ASSERT_TRUE(ep != nullptr);
    ASSERT_TRUE(read_full(in, &cmd, sizeof(cmd)));
    uct_dcx_test::mem src = alloc_mem(cmd.length);
    for (size_t i = 0; i < cmd.length; ++i) {
        ((uint8_t *)src.ptr)[i] = pattern(i);
    }
    ASSERT_EQ(UCS_OK, uct_rkey_unpack(m_component, cmd.rkey, &rkb));
    ASSERT_EQ(0, dcx_soft_stats(device(), &st0));
    uct_iov_t iov       = {src.ptr, cmd.length, src.memh, 0, 1};
    ucs_status_t status = retry([&] {
        return uct_ep_put_zcopy(ep, &iov, 1, cmd.address, rkb.rkey, &put.uct);
    });
    if (status == UCS_INPROGRESS) {
        wait_for([&] { return put.done > 0; }, 60.0);
        status = (put.done > 0) ? put.status : UCS_ERR_TIMED_OUT;
    }
    if (status == UCS_OK) {
        flush_ep(ep);
    }
    ASSERT_EQ(0, dcx_soft_stats(device(), &st1));
    uct_rkey_release(m_component, &rkb);
    memset(&rep, 0, sizeof(rep));
    rep.status = status;
    rep.mapped = st1.direct_mapped - st0.direct_mapped;
    ASSERT_TRUE(write_full(out, &rep, sizeof(rep)));
}

/* A peer process's put into memory the md allocated lands, every byte,
 * copied by the peer through its attachment of the segment. */
TEST_F(uct_dcx_alloc, peer_put_lands)
{
    const size_t len = 256 * 1024 + 12;
    entity *b        = create_entity();
    std::map<std::string, std::string> env;
    size_t length = len;
    void *address = nullptr;
    alloc_peer_reply rep;
    alloc_peer_cmd cmd;
    uct_mem_h memh;
    int status;

    ASSERT_EQ(UCS_OK,
              md_mem_alloc(m_md, &length, &address, UCS_MEMORY_TYPE_HOST,
                           UCT_MD_MEM_ACCESS_ALL, &memh));
    memset(address, 0x5a, length);
    memset(&cmd, 0, sizeof(cmd));
    ASSERT_LE(m_md_attr.rkey_packed_size, sizeof(cmd.rkey));
    ASSERT_EQ(UCS_OK, uct_md_mkey_pack(m_md, memh, cmd.rkey));
    cmd.address = (uintptr_t)address + 5;
    cmd.length  = len - 5;

    env["DCX_ALLOC_PEER"] = addr_str(b);
    peer_proc peer        = spawn_peer("uct_dcx_alloc.DISABLED_peer", env);
    ASSERT_GT(peer.pid, 0);
    struct pollfd pfd = {peer.from, POLLIN, 0};
    bool ok           = write_full(peer.to, &cmd, sizeof(cmd)) &&
              wait_for([&] { return poll(&pfd, 1, 0) != 0; }, 60.0) &&
              read_full(peer.from, &rep, sizeof(rep), 10000);
    pid_t pid = peer.pid;
    peer.pid  = -1;
    kill_peer(peer); /* pid < 0: only closes the pipes */
    EXPECT_EQ(pid, waitpid(pid, &status, 0));
    EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0))
        << "peer status 0x" << std::hex << status;
    ASSERT_TRUE(ok) << "no answer from the peer";
    EXPECT_EQ(UCS_OK, (ucs_status_t)rep.status);
    EXPECT_EQ(1u, rep.mapped) << "the put was not a copy through the peer's "
                                 "attachment";
    const uint8_t *m = (const uint8_t *)address;
    for (size_t i = 0; i < 5; ++i) {
        ASSERT_EQ(0x5a, m[i]);
    }
    for (size_t i = 0; i < len - 5; ++i) {
        ASSERT_EQ(pattern(i), m[5 + i]) << "byte " << i;
    }
    for (size_t i = len; i < length; ++i) {
        ASSERT_EQ(0x5a, m[i]);
    }
    EXPECT_EQ(UCS_OK, uct_md_mem_free(m_md, memh));
}
