/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device memory safety: how the engine touches registered memory that
 * peers name by rkey, and how it learns that such memory went away.
 *
 * A NIC pins the pages of a registration: whatever the process does to its
 * mappings later, an rkey keeps naming the same physical pages.  The soft
 * device is the process itself and cannot pin; it keeps the same promise
 * (never write into memory that is not the registered mapping, never crash
 * the target because of a peer's request) in three layers:
 *
 *  1. Every request packet is checked against the region it names (rkey,
 *     bounds, access, and the region's 'invalid' flag) right before the
 *     copy, not only the first packet of a message (soft_resp.c).
 *
 *  2. Invalidation: the transport's memory domain subscribes to UCX's
 *     memory hooks (VM_UNMAPPED: munmap, mremap, mmap MAP_FIXED, shmdt,
 *     brk, madvise) and calls dcx_dev_mem_unmapped() *before* the unmap
 *     happens.  Overlapping regions are flagged invalid and the call
 *     returns only once no engine copy into them is in flight (a copy is
 *     at most one packet, so the wait is short and bounded).  The handler
 *     never takes the engine lock, because the engine itself may free
 *     memory (and so unmap) while holding it; it takes only mr_lock,
 *     which nothing holds while allocating or freeing.  A region unmapped
 *     or remapped at the same address thus refuses access from the moment
 *     the unmap is requested: nothing is ever written into the new mapping.
 *
 *  3. Fault-safe copies, for what the hooks cannot see (hooks disabled,
 *     raw system calls, mprotect, a device used without UCX): the engine
 *     copies to and from peer-named memory with process_vm_writev/readv
 *     on its own process.  The kernel does the copy, so a page that is
 *     gone or protected yields EFAULT, which becomes a remote access error
 *     for that one request.  Why this and not a SIGSEGV handler with
 *     siglongjmp: UCX and applications (MPI runtimes, debuggers) install
 *     their own SIGSEGV/SIGBUS handlers, and UCX even refuses later
 *     changes to them, so a library handler is neither reliably ours nor
 *     safe to chain; and why not a /proc/self/maps check per access: it is
 *     far slower and still racy.  The cost is one system call per packet
 *     of up to the MTU (16 KiB by default) at the target, against a
 *     memcpy of the same packet; a process whose seccomp policy forbids
 *     process_vm_* (probed at open) falls back to memcpy, relying on
 *     layer 2 alone, and says so at debug level.  Two kinds of copies
 *     rely on layer 2 alone once the consumer reports unmaps
 *     (dcx_dev_unmaps_reported), trading layer 3 for speed where its cost
 *     is not one call per packet: the requester's own sg lists (the
 *     process's buffers, on every zero-copy send and response), and the
 *     pieces of a strided key's layout (soft_mem_vec_copy: the kernel
 *     pins one page per piece).  Memory the process then makes
 *     inaccessible behind the hooks' back while a WR or a peer uses it
 *     faults there, as it would in the process's own code.
 *
 * A device opened with limits.pinned (the emulated ConnectX, whose
 * consumers count on the NIC's pinning) goes one step further where layer
 * 3 finds a page gone, for a peer's access and for the process's own sg
 * lists alike: the copy is redone page by page, pages still mapped
 * are copied, writes to the others are dropped and reads of them give
 * zeros, and the access succeeds, as a DMA into pages that only the
 * registration still holds does (their last contents went with the
 * mapping: the one difference a peer can see).  Nothing is written
 * outside the registered range, which was checked before.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include "soft.h"
#include "soft_direct.h"

#include <errno.h>
#include <sched.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

static int soft_mem_copy_kernel_out(soft_dev_t *dev, void *dst, const void *src,
                                    size_t len)
{
    struct iovec local  = {(void *)src, len};
    struct iovec remote = {dst, len};

    return (process_vm_writev((pid_t)dev->pid, &local, 1, &remote, 1, 0) ==
            (ssize_t)len) ?
               0 :
               EFAULT;
}

static int soft_mem_copy_kernel_in(soft_dev_t *dev, void *dst, const void *src,
                                   size_t len)
{
    struct iovec local  = {dst, len};
    struct iovec remote = {(void *)src, len};

    return (process_vm_readv((pid_t)dev->pid, &local, 1, &remote, 1, 0) ==
            (ssize_t)len) ?
               0 :
               EFAULT;
}

static int soft_mem_lost_refuse(soft_dev_t *dev, void *dst, const void *src,
                                size_t len)
{
    return EFAULT;
}

/* Redoes a refused kernel copy between local and the registered remote
 * range page by page (limits.pinned, at the top); always 0. */
static int soft_mem_pinned_copy(soft_dev_t *dev, uint8_t *local,
                                uintptr_t remote, size_t len, int out)
{
    const size_t page     = (size_t)sysconf(_SC_PAGESIZE);
    const uintptr_t start = remote;
    size_t chunk, lost = 0;
    int ret;

    while (len > 0) {
        chunk = page - (remote & (page - 1));
        if (chunk > len) {
            chunk = len;
        }
        ret = out ?
                  soft_mem_copy_kernel_out(dev, (void *)remote, local, chunk) :
                  soft_mem_copy_kernel_in(dev, local, (const void *)remote,
                                          chunk);
        if (ret != 0) {
            if (!out) {
                memset(local, 0, chunk);
            }
            lost += chunk;
        }
        local += chunk;
        remote += chunk;
        len -= chunk;
    }
    dcx_debug("%s: %s at 0x%llx: %zu bytes in pages unmapped since their "
              "registration, %s as pinned pages",
              dev->super.caps.name, out ? "write" : "read",
              (unsigned long long)start, lost,
              out ? "dropped" : "read as zeros");
    return 0;
}

static int soft_mem_lost_pinned_out(soft_dev_t *dev, void *dst, const void *src,
                                    size_t len)
{
    return soft_mem_pinned_copy(dev, (uint8_t *)src, (uintptr_t)dst, len, 1);
}

static int soft_mem_lost_pinned_in(soft_dev_t *dev, void *dst, const void *src,
                                   size_t len)
{
    return soft_mem_pinned_copy(dev, dst, (uintptr_t)src, len, 0);
}

int soft_mem_copy_plain(soft_dev_t *dev, void *dst, const void *src, size_t len)
{
    memcpy(dst, src, len);
    return 0;
}

/* Our own WRs' sg lists before unmaps are reported: the kernel copies,
 * unless cross-memory attach is refused later (a seccomp filter set after
 * the open): plain copies from then on, as for a device that never had it */
static int soft_mem_local_refused(soft_dev_t *dev)
{
    if ((errno != EPERM) && (errno != ENOSYS)) {
        return 0;
    }
    dcx_debug("%s: process_vm_readv/writev on self refused (%s): our WRs' "
              "memory is copied directly",
              dev->super.caps.name, strerror(errno));
    dev->local_out = soft_mem_copy_plain;
    dev->local_in  = soft_mem_copy_plain;
    return 1;
}

static int soft_mem_local_kernel_out(soft_dev_t *dev, void *dst,
                                     const void *src, size_t len)
{
    errno = 0; /* a short copy sets none */
    if (soft_mem_copy_kernel_out(dev, dst, src, len) == 0) {
        return 0;
    }
    return soft_mem_local_refused(dev) ? dev->local_out(dev, dst, src, len) :
                                         dev->lost_out(dev, dst, src, len);
}

static int soft_mem_local_kernel_in(soft_dev_t *dev, void *dst, const void *src,
                                    size_t len)
{
    errno = 0;
    if (soft_mem_copy_kernel_in(dev, dst, src, len) == 0) {
        return 0;
    }
    return soft_mem_local_refused(dev) ? dev->local_in(dev, dst, src, len) :
                                         dev->lost_in(dev, dst, src, len);
}

soft_mr_t *soft_key_lookup(soft_dev_t *dev, uint32_t key)
{
    return soft_key_find(dev, key);
}

soft_mr_t *soft_mr_lookup(soft_dev_t *dev, uint32_t key)
{
    soft_mr_t *mr = soft_key_lookup(dev, key);

    return ((mr != NULL) && (mr->mkey == NULL)) ? mr : NULL;
}

void soft_mem_init(soft_dev_t *dev)
{
    uint64_t probe_src = 0x5a5a, probe_dst = 0;

    dev->copying_plain = soft_fence_heavy_able();

    dev->copy_out = soft_mem_copy_kernel_out;
    dev->copy_in  = soft_mem_copy_kernel_in;
    if ((soft_mem_copy_kernel_in(dev, &probe_dst, &probe_src,
                                 sizeof(probe_src)) != 0) ||
        (probe_dst != probe_src)) {
        dcx_debug("%s: process_vm_readv on self is not available (%s): "
                  "copies into registered memory rely on invalidation only",
                  dev->super.caps.name, strerror(errno));
        dev->copy_out = soft_mem_copy_plain;
        dev->copy_in  = soft_mem_copy_plain;
    }
    /* a refused copy exists only where the kernel copies */
    dev->lost_out  = dev->limits.pinned ? soft_mem_lost_pinned_out :
                                          soft_mem_lost_refuse;
    dev->lost_in   = dev->limits.pinned ? soft_mem_lost_pinned_in :
                                          soft_mem_lost_refuse;
    dev->local_out = (dev->copy_out == soft_mem_copy_plain) ?
                         soft_mem_copy_plain :
                         soft_mem_local_kernel_out;
    dev->local_in  = (dev->copy_in == soft_mem_copy_plain) ?
                         soft_mem_copy_plain :
                         soft_mem_local_kernel_in;
}

/* The engine marks the copy it is about to make, then looks at the
 * region's flag (seq_cst load); the invalidator does the opposite.  Either
 * the engine sees the flag, or the invalidator sees the copy and waits for
 * it.  The mark is a plain store where the invalidator's fence is the
 * heavy side of an asymmetric one (soft_fence_heavy), else a seq_cst
 * store. */
static inline void soft_mem_mark(soft_dev_t *dev)
{
    if (dev->copying_plain) {
        __atomic_store_n(&dev->copying, 1, __ATOMIC_RELAXED);
        __atomic_signal_fence(__ATOMIC_SEQ_CST);
    } else {
        __atomic_store_n(&dev->copying, 1, __ATOMIC_SEQ_CST);
    }
}

static inline int soft_mem_begin(soft_dev_t *dev, soft_mr_t *mr)
{
    soft_mem_mark(dev);
    if (__atomic_load_n(&mr->invalid, __ATOMIC_SEQ_CST)) {
        __atomic_store_n(&dev->copying, 0, __ATOMIC_RELEASE);
        return 0;
    }
    return 1;
}

static inline void soft_mem_end(soft_dev_t *dev)
{
    __atomic_store_n(&dev->copying, 0, __ATOMIC_RELEASE);
}

/* The requester's copies through its own sg lists (gathering a packet,
 * scattering a READ or atomic response) take part in the same protocol:
 * marked in flight, then every region named checked, then
 * soft_mem_local_end after the copy.  0 (marked), or, with nothing marked:
 * ENOENT, a key was deregistered (the WQE fails with a local protection
 * error, as through a NIC's destroyed key); EFAULT, a region was
 * invalidated because it is being unmapped (a NIC would still reach the
 * pinned pages: a response is taken and dropped; a gather has nothing to
 * send, and fails).  An sge through a strided key checks nothing here: its
 * layout's regions are checked when the key is executed. */
int soft_mem_local_begin(soft_dev_t *dev, const dcx_sge_t *sge,
                         unsigned num_sge)
{
    soft_mr_t *mr;
    unsigned i;

    soft_mem_mark(dev);
    for (i = 0; i < num_sge; ++i) {
        /* (not soft_key_find, which hides an invalidated region) */
        mr = soft_key_entry(dev, sge[i].lkey);
        if (mr == NULL) {
            soft_mem_end(dev);
            return ENOENT;
        }
        if (__atomic_load_n(&mr->invalid, __ATOMIC_SEQ_CST)) {
            soft_mem_end(dev);
            return EFAULT;
        }
    }
    return 0;
}

void soft_mem_local_end(soft_dev_t *dev)
{
    soft_mem_end(dev);
}

/* dcx_dev_unmaps_reported(): an unmap invalidates the regions first
 * (soft_mem_unmapped), and soft_mem_local_begin and the batches of strided
 * keys (soft_mem_vec_copy) see that before copying; plain copies of
 * contiguous packets into registered memory stay the kernel's (layer 3
 * above: one call per packet) */
void soft_mem_unmaps_reported(dcx_dev_t *dev_)
{
    soft_dev_t *dev = soft_dev(dev_);

    dev->local_out = soft_mem_copy_plain;
    dev->local_in  = soft_mem_copy_plain;
}

int soft_mem_write(soft_dev_t *dev, soft_mr_t *mr, uint64_t addr,
                   const void *src, size_t len)
{
    int ret;

    if (!soft_mem_begin(dev, mr)) {
        return EFAULT;
    }
    ret = dev->copy_out(dev, (void *)(uintptr_t)addr, src, len);
    if (ret != 0) {
        ret = dev->lost_out(dev, (void *)(uintptr_t)addr, src, len);
    }
    soft_mem_end(dev);
    return ret;
}

int soft_mem_read(soft_dev_t *dev, soft_mr_t *mr, void *dst, uint64_t addr,
                  size_t len)
{
    int ret;

    if (!soft_mem_begin(dev, mr)) {
        return EFAULT;
    }
    ret = dev->copy_in(dev, dst, (const void *)(uintptr_t)addr, len);
    if (ret != 0) {
        ret = dev->lost_in(dev, dst, (const void *)(uintptr_t)addr, len);
    }
    soft_mem_end(dev);
    return ret;
}

/* A batch (soft_mem_vec_t): marked in flight once, every region of it
 * checked after the mark, then one vectored cross-memory call for all its
 * pieces, or a memcpy per piece where cross-memory attach is not
 * available, or once the consumer reports unmaps
 * (soft_mem_unmaps_reported: every unmap then invalidates first, and
 * waits for the batch).  The kernel's copy pins the page of
 * each piece, one by one, so that a layout of N elements a page apart (a
 * matrix column) costs N page walks under the mm lock; the plain copies
 * cost N cache lines.  A region found
 * invalid refuses the whole batch: nothing of it is written, as when the
 * unmap came just before.  A fault stops the kernel's copy at the piece it
 * hit: the pieces before it are written, as a per-piece copy would have
 * left them; a pinned device then redoes the batch piece by piece
 * (lost_out/lost_in, at the top).  Empties the batch; 0 or EFAULT. */
static int soft_mem_vec_copy(soft_dev_t *dev, soft_mem_vec_t *v, uint8_t *buf,
                             int out)
{
    struct iovec local = {buf + v->off, v->len};
    int ret            = 0;
    ssize_t done;
    uint32_t i;

    buf += v->off;
    dev->stats.mkey_batches++;
    dev->stats.mkey_pieces += v->n;
    soft_mem_mark(dev);
    for (i = 0; i < v->nmr; ++i) {
        if (__atomic_load_n(&v->mr[i]->invalid, __ATOMIC_SEQ_CST)) {
            ret = EFAULT;
            goto out;
        }
    }
    if (dev->local_out == soft_mem_copy_plain) {
        for (i = 0; i < v->n; ++i) {
            if (out) {
                memcpy(v->iov[i].iov_base, buf, v->iov[i].iov_len);
            } else {
                memcpy(buf, v->iov[i].iov_base, v->iov[i].iov_len);
            }
            buf += v->iov[i].iov_len;
        }
        goto out;
    }
    done = out ?
               process_vm_writev((pid_t)dev->pid, &local, 1, v->iov, v->n, 0) :
               process_vm_readv((pid_t)dev->pid, &local, 1, v->iov, v->n, 0);
    for (i = 0; (done != (ssize_t)v->len) && (i < v->n) && (ret == 0); ++i) {
        ret = out ?
                  dev->lost_out(dev, v->iov[i].iov_base, buf,
                                v->iov[i].iov_len) :
                  dev->lost_in(dev, buf, v->iov[i].iov_base, v->iov[i].iov_len);
        buf += v->iov[i].iov_len;
    }
out:
    __atomic_store_n(&dev->copying, 0, __ATOMIC_RELEASE);
    v->n   = 0;
    v->nmr = 0;
    v->len = 0;
    return ret;
}

int soft_mem_vec_write(soft_dev_t *dev, soft_mem_vec_t *v, const void *src)
{
    return soft_mem_vec_copy(dev, v, (uint8_t *)src, 1);
}

int soft_mem_vec_read(soft_dev_t *dev, soft_mem_vec_t *v, void *dst)
{
    return soft_mem_vec_copy(dev, v, dst, 0);
}

/* Atomics cannot go through the kernel copy: the target word is probed
 * (mapped and readable) with the copy marked in flight, and the
 * compare-and-swap runs before the mark is cleared, so an invalidation
 * waits for it. */
int soft_mem_atomic(soft_dev_t *dev, soft_mr_t *mr, uint64_t addr,
                    unsigned size, uint64_t (*exec)(const soft_pkt_t *),
                    const soft_pkt_t *pkt, uint64_t *result_p)
{
    uint64_t probe;
    int ret;

    if (!soft_mem_begin(dev, mr)) {
        return EFAULT;
    }
    if (dev->copy_in(dev, &probe, (const void *)(uintptr_t)addr, size) != 0) {
        /* pinned: the word reads as zero and nothing is written */
        probe     = 0;
        *result_p = 0;
        ret = dev->lost_in(dev, &probe, (const void *)(uintptr_t)addr, size);
        soft_mem_end(dev);
        return ret;
    }
    *result_p = exec(pkt);
    soft_mem_end(dev);
    return 0;
}

/* dcx_dev_mem_unmapped(): see dcx_dev.h and the comment at the top. */
void soft_mem_unmapped(dcx_dev_t *dev_, const void *addr, size_t len)
{
    soft_dev_t *dev = soft_dev(dev_);
    uint64_t start  = (uint64_t)(uintptr_t)addr;
    uint64_t end    = start + len;
    unsigned hits   = 0;
    uint32_t i;

    if ((len == 0) || (end <= __atomic_load_n(&dev->mr_lo, __ATOMIC_ACQUIRE)) ||
        (start >= __atomic_load_n(&dev->mr_hi, __ATOMIC_ACQUIRE))) {
        return;
    }
    pthread_mutex_lock(&dev->mr_lock);
    for (i = 1; i < dev->num_mrs; ++i) {
        soft_mr_t *mr = dev->mrs[i];

        if ((mr == NULL) || (mr->start >= end) || (mr->end <= start) ||
            (mr->start == mr->end) || mr->invalid) {
            continue;
        }
        __atomic_store_n(&mr->invalid, 1, __ATOMIC_SEQ_CST);
        soft_direct_mr_unpublish(dev, mr);
        dcx_debug("%s: mr key 0x%x [0x%llx, 0x%llx) invalidated: memory "
                  "unmapped",
                  dev->super.caps.name, mr->super.lkey,
                  (unsigned long long)mr->start, (unsigned long long)mr->end);
        ++hits;
    }
    pthread_mutex_unlock(&dev->mr_lock);
    if (hits == 0) {
        return;
    }
    __atomic_thread_fence(__ATOMIC_SEQ_CST);
    if (dev->copying_plain) {
        soft_fence_heavy();
    }
    while (__atomic_load_n(&dev->copying, __ATOMIC_SEQ_CST)) {
        sched_yield(); /* one packet's copy */
    }
    soft_direct_quiesce(dev, 0); /* initiators' chunks in flight */
}
