/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Test fixture for the dcx transport (see uct_fixture.h).
 */
#include "uct_fixture.h"

/* The device behind the MD, for fault injection and counters */
#include "dcx_md.h"

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

namespace dcx_test {

scoped_env::~scoped_env()
{
    std::map<std::string, std::pair<bool, std::string>>::iterator it;

    for (it = m_saved.begin(); it != m_saved.end(); ++it) {
        if (it->second.first) {
            setenv(it->first.c_str(), it->second.second.c_str(), 1);
        } else {
            unsetenv(it->first.c_str());
        }
    }
}

void scoped_env::set(const std::string &name, const std::string &value)
{
    if (m_saved.find(name) == m_saved.end()) {
        const char *old = getenv(name.c_str());
        m_saved[name]   = std::make_pair(old != NULL,
                                         std::string(old ? old : ""));
    }
    setenv(name.c_str(), value.c_str(), 1);
}

std::string uct_dcx_test::unique_fabric()
{
    static int seq = 0;
    char name[32];

    snprintf(name, sizeof(name), "gtu%d-%d", (int)getpid(), ++seq);
    return name;
}

void uct_dcx_test::SetUp()
{
    uct_component_h *components;
    unsigned num_components, i;
    uct_md_config_t *md_config;
    uct_component_attr_t cattr;
    ucs_status_t status;

    log_counter::install();
    /* the soft devices only when the tests run on one: on another backend
     * they would be listed next to its devices */
    m_env.set("UCX_DCX_SOFT_DEVICES", test_on_soft() ? "1" : "0");
    if (getenv("DCX_PEER_FABRIC") != NULL) {
        /* a peer process joins its parent's fabric */
        m_env.set("UCX_DCX_SOFT_FABRIC", getenv("DCX_PEER_FABRIC"));
    } else {
        m_env.set("UCX_DCX_SOFT_FABRIC", unique_fabric());
    }
    init_env(m_env);

    m_component = NULL;
    status      = uct_query_components(&components, &num_components);
    ASSERT_EQ(UCS_OK, status);
    for (i = 0; i < num_components; ++i) {
        cattr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        ASSERT_EQ(UCS_OK, uct_component_query(components[i], &cattr));
        if (!strcmp(cattr.name, "dcx")) {
            m_component = components[i];
        }
    }
    uct_release_component_list(components);
    ASSERT_TRUE(m_component != NULL) << "dcx component not registered";

    ASSERT_EQ(UCS_OK, uct_md_config_read(m_component, NULL, NULL, &md_config));
    status = uct_md_open(m_component, test_md_name().c_str(), md_config, &m_md);
    uct_config_release(md_config);
    ASSERT_EQ(UCS_OK, status);
    ASSERT_EQ(UCS_OK, uct_md_query(m_md, &m_md_attr));

    ASSERT_EQ(UCS_OK, ucs_async_context_create(UCS_ASYNC_MODE_THREAD_SPINLOCK,
                                               &m_async));

    /* A policy test of the streams policy on a device without DCI streams
     * is skipped by that capability; the fixture's own set-up (entities,
     * pairs) goes on under the default policy, the body does not run */
    if ((getenv("UCX_DCX_DCI_POLICY") != NULL) &&
        !strcmp(getenv("UCX_DCX_DCI_POLICY"), "streams") &&
        !dev_has(DCX_CAP_DCI_STREAMS)) {
        m_env.set("UCX_DCX_DCI_POLICY", "dcs_quota");
        GTEST_SKIP() << "the device has no DCI streams (DCI_POLICY=streams)";
    }
}

void uct_dcx_test::TearDown()
{
    size_t i;

    for (i = 0; i < m_eps.size(); ++i) {
        if (m_eps[i] != NULL) {
            uct_ep_destroy(m_eps[i]);
        }
    }
    m_eps.clear();
    for (i = 0; i < m_mems.size(); ++i) {
        free_mem(m_mems[i]);
    }
    m_mems.clear();
    for (i = 0; i < m_entities.size(); ++i) {
        uct_iface_close(m_entities[i]->iface);
        uct_worker_destroy(m_entities[i]->worker);
        delete m_entities[i];
    }
    m_entities.clear();
    if (m_md != NULL) {
        uct_md_close(m_md);
        m_md = NULL;
    }
    ucs_async_context_destroy(m_async);
}

ucs_status_t
uct_dcx_test::try_create_entity(const std::map<std::string, std::string> &cfg,
                                entity **e_p)
{
    std::map<std::string, std::string>::const_iterator it;
    const std::string dev_name = test_md_name() + ":1";
    uct_iface_config_t *config;
    uct_iface_params_t params;
    ucs_status_t status;
    entity *e = new entity();

    status = uct_md_iface_config_read(m_md, "dcx", NULL, NULL, &config);
    if (status != UCS_OK) {
        delete e;
        return status;
    }
    /* A test sizes "the pool" with NUM_DCI; under the streams policy the
     * pool is the streams of its one DCI (NUM_DCI_STREAMS): the same size,
     * so that every policy runs the test against the same pool, where the
     * device has that many streams (the soft device: 64) */
    std::map<std::string, std::string> sized = cfg;
    const char *env_policy                   = getenv("UCX_DCX_DCI_POLICY");
    const std::string policy                 = (cfg.count("DCI_POLICY") != 0) ?
                                                   cfg.at("DCI_POLICY") :
                                                   (env_policy ? env_policy : "");
    if ((policy == "streams") && (cfg.count("NUM_DCI") != 0) &&
        (cfg.count("NUM_DCI_STREAMS") == 0) &&
        (strtoul(cfg.at("NUM_DCI").c_str(), NULL, 0) <= 64)) {
        sized["NUM_DCI_STREAMS"] = cfg.at("NUM_DCI");
    }
    for (it = sized.begin(); it != sized.end(); ++it) {
        status = uct_config_modify(config, it->first.c_str(),
                                   it->second.c_str());
        if (status == UCS_ERR_NO_ELEM) {
            /* UCX 1.18 and later match the name with the transport's
             * prefix, 1.13 without it */
            status = uct_config_modify(config, ("DCX_" + it->first).c_str(),
                                       it->second.c_str());
        }
        if (status != UCS_OK) {
            uct_config_release(config);
            delete e;
            return status;
        }
    }

    status = uct_worker_create(m_async, worker_thread_mode(), &e->worker);
    if (status != UCS_OK) {
        uct_config_release(config);
        delete e;
        return status;
    }

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_IFACE_PARAM_FIELD_OPEN_MODE |
                        UCT_IFACE_PARAM_FIELD_DEVICE |
                        UCT_IFACE_PARAM_FIELD_RX_HEADROOM |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER_ARG |
                        UCT_IFACE_PARAM_FIELD_ERR_HANDLER_FLAGS;
    params.err_handler          = err_handler;
    params.err_handler_arg      = this;
    params.err_handler_flags    = 0;
    params.open_mode            = UCT_IFACE_OPEN_MODE_DEVICE;
    params.mode.device.tl_name  = "dcx";
    params.mode.device.dev_name = dev_name.c_str();
    params.rx_headroom          = 16;
    iface_params(params);
    status = uct_iface_open(m_md, e->worker, &params, config, &e->iface);
    uct_config_release(config);
    if (status != UCS_OK) {
        uct_worker_destroy(e->worker);
        delete e;
        return status;
    }

    uct_iface_progress_enable(e->iface, UCT_PROGRESS_SEND | UCT_PROGRESS_RECV);
    status = uct_iface_query(e->iface, &e->attr);
    if (status == UCS_OK) {
        e->dev_addr.resize(e->attr.device_addr_len);
        e->iface_addr.resize(e->attr.iface_addr_len);
        status =
            uct_iface_get_device_address(e->iface,
                                         (uct_device_addr_t *)&e->dev_addr[0]);
    }
    if (status == UCS_OK) {
        status = uct_iface_get_address(e->iface,
                                       (uct_iface_addr_t *)&e->iface_addr[0]);
    }
    if (status != UCS_OK) {
        uct_iface_close(e->iface);
        uct_worker_destroy(e->worker);
        delete e;
        return status;
    }

    m_entities.push_back(e);
    *e_p = e;
    return UCS_OK;
}

entity *
uct_dcx_test::create_entity(const std::map<std::string, std::string> &cfg)
{
    entity *e = NULL;

    EXPECT_EQ(UCS_OK, try_create_entity(cfg, &e));
    return e;
}

uct_ep_h uct_dcx_test::connect(entity *from, entity *to)
{
    return connect_addr(from, &to->dev_addr[0], &to->iface_addr[0]);
}

uct_ep_h uct_dcx_test::connect_addr(entity *from, const void *dev_addr,
                                    const void *iface_addr)
{
    uct_ep_params_t params;
    uct_ep_h ep = NULL;

    memset(&params, 0, sizeof(params));
    params.field_mask = UCT_EP_PARAM_FIELD_IFACE | UCT_EP_PARAM_FIELD_DEV_ADDR |
                        UCT_EP_PARAM_FIELD_IFACE_ADDR;
    params.iface      = from->iface;
    params.dev_addr   = (const uct_device_addr_t *)dev_addr;
    params.iface_addr = (const uct_iface_addr_t *)iface_addr;
    EXPECT_EQ(UCS_OK, uct_ep_create(&params, &ep));
    m_eps.push_back(ep);
    return ep;
}

static std::vector<char> from_hex(const std::string &s)
{
    std::vector<char> v;

    for (size_t i = 0; i + 1 < s.size(); i += 2) {
        v.push_back((char)strtoul(s.substr(i, 2).c_str(), NULL, 16));
    }
    return v;
}

static std::string to_hex(const std::vector<char> &v)
{
    static const char digits[] = "0123456789abcdef";
    std::string s;

    for (size_t i = 0; i < v.size(); ++i) {
        s += digits[(v[i] >> 4) & 0xf];
        s += digits[v[i] & 0xf];
    }
    return s;
}

uct_ep_h uct_dcx_test::connect_str(entity *from, const std::string &addr)
{
    std::vector<char> dev = from_hex(addr.substr(0, addr.find('/')));
    std::vector<char> ifa = from_hex(addr.substr(addr.find('/') + 1));

    EXPECT_FALSE(dev.empty() || ifa.empty()) << "bad address '" << addr << "'";
    if (dev.empty() || ifa.empty()) {
        return NULL;
    }
    return connect_addr(from, &dev[0], &ifa[0]);
}

std::string addr_str(const entity *e)
{
    return to_hex(e->dev_addr) + "/" + to_hex(e->iface_addr);
}

void uct_dcx_test::destroy_ep(uct_ep_h ep)
{
    for (size_t i = 0; i < m_eps.size(); ++i) {
        if (m_eps[i] == ep) {
            m_eps[i] = NULL;
        }
    }
    uct_ep_destroy(ep);
}

unsigned uct_dcx_test::progress()
{
    unsigned count = 0;

    for (size_t i = 0; i < m_entities.size(); ++i) {
        count += uct_worker_progress(m_entities[i]->worker);
    }
    return count;
}

double now_sec()
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

bool uct_dcx_test::wait_for(const std::function<bool()> &cond, double timeout)
{
    double deadline = now_sec() + timeout;

    while (!cond()) {
        if (now_sec() > deadline) {
            return cond();
        }
        progress();
    }
    return true;
}

bool uct_dcx_test::wait_progressing(entity *e,
                                    const std::function<bool()> &cond,
                                    double timeout)
{
    double deadline = now_sec() + timeout;

    while (!cond()) {
        if (now_sec() > deadline) {
            return cond();
        }
        uct_worker_progress(e->worker);
    }
    return true;
}

void uct_dcx_test::flush_ep(uct_ep_h ep)
{
    test_comp comp;
    ucs_status_t status;

    do {
        status = uct_ep_flush(ep, 0, &comp.uct);
        if (status == UCS_ERR_NO_RESOURCE) {
            progress();
        }
    } while (status == UCS_ERR_NO_RESOURCE);
    if (status == UCS_INPROGRESS) {
        EXPECT_TRUE(wait_for([&] { return comp.done > 0; }));
        EXPECT_EQ(UCS_OK, comp.status);
    } else {
        EXPECT_EQ(UCS_OK, status);
    }
}

void uct_dcx_test::flush_iface(entity *e)
{
    ucs_status_t status;

    EXPECT_TRUE(wait_for([&] {
        status = uct_iface_flush(e->iface, 0, NULL);
        return status != UCS_INPROGRESS;
    }));
    EXPECT_EQ(UCS_OK, status);
}

uct_dcx_test::mem uct_dcx_test::alloc_mem(size_t length)
{
    mem m;
    std::vector<char> packed(m_md_attr.rkey_packed_size);

    EXPECT_EQ(0, posix_memalign(&m.ptr, 4096, length));
    memset(m.ptr, 0, length);
    m.length = length;
    EXPECT_EQ(UCS_OK, uct_md_mem_reg(m_md, m.ptr, length, UCT_MD_MEM_ACCESS_ALL,
                                     &m.memh));
    EXPECT_EQ(UCS_OK, uct_md_mkey_pack(m_md, m.memh, &packed[0]));
    EXPECT_EQ(UCS_OK, uct_rkey_unpack(m_component, &packed[0], &m.rkb));
    m.rkey = m.rkb.rkey;
    m_mems.push_back(m);
    return m;
}

void uct_dcx_test::free_mem(mem &m)
{
    uct_rkey_release(m_component, &m.rkb);
    uct_md_mem_dereg(m_md, m.memh);
    free(m.ptr);
}

ucs_status_t uct_dcx_test::err_handler(void *arg, uct_ep_h ep,
                                       ucs_status_t status)
{
    uct_dcx_test *self = static_cast<uct_dcx_test *>(arg);
    ep_error err       = {ep, status};

    self->m_errors.push_back(err);
    if (self->m_err_destroys_ep) {
        self->destroy_ep(ep);
        return status;
    }
    return UCS_OK;
}

dcx_dev_t *uct_dcx_test::device() const
{
    return ((uct_dcx_md_t *)m_md)->dev;
}

int uct_dcx_test::inject_error_completion(int opcode, dcx_wc_status_t status,
                                          unsigned count)
{
    dcx_soft_fault_t fault;

    memset(&fault, 0, sizeof(fault));
    fault.type   = DCX_SOFT_FAULT_ERROR_CQE;
    fault.opcode = opcode;
    fault.count  = count;
    fault.status = status;
    return dcx_soft_fault_inject(device(), &fault);
}

bool uct_dcx_test::dev_has(uint32_t caps) const
{
    return (device()->caps.flags & caps) == caps;
}

void set_tm_callbacks(uct_iface_params_t &params,
                      uct_tag_unexp_eager_cb_t eager_cb,
                      uct_tag_unexp_rndv_cb_t rndv_cb, void *arg)
{
    params.field_mask |= UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_CB |
                         UCT_IFACE_PARAM_FIELD_HW_TM_EAGER_ARG |
                         UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_CB |
                         UCT_IFACE_PARAM_FIELD_HW_TM_RNDV_ARG;
    params.eager_cb  = eager_cb;
    params.eager_arg = arg;
    params.rndv_cb   = rndv_cb;
    params.rndv_arg  = arg;
}

peer_proc spawn_peer(const std::string &gtest_filter,
                     const std::map<std::string, std::string> &env)
{
    std::map<std::string, std::string>::const_iterator it;
    std::string filter = "--gtest_filter=" + gtest_filter;
    int down[2], up[2];
    char buf[2][16];
    peer_proc p;

    if (pipe(down) != 0) {
        return p;
    }
    if (pipe(up) != 0) {
        close(down[0]);
        close(down[1]);
        return p;
    }
    p.pid = fork();
    if (p.pid == 0) {
        close(down[1]);
        close(up[0]);
        snprintf(buf[0], sizeof(buf[0]), "%d", down[0]);
        snprintf(buf[1], sizeof(buf[1]), "%d", up[1]);
        setenv("DCX_PEER_IN", buf[0], 1);
        setenv("DCX_PEER_OUT", buf[1], 1);
        setenv("DCX_PEER_FABRIC", getenv("UCX_DCX_SOFT_FABRIC"), 1);
        for (it = env.begin(); it != env.end(); ++it) {
            setenv(it->first.c_str(), it->second.c_str(), 1);
        }
        /* the child's gtest report would mix with ours */
        if (freopen("/dev/null", "w", stdout) == NULL) {
            _exit(126);
        }
        execl("/proc/self/exe", "gtest_peer", filter.c_str(),
              "--gtest_also_run_disabled_tests", (char *)NULL);
        _exit(127);
    }
    close(down[0]);
    close(up[1]);
    if (p.pid < 0) {
        close(down[1]);
        close(up[0]);
        return p;
    }
    p.from = up[0];
    p.to   = down[1];
    return p;
}

void kill_peer(peer_proc &p)
{
    if (p.pid > 0) {
        kill(p.pid, SIGKILL);
        waitpid(p.pid, NULL, 0);
        p.pid = -1;
    }
    if (p.from >= 0) {
        close(p.from);
        p.from = -1;
    }
    if (p.to >= 0) {
        close(p.to);
        p.to = -1;
    }
}

bool peer_fds(int *in_fd, int *out_fd)
{
    const char *in = getenv("DCX_PEER_IN"), *out = getenv("DCX_PEER_OUT");

    if ((in == NULL) || (out == NULL)) {
        return false;
    }
    *in_fd  = atoi(in);
    *out_fd = atoi(out);
    return true;
}

bool read_full(int fd, void *buf, size_t len, int timeout_ms)
{
    char *p = (char *)buf;
    struct pollfd pfd;
    ssize_t n;
    int ret;

    while (len > 0) {
        pfd.fd     = fd;
        pfd.events = POLLIN;
        ret        = poll(&pfd, 1, timeout_ms);
        if ((ret < 0) && (errno == EINTR)) {
            continue;
        }
        if (ret <= 0) {
            return false;
        }
        n = read(fd, p, len);
        if (n <= 0) {
            return false;
        }
        p += n;
        len -= n;
    }
    return true;
}

bool write_full(int fd, const void *buf, size_t len)
{
    const char *p = (const char *)buf;
    ssize_t n;

    while (len > 0) {
        n = write(fd, p, len);
        if ((n < 0) && (errno == EINTR)) {
            continue;
        }
        if (n <= 0) {
            return false;
        }
        p += n;
        len -= n;
    }
    return true;
}

} /* namespace dcx_test */
