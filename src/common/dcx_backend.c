/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx device layer: the registry of backends, and the values of their knobs
 * (dcx_dev_config_t) that dcx_dev_list() hands each backend.
 *
 * Backends register from constructors (DCX_BACKEND_REGISTER), that is
 * before main() and before any other thread exists, so the registry is
 * written by one thread and only read afterwards: it takes no lock.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "dcx_dev.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Registered backends, by increasing order. */
static const dcx_backend_t *dcx_backends[DCX_BACKENDS_MAX];
static unsigned dcx_backend_count;

struct dcx_dev_config {
    char *prefix;                   /* of knob names in log lines */
    void *params[DCX_BACKENDS_MAX]; /* a block per backend */
    /* copies of the string knobs' values, per backend and knob */
    char **strings[DCX_BACKENDS_MAX];
};

static int dcx_param_is_number(const dcx_param_t *param)
{
    return param->type != DCX_PARAM_STRING;
}

/* "auto" is 0 where a type has it; "y"/"n" for booleans. */
static int dcx_param_parse_default(const dcx_param_t *param, uint64_t *value_p)
{
    const char *s = param->dflt;
    char *end;

    if ((param->type == DCX_PARAM_BOOL) ||
        (param->type == DCX_PARAM_BOOL_NOT)) {
        if (!strcmp(s, "y") || !strcmp(s, "n")) {
            *value_p = (s[0] == 'y');
            return 1;
        }
        return 0;
    }
    if ((param->type != DCX_PARAM_UINT) && !strcmp(s, "auto")) {
        *value_p = 0;
        return 1;
    }
    if ((s[0] < '0') || (s[0] > '9')) {
        return 0;
    }
    errno    = 0;
    *value_p = strtoull(s, &end, 10);
    return (errno == 0) && (*end == '\0');
}

static int dcx_param_is_valid(const dcx_param_t *param)
{
    uint64_t value;

    if (param->type == DCX_PARAM_STRING) {
        return param->size == sizeof(const char *);
    }
    if ((param->size != sizeof(uint32_t)) &&
        ((param->size != sizeof(uint64_t)) ||
         ((param->type != DCX_PARAM_LIMIT) &&
          (param->type != DCX_PARAM_SIZE)))) {
        return 0;
    }
    if ((param->size == sizeof(uint32_t)) && (param->max > UINT32_MAX)) {
        return 0;
    }
    if (!dcx_param_parse_default(param, &value)) {
        return 0;
    }
    /* a default is "auto" or within the range */
    return (value == 0 && param->type != DCX_PARAM_UINT) ||
           (param->type == DCX_PARAM_BOOL) ||
           (param->type == DCX_PARAM_BOOL_NOT) ||
           ((value >= param->min) && (value <= param->max));
}

void dcx_backend_register(const dcx_backend_t *backend)
{
    unsigned i, pos;

    if (dcx_backend_count == DCX_BACKENDS_MAX) {
        dcx_error("backend %s: not registered, %u backends are already",
                  backend->name, DCX_BACKENDS_MAX);
        return;
    }
    for (i = 0; i < dcx_backend_count; ++i) {
        if (!strcmp(dcx_backends[i]->name, backend->name)) {
            dcx_error("backend %s: registered twice", backend->name);
            return;
        }
    }
    for (i = 0; i < backend->num_params; ++i) {
        if ((backend->params[i].offset + backend->params[i].size >
             backend->params_size) ||
            !dcx_param_is_valid(&backend->params[i])) {
            dcx_error("backend %s: not registered, knob %s is ill-described "
                      "(type, size, range or default '%s')",
                      backend->name, backend->params[i].name,
                      backend->params[i].dflt);
            return;
        }
    }

    for (pos = dcx_backend_count;
         (pos > 0) && (dcx_backends[pos - 1]->order > backend->order); --pos) {
        dcx_backends[pos] = dcx_backends[pos - 1];
    }
    dcx_backends[pos] = backend;
    ++dcx_backend_count;
}

const dcx_backend_t *dcx_backend_at(unsigned i)
{
    return (i < dcx_backend_count) ? dcx_backends[i] : NULL;
}

const dcx_backend_t *dcx_backend_find(const char *name)
{
    unsigned i;

    for (i = 0; i < dcx_backend_count; ++i) {
        if (!strcmp(dcx_backends[i]->name, name)) {
            return dcx_backends[i];
        }
    }
    return NULL;
}

/* ------------------------------------------------------------------------
 * Knob values
 * ------------------------------------------------------------------------ */

static const char *dcx_dev_config_prefix(const dcx_dev_config_t *config)
{
    return (config->prefix != NULL) ? config->prefix : "";
}

/* The backend (its index) and description of a knob. */
static const dcx_param_t *dcx_dev_config_find(const dcx_dev_config_t *config,
                                              const char *name, unsigned *b_p,
                                              unsigned *p_p)
{
    const dcx_backend_t *backend;
    unsigned b, p;

    for (b = 0; b < dcx_backend_count; ++b) {
        backend = dcx_backends[b];
        for (p = 0; p < backend->num_params; ++p) {
            if (!strcmp(backend->params[p].name, name)) {
                *b_p = b;
                *p_p = p;
                return &backend->params[p];
            }
        }
    }
    dcx_error("device configuration: no backend has a knob %s%s",
              dcx_dev_config_prefix(config), name);
    return NULL;
}

static void dcx_param_store(void *block, const dcx_param_t *param,
                            uint64_t value)
{
    void *field = (char *)block + param->offset;
    uint32_t v32;

    if (param->type == DCX_PARAM_BOOL_NOT) {
        value = !value;
    }
    if (param->size == sizeof(uint64_t)) {
        memcpy(field, &value, sizeof(value));
    } else {
        v32 = (uint32_t)value;
        memcpy(field, &v32, sizeof(v32));
    }
}

static const char *dcx_param_unit(const dcx_param_t *param)
{
    return (param->type == DCX_PARAM_TIME) ? "us" : "";
}

int dcx_dev_config_set_num(dcx_dev_config_t *config, const char *name,
                           uint64_t value)
{
    const dcx_param_t *param;
    uint64_t min, max;
    unsigned b, p;

    param = dcx_dev_config_find(config, name, &b, &p);
    if (param == NULL) {
        return EINVAL;
    }
    if (!dcx_param_is_number(param)) {
        dcx_error("device configuration: %s%s is a string, not a number",
                  dcx_dev_config_prefix(config), name);
        return EINVAL;
    }

    if ((param->type == DCX_PARAM_BOOL) ||
        (param->type == DCX_PARAM_BOOL_NOT)) {
        min = 0;
        max = 1;
    } else {
        min = param->min;
        max = param->max;
    }
    if ((value < min) || (value > max)) {
        if (value == UINT64_MAX) {
            dcx_error("%s%s=inf is out of range [%" PRIu64 "%s, %" PRIu64 "%s]",
                      dcx_dev_config_prefix(config), name, min,
                      dcx_param_unit(param), max, dcx_param_unit(param));
        } else {
            dcx_error("%s%s=%" PRIu64 "%s is out of range [%" PRIu64
                      "%s, %" PRIu64 "%s]",
                      dcx_dev_config_prefix(config), name, value,
                      dcx_param_unit(param), min, dcx_param_unit(param), max,
                      dcx_param_unit(param));
        }
        return EINVAL;
    }

    dcx_param_store(config->params[b], param, value);
    return 0;
}

int dcx_dev_config_set_str(dcx_dev_config_t *config, const char *name,
                           const char *value)
{
    const dcx_param_t *param;
    const char *why, *copy_ptr;
    unsigned b, p;
    char *copy;

    param = dcx_dev_config_find(config, name, &b, &p);
    if (param == NULL) {
        return EINVAL;
    }
    if (dcx_param_is_number(param)) {
        dcx_error("device configuration: %s%s is a number, not a string",
                  dcx_dev_config_prefix(config), name);
        return EINVAL;
    }
    why = (param->check != NULL) ? param->check(value) : NULL;
    if (why != NULL) {
        dcx_error("%s%s='%s' %s", dcx_dev_config_prefix(config), name, value,
                  why);
        return EINVAL;
    }

    copy = strdup(value);
    if (copy == NULL) {
        dcx_error("device configuration: %s%s: out of memory",
                  dcx_dev_config_prefix(config), name);
        return ENOMEM;
    }
    free(config->strings[b][p]);
    config->strings[b][p] = copy;
    copy_ptr              = copy;
    memcpy((char *)config->params[b] + param->offset, &copy_ptr,
           sizeof(copy_ptr));
    return 0;
}

void *dcx_dev_config_params(dcx_dev_config_t *config, const char *backend)
{
    unsigned b;

    for (b = 0; b < dcx_backend_count; ++b) {
        if (!strcmp(dcx_backends[b]->name, backend)) {
            return config->params[b];
        }
    }
    return NULL;
}

void dcx_dev_config_destroy(dcx_dev_config_t *config)
{
    unsigned b, p;

    if (config == NULL) {
        return;
    }
    for (b = 0; b < dcx_backend_count; ++b) {
        if (config->strings[b] != NULL) {
            for (p = 0; p < dcx_backends[b]->num_params; ++p) {
                free(config->strings[b][p]);
            }
        }
        free(config->strings[b]);
        free(config->params[b]);
    }
    free(config->prefix);
    free(config);
}

/* Each knob at its default, through the same checks as a value set. */
static int dcx_dev_config_defaults(dcx_dev_config_t *config, unsigned b)
{
    const dcx_backend_t *backend = dcx_backends[b];
    const dcx_param_t *param;
    uint64_t value;
    unsigned p;
    int ret;

    for (p = 0; p < backend->num_params; ++p) {
        param = &backend->params[p];
        if (param->type == DCX_PARAM_STRING) {
            ret = dcx_dev_config_set_str(config, param->name, param->dflt);
        } else {
            /* validated at registration */
            dcx_param_parse_default(param, &value);
            dcx_param_store(config->params[b], param, value);
            ret = 0;
        }
        if (ret != 0) {
            return ret;
        }
    }
    return 0;
}

int dcx_dev_config_create(const char *prefix, dcx_dev_config_t **config_p)
{
    dcx_dev_config_t *config;
    const dcx_backend_t *backend;
    unsigned b;
    int ret;

    config = calloc(1, sizeof(*config));
    if (config == NULL) {
        goto err_nomem;
    }
    if (prefix != NULL) {
        config->prefix = strdup(prefix);
        if (config->prefix == NULL) {
            goto err_nomem;
        }
    }
    for (b = 0; b < dcx_backend_count; ++b) {
        backend            = dcx_backends[b];
        /* a backend without knobs still gets a (1-byte) block */
        config->params[b]  = calloc(1, backend->params_size + 1);
        config->strings[b] = calloc(backend->num_params + 1,
                                    sizeof(*config->strings[b]));
        if ((config->params[b] == NULL) || (config->strings[b] == NULL)) {
            goto err_nomem;
        }
        ret = dcx_dev_config_defaults(config, b);
        if (ret != 0) {
            dcx_dev_config_destroy(config);
            return ret;
        }
    }
    *config_p = config;
    return 0;

err_nomem:
    dcx_error("device configuration: out of memory");
    dcx_dev_config_destroy(config);
    return ENOMEM;
}

/* ------------------------------------------------------------------------
 * Listing and opening
 * ------------------------------------------------------------------------ */

#define DCX_DEV_LIST_MAX 64

int dcx_dev_list(const dcx_dev_config_t *config, dcx_dev_info_t **list_p,
                 unsigned *count_p)
{
    dcx_dev_config_t *defaults = NULL;
    const dcx_backend_t *backend;
    dcx_dev_info_t *list;
    unsigned b, count = 0, n;
    int ret;

    if (config == NULL) {
        ret = dcx_dev_config_create(NULL, &defaults);
        if (ret != 0) {
            return ret;
        }
        config = defaults;
    }

    list = calloc(DCX_DEV_LIST_MAX, sizeof(*list));
    if (list == NULL) {
        dcx_error("device list: out of memory");
        ret = ENOMEM;
        goto out;
    }

    for (b = 0; (b < dcx_backend_count) && (count < DCX_DEV_LIST_MAX); ++b) {
        backend = dcx_backends[b];
        n       = 0;
        ret     = backend->list(config->params[b], list + count,
                                DCX_DEV_LIST_MAX - count, &n);
        if (ret != 0) {
            free(list);
            goto out;
        }
        count += n;
    }

    *list_p  = list;
    *count_p = count;
    ret      = 0;
out:
    dcx_dev_config_destroy(defaults);
    return ret;
}

void dcx_dev_list_free(dcx_dev_info_t *list)
{
    free(list);
}

int dcx_dev_open(const dcx_dev_info_t *info, dcx_dev_t **dev_p)
{
    unsigned b;

    for (b = 0; b < dcx_backend_count; ++b) {
        if (dcx_backends[b] == info->backend) {
            return info->backend->open(info, dev_p);
        }
    }
    dcx_error("%s: open: the device's backend is not built into this library",
              info->name);
    return ENODEV;
}
