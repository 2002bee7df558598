/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the LID directory of a soft fabric, the part of a
 * subnet manager the emulation needs.  A port gets the LID of the first
 * free entry of a table in /dev/shm/dcx-emu.<uid>.<fabric> (mode 0600) and
 * publishes its soft port address there, so that an address handle built
 * from a LID (ibv_create_ah) finds the soft port to send to.
 *
 * An entry is one 64-bit word (state in the low byte, owner pid in the next
 * three, the registration's generation in the high half) plus the address.
 * It is claimed by a compare-and-swap on the word, filled, then marked valid
 * with a release store; readers take the address only from a valid word and
 * check the word again after copying.  An entry whose owner died (pid gone)
 * is taken over by the next registration, so LIDs of crashed processes are
 * reused, as a subnet manager reassigns them.
 *
 * The generation is a counter of the whole table, one step per
 * registration: no two registrations share a word, so an address handle
 * that remembers the word it resolved tells a new owner of its LID from
 * the one it was made for (emu_ah.c), and the generation also places the
 * port's QP numbers (emu_sm_qpn_base): a process that takes over a dead
 * one's LID numbers its QPs and DCT elsewhere in the 24-bit space, so a
 * request still addressed to the dead process's DCT finds no DCT there, as
 * on a fabric where the HCA does not hand a freed number out again soon.
 *
 * The directory lasts as long as a process uses it.  A process that maps
 * it holds a shared flock on it, from the first registration or lookup
 * to the moment its last registration and its last address handle are
 * gone; then it tries the exclusive lock, which it gets only when no other
 * process holds the directory, and unlinks the file under it.  An opener
 * that meets the file while it is being unlinked waits for the shared lock
 * and, finding the file unlinked, opens a new one.  A directory whose
 * processes all died is taken over by the next process, which unlinks it
 * when it leaves.
 */
#include "emu/emu.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define EMU_SM_MAGIC   0x44435845u /* "DCXE" */
#define EMU_SM_VERSION 2u
#define EMU_SM_ENTRIES 4096u /* LIDs 1..4096 */
#define EMU_SM_FREE    0u
#define EMU_SM_CLAIMED 1u
#define EMU_SM_VALID   2u
#define EMU_SM_PID_MAX 0xffffffu /* the pid's three bytes of the word */

/* QP numbers of a port: a window of EMU_QPN_SPAN numbers starting at a
 * multiple of it, the window chosen by the registration's generation; the
 * first window (numbers below EMU_QPN_SPAN) is never used */
#define EMU_QPN_WINDOWS ((1u << 24) / EMU_QPN_SPAN)

typedef struct emu_sm_entry {
    uint64_t word; /* generation << 32 | pid << 8 | state */
    uint32_t addr_len;
    uint8_t addr[DCX_DEV_ADDR_MAX];
    uint8_t pad[20];
} emu_sm_entry_t;

typedef struct emu_sm_table {
    uint32_t magic;
    uint32_t version;
    uint32_t entries;
    uint32_t gen; /* registrations so far (wraps) */
    uint32_t pad[12];
    emu_sm_entry_t e[EMU_SM_ENTRIES];
} emu_sm_table_t;

_Static_assert(sizeof(emu_sm_entry_t) == 64, "one cache line per entry");

/* guarded by emu_sm_lock */
static pthread_mutex_t emu_sm_lock = PTHREAD_MUTEX_INITIALIZER;
static emu_sm_table_t *emu_sm_map;
static int emu_sm_fd = -1;    /* holds the shared flock */
static pid_t emu_sm_pid;      /* the process that mapped it (not a child) */
static unsigned emu_sm_users; /* registrations and AH words of this process */
static char emu_sm_fabric[40];
static char emu_sm_name[96];

static bool emu_sm_owner_dead(uint64_t word);

/* Whether an entry of t has a live owner (claimed or valid) */
static bool emu_sm_in_use(const emu_sm_table_t *t)
{
    unsigned i;

    for (i = 0; i < EMU_SM_ENTRIES; ++i) {
        uint64_t word = __atomic_load_n(&t->e[i].word, __ATOMIC_ACQUIRE);

        if ((word != EMU_SM_FREE) && !emu_sm_owner_dead(word)) {
            return true;
        }
    }
    return false;
}

/* A directory an earlier version of the emulation left behind (its file
 * outlives the processes that used it) is taken over when none of its
 * entries has a live owner: the entries of every version keep the owner's
 * pid in bits 8..31 of their word.  One opener wins the version word (0
 * while it clears the table); the others wait for it. */
static void emu_sm_renew(emu_sm_table_t *t, const char *name)
{
    uint32_t old = __atomic_load_n(&t->version, __ATOMIC_ACQUIRE);
    unsigned spins;

    for (spins = 0; (old == 0) && (spins < 1000000); ++spins) {
        old = __atomic_load_n(&t->version, __ATOMIC_ACQUIRE);
    }
    if ((old == 0) || (old == EMU_SM_VERSION)) {
        return;
    }
    if (emu_sm_in_use(t)) {
        return; /* the caller refuses it */
    }
    if (!__atomic_compare_exchange_n(&t->version, &old, 0, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        emu_sm_renew(t, name);
        return;
    }
    memset(t->e, 0, sizeof(t->e));
    t->gen = 0;
    __atomic_store_n(&t->version, EMU_SM_VERSION, __ATOMIC_RELEASE);
    emu_debug("LID directory %s: version %u left by an earlier emulation, "
              "renewed",
              name, old);
}

static emu_sm_table_t *emu_sm_table(const char *fabric)
{
    char name[96];
    struct stat st;
    emu_sm_table_t *t;
    int fd;

    if (emu_sm_map != NULL) {
        if (!strcmp(fabric, emu_sm_fabric)) {
            return emu_sm_map;
        }
        emu_error("LID directory: fabric '%s' asked for while '%s' is in "
                  "use",
                  fabric, emu_sm_fabric);
        return NULL;
    }
    snprintf(name, sizeof(name), "/dcx-emu.%u.%s", (unsigned)getuid(), fabric);
    for (;;) {
        fd = shm_open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0) {
            emu_error("LID directory %s: shm_open failed: %s", name,
                      strerror(errno));
            return NULL;
        }
        /* waits while the last user of the file unlinks it */
        if ((flock(fd, LOCK_SH) != 0) || (fstat(fd, &st) != 0)) {
            emu_error("LID directory %s: flock/fstat failed: %s", name,
                      strerror(errno));
            close(fd);
            return NULL;
        }
        if (st.st_nlink > 0) {
            break;
        }
        close(fd); /* unlinked meanwhile: open the new one */
    }
    if ((st.st_uid != getuid()) || (st.st_mode & 077)) {
        emu_error("LID directory %s: not ours or not private", name);
        close(fd);
        return NULL;
    }
    /* every opener sets the same size; a new object reads as zeroes */
    if (((size_t)st.st_size != sizeof(*t)) &&
        (ftruncate(fd, sizeof(*t)) != 0)) {
        emu_error("LID directory %s: ftruncate failed: %s", name,
                  strerror(errno));
        close(fd);
        return NULL;
    }
    t = mmap(NULL, sizeof(*t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (t == MAP_FAILED) {
        emu_error("LID directory %s: mmap failed: %s", name, strerror(errno));
        close(fd);
        return NULL;
    }
    if (__atomic_load_n(&t->magic, __ATOMIC_ACQUIRE) == 0) {
        t->version = EMU_SM_VERSION;
        t->entries = EMU_SM_ENTRIES;
        __atomic_store_n(&t->magic, EMU_SM_MAGIC, __ATOMIC_RELEASE);
    }
    if ((t->version != EMU_SM_VERSION) && (t->entries == EMU_SM_ENTRIES)) {
        emu_sm_renew(t, name);
    }
    if ((t->version != EMU_SM_VERSION) || (t->entries != EMU_SM_ENTRIES)) {
        emu_error("LID directory %s: version %u with %u entries, expected "
                  "%u with %u",
                  name, t->version, t->entries, EMU_SM_VERSION, EMU_SM_ENTRIES);
        munmap(t, sizeof(*t));
        close(fd);
        return NULL;
    }
    snprintf(emu_sm_fabric, sizeof(emu_sm_fabric), "%s", fabric);
    snprintf(emu_sm_name, sizeof(emu_sm_name), "%s", name);
    emu_sm_map = t;
    emu_sm_fd  = fd;
    emu_sm_pid = getpid();
    return t;
}

/* The directory of fabric, one use more; NULL if it cannot be had. */
static emu_sm_table_t *emu_sm_get(const char *fabric)
{
    emu_sm_table_t *t;

    pthread_mutex_lock(&emu_sm_lock);
    t = emu_sm_table(fabric);
    if (t != NULL) {
        ++emu_sm_users;
    }
    pthread_mutex_unlock(&emu_sm_lock);
    return t;
}

/* One use less; the last one unmaps the directory, and unlinks it when no
 * other process holds it (the top of the file). */
static void emu_sm_put(void)
{
    emu_sm_table_t *t;

    pthread_mutex_lock(&emu_sm_lock);
    if ((emu_sm_users == 0) || (--emu_sm_users > 0)) {
        pthread_mutex_unlock(&emu_sm_lock);
        return;
    }
    t = emu_sm_map;
    if (flock(emu_sm_fd, LOCK_EX | LOCK_NB) == 0) {
        if (!emu_sm_in_use(t) && (shm_unlink(emu_sm_name) != 0)) {
            emu_warn("LID directory %s: shm_unlink failed: %s", emu_sm_name,
                     strerror(errno));
        }
    }
    munmap(t, sizeof(*t));
    close(emu_sm_fd); /* releases the lock */
    emu_sm_map = NULL;
    emu_sm_fd  = -1;
    pthread_mutex_unlock(&emu_sm_lock);
}

/* At exit with the directory still held (a program that leaves without
 * closing its devices, whose kernel objects on a real device go with the
 * process): the process's entries are freed, and the file is unlinked
 * when no other process holds it.  The map stays: another thread of the
 * exiting process may still read it.  A forked child leaves the
 * directory to its parent; a lock held elsewhere at exit leaves it to
 * the next process, which takes over entries whose owner is gone. */
static void __attribute__((destructor)) emu_sm_leave(void)
{
    emu_sm_table_t *t;
    uint64_t word;
    unsigned i;

    if (pthread_mutex_trylock(&emu_sm_lock) != 0) {
        return;
    }
    t = emu_sm_map;
    if ((t == NULL) || (emu_sm_pid != getpid())) {
        pthread_mutex_unlock(&emu_sm_lock);
        return;
    }
    for (i = 0; i < EMU_SM_ENTRIES; ++i) {
        word = __atomic_load_n(&t->e[i].word, __ATOMIC_ACQUIRE);
        if ((word != EMU_SM_FREE) &&
            (((word >> 8) & EMU_SM_PID_MAX) == (uint64_t)getpid())) {
            __atomic_compare_exchange_n(&t->e[i].word, &word, EMU_SM_FREE,
                                        false, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE);
        }
    }
    if ((flock(emu_sm_fd, LOCK_EX | LOCK_NB) == 0) && !emu_sm_in_use(t) &&
        (shm_unlink(emu_sm_name) != 0) && (errno != ENOENT)) {
        emu_warn("LID directory %s: shm_unlink at exit failed: %s", emu_sm_name,
                 strerror(errno));
    }
    pthread_mutex_unlock(&emu_sm_lock);
}

static bool emu_sm_owner_dead(uint64_t word)
{
    pid_t pid = (pid_t)((word >> 8) & EMU_SM_PID_MAX);

    return (pid <= 0) || ((kill(pid, 0) != 0) && (errno == ESRCH));
}

uint32_t emu_sm_qpn_base(uint64_t word)
{
    return ((uint32_t)(word >> 32) % (EMU_QPN_WINDOWS - 1) + 1) * EMU_QPN_SPAN;
}

int emu_sm_register(const char *fabric, const void *addr, size_t len,
                    uint16_t *lid_p, uint64_t *word_p)
{
    uint64_t mine;
    emu_sm_table_t *t;
    uint64_t word;
    uint32_t gen;
    unsigned i;

    if (len > DCX_DEV_ADDR_MAX) {
        emu_error("LID directory: address of %zu bytes (max %u)", len,
                  DCX_DEV_ADDR_MAX);
        return EINVAL;
    }
    if ((uint64_t)getpid() > EMU_SM_PID_MAX) {
        emu_error("LID directory: pid %d above %u", (int)getpid(),
                  EMU_SM_PID_MAX);
        return EINVAL;
    }
    t = emu_sm_get(fabric); /* kept until emu_sm_unregister */
    if (t == NULL) {
        return ENODEV;
    }
    gen  = __atomic_fetch_add(&t->gen, 1, __ATOMIC_RELAXED);
    mine = ((uint64_t)gen << 32) | ((uint64_t)getpid() << 8) | EMU_SM_CLAIMED;
    for (i = 0; i < EMU_SM_ENTRIES; ++i) {
        emu_sm_entry_t *e = &t->e[i];

        word = __atomic_load_n(&e->word, __ATOMIC_ACQUIRE);
        if ((word != EMU_SM_FREE) && !emu_sm_owner_dead(word)) {
            continue;
        }
        if (!__atomic_compare_exchange_n(&e->word, &word, mine, false,
                                         __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
            continue;
        }
        e->addr_len = (uint32_t)len;
        memcpy(e->addr, addr, len);
        mine = (mine & ~0xffull) | EMU_SM_VALID;
        __atomic_store_n(&e->word, mine, __ATOMIC_RELEASE);
        *lid_p  = (uint16_t)(i + 1);
        *word_p = mine;
        return 0;
    }
    emu_error("LID directory of fabric '%s': all %u LIDs in use", fabric,
              EMU_SM_ENTRIES);
    emu_sm_put();
    return ENOSPC;
}

void emu_sm_unregister(const char *fabric, uint16_t lid, uint64_t word)
{
    emu_sm_table_t *t;

    pthread_mutex_lock(&emu_sm_lock);
    t = emu_sm_map; /* held by the registration */
    pthread_mutex_unlock(&emu_sm_lock);
    if ((t == NULL) || (lid == 0) || (lid > EMU_SM_ENTRIES)) {
        return;
    }
    if (!__atomic_compare_exchange_n(&t->e[lid - 1].word, &word, EMU_SM_FREE,
                                     false, __ATOMIC_ACQ_REL,
                                     __ATOMIC_ACQUIRE)) {
        emu_warn("LID directory of fabric '%s': LID %u was not ours any "
                 "more",
                 fabric, lid);
    }
    emu_sm_put();
}

const uint64_t *emu_sm_word(const char *fabric, uint16_t lid)
{
    emu_sm_table_t *t;

    if ((lid == 0) || (lid > EMU_SM_ENTRIES)) {
        return NULL;
    }
    t = emu_sm_get(fabric); /* kept until emu_sm_word_put */
    return (t != NULL) ? &t->e[lid - 1].word : NULL;
}

void emu_sm_word_put(const uint64_t *word)
{
    if (word != NULL) {
        emu_sm_put();
    }
}

int emu_sm_lookup(const char *fabric, uint16_t lid, void *addr, size_t *len_p,
                  uint64_t *word_p)
{
    emu_sm_table_t *t;
    emu_sm_entry_t *e;
    uint64_t word;
    uint32_t len;
    int ret = ENOENT;

    if ((lid == 0) || (lid > EMU_SM_ENTRIES)) {
        return ENOENT;
    }
    t = emu_sm_get(fabric);
    if (t == NULL) {
        return ENOENT;
    }
    e    = &t->e[lid - 1];
    word = __atomic_load_n(&e->word, __ATOMIC_ACQUIRE);
    len  = e->addr_len;
    if (((word & 0xff) == EMU_SM_VALID) && !emu_sm_owner_dead(word) &&
        (len <= DCX_DEV_ADDR_MAX) && (len <= *len_p)) {
        memcpy(addr, e->addr, len);
        /* not re-registered while we copied */
        if (__atomic_load_n(&e->word, __ATOMIC_ACQUIRE) == word) {
            *len_p  = len;
            *word_p = word;
            ret     = 0;
        }
    }
    emu_sm_put();
    return ret;
}
