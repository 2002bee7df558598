/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Counts UCX's warnings and errors during a test (see log_counter.h).
 */
#include "log_counter.h"

#include <cstdio>

namespace dcx_test {

int log_counter::s_errors   = 0;
int log_counter::s_warnings = 0;
std::vector<std::string> log_counter::s_messages;
bool log_counter::s_installed = false;

void log_counter::install()
{
    if (!s_installed) {
        ucs_log_push_handler(handler);
        s_installed = true;
    }
    reset();
}

void log_counter::reset()
{
    s_errors = s_warnings = 0;
    s_messages.clear();
}

std::string log_counter::joined()
{
    std::string all;

    for (size_t i = 0; i < s_messages.size(); ++i) {
        all += "  " + s_messages[i] + "\n";
    }
    return all;
}

bool log_counter::contains(const std::string &what)
{
    for (size_t i = 0; i < s_messages.size(); ++i) {
        if (s_messages[i].find(what) != std::string::npos) {
            return true;
        }
    }
    return false;
}

ucs_log_func_rc_t log_counter::handler(const char *file, unsigned line,
                                       const char *function,
                                       ucs_log_level_t level,
                                       const ucs_log_component_config_t *comp,
                                       const char *message, va_list ap)
{
    char buf[1024];
    va_list aq;

    if (level > UCS_LOG_LEVEL_WARN) {
        return UCS_LOG_FUNC_RC_CONTINUE;
    }
    va_copy(aq, ap);
    vsnprintf(buf, sizeof(buf), message, aq);
    va_end(aq);
    s_messages.push_back(buf);
    if (level == UCS_LOG_LEVEL_WARN) {
        ++s_warnings;
    } else {
        ++s_errors;
    }
    return UCS_LOG_FUNC_RC_STOP;
}

} // namespace dcx_test
