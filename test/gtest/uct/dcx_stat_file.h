/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx transport tests: reading the live counters files of
 * UCX_DCX_STATS_DIR (src/uct/dcx/dcx_stats.c gives the layout: a header,
 * the counters' names, their values), the way any reader would, by name.
 */
#ifndef DCX_TEST_STAT_FILE_H_
#define DCX_TEST_STAT_FILE_H_

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <stdlib.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace dcx_test {

/* One counters file: false if it is not one (or is cut short) */
inline bool dcx_stat_read(const std::string &path, const std::string &name,
                          uint64_t *value)
{
    const size_t hdr = 8 + 4 * 4 + 32 + 16, name_len = 32;
    std::vector<char> buf(1 << 16);
    uint32_t version, count;
    FILE *f = fopen(path.c_str(), "r");
    size_t len;

    if (f == NULL) {
        return false;
    }
    len = fread(&buf[0], 1, buf.size(), f);
    fclose(f);
    if ((len < hdr) || memcmp(&buf[0], "DCXSTAT", 8)) {
        return false;
    }
    memcpy(&version, &buf[8], 4);
    memcpy(&count, &buf[20], 4);
    if ((version != 1) || (len < hdr + count * (name_len + 8))) {
        return false;
    }
    for (uint32_t i = 0; i < count; ++i) {
        if (!strncmp(&buf[hdr + i * name_len], name.c_str(), name_len)) {
            memcpy(value, &buf[hdr + count * name_len + i * 8], 8);
            return true;
        }
    }
    return false;
}

/* The sum of counter name over the counters files in dir */
inline uint64_t dcx_stat_sum(const std::string &dir, const std::string &name,
                             unsigned *files = NULL)
{
    DIR *d       = opendir(dir.c_str());
    uint64_t sum = 0, value;
    struct dirent *de;

    if (files != NULL) {
        *files = 0;
    }
    while ((d != NULL) && ((de = readdir(d)) != NULL)) {
        if ((de->d_name[0] != '.') &&
            dcx_stat_read(dir + "/" + de->d_name, name, &value)) {
            sum += value;
            if (files != NULL) {
                ++*files;
            }
        }
    }
    if (d != NULL) {
        closedir(d);
    }
    return sum;
}

/* A fresh counters directory under /tmp (for UCX_DCX_STATS_DIR), made on
 * first use (a fixture's peer process, which exits without destroying it,
 * leaves none behind) and removed with the files in it when the object
 * goes */
class dcx_stat_dir {
public:
    dcx_stat_dir() = default;

    ~dcx_stat_dir()
    {
        DIR *d = m_path.empty() ? NULL : opendir(m_path.c_str());
        struct dirent *de;

        while ((d != NULL) && ((de = readdir(d)) != NULL)) {
            if (de->d_name[0] != '.') {
                unlink((m_path + "/" + de->d_name).c_str());
            }
        }
        if (d != NULL) {
            closedir(d);
            rmdir(m_path.c_str());
        }
    }

    dcx_stat_dir(const dcx_stat_dir &)            = delete;
    dcx_stat_dir &operator=(const dcx_stat_dir &) = delete;

    /* The directory, made by the first call; empty if it cannot be made */
    const std::string &path()
    {
        char dir[] = "/tmp/dcx-stat-test.XXXXXX";

        if (m_path.empty() && (mkdtemp(dir) != NULL)) {
            m_path = dir;
        }
        return m_path;
    }

    /* Counter name summed over the directory's files (0: none yet) */
    uint64_t sum(const std::string &name, unsigned *files = NULL) const
    {
        return dcx_stat_sum(m_path, name, files);
    }

private:
    std::string m_path;
};

} // namespace dcx_test

#endif
