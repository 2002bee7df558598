# The UCX transport (libuct_dcx.so).  Filled in by the transport work:
# UCX internal headers from --with-ucx-src, config.h derived from ucx_info -b,
# type sizes checked against ucx_info -y.
dcx_have_uct=no
AM_CONDITIONAL([DCX_HAVE_UCT], [test "x$dcx_have_uct" = xyes])
