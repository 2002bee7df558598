/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx: strided memory registration (public API, installed as
 * <uct/dcx/dcx_strided.h>).
 *
 * A strided registration describes non-contiguous memory (a matrix column,
 * a struct-of-arrays field, a face of a 3-D array) once, as an indirect
 * memory key of the NIC.  It returns a uct_mem_h like uct_md_mem_reg()
 * does; its packed remote key (uct_md_mkey_pack) shows peers the layout as
 * ONE contiguous, zero-based range of uct_dcx_strided_length() bytes: a
 * peer's uct_ep_put_zcopy / put_short / put_bcopy at remote address 'off'
 * scatters its contiguous data into the elements from byte 'off' of the
 * layout on, a get gathers them, and an atomic inside one element operates
 * on that element.  Remote addresses are offsets (0 is the first byte of
 * the first element), never virtual addresses.  The handle is meant for
 * remote access: do not pass it as the memh of a local iov (strided local
 * data goes in uct_iov_t stride/count).
 *
 * Element order: element (b, i) -- block b in [0, block_count), element i
 * in [0, count) of the block -- occupies key bytes
 *     [(b * count + i) * elem_size, (b * count + i + 1) * elem_size)
 * and memory bytes
 *     [base + b * block_stride + i * stride, ... + elem_size).
 *
 * Underlying memory: pass the memh of a uct_md_mem_reg() of the same MD
 * that covers every element (the usual case: the whole array is registered
 * once and many layouts are cut from it; it must stay registered while the
 * strided handle exists); or pass NULL and the call registers the memory
 * itself (one registration from the first byte of the first element to the
 * last byte of the last one, each region of a list separately) and releases
 * it with the strided handle.
 *
 * Release with uct_md_mem_dereg() as any memh: the key is invalidated, and
 * once the device has completed the invalidation it is destroyed; from then
 * on a peer's access through the packed rkey fails at the peer (remote
 * access error; nothing is written).  Registration and deregistration post
 * a work request and wait for its completion (bounded: a device that does
 * not answer within the timeout gives UCS_ERR_TIMED_OUT): they are control
 * path, not data path.
 *
 * Limits (device capabilities; the soft device's entry count is
 * UCX_DCX_SOFT_MKEY_MAX_ENTRIES): a regular pattern whose element size,
 * stride and block stride are at most 65535 bytes takes count + 1
 * translation entries with blocks (2 without); any other pattern, and a
 * list, takes one entry per element or region.  A layout that does not fit
 * is refused with UCS_ERR_EXCEEDS_LIMIT.
 *
 * Errors (a status and one log line): UCS_ERR_INVALID_PARAM for a NULL
 * argument, an md that is not a dcx md, zero elements or zero element size,
 * overlapping elements (stride < elem_size, blocks overlapping), a layout
 * that wraps the address space, a memh of another md or a strided memh as
 * the base; UCS_ERR_INVALID_ADDR for elements the given memh does not
 * cover, or that it does not grant the requested access;
 * UCS_ERR_EXCEEDS_LIMIT for layouts past the device's limits;
 * UCS_ERR_UNSUPPORTED on a device without strided keys.
 *
 * Reaching the symbols: they are exported by libuct_dcx.so, the dcx module.
 * Link against it (-luct_dcx, which also loads and registers the
 * transport), or, in a program where the module is preloaded (dcx-run,
 * LD_PRELOAD) or dlopen'ed, look them up at run time:
 *     uct_dcx_md_mem_reg_strided_func_t reg =
 *         (uct_dcx_md_mem_reg_strided_func_t)
 *         dlsym(RTLD_DEFAULT, UCT_DCX_MD_MEM_REG_STRIDED_SYMBOL);
 * (dlsym(handle, ...) with the handle of dlopen("libuct_dcx.so", ...)).
 */
#ifndef UCT_DCX_STRIDED_H_
#define UCT_DCX_STRIDED_H_

#include <uct/api/uct.h>

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define UCT_DCX_STRIDED_API_VERSION 1

#if defined(__GNUC__)
#define UCT_DCX_STRIDED_API __attribute__((visibility("default")))
#else
#define UCT_DCX_STRIDED_API
#endif

/* A regular strided layout, optionally repeated in blocks. */
typedef struct uct_dcx_strided_desc {
    void *base;          /* first byte of element (0, 0) */
    size_t elem_size;    /* bytes per element, >= 1 */
    size_t stride;       /* bytes from one element to the next of a
                               block, >= elem_size (ignored if count == 1) */
    size_t count;        /* elements per block, >= 1 */
    size_t block_count;  /* blocks; 0 or 1: a single block */
    size_t block_stride; /* bytes from one block to the next; the blocks
                               must not overlap: >= (count - 1) * stride +
                               elem_size (ignored with a single block) */
} uct_dcx_strided_desc_t;

/* One region of a list layout. */
typedef struct uct_dcx_strided_region {
    void *address;
    size_t length; /* >= 1 */
} uct_dcx_strided_region_t;

/* Bytes of the zero-based range a strided handle exposes. */
static inline size_t uct_dcx_strided_length(const uct_dcx_strided_desc_t *desc)
{
    size_t blocks = (desc->block_count > 1) ? desc->block_count : 1;

    return blocks * desc->count * desc->elem_size;
}

/*
 * Registers a strided layout on a dcx memory domain.
 *   md:     a dcx md (uct_md_open of component "dcx")
 *   desc:   the layout
 *   memh:   registration (uct_md_mem_reg on md) covering every element, or
 *           NULL to have the call register the memory itself
 *   flags:  UCT_MD_MEM_ACCESS_REMOTE_* the key grants peers (none = all:
 *           remote put, get and atomics); a given memh must grant them too
 *   memh_p: the strided handle; release with uct_md_mem_dereg()
 */
UCT_DCX_STRIDED_API ucs_status_t
uct_dcx_md_mem_reg_strided(uct_md_h md, const uct_dcx_strided_desc_t *desc,
                           uct_mem_h memh, unsigned flags, uct_mem_h *memh_p);

/*
 * Registers a list layout: the concatenation of num_regions regions (in
 * the given order, which need not be address order; regions must not
 * overlap).
 *   memhs:  NULL (the call registers each region), or num_regions handles,
 *           memhs[i] covering regions[i] (the same handle may repeat)
 */
UCT_DCX_STRIDED_API ucs_status_t
uct_dcx_md_mem_reg_list(uct_md_h md, const uct_dcx_strided_region_t *regions,
                        size_t num_regions, const uct_mem_h *memhs,
                        unsigned flags, uct_mem_h *memh_p);

/* For dlsym() */
#define UCT_DCX_MD_MEM_REG_STRIDED_SYMBOL "uct_dcx_md_mem_reg_strided"
#define UCT_DCX_MD_MEM_REG_LIST_SYMBOL    "uct_dcx_md_mem_reg_list"
typedef ucs_status_t (*uct_dcx_md_mem_reg_strided_func_t)(
    uct_md_h md, const uct_dcx_strided_desc_t *desc, uct_mem_h memh,
    unsigned flags, uct_mem_h *memh_p);
typedef ucs_status_t (*uct_dcx_md_mem_reg_list_func_t)(
    uct_md_h md, const uct_dcx_strided_region_t *regions, size_t num_regions,
    const uct_mem_h *memhs, unsigned flags, uct_mem_h *memh_p);

#ifdef __cplusplus
}
#endif

#endif /* UCT_DCX_STRIDED_H_ */
