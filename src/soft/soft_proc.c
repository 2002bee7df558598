/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: what the kernel tells of time and processes, below every
 * other file of the device: the monotonic clock (soft_now_ns) and whether
 * a process (a port's owner, a ring slot's claimer, a direct-access
 * initiator) is alive, from /proc/PID/stat.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft_clock.h"
#include "soft_port.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t soft_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Start time (field 22 of /proc/PID/stat, clock ticks) and state letter
 * (field 3) of a process; 0 if it cannot be read. */
static int soft_proc_stat(uint32_t pid, uint64_t *start_p, char *state_p)
{
    char path[64], buf[1024], *p;
    unsigned long long start = 0;
    ssize_t n;
    int fd, field;

    snprintf(path, sizeof(path), "/proc/%u/stat", pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        return 0;
    }
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0) {
        return 0;
    }
    buf[n] = '\0';
    /* the command name may hold spaces: count fields after the last ')' */
    p      = strrchr(buf, ')');
    if ((p == NULL) || (p[1] == '\0')) {
        return 0;
    }
    p += 2; /* field 3 starts here */
    *state_p = *p;
    for (field = 3; (field < 22) && (*p != '\0'); ++p) {
        if (*p == ' ') {
            ++field;
        }
    }
    if (sscanf(p, "%llu", &start) != 1) {
        return 0;
    }
    *start_p = start;
    return 1;
}

uint64_t soft_proc_start_time(uint32_t pid)
{
    uint64_t start = 0;
    char state;

    return soft_proc_stat(pid, &start, &state) ? start : 0;
}

/* Alive = exists, is not a zombie, and started when the segment says. */
int soft_pid_alive(uint32_t pid, uint64_t start)
{
    uint64_t now_start = 0;
    char state         = '?';

    if ((kill((pid_t)pid, 0) != 0) && (errno == ESRCH)) {
        return 0;
    }
    if (!soft_proc_stat(pid, &now_start, &state)) {
        /* /proc unreadable for this pid: kill() said it exists */
        return 1;
    }
    if ((state == 'Z') || (state == 'X')) {
        return 0;
    }
    return (start == 0) || (now_start == start);
}
