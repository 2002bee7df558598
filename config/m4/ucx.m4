# SPDX-License-Identifier: BSD-3-Clause
# The UCX transport module (libuct_dcx.so).
#
# A UCT transport is compiled against UCX's internal headers (uct/base/*.h),
# which the -dev package does not ship, so they come from the UCX source of
# exactly the installed version (--with-ucx-src, or contrib/get-ucx-src.sh).
# Those headers change their struct layouts with UCX's build options, so they
# are compiled with a header derived from the installed build ("ucx_info -b"),
# and the sizes of the types the transport inherits or embeds are checked
# against what the installed UCX reports ("ucx_info -y").
#
# A UCX other than the system one (--with-ucx=PREFIX, e.g. one built by
# contrib/build-ucx.sh) is used for everything: its ucx_info, headers and
# libraries (with a run path to them).  What differs between UCX versions is
# found by compiling small programs against that UCX's headers (feature
# tests, DCX_UCX_HAVE_* in the generated header; see dcx_compat.h).
#
# Results:
#   dcx_have_uct   yes/no (AM_CONDITIONAL DCX_HAVE_UCT)
#   UCX_CPPFLAGS   flags for sources that include UCX internal headers
#   UCX_LIBS       -luct -lucs -lucm (ucm: memory unmap events)
#   UCX_SRC_DIR    the UCX source tree used
#   UCX_VERSION    the installed UCX version (e.g. 1.13.1)

AC_ARG_WITH([ucx],
    [AS_HELP_STRING([--with-ucx=PREFIX],
        [build against the UCX installed in PREFIX (PREFIX/bin/ucx_info,
         PREFIX/include, PREFIX/lib) instead of the system UCX])],
    [], [with_ucx=check])

AC_ARG_WITH([ucx-src],
    [AS_HELP_STRING([--with-ucx-src=DIR],
        [UCX source tree of exactly the installed UCX version, for UCX's
         internal headers (default: $srcdir/contrib/ucx-src, or the tree
         cached by contrib/get-ucx-src.sh; "no" builds without the UCX
         transport)])],
    [], [with_ucx_src=check])

dcx_have_uct=no
UCX_CPPFLAGS=
UCX_LIBS=
UCX_SRC_DIR=
UCX_VERSION=

# DCX_UCX_FAIL(MESSAGE): an error if the transport was asked for explicitly,
# otherwise a warning and a build without it.
m4_define([DCX_UCX_FAIL],
    [AS_IF([test "x$with_ucx_src" = xcheck],
           [AC_MSG_WARN([$1; building without the UCX transport])
            dcx_ucx_ok=no],
           [AC_MSG_ERROR([$1])])])

dcx_ucx_ok=yes
AS_IF([test "x$with_ucx_src" = xno], [dcx_ucx_ok=no])

# --- installed UCX: ucx_info, public headers, libraries -------------------
dcx_ucx_prefix=
AS_CASE([$with_ucx],
    [check|yes|""], [],
    [no], [AC_MSG_ERROR([--without-ucx: use --without-ucx-src to build without the UCX transport])],
    [AS_IF([test "x$with_ucx_src" = xno],
        [AC_MSG_ERROR([--with-ucx=$with_ucx contradicts --without-ucx-src])])
     AS_IF([test -x "$with_ucx/bin/ucx_info" -a -d "$with_ucx/include/uct" -a -d "$with_ucx/lib"],
        [dcx_ucx_prefix=`cd "$with_ucx" && pwd`],
        [AC_MSG_ERROR([--with-ucx=$with_ucx is not a UCX installation (needs bin/ucx_info, include/uct and lib)])])
     # the UCX in PREFIX for headers, linking, and running the module and tests
     # (-isystem, as the system UCX's headers: warnings in UCX's headers
     # and macros are not dcx's to fix under -Werror)
     CPPFLAGS="-isystem $dcx_ucx_prefix/include $CPPFLAGS"
     LDFLAGS="-L$dcx_ucx_prefix/lib -Wl,-rpath,$dcx_ucx_prefix/lib $LDFLAGS"
     UCX_INFO="$dcx_ucx_prefix/bin/ucx_info"
     AC_MSG_NOTICE([using the UCX in $dcx_ucx_prefix])])

AS_IF([test "x$dcx_ucx_ok" = xyes],
    [AC_PATH_PROG([UCX_INFO], [ucx_info], [no])
     AS_IF([test "x$UCX_INFO" = xno],
        [DCX_UCX_FAIL([ucx_info not found (Debian: apt-get install ucx-utils)])])])

AS_IF([test "x$dcx_ucx_ok" = xyes],
    [AC_CHECK_HEADER([uct/api/uct.h], [],
        [DCX_UCX_FAIL([UCX headers not found (Debian: apt-get install libucx-dev)])])])

AS_IF([test "x$dcx_ucx_ok" = xyes],
    [AC_CHECK_LIB([uct], [uct_query_components], [:],
        [DCX_UCX_FAIL([libuct not found (Debian: apt-get install libucx-dev)])],
        [-lucs])])

AS_IF([test "x$dcx_ucx_ok" = xyes],
    [AC_MSG_CHECKING([installed UCX version])
     UCX_VERSION=`$UCX_INFO -v 2>/dev/null | sed -n 's/^# *\(Library version:\|Version\) *\(@<:@0-9.@:>@*\).*/\2/p' | head -n 1`
     AS_IF([test -z "$UCX_VERSION"],
        [AC_MSG_RESULT([unknown])
         DCX_UCX_FAIL([cannot read the UCX version from "$UCX_INFO -v"])],
        [AC_MSG_RESULT([$UCX_VERSION])])])

# --- the UCX source tree ---------------------------------------------------
# dcx_ucx_tree_version DIR: the version a UCX source tree declares in its
# configure.ac (define(ucx_ver_major, N) etc., N possibly quoted)
dcx_ucx_tree_version() {
    sed -n 's/^d[]efine(.\{0,1\}ucx_ver_\(major\|minor\|patch\).\{0,1\}, *\(@<:@0-9@:>@*\)).*/\2/p' "$1/configure.ac" 2>/dev/null | tr '\n' '.' | sed 's/\.$//'
}

AS_IF([test "x$dcx_ucx_ok" = xyes],
    [AC_MSG_CHECKING([for the UCX $UCX_VERSION source tree])
     dcx_ucx_candidates=
     dcx_ucx_auto=no
     AS_CASE([$with_ucx_src],
        [check|yes],
            [dcx_ucx_auto=yes
             dcx_ucx_cache=${DCX_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/dcx}
             dcx_ucx_candidates="$srcdir/contrib/ucx-src/ucx-$UCX_VERSION $srcdir/contrib/ucx-src $dcx_ucx_cache/ucx-$UCX_VERSION"
             AS_IF([test -n "$dcx_ucx_prefix"],
                # a UCX built by contrib/build-ucx.sh links its source tree
                [dcx_ucx_candidates="$dcx_ucx_prefix/share/dcx-ucx-src $dcx_ucx_candidates"],
                [dcx_ucx_cached=`"$srcdir/contrib/get-ucx-src.sh" --cached 2>/dev/null`
                 dcx_ucx_candidates="$dcx_ucx_candidates $dcx_ucx_cached"])],
        [dcx_ucx_candidates="$with_ucx_src $with_ucx_src/ucx-$UCX_VERSION"])
     # searched for: the first tree of the installed version; a tree named
     # explicitly is taken as it is (and its version checked below)
     for dcx_dir in $dcx_ucx_candidates; do
         AS_IF([test -f "$dcx_dir/src/uct/base/uct_iface.h" -a -f "$dcx_dir/configure.ac"],
               [AS_IF([test $dcx_ucx_auto = no || test "x`dcx_ucx_tree_version "$dcx_dir"`" = "x$UCX_VERSION"],
                      [UCX_SRC_DIR=`cd "$dcx_dir" && pwd`; break])])
     done
     AS_IF([test -z "$UCX_SRC_DIR"],
        [AC_MSG_RESULT([not found])
         AS_IF([test $dcx_ucx_auto = yes],
            [AS_IF([test -n "$dcx_ucx_prefix"],
                [dcx_ucx_msg="no UCX $UCX_VERSION source tree found; pass --with-ucx-src=DIR (contrib/build-ucx.sh keeps it in PREFIX/share/dcx-ucx-src)"],
                [dcx_ucx_msg="no UCX $UCX_VERSION source tree found; run contrib/get-ucx-src.sh (fetches the source of the installed UCX) or pass --with-ucx-src=DIR"])],
            [dcx_ucx_msg="--with-ucx-src=$with_ucx_src is not a UCX source tree (no src/uct/base/uct_iface.h or configure.ac)"])
         DCX_UCX_FAIL([$dcx_ucx_msg])],
        [AC_MSG_RESULT([$UCX_SRC_DIR])])])

AS_IF([test "x$dcx_ucx_ok" = xyes],
    [AC_MSG_CHECKING([UCX source version])
     dcx_ucx_src_version=`dcx_ucx_tree_version "$UCX_SRC_DIR"`
     AC_MSG_RESULT([$dcx_ucx_src_version])
     AS_IF([test "x$dcx_ucx_src_version" != "x$UCX_VERSION"],
        [AC_MSG_ERROR([UCX source $UCX_SRC_DIR is version '$dcx_ucx_src_version' but the UCX being built for ($UCX_INFO) is $UCX_VERSION: the transport must be built against the source of exactly that version (contrib/get-ucx-src.sh fetches the system UCX's, contrib/build-ucx.sh builds others)])])])

# --- the installed build's config.h ---------------------------------------
# "ucx_info -b" prints the config.h UCX was built with, minus the block that
# AC_USE_SYSTEM_EXTENSIONS adds to it; that block is written here.  UCX's
# internal headers include "config.h" only under HAVE_CONFIG_H, so the
# transport is compiled with -UHAVE_CONFIG_H and this header force-included:
# they then see UCX's configuration, never dcx's own config.h.
dcx_ucx_config_h=ucx_build_config.h
AS_IF([test "x$dcx_ucx_ok" = xyes],
    [AC_MSG_CHECKING([for the installed UCX build configuration])
     dcx_ucx_b=`$UCX_INFO -b 2>/dev/null`
     AS_IF([echo "$dcx_ucx_b" | grep '^#define ENABLE_MT' >/dev/null],
        [{
           echo "/* Generated by dcx configure from \"$UCX_INFO -b\" (UCX $UCX_VERSION)."
           echo " * Force-included when compiling against UCX's internal headers. */"
           echo "#ifndef DCX_UCX_BUILD_CONFIG_H_"
           echo "#define DCX_UCX_BUILD_CONFIG_H_"
           echo ""
           echo "/* System extensions, as AC_USE_SYSTEM_EXTENSIONS set them for UCX */"
           for dcx_ext in _ALL_SOURCE _GNU_SOURCE _POSIX_PTHREAD_SEMANTICS _TANDEM_SOURCE __EXTENSIONS__; do
               echo "#ifndef $dcx_ext"
               echo "# define $dcx_ext 1"
               echo "#endif"
           done
           echo ""
           echo "/* ucx_info -b */"
           echo "$dcx_ucx_b"
           echo ""
           echo "#endif"
         } > $dcx_ucx_config_h
         AC_MSG_RESULT([$dcx_ucx_config_h])
         AC_MSG_CHECKING([installed UCX build options that change struct layouts])
         dcx_ucx_opts=`sed -n 's/^#define \(ENABLE_@<:@A-Z_@:>@*\|UCS_MAX_LOG_LEVEL\) *\(.*\)/\1=\2/p' $dcx_ucx_config_h | tr '\n' ' '`
         AC_MSG_RESULT([$dcx_ucx_opts])],
        [AC_MSG_RESULT([failed])
         AC_MSG_ERROR(["$UCX_INFO -b" did not print a UCX config.h (no ENABLE_MT line)])])])

# --- feature tests ------------------------------------------------------------
# What moved between UCX versions, tested by compiling against the headers of
# the UCX being built for, with its configuration (never by version number).
# Each result is a DCX_UCX_HAVE_<NAME> 0/1 line appended to the generated
# header; src/uct/dcx/dcx_compat.h hides the differences behind one set of
# names.  Compiled by hand, as the size check below, so that dcx's
# confdefs.h stays out of UCX's configuration.
#
# DCX_UCX_FEATURE(NAME, DESCRIPTION, STATEMENTS): STATEMENTS compile in a
# function body with the UCX headers below included.  A compile-time check
# of a function type is written DCX_UCX_SAME_TYPE(a, b).
m4_define([DCX_UCX_FEATURE],
    [AS_IF([test "x$dcx_ucx_ok" = xyes],
        [AC_MSG_CHECKING([whether UCX has $2])
         {
           echo '#include <uct/base/uct_iface.h>'
           echo '#include <uct/base/uct_md.h>'
           echo '#include <uct/base/uct_component.h>'
           echo '#include <uct/api/v2/uct_v2.h>'
           echo '#include <ucs/config/parser.h>'
           echo '#include <ucs/datastruct/mpool.h>'
           echo '#include <ucs/memory/rcache.h>'
           echo '#include <stddef.h>'
           echo '#define DCX_UCX_SAME_TYPE(_a, _b) \'
           echo '    typedef char dcx_same_type_check@<:@__builtin_types_compatible_p(_a, _b) ? 1 : -1@:>@'
           echo 'void dcx_feature_test(void);'
           echo 'void dcx_feature_test(void) {'
           cat <<'DCX_UCX_FEATURE_EOF'
$3
DCX_UCX_FEATURE_EOF
           echo '}'
         } > conftest_ucx_feature.c
         dcx_ucx_cc="$CC $CFLAGS -Werror=incompatible-pointer-types -UHAVE_CONFIG_H -include ./$dcx_ucx_config_h -I$UCX_SRC_DIR/src $CPPFLAGS -c conftest_ucx_feature.c -o conftest_ucx_feature.$OBJEXT"
         echo "$dcx_ucx_cc" >&AS_MESSAGE_LOG_FD
         AS_IF([eval "$dcx_ucx_cc" >&AS_MESSAGE_LOG_FD 2>&1],
            [AC_MSG_RESULT([yes])
             dcx_ucx_features="$dcx_ucx_features
#define DCX_UCX_HAVE_$1 1"],
            [AC_MSG_RESULT([no])
             sed 's/^/| /' conftest_ucx_feature.c >&AS_MESSAGE_LOG_FD
             dcx_ucx_features="$dcx_ucx_features
#define DCX_UCX_HAVE_$1 0"])
         rm -f conftest_ucx_feature.c conftest_ucx_feature.$OBJEXT])])

dcx_ucx_features=
AS_IF([test "x$dcx_ucx_ok" = xyes],
    [AC_MSG_CHECKING([whether UCX's internal headers compile with the derived configuration])
     echo '#include <uct/base/uct_iface.h>' > conftest_ucx_feature.c
     AS_IF([$CC $CFLAGS -UHAVE_CONFIG_H -include ./$dcx_ucx_config_h -I$UCX_SRC_DIR/src $CPPFLAGS -c conftest_ucx_feature.c -o conftest_ucx_feature.$OBJEXT >&AS_MESSAGE_LOG_FD 2>&1],
        [AC_MSG_RESULT([yes])
         rm -f conftest_ucx_feature.c conftest_ucx_feature.$OBJEXT],
        [AC_MSG_RESULT([no])
         rm -f conftest_ucx_feature.c conftest_ucx_feature.$OBJEXT
         AC_MSG_ERROR([cannot compile uct/base/uct_iface.h from $UCX_SRC_DIR with the configuration of $UCX_INFO (see config.log)])])])

DCX_UCX_FEATURE([PTR_ARITH_H], [ucs/sys/ptr_arith.h],
    [[#if !__has_include(<ucs/sys/ptr_arith.h>)
#  error no ucs/sys/ptr_arith.h
#endif]])
DCX_UCX_FEATURE([CONFIG_PARSER_DOC], [ucs_config_parser_t.doc],
    [[ucs_config_parser_t p; p.doc = ucs_config_doc_nop; (void)p;]])
DCX_UCX_FEATURE([MPOOL_PARAMS], [ucs_mpool_init() with ucs_mpool_params_t],
    [[ucs_mpool_params_t p; ucs_mpool_params_reset(&p);]])
DCX_UCX_FEATURE([CONFIG_FILL_ENTRY], [ucs_config_parser_fill_opts() taking a list entry],
    [[DCX_UCX_SAME_TYPE(__typeof__(&ucs_config_parser_fill_opts),
                       ucs_status_t (*)(void*, ucs_config_global_list_entry_t*,
                                        const char*, int));]])
DCX_UCX_FEATURE([UCS_RCACHE_CONFIG], [ucs_rcache_config_t and ucs_rcache_set_params()],
    [[ucs_rcache_config_t c; ucs_rcache_params_t p;
      (void)ucs_config_rcache_table; ucs_rcache_set_params(&p, &c);]])
DCX_UCX_FEATURE([RCACHE_GET_ALIGNMENT], [ucs_rcache_get() taking an alignment],
    [[DCX_UCX_SAME_TYPE(__typeof__(&ucs_rcache_get),
                       ucs_status_t (*)(ucs_rcache_t*, void*, size_t, size_t,
                                        int, void*, ucs_rcache_region_t**));]])
DCX_UCX_FEATURE([RCACHE_OPS_MERGE], [ucs_rcache_ops_t.merge],
    [[ucs_rcache_ops_t o; o.merge = NULL; (void)o;]])
DCX_UCX_FEATURE([MKEY_PACK_FLAG_INVALIDATE_RMA], [UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA],
    [[int f = UCT_MD_MKEY_PACK_FLAG_INVALIDATE_RMA | UCT_MD_MKEY_PACK_FLAG_INVALIDATE_AMO; (void)f;]])
DCX_UCX_FEATURE([MD_QUERY_V2], [MD query with uct_md_attr_v2_t],
    [[DCX_UCX_SAME_TYPE(uct_md_query_func_t,
                       ucs_status_t (*)(uct_md_h, uct_md_attr_v2_t*));]])
DCX_UCX_FEATURE([MEM_ALLOC_SYS_DEV], [MD mem_alloc taking a system device],
    [[DCX_UCX_SAME_TYPE(uct_md_mem_alloc_func_t,
                       ucs_status_t (*)(uct_md_h, size_t*, void**,
                                        ucs_memory_type_t, ucs_sys_device_t,
                                        unsigned, const char*, uct_mem_h*));]])
DCX_UCX_FEATURE([MEM_REG_PARAMS], [MD mem_reg taking uct_md_mem_reg_params_t],
    [[DCX_UCX_SAME_TYPE(uct_md_mem_reg_func_t,
                       ucs_status_t (*)(uct_md_h, void*, size_t,
                                        const uct_md_mem_reg_params_t*,
                                        uct_mem_h*));]])
DCX_UCX_FEATURE([MEM_QUERY_V2], [MD mem_query with uct_md_mem_attr_v2_t],
    [[DCX_UCX_SAME_TYPE(uct_md_mem_query_func_t,
                       ucs_status_t (*)(uct_md_h, const void*, size_t,
                                        uct_md_mem_attr_v2_t*));]])
DCX_UCX_FEATURE([MKEY_PACK_ADDRESS], [MD mkey_pack taking an address range],
    [[DCX_UCX_SAME_TYPE(uct_md_mkey_pack_func_t,
                       ucs_status_t (*)(uct_md_h, uct_mem_h, void*, size_t,
                                        const uct_md_mkey_pack_params_t*,
                                        void*));]])
DCX_UCX_FEATURE([MKEY_PACK_V2_ADDRESS], [uct_md_mkey_pack_v2() taking an address range],
    [[DCX_UCX_SAME_TYPE(__typeof__(&uct_md_mkey_pack_v2),
                       ucs_status_t (*)(uct_md_h, uct_mem_h, void*, size_t,
                                        const uct_md_mkey_pack_params_t*,
                                        void*));]])
DCX_UCX_FEATURE([MD_MEM_ATTACH], [uct_md_ops_t.mem_attach],
    [[(void)offsetof(uct_md_ops_t, mem_attach);]])
DCX_UCX_FEATURE([MD_SOCKADDR_ACCESSIBLE], [uct_md_ops_t.is_sockaddr_accessible],
    [[(void)offsetof(uct_md_ops_t, is_sockaddr_accessible);]])
DCX_UCX_FEATURE([RKEY_UNPACK_PARAMS], [rkey_unpack taking uct_rkey_unpack_params_t],
    [[DCX_UCX_SAME_TYPE(uct_component_rkey_unpack_func_t,
                       ucs_status_t (*)(uct_component_t*, const void*,
                                        const uct_rkey_unpack_params_t*,
                                        uct_rkey_t*, void**));]])
DCX_UCX_FEATURE([RKEY_COMPARE], [uct_component_t.rkey_compare],
    [[uct_component_t c; c.rkey_compare = uct_base_rkey_compare; (void)c;]])
DCX_UCX_FEATURE([IFACE_IS_REACHABLE_V2], [internal op iface_is_reachable_v2],
    [[uct_iface_internal_ops_t o; uct_iface_is_reachable_params_t p;
      o.iface_is_reachable_v2 = NULL; (void)o; (void)p;
      (void)uct_iface_fill_info_str_buf; (void)uct_iface_scope_is_reachable;
      (void)uct_iface_is_reachable_params_valid;]])
DCX_UCX_FEATURE([EP_IS_CONNECTED], [internal op ep_is_connected],
    [[uct_iface_internal_ops_t o; uct_ep_is_connected_params_t p;
      o.ep_is_connected = NULL; (void)o; (void)p;]])
DCX_UCX_FEATURE([EP_INVALIDATE_PARAMS], [internal op ep_invalidate taking uct_ep_invalidate_params_t],
    [[DCX_UCX_SAME_TYPE(uct_ep_invalidate_func_t,
                       ucs_status_t (*)(uct_ep_h,
                                        const uct_ep_invalidate_params_t*));]])
DCX_UCX_FEATURE([EP_CONNECT_TO_EP_V2], [internal op ep_connect_to_ep_v2],
    [[uct_iface_internal_ops_t o; o.ep_connect_to_ep_v2 = NULL; (void)o;]])
DCX_UCX_FEATURE([IFACE_QUERY_V2], [internal op iface_query_v2],
    [[uct_iface_internal_ops_t o; o.iface_query_v2 = uct_iface_base_query_v2; (void)o;]])
DCX_UCX_FEATURE([EP_SGL_ZCOPY], [internal ops ep_put_sgl_zcopy/ep_get_sgl_zcopy],
    [[uct_iface_internal_ops_t o; o.ep_put_sgl_zcopy = NULL;
      o.ep_get_sgl_zcopy = NULL; (void)o;]])
DCX_UCX_FEATURE([SGL_ZCOPY], [scatter-gather put/get with per-element counts and strides],
    [[{ DCX_UCX_SAME_TYPE(uct_ep_put_sgl_zcopy_func_t,
                         ucs_status_t (*)(uct_ep_h, void * const*,
                                          const size_t*, uct_mem_h const*,
                                          const uint64_t*, uct_rkey_t const*,
                                          const size_t*, const size_t*,
                                          size_t, uct_completion_t*)); }
      { DCX_UCX_SAME_TYPE(uct_ep_get_sgl_zcopy_func_t,
                         ucs_status_t (*)(uct_ep_h, void * const*,
                                          const size_t*, uct_mem_h const*,
                                          const uint64_t*, uct_rkey_t const*,
                                          const size_t*, const size_t*,
                                          size_t, uct_completion_t*)); }
      uct_iface_attr_v2_t a;
      a.field_mask = UCT_IFACE_ATTR_FIELD_CAP_FLAGS |
                     UCT_IFACE_ATTR_FIELD_MAX_PUT_SGL_ZCOPY_COUNT |
                     UCT_IFACE_ATTR_FIELD_MAX_GET_SGL_ZCOPY_COUNT;
      a.cap.flags  = UCT_IFACE_FLAG_V2_PUT_SGL_ZCOPY |
                     UCT_IFACE_FLAG_V2_GET_SGL_ZCOPY;
      a.max_put_sgl_zcopy_count = a.max_get_sgl_zcopy_count = 0; (void)a;
      (void)uct_iface_base_query_v2;]])
DCX_UCX_FEATURE([EP_GET_DEVICE_EP], [internal op ep_get_device_ep],
    [[uct_iface_internal_ops_t o; o.ep_get_device_ep = NULL; (void)o;]])
DCX_UCX_FEATURE([EP_OUTSTANDING_PURGE], [internal op ep_outstanding_purge],
    [[uct_iface_internal_ops_t o; o.ep_outstanding_purge = NULL; (void)o;]])

# the results go at the end of the generated header (before its #endif),
# and into dcx_ucx_features.h
AS_IF([test "x$dcx_ucx_ok" = xyes],
    [sed '$d' $dcx_ucx_config_h > $dcx_ucx_config_h.tmp
     {
       echo "/* dcx's feature tests against this UCX (config/m4/ucx.m4) */"
       echo "#define DCX_UCX_FEATURES_TESTED 1"
       echo "$dcx_ucx_features" | sed '/^$/d'
       echo ""
       echo "#endif"
     } >> $dcx_ucx_config_h.tmp
     mv $dcx_ucx_config_h.tmp $dcx_ucx_config_h
     # the same results alone, for tests of the public API that do not
     # compile against UCX's internal headers
     {
       echo "/* Generated by dcx configure: feature tests against UCX $UCX_VERSION */"
       echo "#ifndef DCX_UCX_FEATURES_H_"
       echo "#define DCX_UCX_FEATURES_H_"
       echo "$dcx_ucx_features" | sed '/^$/d'
       echo "#endif"
     } > dcx_ucx_features.h
     dcx_ucx_have=`echo "$dcx_ucx_features" | sed -n 's/^#define DCX_UCX_HAVE_\(.*\) 1$/\1/p' | tr '\n' ' '`
     AC_MSG_NOTICE([UCX features found: $dcx_ucx_have])])

# --- size check -------------------------------------------------------------
# The types the transport inherits from or embeds, compiled with the derived
# configuration, against the sizes the installed UCX reports.  Built by hand
# (not AC_RUN_IFELSE) so that dcx's confdefs.h does not leak into UCX's
# configuration.
dcx_ucx_types="uct_base_iface_t uct_iface_t uct_iface_ops_t uct_iface_attr_t
     uct_iface_config_t uct_md_t uct_md_ops_t uct_md_attr_t uct_md_config_t
     uct_am_handler_t uct_completion_t uct_ep_t uct_rkey_bundle_t
     ucs_rcache_t ucs_rcache_region_t ucs_pgtable_t ucs_pgt_region_t
     ucs_arbiter_t ucs_arbiter_group_t ucs_arbiter_elem_t
     ucs_async_context_t ucs_async_handler_t
     ucs_mpool_t ucs_mpool_chunk_t ucs_mpool_elem_t
     ucs_callbackq_t ucs_callbackq_elem_t ucs_class_t ucs_config_field_t
     ucs_list_link_t ucs_queue_head_t ucs_queue_elem_t ucs_ptr_array_t
     ucs_timer_queue_t ucs_twheel_t ucs_frag_list_t ucs_memory_info_t"

AS_IF([test "x$dcx_ucx_ok" = xyes],
    [AS_IF([test "x$cross_compiling" = xyes],
        [AC_MSG_ERROR([the UCX layout check runs a program against the installed UCX; cross-compiling is not supported])])
     AC_MSG_CHECKING([UCX internal type sizes against "ucx_info -y"])
     dcx_ucx_y=`$UCX_INFO -y 2>/dev/null | sed -n 's/^ *sizeof(\(@<:@A-Za-z0-9_@:>@*\)) *= *@<:@. @:>@*\(@<:@0-9@:>@@<:@0-9@:>@*\).*/\1 \2/p'`
     AS_IF([test -z "$dcx_ucx_y"],
        [AC_MSG_RESULT([failed])
         AC_MSG_ERROR(["$UCX_INFO -y" printed no type sizes])])
     {
       echo '#include <stdio.h>'
       echo '#include <ucs/async/async.h>'
       echo '#include <ucs/async/async_int.h>'
       echo '#include <ucs/datastruct/arbiter.h>'
       echo '#include <ucs/datastruct/callbackq.h>'
       echo '#include <ucs/datastruct/frag_list.h>'
       echo '#include <ucs/datastruct/mpool.h>'
       echo '#include <ucs/datastruct/ptr_array.h>'
       echo '#include <ucs/datastruct/queue.h>'
       echo '#include <ucs/memory/memtype_cache.h>'
       echo '#include <ucs/memory/rcache.h>'
       echo '#include <ucs/memory/rcache_int.h>'
       echo '#include <ucs/time/timerq.h>'
       echo '#include <ucs/time/timer_wheel.h>'
       echo '#include <ucs/type/class.h>'
       echo '#include <uct/base/uct_iface.h>'
       echo '#include <uct/base/uct_md.h>'
       echo 'int main(void) {'
       for dcx_t in $dcx_ucx_types; do
           echo "    printf(\"$dcx_t %zu\\n\", sizeof($dcx_t));"
       done
       echo '    return 0;'
       echo '}'
     } > conftest_ucx.c
     dcx_ucx_cc="$CC $CFLAGS -UHAVE_CONFIG_H -include ./$dcx_ucx_config_h -I$UCX_SRC_DIR/src $CPPFLAGS conftest_ucx.c -o conftest_ucx$EXEEXT $LDFLAGS -luct -lucs"
     echo "$dcx_ucx_cc" >&AS_MESSAGE_LOG_FD
     AS_IF([eval "$dcx_ucx_cc" >&AS_MESSAGE_LOG_FD 2>&1 && ./conftest_ucx$EXEEXT > conftest_ucx.out 2>&AS_MESSAGE_LOG_FD],
        [],
        [AC_MSG_RESULT([failed])
         sed 's/^/| /' conftest_ucx.c >&AS_MESSAGE_LOG_FD
         rm -f conftest_ucx.c conftest_ucx$EXEEXT conftest_ucx.out
         AC_MSG_ERROR([cannot compile or run a program with UCX's internal headers from $UCX_SRC_DIR (see config.log)])])
     dcx_ucx_bad=
     dcx_ucx_n=0
     while read dcx_t dcx_size; do
         dcx_ref=`echo "$dcx_ucx_y" | awk -v t="$dcx_t" '$1 == t { print $2; exit }'`
         AS_IF([test -z "$dcx_ref"],
               [dcx_ucx_bad="$dcx_ucx_bad
    $dcx_t: dcx sees $dcx_size bytes, ucx_info -y does not report it"],
               [test "$dcx_ref" != "$dcx_size"],
               [dcx_ucx_bad="$dcx_ucx_bad
    $dcx_t: dcx sees $dcx_size bytes, installed UCX has $dcx_ref"])
         dcx_ucx_n=`expr $dcx_ucx_n + 1`
     done < conftest_ucx.out
     echo "dcx: UCX sizes:" >&AS_MESSAGE_LOG_FD
     cat conftest_ucx.out >&AS_MESSAGE_LOG_FD
     rm -f conftest_ucx.c conftest_ucx$EXEEXT conftest_ucx.out
     AS_IF([test -n "$dcx_ucx_bad"],
        [AC_MSG_RESULT([mismatch])
         AC_MSG_ERROR([UCX internal type sizes differ from the installed UCX $UCX_VERSION:$dcx_ucx_bad
  The UCX source ($UCX_SRC_DIR) or the derived $dcx_ucx_config_h does not match the installed build.])],
        [AC_MSG_RESULT([$dcx_ucx_n types match])])])

AS_IF([test "x$dcx_ucx_ok" = xyes],
    [dcx_have_uct=yes
     # -isystem: UCX's internal headers are UCX's code, compiled with
     # dcx's warnings they warn (e.g. -Wsign-compare in UCS_MASK)
     UCX_CPPFLAGS="-UHAVE_CONFIG_H -include \$(top_builddir)/$dcx_ucx_config_h -isystem $UCX_SRC_DIR/src"
     UCX_LIBS="-luct -lucs -lucm"])

# --- loading by UCX_PLUGIN_PATH (UCX 1.23 and later) ----------------------
# A UCX whose configuration has UCX_PLUGIN_PATH loads every
# libuct_<name><ext> in those directories, <ext> being the extension of the
# name its libucs was loaded by (the soname: ".so.0").  make install then
# links the module there under that name (Makefile.am, dcx-run --plugin-dir).
UCX_MODULE_EXT=
dcx_ucx_plugin_path=no
AS_IF([test "x$dcx_ucx_ok" = xyes],
    [AC_MSG_CHECKING([whether UCX loads modules from UCX_PLUGIN_PATH])
     AS_IF([$UCX_INFO -c 2>/dev/null | grep -q '^UCX_PLUGIN_PATH='],
        [UCX_MODULE_EXT=`ldd $UCX_INFO 2>/dev/null | sed -n 's/^@<:@@<:@:space:@:>@@:>@*libucs\(\.@<:@^ @:>@*\) =>.*/\1/p' | head -n 1`
         AS_IF([test -n "$UCX_MODULE_EXT"],
            [dcx_ucx_plugin_path=yes
             AC_MSG_RESULT([yes, as libuct_dcx$UCX_MODULE_EXT])],
            [AC_MSG_RESULT([yes, but the name of its libucs is unknown (ldd $UCX_INFO): not linked])])],
        [AC_MSG_RESULT([no (preload only)])])])
AC_SUBST([UCX_MODULE_EXT])
AM_CONDITIONAL([DCX_UCX_PLUGIN_PATH], [test "x$dcx_ucx_plugin_path" = xyes])

AC_SUBST([UCX_CPPFLAGS])
AC_SUBST([UCX_LIBS])
AC_SUBST([UCX_SRC_DIR])
AC_SUBST([UCX_VERSION])
AM_CONDITIONAL([DCX_HAVE_UCT], [test "x$dcx_have_uct" = xyes])
