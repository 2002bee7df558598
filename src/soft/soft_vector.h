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
    uint8_t *elem;

    if ((count == sizeof(uint64_t)) && (inoff == 0) &&
        (len % sizeof(uint64_t) == 0)) {
        for (n = 0, done = 0; done < len; ++n, done += sizeof(uint64_t)) {
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
        memcpy(out ? elem : buf + done, out ? buf + done : elem, chunk);
        elem += stride;
    }
    return n;
}

#endif
