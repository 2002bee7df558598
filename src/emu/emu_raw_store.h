/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the store instructions a doorbell's trap steps over
 * (emu_raw_store.c).  On its own, with no other part of the emulation,
 * so that its decoding can be checked instruction by instruction.
 */
#ifndef DCX_EMU_RAW_STORE_H_
#define DCX_EMU_RAW_STORE_H_

#include <stdbool.h>
#include <stdint.h>
#include <ucontext.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A store instruction, as emu_raw_store_decode finds it */
struct emu_store {
    unsigned len;  /* its length in bytes */
    bool has_addr; /* addr is known */
    uint64_t addr; /* the first byte it writes */
};

/* Whether the instruction at ip is a store of the kinds doorbells and
 * BlueFlame copies are made of, which the engine may step over; if so,
 * its length in st, and with uc (the frame of a signal the thread took
 * at ip, or NULL) the address it writes where the frame's registers
 * tell it (not through FS or GS) */
bool emu_raw_store_decode(const uint8_t *ip, const ucontext_t *uc,
                          struct emu_store *st);

#ifdef __cplusplus
}
#endif

#endif
