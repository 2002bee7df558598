/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the store instructions that ring a doorbell
 * (emu_raw_store.h).
 *
 * A ConnectX's UAR page is write-only MMIO: what software stores there
 * (a doorbell, a BlueFlame copy of a WQE) tells the device to look, and
 * nothing ever reads it back.  The emulation learns everything from the
 * doorbell records and queue memory, written before the UAR store, so a
 * trapped store may be executed by stepping over it: the doorbell's work
 * is done in the faulting thread, and the page stays a trap for the next
 * one (emu_raw.c).  Stepping over needs the instruction's length, and
 * stepping over the stores that follow it to the same page (the rest of
 * a BlueFlame copy) needs their addresses.  This decodes both for the
 * stores that doorbells and BlueFlame copies are made of on x86-64: MOV
 * to memory (88, 89, C6 /0, C7 /0), the SSE and AVX stores of 4 to 64
 * bytes (0F 11, 13, 17, 29, 2B, 7E, 7F, C3, D6, E7, in legacy, VEX or
 * EVEX encoding: glibc's memcpy uses the last on CPUs with AVX-512), and
 * their prefixes.  None of these writes a register or a flag, which is
 * what makes skipping one exact.  Anything else (string moves, loads, an
 * unknown opcode) is not a store here, and the caller lets it run.
 */
#include "emu/emu_raw_store.h"

#include <stddef.h>

#define EMU_INSN_MAX 15u /* the architecture's longest instruction */

/* Mandatory prefixes, as the pp field of VEX and EVEX names them */
enum {
    EMU_PP_NONE,
    EMU_PP_66,
    EMU_PP_F3,
    EMU_PP_F2
};

/* Whether opcode (in map 0F) with mandatory prefix pp stores its
 * register operand to memory when its ModRM names memory */
static bool emu_store_0f(uint8_t opcode, unsigned pp, bool vex)
{
    switch (opcode) {
    case 0x11: /* movups / movupd / movss / movsd */
    case 0x13: /* movlps / movlpd */
    case 0x17: /* movhps / movhpd */
    case 0x29: /* movaps / movapd */
    case 0x2b: /* movntps / movntpd */
    case 0x7f: /* movdqa / movdqu / movq from an MMX register */
    case 0xd6: /* movq from the low quadword */
    case 0xe7: /* movntdq / movntq */
        return true;
    case 0x7e: /* movd / movq from a register; with F3 a load */
        return pp != EMU_PP_F3;
    case 0xc3: /* movnti: no VEX form */
        return !vex;
    default:
        return false;
    }
}

/* The factor of an EVEX 8-bit displacement (disp8*N): the bytes the
 * store moves, for the tuple types of the stores above */
static unsigned emu_evex_disp_n(uint8_t opcode, unsigned pp, bool w,
                                unsigned vl)
{
    switch (opcode) {
    case 0x11:
        return (pp == EMU_PP_F3) ? 4 : (pp == EMU_PP_F2) ? 8 : vl;
    case 0x13:
    case 0x17:
    case 0xd6:
        return 8;
    case 0x7e:
        return w ? 8 : 4;
    default:
        return vl;
    }
}

/* The value of general register reg (0-15, as encodings number them) in
 * a signal frame */
static uint64_t emu_greg(const ucontext_t *uc, unsigned reg)
{
#if defined(__x86_64__)
    static const uint8_t slot[16] = {
        REG_RAX, REG_RCX, REG_RDX, REG_RBX, REG_RSP, REG_RBP, REG_RSI, REG_RDI,
        REG_R8,  REG_R9,  REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15,
    };

    return (uint64_t)uc->uc_mcontext.gregs[slot[reg & 15]];
#else
    (void)uc;
    (void)reg;
    return 0;
#endif
}

static int32_t emu_disp(const uint8_t *p, unsigned len)
{
    int32_t d;

    if (len == 1) {
        return (int8_t)*p;
    }
    d = (int32_t)((uint32_t)p[0] | ((uint32_t)p[1] << 8) |
                  ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24));
    return d;
}

bool emu_raw_store_decode(const uint8_t *ip, const ucontext_t *uc,
                          struct emu_store *st)
{
    const uint8_t *p = ip, *dp;
    bool vex = false, evex = false, rep = false, addr32 = false;
    bool seg = false, w = false, sib_none = false;
    unsigned prefixes = 0, imm = 0, disp = 0, pp = EMU_PP_NONE;
    unsigned rx = 0, rb = 0, vl = 16, base, index = 4, scale = 0;
    uint8_t opcode, modrm, mod, rm, sib = 0;
    uint64_t addr = 0;
    bool map0f;

    for (;; ++p) {
        switch (*p) {
        case 0x66: /* F2 and F3 take precedence as mandatory prefixes */
            pp = (pp == EMU_PP_NONE) ? EMU_PP_66 : pp;
            break;
        case 0xf2:
        case 0xf3:
            rep = true;
            pp  = (*p == 0xf3) ? EMU_PP_F3 : EMU_PP_F2;
            break;
        case 0x26:
        case 0x2e:
        case 0x36:
        case 0x3e: /* ignored in 64-bit mode */
            break;
        case 0x64:
        case 0x65: /* FS or GS: a base this does not know */
            seg = true;
            break;
        case 0x67: /* 32-bit addresses: the same ModRM and SIB forms */
            addr32 = true;
            break;
        default:
            goto prefixes_done;
        }
        if (++prefixes > 4) {
            return false;
        }
    }
prefixes_done:
    if ((*p & 0xf0) == 0x40) { /* REX: W R X B */
        w  = (*p & 8) != 0;
        rx = (*p >> 1) & 1;
        rb = *p & 1;
        ++p;
    }
    if (*p == 0xc5) { /* two-byte VEX: map 0F, no X or B */
        vex   = true;
        map0f = true;
        pp    = p[1] & 3;
        vl    = (p[1] & 4) ? 32 : 16;
        p += 2;
    } else if (*p == 0xc4) { /* three-byte VEX: its map field */
        vex   = true;
        map0f = ((p[1] & 0x1f) == 1);
        rx    = !(p[1] & 0x40);
        rb    = !(p[1] & 0x20);
        w     = (p[2] & 0x80) != 0;
        pp    = p[2] & 3;
        vl    = (p[2] & 4) ? 32 : 16;
        p += 3;
    } else if (*p == 0x62) { /* EVEX (no BOUND in 64-bit mode): its map */
        vex   = true;
        evex  = true;
        map0f = ((p[1] & 0x07) == 1);
        rx    = !(p[1] & 0x40);
        rb    = !(p[1] & 0x20);
        w     = (p[2] & 0x80) != 0;
        pp    = p[2] & 3;
        vl    = 16u << ((p[3] >> 5) & 3);
        p += 4;
    } else if (*p == 0x0f) {
        map0f = true;
        ++p;
    } else {
        map0f = false;
    }
    if (!map0f && vex) {
        return false;
    }
    opcode = *p++;

    if (map0f) {
        if (!emu_store_0f(opcode, pp, vex)) {
            return false;
        }
    } else if (rep) {
        return false; /* a string operation, or no store */
    } else if ((opcode == 0xc6) || (opcode == 0xc7)) {
        imm = (opcode == 0xc6) ? 1 : ((pp == EMU_PP_66) && !w) ? 2 : 4;
    } else if ((opcode != 0x88) && (opcode != 0x89)) {
        return false;
    }

    modrm = *p++;
    mod   = modrm >> 6;
    rm    = modrm & 7;
    if ((mod == 3) || ((imm != 0) && (((modrm >> 3) & 7) != 0))) {
        return false; /* a register destination, or not a MOV */
    }
    base = rm | (rb << 3);
    if (rm == 4) { /* SIB; base 5 with mod 0: a 32-bit displacement */
        sib   = *p++;
        scale = sib >> 6;
        index = ((sib >> 3) & 7) | (rx << 3);
        base  = (sib & 7) | (rb << 3);
        if ((mod == 0) && ((sib & 7) == 5)) {
            disp     = 4;
            sib_none = true;
        }
    } else if ((mod == 0) && (rm == 5)) {
        disp = 4; /* RIP-relative */
    }
    if (mod == 1) {
        disp = 1;
    } else if (mod == 2) {
        disp = 4;
    }
    dp = p;
    p += disp + imm;
    if ((unsigned)(p - ip) > EMU_INSN_MAX) {
        return false;
    }
    st->len      = (unsigned)(p - ip);
    st->has_addr = (uc != NULL) && !seg;
    if (!st->has_addr) {
        return true;
    }

    if ((rm == 5) && (mod == 0)) {
        addr = (uint64_t)(uintptr_t)p; /* the next instruction's address */
    } else if (!sib_none) {
        addr = emu_greg(uc, base);
    }
    if (index != 4) { /* 4 without REX.X: no index */
        addr += emu_greg(uc, index) << scale;
    }
    if (disp == 1) {
        addr += (uint64_t)(int64_t)emu_disp(dp, 1) *
                (evex ? emu_evex_disp_n(opcode, pp, w, vl) : 1);
    } else if (disp == 4) {
        addr += (uint64_t)(int64_t)emu_disp(dp, 4);
    }
    st->addr = addr32 ? (addr & 0xffffffffu) : addr;
    return true;
}
