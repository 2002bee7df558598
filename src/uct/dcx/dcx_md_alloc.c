/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dcx memory domain: memory the MD allocates (uct_md_mem_alloc / mem_free,
 * and through them uct_iface_mem_alloc and uct_mem_alloc's "md" method).
 *
 * Offered (UCT_MD_FLAG_ALLOC and UCT_MD_FLAG_FIXED, host memory) only
 * where peers map System V segments registered with the device, so that
 * their one-sided operations into them are plain copies and their atomics
 * CPU atomics (DCX_CAP_SHM_PEERS: the soft device).  At a fixed address,
 * OpenSHMEM's symmetric heap (UCP's allocation at the address the job
 * agreed) is one of them.  An mlx5 device reaches any registered memory
 * by DMA alike, so its MD allocates nothing and says so.
 *
 * An allocation is a SysV segment of its own (IPC_PRIVATE, mode 0600),
 * attached and removed (IPC_RMID) at once: nothing outlives the
 * processes, and Linux still lets peers attach a removed segment by its id
 * while it is attached anywhere, which is how the device publishes it.
 * At a fixed address the range is first reserved with
 * MAP_FIXED_NOREPLACE, so that nothing mapped there is ever replaced, and
 * the segment is then attached over our own reservation (SHM_REMAP).
 *
 * An allocation is registered at once with every access its flags ask
 * for, outside the registration cache (the cache would hand the same
 * region to later registrations of the range, which must not keep it
 * after the memory is freed); its memh is released only by mem_free,
 * which deregisters (telling the interfaces, as every deregistration
 * does), tells the device the range goes (dcx_dev_mem_unmapped) and then
 * detaches the segment.
 */
#include "dcx_md.h"

#include <ucs/debug/log.h>
#include <ucs/debug/memtrack_int.h>
#include <ucs/sys/math.h>

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef SHM_REMAP
#define SHM_REMAP 040000
#endif

/* What a uct_mem_h of an allocation points to. */
typedef struct uct_dcx_alloc_memh {
    uct_dcx_memh_t super; /* flags: UCT_DCX_MEMH_FLAG_ALLOC */
    void *address;
    size_t length;
} uct_dcx_alloc_memh_t;


/* Reserves [at, at + length) for the segment, over nothing mapped there:
 * UCS_OK, UCS_ERR_NO_MEMORY when the range is taken (said at debug level:
 * the caller's next allocator may try), or the failure (logged). */
static ucs_status_t uct_dcx_alloc_reserve(uct_dcx_md_t *md, void *at,
                                          size_t length, const char *alloc_name)
{
    void *addr = mmap(at, length, PROT_NONE,
                      MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
    int err    = errno;

    if ((addr != MAP_FAILED) && (addr != at)) {
        /* a kernel that does not know the flag took it for a hint */
        munmap(addr, length);
        addr = MAP_FAILED;
        err  = EEXIST;
    }
    if (addr != MAP_FAILED) {
        return UCS_OK;
    }
    if (err == EEXIST) {
        ucs_debug("dcx md %s: allocation of %zu bytes at %p for %s: the "
                  "range is in use",
                  md->name, length, at, alloc_name);
        return UCS_ERR_NO_MEMORY;
    }
    ucs_error("dcx md %s: allocation of %zu bytes at %p for %s: reserving "
              "the range failed: %s",
              md->name, length, at, alloc_name, strerror(err));
    return UCS_ERR_NO_MEMORY;
}

/* A new SysV segment of length bytes, attached (at 'at' exactly if not
 * NULL, over nothing mapped there) and already removed: UCS_OK with its
 * address in *addr_p, or the failure (logged), nothing left behind. */
static ucs_status_t uct_dcx_alloc_segment(uct_dcx_md_t *md, size_t length,
                                          void *at, const char *alloc_name,
                                          void **addr_p)
{
    ucs_status_t status;
    void *addr;
    int shmid, err;

    if (at != NULL) {
        status = uct_dcx_alloc_reserve(md, at, length, alloc_name);
        if (status != UCS_OK) {
            return status;
        }
    }
    shmid = shmget(IPC_PRIVATE, length, IPC_CREAT | 0600);
    if (shmid < 0) {
        err = errno;
        ucs_error("dcx md %s: allocation of %zu bytes for %s: shmget failed: "
                  "%s",
                  md->name, length, alloc_name, strerror(err));
        status = UCS_ERR_NO_MEMORY;
        goto err_unreserve;
    }
    addr = shmat(shmid, at, (at != NULL) ? SHM_REMAP : 0);
    err  = errno;
    /* nothing outlives the processes: gone with its last attachment */
    shmctl(shmid, IPC_RMID, NULL);
    if (addr == (void *)-1) {
        ucs_error("dcx md %s: allocation of %zu bytes at %p for %s: shmat of "
                  "segment %d failed: %s",
                  md->name, length, at, alloc_name, shmid, strerror(err));
        status = UCS_ERR_NO_MEMORY;
        goto err_unreserve;
    }
    if ((at != NULL) && (addr != at)) {
        ucs_error("dcx md %s: allocation of %zu bytes at %p for %s: segment "
                  "%d attached at %p",
                  md->name, length, at, alloc_name, shmid, addr);
        shmdt(addr);
        status = UCS_ERR_NO_MEMORY;
        goto err_unreserve;
    }
    *addr_p = addr;
    return UCS_OK;

err_unreserve:
    if (at != NULL) {
        munmap(at, length);
    }
    return status;
}

ucs_status_t uct_dcx_mem_alloc(uct_md_h uct_md, size_t *length_p,
                               void **address_p, ucs_memory_type_t mem_type,
                               unsigned flags, const char *alloc_name,
                               uct_mem_h *memh_p)
{
    uct_dcx_md_t *md = ucs_derived_of(uct_md, uct_dcx_md_t);
    size_t page      = (size_t)sysconf(_SC_PAGESIZE);
    uct_dcx_alloc_memh_t *memh;
    ucs_status_t status;
    size_t length;
    void *address;

    if (!(dcx_dev_caps(md->dev)->flags & DCX_CAP_SHM_PEERS)) {
        ucs_debug("dcx md %s: allocation is not supported by the device "
                  "(%s)",
                  md->name, alloc_name);
        return UCS_ERR_UNSUPPORTED;
    }
    if (mem_type != UCS_MEMORY_TYPE_HOST) {
        ucs_debug("dcx md %s: cannot allocate %s memory (%s)", md->name,
                  (mem_type < UCS_MEMORY_TYPE_LAST) ?
                      ucs_memory_type_names[mem_type] :
                      "unknown",
                  alloc_name);
        return UCS_ERR_UNSUPPORTED;
    }
    if ((length_p == NULL) || (address_p == NULL) || (memh_p == NULL) ||
        (*length_p == 0) || (*length_p > SIZE_MAX - page)) {
        ucs_error("dcx md %s: allocation of %zu bytes for %s: invalid "
                  "arguments",
                  md->name, (length_p != NULL) ? *length_p : 0, alloc_name);
        return UCS_ERR_INVALID_PARAM;
    }
    length  = ucs_align_up(*length_p, page);
    address = NULL;
    if (flags & UCT_MD_MEM_FLAG_FIXED) {
        /* at *address_p, over nothing mapped there (as UCX's shared-memory
         * MDs place theirs) */
        address = *address_p;
        if ((address == NULL) || ((uintptr_t)address & (page - 1)) ||
            ((uintptr_t)address > UINTPTR_MAX - length)) {
            ucs_error("dcx md %s: allocation of %zu bytes at %p for %s: not "
                      "a page-aligned address with room for them",
                      md->name, length, address, alloc_name);
            return UCS_ERR_INVALID_PARAM;
        }
    }

    memh = ucs_malloc(sizeof(*memh), "dcx alloc memh");
    if (memh == NULL) {
        ucs_error("dcx md %s: cannot allocate a memory handle for %s", md->name,
                  alloc_name);
        return UCS_ERR_NO_MEMORY;
    }

    status = uct_dcx_alloc_segment(md, length, address, alloc_name, &address);
    if (status != UCS_OK) {
        goto err_free_memh;
    }

    status = uct_dcx_md_mr_reg(md, address, length, uct_dcx_md_access_of(flags),
                               0, &memh->super.mr);
    if (status != UCS_OK) {
        ucs_error("dcx md %s: cannot register %zu bytes allocated for %s: %s",
                  md->name, length, alloc_name, ucs_status_string(status));
        goto err_detach;
    }

    memh->super.flags = UCT_DCX_MEMH_FLAG_ALLOC;
    memh->address     = address;
    memh->length      = length;
    ucs_trace("dcx md %s: allocated %p..%p for %s, lkey 0x%x", md->name,
              address, UCS_PTR_BYTE_OFFSET(address, length), alloc_name,
              memh->super.mr->lkey);
    *length_p  = length;
    *address_p = address;
    *memh_p    = &memh->super;
    return UCS_OK;

err_detach:
    dcx_dev_mem_unmapped(md->dev, address, length);
    shmdt(address);
err_free_memh:
    ucs_free(memh);
    return status;
}

ucs_status_t uct_dcx_mem_free(uct_md_h uct_md, uct_mem_h uct_memh)
{
    uct_dcx_md_t *md     = ucs_derived_of(uct_md, uct_dcx_md_t);
    uct_dcx_memh_t *base = uct_memh;
    uct_dcx_alloc_memh_t *memh;
    ucs_status_t status = UCS_OK;

    if ((base == NULL) || !(base->flags & UCT_DCX_MEMH_FLAG_ALLOC)) {
        ucs_error("dcx md %s: memh %p was not allocated by this md", md->name,
                  uct_memh);
        return UCS_ERR_INVALID_PARAM;
    }

    memh = ucs_derived_of(base, uct_dcx_alloc_memh_t);
    /* no peer reaches the memory once this returns; the device hears of
     * the unmap before it happens, as of every other one */
    uct_dcx_md_mr_dereg(md, memh->super.mr);
    dcx_dev_mem_unmapped(md->dev, memh->address, memh->length);
    if (shmdt(memh->address) != 0) {
        ucs_error("dcx md %s: free of %p..%p: shmdt failed: %s", md->name,
                  memh->address,
                  UCS_PTR_BYTE_OFFSET(memh->address, memh->length),
                  strerror(errno));
        status = UCS_ERR_INVALID_PARAM;
    } else {
        ucs_trace("dcx md %s: freed %p..%p", md->name, memh->address,
                  UCS_PTR_BYTE_OFFSET(memh->address, memh->length));
    }
    ucs_free(memh);
    return status;
}
