/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test shim for the load-time check: preloaded before libuct_dcx.so, it
 * shadows libuct's uct_base_iface_t class object with one of another size,
 * as a UCX built with other options would export.  Only for programs that
 * create no interface (libuct itself sees the fake class too).
 */
#include <stddef.h>

struct dcx_fake_class {
    const char *name;
    size_t size;
    void *superclass;
    void *init;
    void *cleanup;
};

struct dcx_fake_class uct_base_iface_t_class = {"uct_base_iface_t", 1234, NULL,
                                                NULL, NULL};
