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
# Results:
#   dcx_have_uct   yes/no (AM_CONDITIONAL DCX_HAVE_UCT)
#   UCX_CPPFLAGS   flags for sources that include UCX internal headers
#   UCX_LIBS       -luct -lucs -lucm (ucm: memory unmap events)
#   UCX_SRC_DIR    the UCX source tree used
#   UCX_VERSION    the installed UCX version (e.g. 1.13.1)

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
     UCX_VERSION=`$UCX_INFO -v 2>/dev/null | sed -n 's/^# *Version *\(@<:@0-9.@:>@*\).*/\1/p' | head -n 1`
     AS_IF([test -z "$UCX_VERSION"],
        [AC_MSG_RESULT([unknown])
         DCX_UCX_FAIL([cannot read the UCX version from "$UCX_INFO -v"])],
        [AC_MSG_RESULT([$UCX_VERSION])])])

# --- the UCX source tree ---------------------------------------------------
AS_IF([test "x$dcx_ucx_ok" = xyes],
    [AC_MSG_CHECKING([for the UCX $UCX_VERSION source tree])
     dcx_ucx_candidates=
     AS_CASE([$with_ucx_src],
        [check|yes],
            [dcx_ucx_cached=`"$srcdir/contrib/get-ucx-src.sh" --cached 2>/dev/null`
             dcx_ucx_candidates="$srcdir/contrib/ucx-src/ucx-$UCX_VERSION $srcdir/contrib/ucx-src $dcx_ucx_cached"],
        [dcx_ucx_candidates="$with_ucx_src $with_ucx_src/ucx-$UCX_VERSION"])
     for dcx_dir in $dcx_ucx_candidates; do
         AS_IF([test -f "$dcx_dir/src/uct/base/uct_iface.h" -a -f "$dcx_dir/configure.ac"],
               [UCX_SRC_DIR=`cd "$dcx_dir" && pwd`; break])
     done
     AS_IF([test -z "$UCX_SRC_DIR"],
        [AC_MSG_RESULT([not found])
         AS_IF([test "x$with_ucx_src" = xcheck -o "x$with_ucx_src" = xyes],
            [dcx_ucx_msg="no UCX source tree found; run contrib/get-ucx-src.sh (fetches the source of the installed UCX) or pass --with-ucx-src=DIR"],
            [dcx_ucx_msg="--with-ucx-src=$with_ucx_src is not a UCX source tree (no src/uct/base/uct_iface.h or configure.ac)"])
         DCX_UCX_FAIL([$dcx_ucx_msg])],
        [AC_MSG_RESULT([$UCX_SRC_DIR])])])

AS_IF([test "x$dcx_ucx_ok" = xyes],
    [AC_MSG_CHECKING([UCX source version])
     # configure.ac declares define(ucx_ver_major, N) etc., N possibly quoted
     dcx_ucx_src_version=`sed -n 's/^d[]efine(.\{0,1\}ucx_ver_\(major\|minor\|patch\).\{0,1\}, *\(@<:@0-9@:>@*\)).*/\2/p' "$UCX_SRC_DIR/configure.ac" | tr '\n' '.' | sed 's/\.$//'`
     AC_MSG_RESULT([$dcx_ucx_src_version])
     AS_IF([test "x$dcx_ucx_src_version" != "x$UCX_VERSION"],
        [AC_MSG_ERROR([UCX source $UCX_SRC_DIR is version '$dcx_ucx_src_version' but the installed UCX ($UCX_INFO) is $UCX_VERSION: the transport must be built against the source of exactly the installed version (contrib/get-ucx-src.sh fetches it)])])])

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
     UCX_CPPFLAGS="-UHAVE_CONFIG_H -include \$(top_builddir)/$dcx_ucx_config_h -I$UCX_SRC_DIR/src"
     UCX_LIBS="-luct -lucs -lucm"])

AC_SUBST([UCX_CPPFLAGS])
AC_SUBST([UCX_LIBS])
AC_SUBST([UCX_SRC_DIR])
AC_SUBST([UCX_VERSION])
AM_CONDITIONAL([DCX_HAVE_UCT], [test "x$dcx_have_uct" = xyes])
