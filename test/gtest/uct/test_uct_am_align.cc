/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The alignment of received active messages (uct_iface_params_t
 * am_alignment, am_align_offset): the payload plus the offset lies on the
 * alignment boundary, with any headroom, for short and bcopy messages, kept
 * descriptors and released ones.  The receive pool keeps a link word before
 * each element; an offset that is no multiple of 8 once moved that word off
 * its 8-byte alignment (UBSan: "member access within misaligned address"
 * in ucs_mpool_get_inline, under UCX's uct_p2p_am_alignment
 * align_short_with_offset), which the ASan+UBSan build of this test
 * catches.
 */
#include "uct_contract_fixture.h"

class uct_dcx_am_align : public uct_dcx_contract {
protected:
    virtual void iface_params(uct_iface_params_t &params)
    {
        params.field_mask |= UCT_IFACE_PARAM_FIELD_AM_ALIGNMENT |
                             UCT_IFACE_PARAM_FIELD_AM_ALIGN_OFFSET |
                             UCT_IFACE_PARAM_FIELD_RX_HEADROOM;
        params.am_alignment    = s_align;
        params.am_align_offset = s_offset;
        params.rx_headroom     = s_headroom;
    }

    static size_t s_align, s_offset, s_headroom;
};

size_t uct_dcx_am_align::s_align    = 16;
size_t uct_dcx_am_align::s_offset   = 2;
size_t uct_dcx_am_align::s_headroom = 0;

namespace {

struct align_rx {
    size_t align, offset;
    int count, misaligned;
    std::vector<void *> kept;
    std::vector<std::string> data;

    static ucs_status_t cb(void *arg, void *data, size_t length, unsigned flags)
    {
        align_rx *self = static_cast<align_rx *>(arg);

        self->count++;
        self->misaligned += (((uintptr_t)data + self->offset) % self->align) !=
                            0;
        if (((self->count % 3) == 0) && (flags & UCT_CB_PARAM_FLAG_DESC)) {
            self->kept.push_back(data);
            self->data.push_back(std::string((char *)data, length));
            return UCS_INPROGRESS;
        }
        return UCS_OK;
    }
};

} // namespace

TEST_P(uct_dcx_am_align, payload_plus_offset_aligned)
{
    /* alignment, offset, headroom */
    const size_t cases[][3] = {{16, 2, 0},   {16, 1, 5},  {64, 3, 16},
                               {8, 7, 0},    {4, 1, 200}, {2, 1, 0},
                               {1, 0, 0},    {16, 0, 5},  {4096, 5, 0},
                               {128, 127, 3}};
    const int n             = 120;

    for (const auto &c : cases) {
        SCOPED_TRACE("alignment " + std::to_string(c[0]) + ", offset " +
                     std::to_string(c[1]) + ", headroom " +
                     std::to_string(c[2]));
        s_align    = c[0];
        s_offset   = c[1];
        s_headroom = c[2];
        entity *s = create_entity(), *r = create_entity();
        ASSERT_TRUE(s && r);
        uct_ep_h ep = connect(s, r);
        align_rx rx;
        rx.align      = c[0];
        rx.offset     = c[1];
        rx.count      = 0;
        rx.misaligned = 0;
        ASSERT_EQ(UCS_OK, uct_iface_set_am_handler(r->iface, AM_ID,
                                                   align_rx::cb, &rx, 0));
        for (int i = 0; i < n; ++i) {
            std::string p(1 + (i * 37) % 900, (char)('a' + (i % 26)));
            ASSERT_NO_FATAL_FAILURE(send_mixed(ep, i, p));
        }
        ASSERT_TRUE(wait_for([&] { return rx.count == n; }));
        EXPECT_EQ(0, rx.misaligned);
        for (size_t k = 0; k < rx.kept.size(); ++k) {
            EXPECT_EQ(0,
                      memcmp(rx.kept[k], rx.data[k].data(), rx.data[k].size()))
                << k;
            release_desc((char *)rx.kept[k] - s_headroom);
        }
        flush_ep(ep);
    }
    s_align    = 16;
    s_offset   = 2;
    s_headroom = 0;
}

/* An alignment of 0 or one that is no power of two opens no interface
 * (raising small alignments to 8 must not let these through) */
TEST_P(uct_dcx_am_align, invalid_alignment_bad_flow)
{
    const size_t bad[] = {0, 3, 12};

    for (size_t a : bad) {
        SCOPED_TRACE("alignment " + std::to_string(a));
        s_align  = a;
        s_offset = 0;
        entity *e;
        EXPECT_NE(UCS_OK, try_create_entity({}, &e));
        log_counter::reset();
    }
    s_align  = 16;
    s_offset = 2;
}

INSTANTIATE_TEST_SUITE_P(policy, uct_dcx_am_align, UCT_DCX_POLICIES);
