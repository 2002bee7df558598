/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Entry points of the real libraries that the emulation does not model
 * (emu_unsup_verbs.c, emu_unsup_mlx5.c, both written by
 * contrib/emu-symbols.py).  Each exists under the name and version node the
 * real library gives it, so that any program linked against rdma-core 44
 * loads, and each call logs one line naming the entry point and fails the
 * way its API reports failure:
 *   PTR:  NULL with errno EOPNOTSUPP
 *   INT:  EOPNOTSUPP (errno set too)
 *   NEG:  -1 with errno EOPNOTSUPP
 *   ZERO: 0 with errno EOPNOTSUPP (values that have no error encoding)
 *   VOID: nothing
 * These files include no rdma-core header: the arguments are not read, and
 * on x86-64 a function returning a pointer or an integer in a register may
 * be defined without its parameters.
 */
#ifndef DCX_EMU_UNSUP_H_
#define DCX_EMU_UNSUP_H_

#include <errno.h>
#include <stddef.h>

void dcx_emu_unsup(const char *name, const char *version);

#define EMU_UNSUP_PTR(_name)         \
    void *_name(void);               \
    void *_name(void)                \
    {                                \
        dcx_emu_unsup(#_name, NULL); \
        errno = EOPNOTSUPP;          \
        return NULL;                 \
    }

#define EMU_UNSUP_INT(_name)         \
    int _name(void);                 \
    int _name(void)                  \
    {                                \
        dcx_emu_unsup(#_name, NULL); \
        errno = EOPNOTSUPP;          \
        return EOPNOTSUPP;           \
    }

#define EMU_UNSUP_NEG(_name)         \
    long _name(void);                \
    long _name(void)                 \
    {                                \
        dcx_emu_unsup(#_name, NULL); \
        errno = EOPNOTSUPP;          \
        return -1;                   \
    }

#define EMU_UNSUP_ZERO(_name)        \
    long _name(void);                \
    long _name(void)                 \
    {                                \
        dcx_emu_unsup(#_name, NULL); \
        errno = EOPNOTSUPP;          \
        return 0;                    \
    }

#define EMU_UNSUP_VOID(_name)        \
    void _name(void);                \
    void _name(void)                 \
    {                                \
        dcx_emu_unsup(#_name, NULL); \
    }

/* A non-default version (name@node): an internal name carries the body */
#define EMU_UNSUP_COMPAT_(_kind, _name, _tag, _node)        \
    EMU_UNSUP_##_kind(emu_compat_##_name##_##_tag) __asm__( \
        ".symver emu_compat_" #_name "_" #_tag ", " #_name "@" #_node);

#define EMU_UNSUP_COMPAT_PTR(_n, _t, _v)  EMU_UNSUP_COMPAT_(PTR, _n, _t, _v)
#define EMU_UNSUP_COMPAT_INT(_n, _t, _v)  EMU_UNSUP_COMPAT_(INT, _n, _t, _v)
#define EMU_UNSUP_COMPAT_NEG(_n, _t, _v)  EMU_UNSUP_COMPAT_(NEG, _n, _t, _v)
#define EMU_UNSUP_COMPAT_ZERO(_n, _t, _v) EMU_UNSUP_COMPAT_(ZERO, _n, _t, _v)
#define EMU_UNSUP_COMPAT_VOID(_n, _t, _v) EMU_UNSUP_COMPAT_(VOID, _n, _t, _v)

#endif /* DCX_EMU_UNSUP_H_ */
