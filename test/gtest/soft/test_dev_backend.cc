/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The device layer's registry of backends and its knobs (dcx_backend.c):
 * the soft backend registered itself, its knobs carry their defaults and
 * checks, a refused value names the knob with the caller's prefix, and a
 * backend registered from elsewhere (here, from the test) is listed and
 * opened in its order without any change to the device layer.
 */
#include "soft_fixture.h"

#include <errno.h>
#include <string.h>

#include <string>
#include <vector>

using namespace soft_test;

namespace {

/* Log lines with their text, while alive (log_counter counts only). */
struct log_capture {
    static std::vector<std::string> lines;

    static void handler(dcx_log_level_t, const char *, int, const char *msg)
    {
        lines.push_back(msg);
    }

    log_capture()
    {
        lines.clear();
        dcx_log_set_handler(handler, DCX_LOG_WARN);
    }

    ~log_capture() { dcx_log_set_handler(nullptr, DCX_LOG_WARN); }

    /* exactly one line, and it contains what */
    static ::testing::AssertionResult one_line_with(const std::string &what)
    {
        if (lines.size() != 1) {
            return ::testing::AssertionFailure()
                   << lines.size() << " log lines";
        }
        if (lines[0].find(what) == std::string::npos) {
            return ::testing::AssertionFailure()
                   << "'" << lines[0] << "' lacks '" << what << "'";
        }
        lines.clear();
        return ::testing::AssertionSuccess();
    }
};

std::vector<std::string> log_capture::lines;

/* A backend the device layer has never heard of: "tdev" devices, as many as
 * its TDEV_DEVICES knob says, named with its TDEV_TAG knob; opening one
 * records what its listing gave it and fails. */
struct tdev_params {
    uint32_t count;
    const char *tag;
};

struct tdev_info {
    char tag[16];
    unsigned index;
};

std::string tdev_opened;

extern const dcx_backend_t tdev_backend;

const char *tdev_tag_check(const char *value)
{
    return (strlen(value) < sizeof(tdev_info::tag)) ?
               nullptr :
               "is longer than 15 characters";
}

int tdev_list(const void *block, dcx_dev_info_t *out, unsigned max,
              unsigned *count_p)
{
    const tdev_params *p = static_cast<const tdev_params *>(block);
    unsigned i;

    for (i = 0; (i < p->count) && (i < max); ++i) {
        tdev_info *ti = reinterpret_cast<tdev_info *>(out[i].priv.bytes);

        memset(&out[i], 0, sizeof(out[i]));
        snprintf(out[i].name, sizeof(out[i].name), "tdev%u", i);
        out[i].backend = &tdev_backend;
        out[i].index   = i;
        snprintf(ti->tag, sizeof(ti->tag), "%s", p->tag);
        ti->index = i;
    }
    *count_p = i;
    return 0;
}

int tdev_open(const dcx_dev_info_t *info, dcx_dev_t **dev_p)
{
    const tdev_info *ti = reinterpret_cast<const tdev_info *>(info->priv.bytes);

    tdev_opened = std::string(info->name) + "/" + ti->tag;
    *dev_p      = nullptr;
    return ENODEV;
}

const dcx_param_t tdev_knobs[] = {
    {"TDEV_DEVICES", "0", "Test devices to offer.", DCX_PARAM_UINT,
     offsetof(tdev_params, count), sizeof(uint32_t), 0, 4, nullptr},
    {"TDEV_TAG", "t", "Tag of the test devices.", DCX_PARAM_STRING,
     offsetof(tdev_params, tag), sizeof(const char *), 0, 0, tdev_tag_check}};

const dcx_backend_t tdev_backend = {
    "tdev", 50, tdev_knobs, 2, sizeof(tdev_params), tdev_list, tdev_open};

/* A backend whose knob's default is not a value of its type */
const dcx_param_t bad_knobs[] = {{"BAD_LIMIT", "lots", "Not a number.",
                                  DCX_PARAM_LIMIT, 0, sizeof(uint32_t), 1, 10,
                                  nullptr}};

const dcx_backend_t bad_backend = {
    "bad", 60, bad_knobs, 1, sizeof(uint32_t), tdev_list, tdev_open};

int no_list(const void *, dcx_dev_info_t *, unsigned, unsigned *count_p)
{
    *count_p = 0;
    return 0;
}

} // namespace


TEST_F(soft, backend_soft_registered_itself)
{
    const dcx_backend_t *b;
    int prev       = -1000000;
    bool soft_seen = false;

    EXPECT_EQ(&dcx_soft_backend, dcx_backend_find("soft"));
    EXPECT_EQ(nullptr, dcx_backend_find("nosuch"));
    for (unsigned i = 0; (b = dcx_backend_at(i)) != nullptr; ++i) {
        EXPECT_LE(prev, b->order) << b->name;
        prev = b->order;
        soft_seen |= (b == &dcx_soft_backend);
    }
    EXPECT_TRUE(soft_seen);
}

TEST_F(soft, backend_config_defaults_and_values)
{
    dcx_dev_config_t *config;
    dcx_soft_params_t *p;
    dcx_dev_info_t *list;
    unsigned count, i, soft = 0;
    dcx_dev_t *dev;

    ASSERT_EQ(0, dcx_dev_config_create("T_", &config));
    p = static_cast<dcx_soft_params_t *>(dcx_dev_config_params(config, "soft"));
    ASSERT_TRUE(p != nullptr);
    EXPECT_EQ(nullptr, dcx_dev_config_params(config, "nosuch"));

    /* the defaults the knobs' descriptions give */
    EXPECT_EQ(0u, p->count);
    EXPECT_STREQ("default", p->fabric);
    EXPECT_EQ(0u, p->limits.max_qp_wr);      /* auto */
    EXPECT_EQ(0u, p->limits.max_msg_size);   /* auto */
    EXPECT_EQ(0u, p->limits.ack_timeout_us); /* auto */
    EXPECT_EQ(0u, p->limits.tm_off);         /* SOFT_TM=y */
    EXPECT_EQ(1u, p->limits.direct);         /* SOFT_DIRECT=y */
    EXPECT_EQ(0u, p->limits.cold_rings);     /* SOFT_WARM_RINGS=y */
    EXPECT_EQ(0u, p->limits.pinned);         /* SOFT_PINNED=n */

    /* every kind of value lands where the soft backend reads it */
    EXPECT_EQ(0, dcx_dev_config_set_num(config, "SOFT_DEVICES", 2));
    EXPECT_EQ(0, dcx_dev_config_set_str(config, "SOFT_FABRIC", fabric.c_str()));
    EXPECT_EQ(0, dcx_dev_config_set_num(config, "SOFT_MAX_MSG_SIZE", 4096));
    EXPECT_EQ(0, dcx_dev_config_set_num(config, "SOFT_ACK_TIMEOUT", 50000));
    EXPECT_EQ(0, dcx_dev_config_set_num(config, "SOFT_MAX_INLINE", 64));
    EXPECT_EQ(0, dcx_dev_config_set_num(config, "SOFT_TM", 0));
    EXPECT_EQ(0, dcx_dev_config_set_num(config, "SOFT_DIRECT", 0));
    EXPECT_EQ(0, dcx_dev_config_set_num(config, "SOFT_WARM_RINGS", 0));
    EXPECT_EQ(0, dcx_dev_config_set_num(config, "SOFT_PINNED", 1));
    EXPECT_EQ(2u, p->count);
    EXPECT_EQ(fabric, p->fabric);
    EXPECT_EQ(4096u, p->limits.max_msg_size);
    EXPECT_EQ(50000u, p->limits.ack_timeout_us);
    EXPECT_EQ(64u, p->limits.max_inline);
    EXPECT_EQ(1u, p->limits.tm_off);
    EXPECT_EQ(0u, p->limits.direct);
    EXPECT_EQ(1u, p->limits.cold_rings);
    EXPECT_EQ(1u, p->limits.pinned);

    ASSERT_EQ(0, dcx_dev_list(config, &list, &count));
    dcx_dev_config_destroy(config);
    for (i = 0; i < count; ++i) {
        if (list[i].backend != &dcx_soft_backend) {
            continue;
        }
        EXPECT_EQ("soft" + std::to_string(soft), list[i].name);
        ++soft;
    }
    ASSERT_EQ(2u, soft);

    /* the listing carries the values to the open */
    for (i = 0; list[i].backend != &dcx_soft_backend; ++i) {
    }
    ASSERT_EQ(0, dcx_dev_open(&list[i], &dev));
    dcx_dev_list_free(list);
    EXPECT_EQ(&dcx_soft_backend, dcx_dev_backend(dev));
    EXPECT_EQ(4096u, dcx_dev_caps(dev)->max_msg_size);
    EXPECT_EQ(64u, dcx_dev_caps(dev)->max_inline);
    EXPECT_FALSE(dcx_dev_caps(dev)->flags & DCX_CAP_TM);
    EXPECT_GT(dcx_dev_caps(dev)->reg_overhead_ns, 0.0);
    dcx_dev_close(dev);
}

TEST_F(soft, backend_config_bad_flow)
{
    dcx_dev_config_t *config;
    dcx_soft_params_t *p;

    ASSERT_EQ(0, dcx_dev_config_create("T_", &config));
    p = static_cast<dcx_soft_params_t *>(dcx_dev_config_params(config, "soft"));
    ASSERT_TRUE(p != nullptr);
    {
        log_capture logs;

        EXPECT_EQ(EINVAL, dcx_dev_config_set_num(config, "SOFT_NOSUCH", 1));
        EXPECT_TRUE(logs.one_line_with("T_SOFT_NOSUCH"));
        EXPECT_EQ(EINVAL, dcx_dev_config_set_num(config, "SOFT_FABRIC", 1));
        EXPECT_TRUE(logs.one_line_with("T_SOFT_FABRIC is a string"));
        EXPECT_EQ(EINVAL, dcx_dev_config_set_str(config, "SOFT_DEVICES", "1"));
        EXPECT_TRUE(logs.one_line_with("T_SOFT_DEVICES is a number"));
        EXPECT_EQ(EINVAL, dcx_dev_config_set_num(config, "SOFT_MAX_SGE", 31));
        EXPECT_TRUE(logs.one_line_with("T_SOFT_MAX_SGE=31 is out of range "
                                       "[1, 30]"));
        EXPECT_EQ(EINVAL, dcx_dev_config_set_num(config, "SOFT_MTU", 255));
        EXPECT_TRUE(logs.one_line_with("T_SOFT_MTU=255"));
        /* 0 is "auto" inside the block, never a value one can set */
        EXPECT_EQ(EINVAL, dcx_dev_config_set_num(config, "SOFT_MAX_CQE", 0));
        EXPECT_TRUE(logs.one_line_with("T_SOFT_MAX_CQE=0"));
        EXPECT_EQ(EINVAL, dcx_dev_config_set_num(config, "SOFT_DEVICES", 65));
        EXPECT_TRUE(logs.one_line_with("T_SOFT_DEVICES=65"));
        EXPECT_EQ(EINVAL, dcx_dev_config_set_num(config, "SOFT_TM", 2));
        EXPECT_TRUE(logs.one_line_with("T_SOFT_TM=2"));
        EXPECT_EQ(EINVAL, dcx_dev_config_set_num(config, "SOFT_MAX_MSG_SIZE",
                                                 UINT64_MAX));
        EXPECT_TRUE(logs.one_line_with("T_SOFT_MAX_MSG_SIZE=inf"));
        EXPECT_EQ(EINVAL,
                  dcx_dev_config_set_num(config, "SOFT_RNR_TIMER", 1ull << 32));
        EXPECT_TRUE(logs.one_line_with("us]"));
        EXPECT_EQ(EINVAL,
                  dcx_dev_config_set_str(config, "SOFT_FABRIC", "no/slashes"));
        EXPECT_TRUE(logs.one_line_with("T_SOFT_FABRIC='no/slashes' is not "
                                       "a fabric name"));
    }

    /* nothing refused was stored */
    EXPECT_EQ(0u, p->count);
    EXPECT_STREQ("default", p->fabric);
    EXPECT_EQ(0u, p->limits.max_sge);
    EXPECT_EQ(0u, p->limits.mtu);
    EXPECT_EQ(0u, p->limits.tm_off);
    EXPECT_EQ(0u, p->limits.max_msg_size);
    dcx_dev_config_destroy(config);
}

/* The registry is process-wide and keeps what registers: one test does all
 * the registering, in a known order. */
TEST_F(soft, backend_registered_elsewhere_is_listed_in_its_order)
{
    dcx_dev_config_t *config;
    const dcx_backend_t *b;
    dcx_dev_info_t *list;
    unsigned count, i, n = 0, before;
    std::vector<std::string> names;
    dcx_dev_t *dev;

    ASSERT_EQ(nullptr, dcx_backend_find("tdev"));
    dcx_backend_register(&tdev_backend);
    ASSERT_EQ(&tdev_backend, dcx_backend_find("tdev"));

    /* listed between the backends of lower and of higher order */
    for (i = 0; (b = dcx_backend_at(i)) != nullptr; ++i) {
        if (b == &tdev_backend) {
            break;
        }
        EXPECT_LE(b->order, tdev_backend.order) << b->name;
    }
    for (++i; (b = dcx_backend_at(i)) != nullptr; ++i) {
        EXPECT_GE(b->order, tdev_backend.order) << b->name;
    }

    /* its knobs are in every configuration made from now on */
    ASSERT_EQ(0, dcx_dev_config_create(nullptr, &config));
    EXPECT_EQ(0, dcx_dev_config_set_num(config, "TDEV_DEVICES", 2));
    EXPECT_EQ(0, dcx_dev_config_set_str(config, "TDEV_TAG", "x7"));
    EXPECT_EQ(0, dcx_dev_config_set_num(config, "SOFT_DEVICES", 1));
    EXPECT_EQ(0, dcx_dev_config_set_str(config, "SOFT_FABRIC", fabric.c_str()));
    {
        log_capture logs;
        EXPECT_EQ(EINVAL, dcx_dev_config_set_str(config, "TDEV_TAG",
                                                 "sixteen-chars-xx"));
        EXPECT_TRUE(logs.one_line_with("is longer than 15"));
    }
    ASSERT_EQ(0, dcx_dev_list(config, &list, &count));
    dcx_dev_config_destroy(config);
    for (i = 0; i < count; ++i) {
        names.push_back(list[i].name);
    }
    /* the test backend's devices come before the soft device's */
    ASSERT_GE(names.size(), 3u);
    EXPECT_EQ("tdev0", names[names.size() - 3]);
    EXPECT_EQ("tdev1", names[names.size() - 2]);
    EXPECT_EQ("soft0", names[names.size() - 1]);

    /* opening goes to the backend that listed the device */
    tdev_opened.clear();
    EXPECT_EQ(ENODEV, dcx_dev_open(&list[count - 2], &dev));
    EXPECT_EQ("tdev1/x7", tdev_opened);
    dcx_dev_list_free(list);

    /* a device whose backend is not registered */
    {
        log_capture logs;
        dcx_dev_info_t info;

        memset(&info, 0, sizeof(info));
        strcpy(info.name, "ghost0");
        info.backend = &bad_backend;
        EXPECT_EQ(ENODEV, dcx_dev_open(&info, &dev));
        EXPECT_TRUE(logs.one_line_with("ghost0"));
    }

    /* refusals: twice the same name, a knob whose default does not parse,
     * one backend more than the registry holds */
    {
        log_capture logs;

        dcx_backend_register(&tdev_backend);
        EXPECT_TRUE(logs.one_line_with("registered twice"));
        dcx_backend_register(&bad_backend);
        EXPECT_TRUE(logs.one_line_with("BAD_LIMIT"));
        EXPECT_EQ(nullptr, dcx_backend_find("bad"));
    }

    while (dcx_backend_at(n) != nullptr) {
        ++n;
    }
    before = n;
    static std::vector<std::string> filler_names;
    static std::vector<dcx_backend_t> fillers;
    fillers.reserve(DCX_BACKENDS_MAX);
    for (i = before; i < DCX_BACKENDS_MAX; ++i) {
        filler_names.push_back("filler" + std::to_string(i));
    }
    for (i = before; i < DCX_BACKENDS_MAX; ++i) {
        dcx_backend_t f = {filler_names[i - before].c_str(),
                           1000,
                           nullptr,
                           0,
                           0,
                           no_list,
                           tdev_open};
        fillers.push_back(f);
        dcx_backend_register(&fillers.back());
    }
    EXPECT_EQ(nullptr, dcx_backend_at(DCX_BACKENDS_MAX));
    {
        log_capture logs;
        static const dcx_backend_t one_more = {"one_more", 0,       nullptr,  0,
                                               0,          no_list, tdev_open};

        dcx_backend_register(&one_more);
        EXPECT_TRUE(logs.one_line_with("one_more"));
        EXPECT_EQ(nullptr, dcx_backend_find("one_more"));
    }

    /* backends without knobs list nothing here and do not disturb others */
    ASSERT_EQ(0, dcx_dev_list(nullptr, &list, &count));
    for (i = 0; i < count; ++i) {
        EXPECT_NE(std::string::npos, std::string(list[i].name).find("mlx5"))
            << list[i].name;
    }
    dcx_dev_list_free(list);
}
