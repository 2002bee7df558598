/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Common parts of the emulation's tests: environment, stderr capture and
 * the per-test context.
 */
#include "emu_fixture.h"

#include <time.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sstream>

namespace {

char g_fabric[64];

/* Before any test (and so before the emulation reads it) */
struct emu_env {
    emu_env()
    {
        snprintf(g_fabric, sizeof(g_fabric), "gtest-emu-%d", (int)getpid());
        setenv("DCX_EMU_FABRIC", g_fabric, 1);
        setenv("DCX_EMU_DEVICES", "2", 1);
    }
} g_emu_env;

} // namespace

const char *emu_test_fabric()
{
    return g_fabric;
}

log_capture::log_capture() : m_restored(false)
{
    char path[] = "/tmp/dcx-emu-log.XXXXXX";

    fflush(stderr);
    m_fd = mkstemp(path);
    unlink(path);
    m_saved = dup(2);
    dup2(m_fd, 2);
}

log_capture::~log_capture()
{
    restore();
    close(m_fd);
}

void log_capture::restore()
{
    char buf[4096];
    ssize_t n;

    if (m_restored) {
        return;
    }
    fflush(stderr);
    dup2(m_saved, 2);
    close(m_saved);
    m_restored = true;
    lseek(m_fd, 0, SEEK_SET);
    while ((n = read(m_fd, buf, sizeof(buf))) > 0) {
        m_text.append(buf, (size_t)n);
    }
    /* show what was captured, as it would have been shown */
    fputs(m_text.c_str(), stderr);
}

std::vector<std::string> log_capture::lines()
{
    std::vector<std::string> out;
    std::istringstream in;
    std::string line;

    restore();
    in.str(m_text);
    while (std::getline(in, line)) {
        if (line.find("mlx5-emu: ") != std::string::npos) {
            out.push_back(line);
        }
    }
    return out;
}

int64_t emu_now_ms()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void emu_test::SetUp()
{
    m_list = ibv_get_device_list(&m_num);
    ASSERT_NE(nullptr, m_list) << strerror(errno);
    ASSERT_EQ(EMU_TEST_DEVICES, m_num);
    m_ctx = ibv_open_device(m_list[0]);
    ASSERT_NE(nullptr, m_ctx) << strerror(errno);
    m_pd = ibv_alloc_pd(m_ctx);
    ASSERT_NE(nullptr, m_pd) << strerror(errno);
}

void emu_test::TearDown()
{
    if (m_pd != nullptr) {
        EXPECT_EQ(0, ibv_dealloc_pd(m_pd));
    }
    if (m_ctx != nullptr) {
        EXPECT_EQ(0, ibv_close_device(m_ctx));
    }
    if (m_list != nullptr) {
        ibv_free_device_list(m_list);
    }
}
