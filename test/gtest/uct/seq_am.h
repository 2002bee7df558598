/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Sequence-checked active messages, for the tests that move endpoints
 * between DCIs and kill peers under traffic (test_uct_scale.cc,
 * test_uct_hybrid.cc, and the peer process uct_dcx_scale_peer that both
 * send to): each message carries its sending endpoint's number, its
 * sequence number on that endpoint and len bytes of a pattern of both; the
 * receiver counts gaps (losses) and anything else wrong (corruptions: a bad
 * byte or length, a repeat, a reordering).
 */
#ifndef DCX_TEST_SEQ_AM_H
#define DCX_TEST_SEQ_AM_H

#include <uct/api/uct.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace dcx_test {

struct seq_hdr {
    uint32_t ep;
    uint32_t len;
    uint64_t seq;
};

inline uint8_t seq_byte(uint32_t ep, uint64_t seq, size_t i)
{
    return (uint8_t)(ep * 29 + seq * 13 + i);
}

/* What uct_ep_am_bcopy packs (seq_pack) */
struct seq_arg {
    uint32_t ep;
    uint64_t seq;
    size_t len;
};

inline size_t seq_pack(void *dest, void *arg)
{
    const seq_arg *a = static_cast<const seq_arg *>(arg);
    seq_hdr h        = {a->ep, (uint32_t)a->len, a->seq};
    uint8_t *p       = (uint8_t *)dest + sizeof(h);

    memcpy(dest, &h, sizeof(h));
    for (size_t i = 0; i < a->len; ++i) {
        p[i] = seq_byte(a->ep, a->seq, i);
    }
    return sizeof(h) + a->len;
}

/* The receive side of a set of endpoints (an am handler: seq_rx::cb with
 * the seq_rx as its argument) */
struct seq_rx {
    std::vector<uint64_t> next; /* per endpoint, the sequence expected */
    uint64_t losses = 0, corruptions = 0, received = 0;

    explicit seq_rx(size_t n_eps) : next(n_eps, 0) {}

    uint64_t bad() const { return losses + corruptions; }

    static ucs_status_t cb(void *arg, void *data, size_t length, unsigned flags)
    {
        seq_rx *self           = static_cast<seq_rx *>(arg);
        const seq_hdr *h       = static_cast<const seq_hdr *>(data);
        const uint8_t *payload = (const uint8_t *)(h + 1);

        if ((length < sizeof(*h)) || (h->ep >= self->next.size()) ||
            (h->len != length - sizeof(*h))) {
            self->corruptions++;
            return UCS_OK;
        }
        for (size_t i = 0; i < h->len; ++i) {
            if (payload[i] != seq_byte(h->ep, h->seq, i)) {
                self->corruptions++;
                break;
            }
        }
        uint64_t &next = self->next[h->ep];
        if (h->seq > next) {
            self->losses += h->seq - next; /* a gap */
        } else if (h->seq < next) {
            self->corruptions++; /* a duplicate or a reordering */
            return UCS_OK;
        }
        next = h->seq + 1;
        self->received++;
        return UCS_OK;
    }
};

} /* namespace dcx_test */

#endif
