/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the length of the store instruction that rang a
 * doorbell (emu_raw.h, emu_raw_store_len).
 *
 * A ConnectX's UAR page is write-only MMIO: what software stores there
 * (a doorbell, a BlueFlame copy of a WQE) tells the device to look, and
 * nothing ever reads it back.  The emulation learns everything from the
 * doorbell records and queue memory, written before the UAR store, so a
 * trapped store may be executed by stepping over it: the doorbell's work
 * is done in the faulting thread, and the page stays a trap for the next
 * one (emu_raw.c).  Stepping over needs the instruction's length, which
 * this decodes for the stores that doorbells and BlueFlame copies are
 * made of on x86-64: MOV to memory (88, 89, C6 /0, C7 /0), the SSE and
 * AVX stores of 4 to 64 bytes (0F 11, 13, 17, 29, 2B, 7E, 7F, C3, D6, E7,
 * in legacy, VEX or EVEX encoding: glibc's memcpy uses the last on CPUs
 * with AVX-512), and their prefixes.  Anything else (string moves, an
 * unknown opcode) gives 0, and the caller lets the
 * store complete in place instead.
 */
#include "emu/emu_raw.h"

#include <stdbool.h>
#include <stdint.h>

#define EMU_INSN_MAX 15u /* the architecture's longest instruction */

/* Whether opcode (in map 0F) stores its register operand to memory when
 * its ModRM names memory */
static bool emu_store_0f(uint8_t opcode, bool vex)
{
    switch (opcode) {
    case 0x11: /* movups / movupd / movss / movsd */
    case 0x13: /* movlps / movlpd */
    case 0x17: /* movhps / movhpd */
    case 0x29: /* movaps / movapd */
    case 0x2b: /* movntps / movntpd */
    case 0x7e: /* movd / movq from a vector register */
    case 0x7f: /* movdqa / movdqu / movq from an MMX register */
    case 0xd6: /* movq from the low quadword */
    case 0xe7: /* movntdq / movntq */
        return true;
    case 0xc3: /* movnti: no VEX form */
        return !vex;
    default:
        return false;
    }
}

unsigned emu_raw_store_len(const uint8_t *ip)
{
    const uint8_t *p = ip;
    bool opsize16 = false, vex = false, rep = false;
    unsigned prefixes = 0, imm = 0, disp = 0;
    uint8_t opcode, modrm, mod, rm;
    bool map0f;

    for (;; ++p) {
        switch (*p) {
        case 0x66:
            opsize16 = true;
            break;
        case 0xf2:
        case 0xf3:
            rep = true;
            break;
        case 0x26:
        case 0x2e:
        case 0x36:
        case 0x3e:
        case 0x64:
        case 0x65:
        case 0x67: /* 32-bit addresses: the same ModRM and SIB forms */
            break;
        default:
            goto prefixes_done;
        }
        if (++prefixes > 4) {
            return 0;
        }
    }
prefixes_done:
    if ((*p & 0xf0) == 0x40) { /* REX */
        ++p;
    }
    if (*p == 0xc5) { /* two-byte VEX: map 0F */
        vex   = true;
        map0f = true;
        p += 2;
    } else if (*p == 0xc4) { /* three-byte VEX: its map field */
        vex   = true;
        map0f = ((p[1] & 0x1f) == 1);
        if (!map0f) {
            return 0;
        }
        p += 3;
    } else if (*p == 0x62) { /* EVEX (no BOUND in 64-bit mode): its map */
        vex   = true;
        map0f = ((p[1] & 0x07) == 1);
        if (!map0f) {
            return 0;
        }
        p += 4;
    } else if (*p == 0x0f) {
        map0f = true;
        ++p;
    } else {
        map0f = false;
    }
    opcode = *p++;

    if (map0f) {
        if (!emu_store_0f(opcode, vex)) {
            return 0;
        }
    } else if (rep) {
        return 0; /* a string operation, or no store */
    } else if ((opcode == 0xc6) || (opcode == 0xc7)) {
        imm = (opcode == 0xc6) ? 1 : (opsize16 ? 2 : 4);
    } else if ((opcode != 0x88) && (opcode != 0x89)) {
        return 0;
    }

    modrm = *p++;
    mod   = modrm >> 6;
    rm    = modrm & 7;
    if ((mod == 3) || ((imm != 0) && (((modrm >> 3) & 7) != 0))) {
        return 0; /* a register destination, or not a MOV */
    }
    if (rm == 4) { /* SIB; base 5 with mod 0: a 32-bit displacement */
        if ((mod == 0) && ((*p & 7) == 5)) {
            disp = 4;
        }
        ++p;
    } else if ((mod == 0) && (rm == 5)) {
        disp = 4; /* RIP-relative */
    }
    if (mod == 1) {
        disp = 1;
    } else if (mod == 2) {
        disp = 4;
    }
    p += disp + imm;
    return ((unsigned)(p - ip) <= EMU_INSN_MAX) ? (unsigned)(p - ip) : 0;
}
