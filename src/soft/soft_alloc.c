/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device: memory the device allocates (dcx_mem_alloc).
 *
 * A NIC reaches any registered memory by DMA; the soft device's initiator
 * reaches a peer's memory by cross-memory attach (process_vm_writev/readv,
 * soft_direct.c), which pins the pages and copies in the kernel on every
 * operation.  Memory the device allocates itself is backed by a memfd
 * instead, so that a peer can map it once and then move data with a plain
 * copy, as UCX's posix transport does with its segments:
 *
 *  - the memfd is sealed against shrinking and growing, so a peer's
 *    mapping can never fault on a truncated file;
 *  - the owner keeps the fd open while the allocation lives and publishes
 *    (fd, inode, device, base, length, serial) in its port segment's
 *    allocs[] table (soft_direct.h); a peer opens /proc/<pid>/fd/<fd> and
 *    checks inode and device before it maps, so a reused fd number is
 *    never mistaken for the allocation;
 *  - nothing outlives the processes: the memfd has no name in any file
 *    system, and its pages go once the owner and every peer mapping it
 *    are gone (a peer drops mappings of dead or freed allocations,
 *    soft_dmap.c);
 *  - an MR registered within an allocation carries the allocation's slot
 *    and serial in its published entry (soft_direct_mr_set); peers check
 *    the entry, under their in-flight marker, before every chunk they copy
 *    through the mapping, so deregistration keeps its promise (nothing is
 *    written after mr_dereg returns) exactly as for cross-memory attach.
 *
 * Where memfd_create is not available (old kernel, seccomp policy), or all
 * SOFT_DIRECT_ALLOCS published slots are taken, the allocation is plain
 * anonymous memory that peers reach by cross-memory attach as any other
 * (said once at debug level).
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_direct.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef MAP_FIXED_NOREPLACE
#define MAP_FIXED_NOREPLACE 0x100000
#endif
#ifndef MFD_CLOEXEC
#define MFD_CLOEXEC 0x0001u
#endif
#ifndef MFD_ALLOW_SEALING
#define MFD_ALLOW_SEALING 0x0002u
#endif
#ifndef F_ADD_SEALS
#define F_ADD_SEALS   1033
#define F_SEAL_SEAL   0x0001
#define F_SEAL_SHRINK 0x0002
#define F_SEAL_GROW   0x0004
#endif

static int soft_alloc_memfd(soft_dev_t *dev, size_t len)
{
    int fd;

#ifdef SYS_memfd_create
    fd = (int)syscall(SYS_memfd_create, "dcx-soft",
                      MFD_CLOEXEC | MFD_ALLOW_SEALING);
#else
    fd    = -1;
    errno = ENOSYS;
#endif
    if (fd < 0) {
        dcx_debug("%s: memfd_create failed (%s): allocations are anonymous "
                  "memory, which peers reach by cross-memory attach",
                  dev->super.caps.name, strerror(errno));
        return -1;
    }
    if (ftruncate(fd, (off_t)len) != 0) {
        dcx_debug("%s: memfd of %zu bytes: ftruncate failed (%s)",
                  dev->super.caps.name, len, strerror(errno));
        close(fd);
        return -1;
    }
    /* a peer's mapping must never see the file shrink under it */
    if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) !=
        0) {
        dcx_debug("%s: memfd seals refused (%s)", dev->super.caps.name,
                  strerror(errno));
        close(fd);
        return -1;
    }
    return fd;
}

static void soft_alloc_publish(soft_dev_t *dev, soft_alloc_t *a)
{
    soft_dalloc_t *e = &dev->direct->allocs[a->slot];
    struct stat st;

    if (fstat(a->fd, &st) != 0) {
        dcx_debug("%s: fstat of allocation fd %d failed (%s): not shared",
                  dev->super.caps.name, a->fd, strerror(errno));
        a->slot = -1;
        return;
    }
    soft_seq_begin(&e->seq);
    __atomic_store_n(&e->fd, a->fd, __ATOMIC_RELAXED);
    __atomic_store_n(&e->base, (uint64_t)(uintptr_t)a->addr, __ATOMIC_RELAXED);
    __atomic_store_n(&e->len, (uint64_t)a->len, __ATOMIC_RELAXED);
    __atomic_store_n(&e->ino, (uint64_t)st.st_ino, __ATOMIC_RELAXED);
    __atomic_store_n(&e->devno, (uint64_t)st.st_dev, __ATOMIC_RELAXED);
    __atomic_store_n(&e->kind, SOFT_DALLOC_MEMFD, __ATOMIC_RELAXED);
    __atomic_store_n(&e->serial, a->serial, __ATOMIC_RELAXED);
    soft_seq_end(&e->seq);
}

static void soft_alloc_unpublish(soft_dev_t *dev, soft_alloc_t *a)
{
    if (a->slot >= 0) {
        soft_dalloc_unpublish(dev, a->slot);
    }
}

/* The mapping of a new allocation of len bytes (fd: its memfd, -1:
 * anonymous memory), at 'at' exactly if not NULL: never over anything
 * mapped there already (MAP_FIXED_NOREPLACE; where the kernel does not
 * know the flag it is a hint, and a mapping placed elsewhere is undone).
 * MAP_FAILED with errno set on failure. */
static void *soft_alloc_map(size_t len, int fd, void *at)
{
    int flags = (fd >= 0) ? MAP_SHARED : (MAP_PRIVATE | MAP_ANONYMOUS);
    void *addr;

    if (at == NULL) {
        return mmap(NULL, len, PROT_READ | PROT_WRITE, flags, fd, 0);
    }
    addr = mmap(at, len, PROT_READ | PROT_WRITE, flags | MAP_FIXED_NOREPLACE,
                fd, 0);
    if ((addr != MAP_FAILED) && (addr != at)) {
        munmap(addr, len);
        errno = EEXIST;
        return MAP_FAILED;
    }
    return addr;
}

int soft_alloc_mem(dcx_dev_t *dev_, size_t *length_p, void **addr_p,
                   unsigned flags)
{
    soft_dev_t *dev  = soft_dev(dev_);
    const char *name = dev->super.caps.name;
    size_t page      = (size_t)sysconf(_SC_PAGESIZE);
    void *at         = NULL;
    soft_alloc_t *a;
    size_t len;
    void *addr;
    int fd;

    if ((length_p == NULL) || (addr_p == NULL) || (*length_p == 0)) {
        dcx_error("%s: mem alloc: %s", name,
                  ((length_p == NULL) || (addr_p == NULL)) ?
                      "no output pointers" :
                      "length 0");
        return EINVAL;
    }
    if (*length_p > SIZE_MAX - page) {
        dcx_error("%s: mem alloc of %zu bytes: too large", name, *length_p);
        return EINVAL;
    }
    len = (*length_p + page - 1) & ~(page - 1);
    if (flags & DCX_MEM_FIXED) {
        at = *addr_p;
        if ((at == NULL) || ((uintptr_t)at & (page - 1)) ||
            ((uintptr_t)at > UINTPTR_MAX - len)) {
            dcx_error("%s: mem alloc of %zu bytes at %p: not a page-aligned "
                      "address with room for them",
                      name, len, at);
            return EINVAL;
        }
    } else if (flags != 0) {
        dcx_error("%s: mem alloc: unknown flags 0x%x", name, flags);
        return EINVAL;
    }
    a = calloc(1, sizeof(*a));
    if (a == NULL) {
        dcx_error("%s: mem alloc of %zu bytes: out of memory", name, len);
        return ENOMEM;
    }
    fd   = soft_alloc_memfd(dev, len);
    addr = soft_alloc_map(len, fd, at);
    if (addr == MAP_FAILED) {
        int err = errno;

        if (err == EEXIST) {
            /* the caller's range is taken: its next allocator may try */
            dcx_debug("%s: mem alloc of %zu bytes at %p: the range is in "
                      "use",
                      name, len, at);
        } else {
            dcx_error("%s: mem alloc of %zu bytes at %p: mmap failed: %s", name,
                      len, at, strerror(err));
        }
        if (fd >= 0) {
            close(fd);
        }
        free(a);
        return (err == EEXIST) ? EEXIST : ENOMEM;
    }
    a->addr = addr;
    a->len  = len;
    a->fd   = fd;
    a->slot = -1;

    pthread_mutex_lock(&dev->mr_lock);
    a->serial = ++dev->alloc_serial;
    if (fd >= 0) {
        a->slot = soft_dalloc_free_slot(dev);
        if (a->slot >= 0) {
            soft_alloc_publish(dev, a);
        } else if (dev->direct != NULL) {
            dcx_debug("%s: %u allocations published already: %p/%zu is "
                      "reached by cross-memory attach",
                      name, SOFT_DIRECT_ALLOCS, addr, len);
        }
    }
    a->next     = dev->allocs;
    dev->allocs = a;
    pthread_mutex_unlock(&dev->mr_lock);

    dcx_debug("%s: allocated %p/%zu (%s, serial %llu)", name, addr, len,
              (a->slot >= 0) ? "shared" : "not shared",
              (unsigned long long)a->serial);
    *length_p = len;
    *addr_p   = addr;
    return 0;
}

int soft_alloc_free(dcx_dev_t *dev_, void *addr, size_t length)
{
    soft_dev_t *dev = soft_dev(dev_);
    soft_alloc_t **pp, *a;

    pthread_mutex_lock(&dev->mr_lock);
    for (pp = &dev->allocs; (a = *pp) != NULL; pp = &a->next) {
        if (a->addr == addr) {
            break;
        }
    }
    if ((a == NULL) || (a->len != length)) {
        pthread_mutex_unlock(&dev->mr_lock);
        dcx_error("%s: mem free %p/%zu: %s", dev->super.caps.name, addr, length,
                  (a == NULL) ? "not allocated by this device" :
                                "length differs from the allocation's");
        return EINVAL;
    }
    *pp = a->next;
    /* peers map it no more (those that did drop it at their next look) */
    soft_alloc_unpublish(dev, a);
    pthread_mutex_unlock(&dev->mr_lock);

    /* registrations still inside refuse access from now on, and no copy
     * into them is in flight once this returns (peers' mapped copies
     * included: they run under the same in-flight markers) */
    soft_mem_unmapped(dev_, a->addr, a->len);
    munmap(a->addr, a->len);
    if (a->fd >= 0) {
        close(a->fd);
    }
    dcx_debug("%s: freed %p/%zu (serial %llu)", dev->super.caps.name, addr,
              length, (unsigned long long)a->serial);
    free(a);
    return 0;
}

/* Device close: allocations the application did not free stay mapped (it
 * may still use them); only their bookkeeping and descriptors go. */
void soft_alloc_cleanup(soft_dev_t *dev)
{
    soft_alloc_t *a;
    unsigned n = 0;

    while ((a = dev->allocs) != NULL) {
        dev->allocs = a->next;
        if (a->fd >= 0) {
            close(a->fd);
        }
        free(a);
        ++n;
    }
    if (n > 0) {
        dcx_warn("%s: closed with %u allocation(s) not freed",
                 dev->super.caps.name, n);
    }
}

int soft_alloc_holds(soft_dev_t *dev, uint64_t start, uint64_t end)
{
    soft_alloc_t *a;
    uint64_t base;

    for (a = dev->allocs; a != NULL; a = a->next) {
        base = (uint64_t)(uintptr_t)a->addr;
        if ((start >= base) && (end <= base + a->len) && (start < end)) {
            return 1;
        }
    }
    return 0;
}
