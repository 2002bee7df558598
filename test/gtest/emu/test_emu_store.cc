/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The store instructions a doorbell's trap steps over (emu_raw_store.c):
 * each form is assembled here by the assembler, so that the encodings
 * are the ones compilers and glibc emit (REX, VEX, EVEX with its scaled
 * 8-bit displacements, SIB, RIP-relative), and decoded against a signal
 * frame whose registers the test sets.  Nothing here is executed; what a
 * decoded store does to a thread (stepped over with the ones after it)
 * is emu_raw_test's.
 */
#include "emu/emu_raw_store.h"

#include <gtest/gtest.h>

#include <stdint.h>
#include <string.h>
#include <ucontext.h>

#if defined(__x86_64__)

/* Each case between two labels: emu_st_N and emu_st_N_end (one case a
 * line: the formatter leaves the table alone) */
/* clang-format off */
#define EMU_ST_CASE(n, insn)                                                   \
    ".globl emu_st_" #n "\n"                                                   \
    "emu_st_" #n ": " insn "\n"                                                \
    ".globl emu_st_" #n "_end\n"                                               \
    "emu_st_" #n "_end:\n"

asm(".pushsection .text.emu_store_cases, \"ax\", @progbits\n"
    EMU_ST_CASE(mov64, "movq %rax, (%rdi)")
    EMU_ST_CASE(movimm, "movl $0x5a5a5a5a, 8(%rdi)")
    EMU_ST_CASE(movimm64, "movq $-1, 0x12345(%rdi)")
    EMU_ST_CASE(movw, "movw $0x1234, 2(%rdi)")
    EMU_ST_CASE(movb, "movb %al, -1(%rdi)")
    EMU_ST_CASE(sib, "movq %rax, 0x100(%rsi,%rcx,8)")
    EMU_ST_CASE(sibr12, "movq %rax, (%r13,%r12,4)")
    EMU_ST_CASE(nobase, "movq %rax, 0x1000(,%rcx,2)")
    EMU_ST_CASE(rip, "movq %rax, 0x10(%rip)")
    EMU_ST_CASE(movups, "movups %xmm0, 16(%r9)")
    EMU_ST_CASE(movdqu, "movdqu %xmm1, -16(%rdi,%rdx)")
    EMU_ST_CASE(movnti, "movnti %rax, (%rbx)")
    EMU_ST_CASE(movqst, "movq %xmm3, 24(%rdi)")
    EMU_ST_CASE(vex2, "vmovdqu %ymm1, 32(%rdi)")
    EMU_ST_CASE(vex3, "vmovdqu %ymm1, -32(%r10,%r11)")
    EMU_ST_CASE(evex64, "vmovdqu64 %zmm2, 0x40(%rdi)")
    EMU_ST_CASE(evexsib, "vmovdqu64 %zmm17, -0x40(%r8,%r12,2)")
    EMU_ST_CASE(evex256, "vmovdqu8 %ymm16, 0x20(%rdi)")
    EMU_ST_CASE(evexq, "vmovq %xmm20, 8(%rdi)")
    EMU_ST_CASE(evexss, "vmovss %xmm21, 12(%rdi)")
    EMU_ST_CASE(evexbig, "vmovdqu64 %zmm2, 0x1000(%rdi)")
    EMU_ST_CASE(fs, "movq %rax, %fs:0x10")
    EMU_ST_CASE(addr32, "movl %eax, 4(%edi)")
    /* not stores */
    EMU_ST_CASE(load, "movq (%rdi), %rax")
    EMU_ST_CASE(movqld, "movq 8(%rdi), %xmm0")
    EMU_ST_CASE(vload, "vmovdqu (%rdi), %ymm0")
    EMU_ST_CASE(regmov, "movq %rax, %rbx")
    EMU_ST_CASE(repmovsb, "rep movsb")
    EMU_ST_CASE(add, "addq %rax, (%rdi)")
    ".popsection\n");
/* clang-format on */

#define EMU_ST_DECL(n)                     \
    extern "C" const uint8_t emu_st_##n[]; \
    extern "C" const uint8_t emu_st_##n##_end[]

EMU_ST_DECL(mov64);
EMU_ST_DECL(movimm);
EMU_ST_DECL(movimm64);
EMU_ST_DECL(movw);
EMU_ST_DECL(movb);
EMU_ST_DECL(sib);
EMU_ST_DECL(sibr12);
EMU_ST_DECL(nobase);
EMU_ST_DECL(rip);
EMU_ST_DECL(movups);
EMU_ST_DECL(movdqu);
EMU_ST_DECL(movnti);
EMU_ST_DECL(movqst);
EMU_ST_DECL(vex2);
EMU_ST_DECL(vex3);
EMU_ST_DECL(evex64);
EMU_ST_DECL(evexsib);
EMU_ST_DECL(evex256);
EMU_ST_DECL(evexq);
EMU_ST_DECL(evexss);
EMU_ST_DECL(evexbig);
EMU_ST_DECL(fs);
EMU_ST_DECL(addr32);
EMU_ST_DECL(load);
EMU_ST_DECL(movqld);
EMU_ST_DECL(vload);
EMU_ST_DECL(regmov);
EMU_ST_DECL(repmovsb);
EMU_ST_DECL(add);

namespace {

class emu_store_test : public ::testing::Test {
protected:
    void SetUp() override
    {
        memset(&m_uc, 0, sizeof(m_uc));
        set(REG_RAX, 0x1111);
        set(REG_RBX, 0x20000);
        set(REG_RCX, 3);
        set(REG_RDX, 64);
        set(REG_RSI, 0x30000);
        set(REG_RDI, 0x1234567800ull);
        set(REG_R8, 0x40000);
        set(REG_R9, 0x50000);
        set(REG_R10, 0x60000);
        set(REG_R11, 0x70);
        set(REG_R12, 0x100);
        set(REG_R13, 0x80000);
    }

    void set(int reg, uint64_t v) { m_uc.uc_mcontext.gregs[reg] = (greg_t)v; }

    uint64_t reg(int r) const { return (uint64_t)m_uc.uc_mcontext.gregs[r]; }

    /* Decodes [begin, end) as a store to addr */
    void expect_store(const uint8_t *begin, const uint8_t *end, uint64_t addr)
    {
        struct emu_store st;

        ASSERT_TRUE(emu_raw_store_decode(begin, &m_uc, &st));
        EXPECT_EQ((unsigned)(end - begin), st.len);
        ASSERT_TRUE(st.has_addr);
        EXPECT_EQ(addr, st.addr);
        /* without a frame: the same length, no address */
        ASSERT_TRUE(emu_raw_store_decode(begin, nullptr, &st));
        EXPECT_EQ((unsigned)(end - begin), st.len);
        EXPECT_FALSE(st.has_addr);
    }

    ucontext_t m_uc;
};

#define EXPECT_STORE(n, addr)                             \
    do {                                                  \
        SCOPED_TRACE(#n);                                 \
        expect_store(emu_st_##n, emu_st_##n##_end, addr); \
    } while (0)

TEST_F(emu_store_test, general_register_stores)
{
    EXPECT_STORE(mov64, reg(REG_RDI));
    EXPECT_STORE(movimm, reg(REG_RDI) + 8);
    EXPECT_STORE(movimm64, reg(REG_RDI) + 0x12345);
    EXPECT_STORE(movw, reg(REG_RDI) + 2);
    EXPECT_STORE(movb, reg(REG_RDI) - 1);
    EXPECT_STORE(movnti, reg(REG_RBX));
}

TEST_F(emu_store_test, addressing_forms)
{
    EXPECT_STORE(sib, reg(REG_RSI) + reg(REG_RCX) * 8 + 0x100);
    /* R12 as an index (SIB index 4 with REX.X), R13 as a base (5 with
     * REX.B: a register, not "no base") */
    EXPECT_STORE(sibr12, reg(REG_R13) + reg(REG_R12) * 4);
    EXPECT_STORE(nobase, reg(REG_RCX) * 2 + 0x1000);
    /* RIP-relative: from the next instruction */
    EXPECT_STORE(rip, (uint64_t)(uintptr_t)emu_st_rip_end + 0x10);
    EXPECT_STORE(addr32, (reg(REG_RDI) + 4) & 0xffffffffu);
}

TEST_F(emu_store_test, vector_stores)
{
    EXPECT_STORE(movups, reg(REG_R9) + 16);
    EXPECT_STORE(movdqu, reg(REG_RDI) + reg(REG_RDX) - 16);
    EXPECT_STORE(movqst, reg(REG_RDI) + 24);
    EXPECT_STORE(vex2, reg(REG_RDI) + 32);
    EXPECT_STORE(vex3, reg(REG_R10) + reg(REG_R11) - 32);
}

/* EVEX scales an 8-bit displacement by what the store moves (disp8*N):
 * 64 for a 512-bit vector, 32 for 256, 8 for vmovq, 4 for vmovss */
TEST_F(emu_store_test, evex_scaled_displacements)
{
    EXPECT_STORE(evex64, reg(REG_RDI) + 0x40);
    EXPECT_STORE(evexsib, reg(REG_R8) + reg(REG_R12) * 2 - 0x40);
    EXPECT_STORE(evex256, reg(REG_RDI) + 0x20);
    EXPECT_STORE(evexq, reg(REG_RDI) + 8);
    EXPECT_STORE(evexss, reg(REG_RDI) + 12);
    EXPECT_STORE(evexbig, reg(REG_RDI) + 0x1000);
    /* the assembler compressed the displacements: 7 bytes, not 10 */
    EXPECT_EQ(7, emu_st_evex64_end - emu_st_evex64);
}

TEST_F(emu_store_test, segment_base_unknown)
{
    struct emu_store st;

    ASSERT_TRUE(emu_raw_store_decode(emu_st_fs, &m_uc, &st));
    EXPECT_EQ((unsigned)(emu_st_fs_end - emu_st_fs), st.len);
    EXPECT_FALSE(st.has_addr);
}

/* Loads, register moves, string moves and read-modify-writes are not
 * stores that may be stepped over: skipping one would lose what it does
 * to registers, flags or memory */
TEST_F(emu_store_test, not_stores_bad_flow)
{
    const uint8_t *const others[] = {emu_st_load,     emu_st_movqld,
                                     emu_st_vload,    emu_st_regmov,
                                     emu_st_repmovsb, emu_st_add};
    struct emu_store st;

    for (const uint8_t *ip : others) {
        EXPECT_FALSE(emu_raw_store_decode(ip, &m_uc, &st))
            << "at byte " << std::hex << (unsigned)ip[0];
    }
}

} // namespace

#endif /* __x86_64__ */
