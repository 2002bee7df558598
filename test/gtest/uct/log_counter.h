/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counts the warnings and errors UCX logs while a test runs, so that a test
 * can say how many it expects and fail on any other (as UCX's own gtest
 * does).  Shared by the dcx test binaries.
 */
#ifndef DCX_GTEST_LOG_COUNTER_H_
#define DCX_GTEST_LOG_COUNTER_H_

extern "C" {
#include <ucs/debug/log_def.h>
}

#include <cstdarg>
#include <string>
#include <vector>

namespace dcx_test {

class log_counter {
public:
    /* Routes UCX's warnings and errors here (once per process) and resets
     * the counts. */
    static void install();
    static void reset();
    static int errors() { return s_errors; }
    static int warnings() { return s_warnings; }
    static const std::vector<std::string> &messages() { return s_messages; }
    /* Every captured line, indented, one per line: for failure messages. */
    static std::string joined();
    static bool contains(const std::string &what);

private:
    static ucs_log_func_rc_t handler(const char *file, unsigned line,
                                     const char *function,
                                     ucs_log_level_t level,
                                     const ucs_log_component_config_t *comp,
                                     const char *message, va_list ap);
    static int s_errors;
    static int s_warnings;
    static std::vector<std::string> s_messages;
    static bool s_installed;
};

} // namespace dcx_test

#endif /* DCX_GTEST_LOG_COUNTER_H_ */
