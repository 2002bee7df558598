# SPDX-License-Identifier: BSD-3-Clause
# The rdma-core mlx5 backend: built when the verbs and mlx5dv headers and
# libraries are present (Debian: libibverbs-dev), unless --without-mlx5.
AC_ARG_WITH([mlx5],
    [AS_HELP_STRING([--with-mlx5], [build the rdma-core mlx5 backend (default: if found)])],
    [], [with_mlx5=check])
dcx_have_mlx5=no
AS_IF([test "x$with_mlx5" != xno],
    [AC_CHECK_HEADERS([infiniband/verbs.h infiniband/mlx5dv.h],
        [dcx_have_mlx5=yes], [dcx_have_mlx5=no; break])
     AS_IF([test "x$dcx_have_mlx5" = xyes],
        [AC_CHECK_LIB([ibverbs], [ibv_get_device_list], [:], [dcx_have_mlx5=no])])
     AS_IF([test "x$dcx_have_mlx5" = xyes],
        [AC_CHECK_LIB([mlx5], [mlx5dv_is_supported], [:], [dcx_have_mlx5=no])])
     dnl The backend posts through the ibv_wr_* API with DC addressing and
     dnl reads typed GID entries: rdma-core 32 or newer (Debian 12 has 44).
     AS_IF([test "x$dcx_have_mlx5" = xyes],
        [AC_CHECK_DECLS([mlx5dv_wr_set_dc_addr, ibv_wr_set_inline_data_list,
                         ibv_query_gid_ex, ibv_create_cq_ex,
                         MLX5DV_CONTEXT_FLAGS_DEVX],
            [], [dcx_have_mlx5=no],
            [[#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>]])])
     AS_IF([test "x$dcx_have_mlx5" = xno],
        [AC_MSG_NOTICE([mlx5 backend disabled: rdma-core verbs/mlx5dv headers, libraries or APIs (rdma-core >= 32) missing])])
     AS_IF([test "x$with_mlx5" = xyes -a "x$dcx_have_mlx5" = xno],
        [AC_MSG_ERROR([--with-mlx5 given but rdma-core verbs/mlx5dv not found (apt-get install libibverbs-dev)])])])
AS_IF([test "x$dcx_have_mlx5" = xyes],
    [AC_DEFINE([HAVE_DCX_MLX5], [1], [rdma-core mlx5 backend is built])
     MLX5_LIBS="-lmlx5 -libverbs"])
AC_SUBST([MLX5_LIBS])
AM_CONDITIONAL([DCX_HAVE_MLX5], [test "x$dcx_have_mlx5" = xyes])
