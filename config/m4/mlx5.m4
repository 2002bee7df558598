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
     AS_IF([test "x$with_mlx5" = xyes -a "x$dcx_have_mlx5" = xno],
        [AC_MSG_ERROR([--with-mlx5 given but rdma-core verbs/mlx5dv not found (apt-get install libibverbs-dev)])])])
AS_IF([test "x$dcx_have_mlx5" = xyes],
    [AC_DEFINE([HAVE_DCX_MLX5], [1], [rdma-core mlx5 backend is built])
     MLX5_LIBS="-lmlx5 -libverbs"])
AC_SUBST([MLX5_LIBS])
AM_CONDITIONAL([DCX_HAVE_MLX5], [test "x$dcx_have_mlx5" = xyes])
