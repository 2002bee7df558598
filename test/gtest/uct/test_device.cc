/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device of the dcx tests (see test_device.h).
 */
#include "test_device.h"

#include <cstdlib>

namespace dcx_test {

const std::string &test_md_name()
{
    static const std::string name = [] {
        const char *env = getenv("DCX_TEST_DEVICE");

        return std::string(((env != NULL) && (*env != '\0')) ? env : "soft0");
    }();

    return name;
}

bool test_on_soft()
{
    return test_md_name().compare(0, 4, "soft") == 0;
}

} /* namespace dcx_test */
