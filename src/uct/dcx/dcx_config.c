/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport: validation of the interface configuration (UCX_DCX_*).
 *
 * Every knob is checked once, when an interface is opened, against the
 * range the transport and the device accept; a bad value is refused with one
 * error line naming the variable and that range.  Numbers are parsed
 * strictly (decimal digits only: no sign, no fraction, no trailing
 * characters, no overflow), so that "-1", "1x" or "0.5" never turn into some
 * other valid number.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx.h"

#include <ucs/sys/string.h>
#include <ucs/debug/log.h>
#include <ucs/sys/math.h>
#include <ucs/time/time.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>


/* ---------------------------------------------------------------------------
 * Strict number parsers for the configuration table
 * ------------------------------------------------------------------------- */

/* Decimal digits only, at most max.  With no_leading_zero, "007" is refused
 * so that every number has one spelling (a DC key must not alias). */
static int uct_dcx_config_parse_dec(const char *buf, uint64_t max,
                                    int no_leading_zero, uint64_t *value_p)
{
    uint64_t value = 0;
    const char *p;
    unsigned digit;

    if ((buf == NULL) || (buf[0] == '\0')) {
        return 0;
    }
    if (no_leading_zero && (buf[0] == '0') && (buf[1] != '\0')) {
        return 0;
    }

    for (p = buf; *p != '\0'; ++p) {
        if ((*p < '0') || (*p > '9')) {
            return 0;
        }
        digit = *p - '0';
        if (value > (max - digit) / 10) {
            return 0; /* overflow */
        }
        value = (value * 10) + digit;
    }

    *value_p = value;
    return 1;
}

int uct_dcx_config_sscanf_count(const char *buf, void *dest, const void *arg)
{
    uint64_t value;

    if (!uct_dcx_config_parse_dec(buf, UINT_MAX, 0, &value)) {
        return 0;
    }
    *(unsigned *)dest = value;
    return 1;
}

int uct_dcx_config_sprintf_count(char *buf, size_t max, const void *src,
                                 const void *arg)
{
    return snprintf(buf, max, "%u", *(const unsigned *)src);
}

/* A count, or "inf" (stored as UINT_MAX) */
int uct_dcx_config_sscanf_count_inf(const char *buf, void *dest,
                                    const void *arg)
{
    if (!strcasecmp(buf, UCS_NUMERIC_INF_STR)) {
        *(unsigned *)dest = UINT_MAX;
        return 1;
    }
    if (!uct_dcx_config_sscanf_count(buf, dest, arg)) {
        return 0;
    }
    /* UINT_MAX itself stands for "inf" */
    return *(unsigned *)dest != UINT_MAX;
}

int uct_dcx_config_sprintf_count_inf(char *buf, size_t max, const void *src,
                                     const void *arg)
{
    if (*(const unsigned *)src == UINT_MAX) {
        return snprintf(buf, max, UCS_NUMERIC_INF_STR);
    }
    return uct_dcx_config_sprintf_count(buf, max, src, arg);
}

int uct_dcx_config_sscanf_dc_key(const char *buf, void *dest, const void *arg)
{
    uint64_t value;

    if (!uct_dcx_config_parse_dec(buf, UINT64_MAX, 1, &value)) {
        return 0;
    }
    *(unsigned long *)dest = value;
    return 1;
}

int uct_dcx_config_sprintf_dc_key(char *buf, size_t max, const void *src,
                                  const void *arg)
{
    return snprintf(buf, max, "%lu", *(const unsigned long *)src);
}

/* A soft device limit: "auto" (the device default) or a count */
int uct_dcx_config_sscanf_limit(const char *buf, void *dest, const void *arg)
{
    uint64_t value;

    if (!strcasecmp(buf, UCS_VALUE_AUTO_STR)) {
        *(unsigned long *)dest = UCS_ULUNITS_AUTO;
        return 1;
    }
    /* the special values above UINT32_MAX are not numbers */
    if (!uct_dcx_config_parse_dec(buf, UINT32_MAX, 0, &value)) {
        return 0;
    }
    *(unsigned long *)dest = value;
    return 1;
}

int uct_dcx_config_sprintf_limit(char *buf, size_t max, const void *src,
                                 const void *arg)
{
    unsigned long value = *(const unsigned long *)src;

    if (value == UCS_ULUNITS_AUTO) {
        return snprintf(buf, max, UCS_VALUE_AUTO_STR);
    }
    return snprintf(buf, max, "%lu", value);
}


/* ---------------------------------------------------------------------------
 * Timers in verbs encoding
 * ------------------------------------------------------------------------- */

#define UCT_DCX_TIMEOUT_UNIT  4.096e-6 /* seconds: timeout = unit * 2^n */
#define UCT_DCX_TIMEOUT_MAX_N 31

/* 4.096us * 2^n with n >= 1: 0 would ask the device for its default */
uint8_t uct_dcx_timeout_exp_of(double seconds)
{
    double t  = UCT_DCX_TIMEOUT_UNIT * 2;
    uint8_t n = 1;

    while ((t < seconds) && (n < UCT_DCX_TIMEOUT_MAX_N)) {
        t *= 2;
        n++;
    }
    return n;
}

/* Delays of the verbs minimum RNR NAK timer codes, in ms (code 0 is 655.36
 * ms in verbs but "device default" in the device layer: never produced) */
static const double uct_dcx_rnr_timer_ms[32] = {
    655.36, 0.01,  0.02,  0.03,   0.04,   0.06,   0.08,   0.12,
    0.16,   0.24,  0.32,  0.48,   0.64,   0.96,   1.28,   1.92,
    2.56,   3.84,  5.12,  7.68,   10.24,  15.36,  20.48,  30.72,
    40.96,  61.44, 81.92, 122.88, 163.84, 245.76, 327.68, 491.52};

/* The smallest code whose delay is at least the one asked for (the caller
 * checked that one exists) */
uint8_t uct_dcx_rnr_timer_of(double seconds)
{
    uint8_t code;

    for (code = 1; code < 31; ++code) {
        if (uct_dcx_rnr_timer_ms[code] * 1e-3 >= seconds) {
            return code;
        }
    }
    return 31;
}


/* ---------------------------------------------------------------------------
 * Range checks
 * ------------------------------------------------------------------------- */

static UCS_F_NOINLINE ucs_status_t uct_dcx_config_bad_count(const char *dev,
                                                            const char *var,
                                                            unsigned long value,
                                                            unsigned long min,
                                                            unsigned long max)
{
    ucs_error("dcx: %s: UCX_DCX_%s=%lu is out of range [%lu, %lu]", dev, var,
              value, min, max);
    return UCS_ERR_INVALID_PARAM;
}

static ucs_status_t uct_dcx_config_check_count(const char *dev, const char *var,
                                               unsigned long value,
                                               unsigned long min,
                                               unsigned long max)
{
    if ((value < min) || (value > max)) {
        return uct_dcx_config_bad_count(dev, var, value, min, max);
    }
    return UCS_OK;
}

static ucs_status_t uct_dcx_config_check_time(const char *dev, const char *var,
                                              double seconds, double max)
{
    /* NaN fails every comparison: refused too */
    if (!(seconds > 0) || !(seconds <= max)) {
        ucs_error("dcx: %s: UCX_DCX_%s=%g s is out of range (0, %g s]", dev,
                  var, seconds, max);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}

unsigned uct_dcx_config_dci_total(const uct_dcx_iface_config_t *config)
{
    /* the data DCIs, the control DCI, and hybrid's shared DCI */
    return uct_dcx_pool_size(config) + 1 +
           (config->policy == UCT_DCX_POLICY_HYBRID);
}

ucs_status_t uct_dcx_iface_check_config(const uct_dcx_iface_config_t *config,
                                        const dcx_dev_caps_t *caps,
                                        const char *dev)
{
    const unsigned long extra = uct_dcx_config_dci_total(config) -
                                uct_dcx_pool_size(config);
    const unsigned long max_dci = ucs_min(UCT_DCX_MAX_DCI - extra,
                                          caps->max_dci - extra);
    const unsigned long max_sq  = ucs_min((unsigned long)UINT16_MAX,
                                          caps->max_qp_wr);
    const unsigned long max_seg = ucs_min((uint64_t)UINT32_MAX,
                                          caps->max_msg_size);
    const struct {
        const char *var;
        unsigned long value, min, max;
    } counts[] = {
        {"NUM_DCI", config->num_dci, 1, max_dci},
        {"NUM_DCI_STREAMS", config->num_dci_streams, 1, UCT_DCX_MAX_DCI - 1ul},
        {"QUOTA", config->quota, 1, INT16_MAX},
        {"TX_QUEUE_LEN", config->tx_queue_len, 2, max_sq},
        {"RX_QUEUE_LEN", config->rx_queue_len, 2,
         ucs_min(caps->max_srq_wr, caps->max_cqe)},
        {"SEG_SIZE", config->seg_size, 256, max_seg},
        {"TM_SEG_SIZE",
         (config->tm_seg_size == UCS_MEMUNITS_AUTO) ? 256 : config->tm_seg_size,
         256, max_seg},
        {"TM_MIN_RECV",
         (config->tm_min_recv == UCS_MEMUNITS_AUTO) ? 0 : config->tm_min_recv,
         0, max_seg},
        {"FC_WND", config->fc_wnd, 1, INT16_MAX},
        {"RETRY_COUNT", config->retry_count, 0, 7},
        {"RNR_RETRY_COUNT", config->rnr_retry, 0, 7},
        {"SIGNAL_PERIOD", config->sig_period, 0, UINT16_MAX},
        {"TX_MAX_BUFS", config->tx_max_bufs, 1, UINT_MAX},
        {"STRIDED_KEYS", config->strided_keys, 0, UCT_DCX_SKEYS_MAX},
        {"STRIDED_SGE_MAX", config->strided_sge_max, 0, UCT_DCX_MAX_SGE}};
    ucs_status_t status;
    unsigned i;

    if (caps->max_sge < 3) {
        ucs_error("dcx: %s: the device takes %u sges per work request, dcx "
                  "needs at least 3",
                  dev, caps->max_sge);
        return UCS_ERR_UNSUPPORTED;
    }
    if (!(caps->flags & DCX_CAP_DC)) {
        ucs_error("dcx: %s: the device has no DC support", dev);
        return UCS_ERR_UNSUPPORTED;
    }

    for (i = 0; i < ucs_static_array_size(counts); ++i) {
        status = uct_dcx_config_check_count(dev, counts[i].var, counts[i].value,
                                            counts[i].min, counts[i].max);
        if (status != UCS_OK) {
            return status;
        }
    }

    if ((config->strided_key_entries != 0) &&
        ((config->strided_key_entries < 2) ||
         (config->strided_key_entries > caps->mkey_max_entries))) {
        ucs_error("dcx: %s: UCX_DCX_STRIDED_KEY_ENTRIES=%u: 0 (the device's "
                  "maximum) or 2 .. %u",
                  dev, config->strided_key_entries, caps->mkey_max_entries);
        return UCS_ERR_INVALID_PARAM;
    }

    if (config->policy == UCT_DCX_POLICY_STREAMS) {
        if (!(caps->flags & DCX_CAP_DCI_STREAMS)) {
            ucs_error("dcx: %s: UCX_DCX_DCI_POLICY=streams: the device has no "
                      "DCI streams",
                      dev);
            return UCS_ERR_UNSUPPORTED;
        }
        if (config->num_dci_streams > (1ul << caps->dci_streams_log_max)) {
            ucs_error("dcx: %s: UCX_DCX_NUM_DCI_STREAMS=%u: the device has at "
                      "most %lu streams per DCI",
                      dev, config->num_dci_streams,
                      1ul << caps->dci_streams_log_max);
            return UCS_ERR_INVALID_PARAM;
        }
    }

    /* one send CQ serves every DCI's whole send queue */
    if ((unsigned long)uct_dcx_config_dci_total(config) * config->tx_queue_len >
        caps->max_cqe) {
        ucs_error("dcx: %s: (UCX_DCX_NUM_DCI%s + %lu) * UCX_DCX_TX_QUEUE_LEN = "
                  "(%u + %lu) * %u is more than the %u completions of a CQ",
                  dev,
                  (config->policy == UCT_DCX_POLICY_STREAMS) ? "_STREAMS" : "",
                  extra, uct_dcx_pool_size(config), extra, config->tx_queue_len,
                  caps->max_cqe);
        return UCS_ERR_INVALID_PARAM;
    }

    if ((config->dci_idle_timeout == 0) ||
        (config->dci_idle_timeout == UCS_TIME_AUTO)) {
        ucs_error("dcx: %s: UCX_DCX_DCI_IDLE_TIMEOUT must be a time above 0 "
                  "or \"inf\"",
                  dev);
        return UCS_ERR_INVALID_PARAM;
    }

    status = uct_dcx_config_check_time(dev, "TIMEOUT", config->timeout,
                                       UCT_DCX_TIMEOUT_UNIT *
                                           (double)(1ul
                                                    << UCT_DCX_TIMEOUT_MAX_N));
    if (status != UCS_OK) {
        return status;
    }

    status = uct_dcx_config_check_time(dev, "FC_REQ_TIMEOUT",
                                       config->fc_req_timeout, 3600.0);
    if (status != UCS_OK) {
        return status;
    }

    status = uct_dcx_config_check_time(dev, "RNR_TIMER", config->rnr_timer,
                                       uct_dcx_rnr_timer_ms[31] * 1e-3);
    if (status != UCS_OK) {
        return status;
    }

    /* 0 is allowed: arm at once (NaN fails both comparisons: refused) */
    if (!(config->arm_poll >= 0) || !(config->arm_poll <= 1.0)) {
        ucs_error("dcx: %s: UCX_DCX_ARM_POLL=%g s is out of range [0, 1 s]",
                  dev, config->arm_poll);
        return UCS_ERR_INVALID_PARAM;
    }
    return UCS_OK;
}
