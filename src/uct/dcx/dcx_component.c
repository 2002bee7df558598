/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The "dcx" UCT component and its registration.
 *
 * UCX 1.13 loads only the modules it was built with, so libuct_dcx.so comes
 * in by preloading (or linking) and is never given UCX's module-init call:
 * the component registers itself from a constructor.  Before it does, it
 * checks that the running libuct/libucs are the UCX this module was compiled
 * against -- same version, same sizes of the base classes the transport
 * derives from -- and stays unregistered (one error line, no UCX state
 * touched) if they are not.
 */
#include "dcx_md.h"

#include <uct/base/uct_iface.h>
#include <ucs/debug/log.h>
#include <ucs/memory/rcache_int.h>
#include <ucs/sys/math.h>
#include <ucs/sys/string.h>
#include <ucs/type/class.h>

#include <dlfcn.h>
#include <stdio.h>


uct_component_t uct_dcx_component = {
    .name               = UCT_DCX_COMPONENT_NAME,
    .query_md_resources = uct_dcx_query_md_resources,
    .md_open            = uct_dcx_md_open,
    .cm_open            = UCT_DCX_OP_UNSUPPORTED(uct_component_cm_open_func_t),
    .rkey_unpack        = UCT_DCX_COMPONENT_OP_RKEY_UNPACK,
    .rkey_ptr           = UCT_DCX_OP_UNSUPPORTED(uct_component_rkey_ptr_func_t),
    .rkey_release       = uct_dcx_rkey_release,
    UCT_DCX_COMPONENT_OPS_VERSIONED.md_config =
        {
            .name   = "dcx memory domain",
            .prefix = UCT_DCX_CONFIG_PREFIX,
            .table  = uct_dcx_md_config_table,
            .size   = sizeof(uct_dcx_md_config_t),
        },
    .cm_config   = UCS_CONFIG_EMPTY_GLOBAL_LIST_ENTRY,
    .tl_list     = UCT_COMPONENT_TL_LIST_INITIALIZER(&uct_dcx_component),
    .flags       = 0,
    .md_vfs_init = (uct_component_md_vfs_init_func_t)ucs_empty_function};

static int uct_dcx_component_registered;


/* ------------------------------------------------------------------------
 * Device-layer log lines go to UCX's log
 * ------------------------------------------------------------------------ */

static ucs_log_level_t uct_dcx_log_level_to_ucs(dcx_log_level_t level)
{
    switch (level) {
    case DCX_LOG_ERROR:
        return UCS_LOG_LEVEL_ERROR;
    case DCX_LOG_WARN:
        return UCS_LOG_LEVEL_WARN;
    case DCX_LOG_INFO:
        return UCS_LOG_LEVEL_INFO;
    case DCX_LOG_DEBUG:
        return UCS_LOG_LEVEL_DEBUG;
    default:
        return UCS_LOG_LEVEL_TRACE;
    }
}

/* The device layer filters by its own level before it calls the handler
 * (UCX's level, or DCX_LOG_LEVEL if that asks for more), so every line that
 * arrives here is printed: this configuration lets all levels through and
 * otherwise follows UCX's (file filter). */
static ucs_log_component_config_t uct_dcx_log_config;

static void uct_dcx_log_handler(dcx_log_level_t level, const char *file,
                                int line, const char *msg)
{
    ucs_log_dispatch(file, line, "dcx", uct_dcx_log_level_to_ucs(level),
                     &uct_dcx_log_config, "%s", msg);
}

/* The most verbose device-layer level that UCX's log level lets through. */
static dcx_log_level_t uct_dcx_log_max_level(void)
{
    static const dcx_log_level_t levels[] = {DCX_LOG_TRACE, DCX_LOG_DEBUG,
                                             DCX_LOG_INFO, DCX_LOG_WARN};
    unsigned i;

    for (i = 0; i < ucs_static_array_size(levels); ++i) {
        if (ucs_log_is_enabled(uct_dcx_log_level_to_ucs(levels[i]))) {
            return levels[i];
        }
    }

    return DCX_LOG_ERROR;
}

static void uct_dcx_log_forward(void)
{
    uct_dcx_log_config           = ucs_global_opts.log_component;
    uct_dcx_log_config.log_level = UCS_LOG_LEVEL_TRACE_POLL;
    ucs_strncpy_zero(uct_dcx_log_config.name, "DCX",
                     sizeof(uct_dcx_log_config.name));
    /* keep a more verbose level already asked for with DCX_LOG_LEVEL */
    dcx_log_set_handler(uct_dcx_log_handler,
                        ucs_max(uct_dcx_log_max_level(), dcx_log_max_level));
}


/* ------------------------------------------------------------------------
 * Load-time compatibility check
 * ------------------------------------------------------------------------ */

/* Exported by libuct and libucs, but not declared in their headers. */
extern ucs_class_t UCS_CLASS_NAME(uct_iface_t);
extern ucs_class_t UCS_CLASS_NAME(ucs_rcache_t);

typedef void (*uct_dcx_get_version_func_t)(unsigned *major, unsigned *minor,
                                           unsigned *release);

typedef struct uct_dcx_class_check {
    const char *name;
    const ucs_class_t *cls; /* exported by the running libuct/libucs */
    size_t compiled;        /* sizeof() as this module sees it */
} uct_dcx_class_check_t;

/* Returns 1 if the running UCX is the one this module was built against;
 * otherwise prints one error line saying what differs and returns 0. */
static int uct_dcx_ucx_is_compatible(void)
{
    const uct_dcx_class_check_t checks[] = {
        {"uct_iface_t", &UCS_CLASS_NAME(uct_iface_t), sizeof(uct_iface_t)},
        {"uct_base_iface_t", &UCS_CLASS_NAME(uct_base_iface_t),
         sizeof(uct_base_iface_t)},
        {"uct_ep_t", &UCS_CLASS_NAME(uct_ep_t), sizeof(uct_ep_t)},
        {"uct_base_ep_t", &UCS_CLASS_NAME(uct_base_ep_t),
         sizeof(uct_base_ep_t)},
        {"ucs_rcache_t", &UCS_CLASS_NAME(ucs_rcache_t), sizeof(ucs_rcache_t)}};
    uct_dcx_get_version_func_t get_version;
    unsigned major, minor, release;
    char diff[512];
    size_t len = 0;
    unsigned i;

    /* UCT and UCS export no version query; UCP does, and UCP, UCT and UCS
     * always come from the same UCX build.  A program using UCT alone has
     * no libucp loaded: then the class sizes below are the whole check. */
    get_version = (uct_dcx_get_version_func_t)dlsym(RTLD_DEFAULT,
                                                    "ucp_get_version");
    if (get_version == NULL) {
        major   = UCT_VERNO_MAJOR;
        minor   = UCT_VERNO_MINOR;
        release = UCT_VERNO_PATCH;
    } else {
        get_version(&major, &minor, &release);
    }

    if ((major != UCT_VERNO_MAJOR) || (minor != UCT_VERNO_MINOR) ||
        (release != UCT_VERNO_PATCH)) {
        fprintf(stderr,
                "[dcx error] libuct_dcx.so was built for UCX %s but the "
                "running UCX is %u.%u.%u: the dcx transport is not registered "
                "(rebuild dcx against this UCX)\n",
                UCT_VERNO_STRING, major, minor, release);
        return 0;
    }

    diff[0] = '\0';
    for (i = 0; i < ucs_static_array_size(checks); ++i) {
        if ((checks[i].cls->size != checks[i].compiled) &&
            (len < sizeof(diff))) {
            len += snprintf(diff + len, sizeof(diff) - len,
                            "%s%s is %zu bytes here but %zu in UCX",
                            (len == 0) ? "" : ", ", checks[i].name,
                            checks[i].compiled, checks[i].cls->size);
        }
    }

    if (diff[0] != '\0') {
        fprintf(stderr,
                "[dcx error] libuct_dcx.so was built for a UCX %s "
                "configured differently from the running one (%s): the dcx "
                "transport is not registered (rebuild dcx against the "
                "installed UCX)\n",
                UCT_VERNO_STRING, diff);
        return 0;
    }

    return 1;
}


/* ------------------------------------------------------------------------
 * Registration
 * ------------------------------------------------------------------------ */

/* Runs after the constructors of libucs and libuct (they are this library's
 * dependencies), so UCX's global options and lists are ready. */
static void UCS_F_CTOR uct_dcx_component_init(void)
{
    /* The error lines above go to stderr directly: if the running UCX is not
     * the one this module knows, even its logging structures may differ. */
    if (!uct_dcx_ucx_is_compatible()) {
        return;
    }

    uct_dcx_log_forward();
    /* the backends registered from their constructors, which ran first */
    uct_dcx_md_config_init();
    uct_component_register(&uct_dcx_component);
    uct_dcx_component_registered = 1;
    ucs_debug("dcx: component '%s' registered (UCX %s)", uct_dcx_component.name,
              UCT_VERNO_STRING);
}

static void UCS_F_DTOR uct_dcx_component_cleanup(void)
{
    if (!uct_dcx_component_registered) {
        return;
    }

    /* uct_component_unregister() leaves the component in UCX's list, which
     * would then point into an unloaded library */
    uct_component_unregister(&uct_dcx_component);
    ucs_list_del(&uct_dcx_component.list);
    dcx_log_set_handler(NULL, DCX_LOG_WARN);
    uct_dcx_component_registered = 0;
}
