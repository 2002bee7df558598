/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: the geometry and the copy of an access to a vector, a
 * strided key of one interleaved entry or a list of equal entries at one
 * distance (a column of a matrix, every k-th block of an array,
 * soft_mkey_as_vector): element r starts at base + r * stride and holds count bytes;
 * byte off of the key is byte off % count of element off / count.  Its
 * addresses grow with the offset, so an access [off, off + len) lies in a
 * region when its first and last bytes do.  Used by the target's own
 * execution (soft_mkey.c) and by an initiator copying through a mapping
 * of the target's memory (soft_direct.c).
 */
#ifndef SOFT_VECTOR_H_
#define SOFT_VECTOR_H_

#include <stdint.h>
#include <string.h>

typedef struct soft_vector_span {
    uint64_t lo;    /* address of the access's first byte */
    uint64_t hi;    /* of its last byte */
    uint64_t inoff; /* where in its first element it starts */
} soft_vector_span_t;

/* The addresses of bytes [off, off + len) (len > 0, inside the key) of
 * the vector base/count/stride; 0 if its last byte lies past the end of
 * the address space (a layout no region can hold). */
static inline int soft_vector_span(uint64_t base, uint64_t count,
                                   uint64_t stride, uint64_t off, uint64_t len,
                                   soft_vector_span_t *s)
{
    uint64_t last = off + len - 1;

    if (__builtin_mul_overflow(last / count, stride, &s->hi) ||
        __builtin_add_overflow(s->hi, base, &s->hi) ||
        __builtin_add_overflow(s->hi, last % count, &s->hi)) {
        return 0;
    }
    s->inoff = off % count;
    s->lo    = base + (off / count) * stride + s->inoff;
    return 1;
}

/* Elements ahead of the one being copied whose first line is asked for
 * (soft_vector_ahead), from a stride of SOFT_VECTOR_AHEAD_STRIDE bytes on:
 * every element is then on a page of its own, 8 pages or more past the
 * one before, and the misses of its page walk and of its line overlap
 * with the copies before instead of following them one by one.  Measured
 * on the development VM with bench/strided (one column of N x N doubles,
 * medians of 5 runs, alternating): device memory N = 4096 59 -> 38 us,
 * N = 8192 188 -> 123 us; heap N = 4096 within the spread, N = 8192
 * 56 -> 62 us (still 0.73x packing); at a 16 KiB stride (N = 2048) it
 * cost 14.5 -> 17.5 us, hence the threshold. */
#define SOFT_VECTOR_AHEAD        4u
#define SOFT_VECTOR_AHEAD_STRIDE (32u * 1024u)

/* Asks for the first line of the element SOFT_VECTOR_AHEAD strides past
 * elem, for writing (out) or reading: a hint, never a fault, wherever it
 * falls (the address is not dereferenced) */
static inline void soft_vector_ahead(const uint8_t *elem, uint64_t stride,
                                     int out)
{
    const void *p = (const void *)((uintptr_t)elem +
                                   SOFT_VECTOR_AHEAD * stride);

    if (out) {
        __builtin_prefetch(p, 1, 0);
    } else {
        __builtin_prefetch(p, 0, 0);
    }
}

/* Copies len bytes between buf and the vector from first, the address of
 * the access's first byte, inoff bytes into its element: out 1 writes the
 * vector.  Element after element with no check (the caller checked the
 * span); an element of 8 bytes (a column of doubles) is one load and one
 * store.  Returns the pieces copied. */
static inline uint64_t soft_vector_copy(uint8_t *first, uint64_t inoff,
                                        uint64_t count, uint64_t stride,
                                        uint8_t *buf, uint64_t len, int out)
{
    uint64_t chunk = count - inoff, done, n;
    int ahead      = (stride >= SOFT_VECTOR_AHEAD_STRIDE);
    uint8_t *elem;

    if ((count == sizeof(uint64_t)) && (inoff == 0) &&
        (len % sizeof(uint64_t) == 0)) {
        for (n = 0, done = 0; done < len; ++n, done += sizeof(uint64_t)) {
            if (ahead) {
                soft_vector_ahead(first, stride, out);
            }
            memcpy(out ? first : buf + done, out ? buf + done : first,
                   sizeof(uint64_t));
            first += stride;
        }
        return n;
    }
    if (chunk > len) {
        chunk = len;
    }
    memcpy(out ? first : buf, out ? buf : first, chunk);
    /* the next element starts stride - inoff bytes on */
    elem = first + (stride - inoff);
    for (n = 1, done = chunk; done < len; ++n, done += chunk) {
        chunk = (len - done < count) ? len - done : count;
        if (ahead) {
            soft_vector_ahead(elem, stride, out);
        }
        memcpy(out ? elem : buf + done, out ? buf + done : elem, chunk);
        elem += stride;
    }
    return n;
}

#endif
