/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test shim for the load-time check: a UCP that reports another UCX
 * version than the one libuct_dcx.so was built for.
 */
void ucp_get_version(unsigned *major, unsigned *minor, unsigned *release);

void ucp_get_version(unsigned *major, unsigned *minor, unsigned *release)
{
    *major   = 1;
    *minor   = 14;
    *release = 0;
}
