/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx memory domain configuration: UCX_DCX_RCACHE and the registration
 * cache's variables, and one variable per knob of the device layer's
 * backends (UCX_DCX_<name>, with the default and help the backend gives).
 *
 * The backends register with the device layer from their constructors,
 * before this module's component constructor runs; that constructor calls
 * uct_dcx_md_config_init() to add the knobs to the table before UCX can
 * read the configuration.  An MD configuration holds each knob's value as UCX's
 * parser of the knob's type writes it; uct_dcx_md_dev_config() hands the
 * values to the device layer, which checks them against the backend's
 * description and names the variable of a refused one.
 */
#include "dcx_md.h"

#include <ucs/debug/log.h>
#include <ucs/sys/string.h>
#include <ucs/time/time.h>

#include <stdint.h>


/* UCX's parser of each type of knob: what uct_dcx_md_knob_t holds */
static const ucs_config_parser_t uct_dcx_md_knob_parsers[] = {
    [DCX_PARAM_UINT]     = UCT_DCX_CONFIG_TYPE_COUNT,
    [DCX_PARAM_LIMIT]    = UCT_DCX_CONFIG_TYPE_LIMIT,
    [DCX_PARAM_SIZE]     = UCS_CONFIG_TYPE_MEMUNITS,
    [DCX_PARAM_TIME]     = UCS_CONFIG_TYPE_TIME_UNITS,
    [DCX_PARAM_BOOL]     = UCS_CONFIG_TYPE_BOOL,
    [DCX_PARAM_BOOL_NOT] = UCS_CONFIG_TYPE_BOOL,
    [DCX_PARAM_STRING]   = UCS_CONFIG_TYPE_STRING};

/* Entries of uct_dcx_md_config_table before the knobs */
#define UCT_DCX_MD_CONFIG_FIXED 3

/* The knob each entry after the fixed ones is, by the same index */
static const dcx_param_t *uct_dcx_md_knob_params[UCT_DCX_MD_KNOBS_MAX];
static unsigned uct_dcx_md_knob_count;

/* The knobs are entries of this table itself, not of a sub-table: UCX
 * would read a sub-table's variables without the DCX_ prefix too
 * (UCX_SOFT_DEVICES), which no dcx variable ever was.  The entries after
 * the fixed ones stay zero (the end of the table) until
 * uct_dcx_md_config_init(). */
ucs_config_field_t uct_dcx_md_config_table[UCT_DCX_MD_CONFIG_FIXED +
                                           UCT_DCX_MD_KNOBS_MAX + 1] = {
    {"", "", NULL, ucs_offsetof(uct_dcx_md_config_t, super),
     UCS_CONFIG_TYPE_TABLE(uct_md_config_table)},

    {"RCACHE", "try",
     "Keep memory registrations in UCX's registration cache: yes, no, or try\n"
     "(use the cache when UCX's memory event hooks are available).",
     ucs_offsetof(uct_dcx_md_config_t, rcache_enable), UCS_CONFIG_TYPE_TERNARY},

    {"", "", NULL, ucs_offsetof(uct_dcx_md_config_t, rcache),
     UCS_CONFIG_TYPE_TABLE(UCT_DCX_RCACHE_CONFIG_TABLE)}};

void uct_dcx_md_config_init(void)
{
    const dcx_backend_t *backend;
    ucs_config_field_t *field;
    const dcx_param_t *param;
    unsigned b, p;

    if (uct_dcx_md_knob_count > 0) {
        return;
    }

    for (b = 0; (backend = dcx_backend_at(b)) != NULL; ++b) {
        for (p = 0; p < backend->num_params; ++p) {
            param = &backend->params[p];
            if (uct_dcx_md_knob_count == UCT_DCX_MD_KNOBS_MAX) {
                ucs_error("dcx: the backends have more than %u knobs: "
                          "UCX_DCX_%s and those after it are not offered",
                          UCT_DCX_MD_KNOBS_MAX, param->name);
                return;
            }
            field       = &uct_dcx_md_config_table[UCT_DCX_MD_CONFIG_FIXED +
                                             uct_dcx_md_knob_count];
            field->name = param->name;
            field->dfl_value = param->dflt;
            field->doc       = param->doc;
            field->offset    = ucs_offsetof(uct_dcx_md_config_t, knobs) +
                            (uct_dcx_md_knob_count * sizeof(uct_dcx_md_knob_t));
            field->parser = uct_dcx_md_knob_parsers[param->type];
            uct_dcx_md_knob_params[uct_dcx_md_knob_count++] = param;
        }
    }
}

/* A time in whole microseconds; UINT64_MAX for "inf" (which the device
 * layer refuses as out of range), 0 for less than one (likewise). */
static uint64_t uct_dcx_md_knob_usec(ucs_time_t value)
{
    double usec = ucs_time_to_usec(value);

    if ((value == UCS_TIME_INFINITY) || (usec >= (double)UINT64_MAX)) {
        return UINT64_MAX;
    }
    return (usec < 1.0) ? 0 : (uint64_t)(usec + 0.5);
}

/* Sets one knob of dev_config; "auto" leaves the backend's default. */
static int uct_dcx_md_knob_set(dcx_dev_config_t *dev_config,
                               const dcx_param_t *param,
                               const uct_dcx_md_knob_t *knob)
{
    switch (param->type) {
    case DCX_PARAM_UINT:
        return dcx_dev_config_set_num(dev_config, param->name, knob->count);
    case DCX_PARAM_LIMIT:
        return (knob->limit == UCS_ULUNITS_AUTO) ?
                   0 :
                   dcx_dev_config_set_num(dev_config, param->name, knob->limit);
    case DCX_PARAM_SIZE:
        return (knob->size == UCS_MEMUNITS_AUTO) ?
                   0 :
                   dcx_dev_config_set_num(dev_config, param->name,
                                          (knob->size == UCS_MEMUNITS_INF) ?
                                              UINT64_MAX :
                                              knob->size);
    case DCX_PARAM_TIME:
        return (knob->time == UCS_TIME_AUTO) ?
                   0 :
                   dcx_dev_config_set_num(dev_config, param->name,
                                          uct_dcx_md_knob_usec(knob->time));
    case DCX_PARAM_BOOL:
    case DCX_PARAM_BOOL_NOT:
        return dcx_dev_config_set_num(dev_config, param->name, knob->flag != 0);
    default:
        return dcx_dev_config_set_str(dev_config, param->name, knob->str);
    }
}

int uct_dcx_md_dev_config(const uct_dcx_md_config_t *config,
                          dcx_dev_config_t **dev_config_p)
{
    dcx_dev_config_t *dev_config;
    unsigned i;
    int ret;

    /* refused values are logged by the device layer, named as the user
     * wrote them */
    ret = dcx_dev_config_create("UCX_" UCT_DCX_CONFIG_PREFIX, &dev_config);
    if (ret != 0) {
        return ret;
    }

    for (i = 0; i < uct_dcx_md_knob_count; ++i) {
        ret = uct_dcx_md_knob_set(dev_config, uct_dcx_md_knob_params[i],
                                  &config->knobs[i]);
        if (ret != 0) {
            dcx_dev_config_destroy(dev_config);
            return ret;
        }
    }

    *dev_config_p = dev_config;
    return 0;
}
