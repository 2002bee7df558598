# SPDX-License-Identifier: BSD-3-Clause
# googletest from Debian's libgtest-dev (prebuilt libgtest.a, libgtest_main.a)
dcx_have_gtest=no
AC_LANG_PUSH([C++])
AC_CHECK_HEADER([gtest/gtest.h], [dcx_have_gtest=yes])
AC_LANG_POP([C++])
AS_IF([test "x$dcx_have_gtest" = xno],
      [AC_MSG_WARN([googletest not found: install libgtest-dev to build the tests])])
GTEST_LIBS="-lgtest -lgtest_main"
AC_SUBST([GTEST_LIBS])
AM_CONDITIONAL([DCX_HAVE_GTEST], [test "x$dcx_have_gtest" = xyes])
