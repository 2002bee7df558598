/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the pure helpers of libibverbs (names of enum values,
 * link-rate conversions) and the log line of entry points that are not
 * modelled (emu_unsup.h).
 */
#include "emu/emu.h"
#include "emu/emu_unsup.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#define EMU_ARRAY_LEN(_a) (sizeof(_a) / sizeof((_a)[0]))

/* A warning, not an error: programs probe optional features this way
 * (UCX's ib module asks for DEVX objects, for instance). */
void dcx_emu_unsup(const char *name, const char *version)
{
    emu_warn("%s%s%s is not modelled by the emulation; failing the call", name,
             (version != NULL) ? "@" : "", (version != NULL) ? version : "");
}

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
    static const char *const names[] = {
        [IBV_WC_SUCCESS]        = "success",
        [IBV_WC_LOC_LEN_ERR]    = "local length error (receive too small)",
        [IBV_WC_LOC_QP_OP_ERR]  = "local QP operation error (bad WQE)",
        [IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
        [IBV_WC_LOC_PROT_ERR]   = "local protection error (lkey or access)",
        [IBV_WC_WR_FLUSH_ERR]   = "work request flushed (QP in error)",
        [IBV_WC_MW_BIND_ERR]    = "memory window bind error",
        [IBV_WC_BAD_RESP_ERR]   = "unexpected response from the target",
        [IBV_WC_LOC_ACCESS_ERR] =
            "local access error (protection at the target)",
        [IBV_WC_REM_INV_REQ_ERR] = "remote invalid request (NAK)",
        [IBV_WC_REM_ACCESS_ERR] = "remote access error (rkey, bounds or rights)",
        [IBV_WC_REM_OP_ERR]     = "remote operation error (target failed)",
        [IBV_WC_RETRY_EXC_ERR]  = "transport retries exhausted (no answer)",
        [IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retries exhausted (no receive posted)",
        [IBV_WC_LOC_RDD_VIOL_ERR]  = "local RDD violation",
        [IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
        [IBV_WC_REM_ABORT_ERR]      = "operation aborted at the target",
        [IBV_WC_INV_EECN_ERR]       = "invalid EE context number",
        [IBV_WC_INV_EEC_STATE_ERR]  = "invalid EE context state",
        [IBV_WC_FATAL_ERR]          = "fatal error",
        [IBV_WC_RESP_TIMEOUT_ERR]   = "response timeout",
        [IBV_WC_GENERAL_ERR]        = "general error",
        [IBV_WC_TM_ERR]             = "tag-matching error",
        [IBV_WC_TM_RNDV_INCOMPLETE] = "rendezvous left to software"};

    if (((unsigned)status >= EMU_ARRAY_LEN(names)) || (names[status] == NULL)) {
        return "unknown";
    }
    return names[status];
}

const char *ibv_node_type_str(enum ibv_node_type node_type)
{
    static const char *const names[] = {
        [IBV_NODE_CA]          = "InfiniBand channel adapter",
        [IBV_NODE_SWITCH]      = "InfiniBand switch",
        [IBV_NODE_ROUTER]      = "InfiniBand router",
        [IBV_NODE_RNIC]        = "iWARP NIC",
        [IBV_NODE_USNIC]       = "usNIC",
        [IBV_NODE_USNIC_UDP]   = "usNIC UDP",
        [IBV_NODE_UNSPECIFIED] = "unspecified"};

    if (((unsigned)node_type >= EMU_ARRAY_LEN(names)) ||
        (names[node_type] == NULL)) {
        return "unknown";
    }
    return names[node_type];
}

const char *ibv_port_state_str(enum ibv_port_state port_state)
{
    static const char *const names[] = {
        [IBV_PORT_NOP] = "NOP",       [IBV_PORT_DOWN] = "down",
        [IBV_PORT_INIT] = "init",     [IBV_PORT_ARMED] = "armed",
        [IBV_PORT_ACTIVE] = "active", [IBV_PORT_ACTIVE_DEFER] = "active defer"};

    if ((unsigned)port_state >= EMU_ARRAY_LEN(names)) {
        return "unknown";
    }
    return names[port_state];
}

const char *ibv_event_type_str(enum ibv_event_type event)
{
    static const char *const names[] = {
        [IBV_EVENT_CQ_ERR]              = "CQ error",
        [IBV_EVENT_QP_FATAL]            = "QP fatal error",
        [IBV_EVENT_QP_REQ_ERR]          = "QP requester error",
        [IBV_EVENT_QP_ACCESS_ERR]       = "QP access error",
        [IBV_EVENT_COMM_EST]            = "communication established",
        [IBV_EVENT_SQ_DRAINED]          = "send queue drained",
        [IBV_EVENT_PATH_MIG]            = "path migrated",
        [IBV_EVENT_PATH_MIG_ERR]        = "path migration error",
        [IBV_EVENT_DEVICE_FATAL]        = "device fatal error",
        [IBV_EVENT_PORT_ACTIVE]         = "port active",
        [IBV_EVENT_PORT_ERR]            = "port error",
        [IBV_EVENT_LID_CHANGE]          = "LID change",
        [IBV_EVENT_PKEY_CHANGE]         = "P_Key change",
        [IBV_EVENT_SM_CHANGE]           = "SM change",
        [IBV_EVENT_SRQ_ERR]             = "SRQ error",
        [IBV_EVENT_SRQ_LIMIT_REACHED]   = "SRQ limit reached",
        [IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
        [IBV_EVENT_CLIENT_REREGISTER]   = "client reregister request",
        [IBV_EVENT_GID_CHANGE]          = "GID table change",
        [IBV_EVENT_WQ_FATAL]            = "WQ fatal"};

    if ((unsigned)event >= EMU_ARRAY_LEN(names)) {
        return "unknown";
    }
    return names[event];
}

/* Link rates: the enum value, its multiple of 2.5 Gb/s (0 where it is not
 * one) and its Mb/s. */
static const struct {
    enum ibv_rate rate;
    int mult;
    int mbps;
} emu_rates[] = {
    {IBV_RATE_2_5_GBPS, 1, 2500},      {IBV_RATE_5_GBPS, 2, 5000},
    {IBV_RATE_10_GBPS, 4, 10000},      {IBV_RATE_20_GBPS, 8, 20000},
    {IBV_RATE_30_GBPS, 12, 30000},     {IBV_RATE_40_GBPS, 16, 40000},
    {IBV_RATE_60_GBPS, 24, 60000},     {IBV_RATE_80_GBPS, 32, 80000},
    {IBV_RATE_120_GBPS, 48, 120000},   {IBV_RATE_14_GBPS, 0, 14062},
    {IBV_RATE_56_GBPS, 0, 56250},      {IBV_RATE_112_GBPS, 0, 112500},
    {IBV_RATE_168_GBPS, 0, 168750},    {IBV_RATE_25_GBPS, 10, 25781},
    {IBV_RATE_100_GBPS, 40, 103125},   {IBV_RATE_200_GBPS, 80, 206250},
    {IBV_RATE_300_GBPS, 120, 309375},  {IBV_RATE_28_GBPS, 11, 28125},
    {IBV_RATE_50_GBPS, 20, 53125},     {IBV_RATE_400_GBPS, 160, 425000},
    {IBV_RATE_600_GBPS, 240, 637500},  {IBV_RATE_800_GBPS, 320, 850000},
    {IBV_RATE_1200_GBPS, 480, 1275000}};

int ibv_rate_to_mult(enum ibv_rate rate)
{
    unsigned i;

    for (i = 0; i < EMU_ARRAY_LEN(emu_rates); ++i) {
        if (emu_rates[i].rate == rate) {
            return (emu_rates[i].mult != 0) ? emu_rates[i].mult : -1;
        }
    }
    return -1;
}

enum ibv_rate mult_to_ibv_rate(int mult)
{
    unsigned i;

    for (i = 0; i < EMU_ARRAY_LEN(emu_rates); ++i) {
        if ((emu_rates[i].mult != 0) && (emu_rates[i].mult == mult)) {
            return emu_rates[i].rate;
        }
    }
    return IBV_RATE_MAX;
}

int ibv_rate_to_mbps(enum ibv_rate rate)
{
    unsigned i;

    for (i = 0; i < EMU_ARRAY_LEN(emu_rates); ++i) {
        if (emu_rates[i].rate == rate) {
            return emu_rates[i].mbps;
        }
    }
    return -1;
}

enum ibv_rate mbps_to_ibv_rate(int mbps)
{
    unsigned i;

    for (i = 0; i < EMU_ARRAY_LEN(emu_rates); ++i) {
        if (emu_rates[i].mbps == mbps) {
            return emu_rates[i].rate;
        }
    }
    return IBV_RATE_MAX;
}

/* sysfs helpers: the system's sysfs is where rdma-core says it is; the
 * emulated devices' attribute files are under their dev_path and
 * ibdev_path (emu_sysfs.c), which ibv_read_sysfs_file reads as any
 * directory, an absent file failing as open fails (-1, errno). */
const char *ibv_get_sysfs_path(void)
{
    return "/sys";
}

int ibv_read_sysfs_file(const char *dir, const char *file, char *buf,
                        size_t size)
{
    char path[512];
    ssize_t n;
    int fd;

    if ((size == 0) || (snprintf(path, sizeof(path), "%s/%s", dir, file) >=
                        (int)sizeof(path))) {
        errno = EINVAL;
        return -1;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return -1;
    }
    n = read(fd, buf, size);
    close(fd);
    if (n < 0) {
        return -1;
    }
    if ((n > 0) && (buf[n - 1] == '\n')) {
        --n;
    }
    if ((size_t)n < size) {
        buf[n] = '\0';
    } else {
        buf[size - 1] = '\0';
    }
    return (int)n;
}
