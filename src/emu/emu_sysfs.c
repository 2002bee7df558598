/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: the sysfs view of the devices.  rdma-core's clients
 * and UCX's ib module read a device's attributes from files under its
 * ibdev_path (the PCI function's vendor and device IDs, NUMA node, local
 * CPUs and link; the port's state, link layer, GIDs and P_Keys).  Nobody
 * may write /sys, so the emulation lays the same tree out under a
 * directory of its own, /dev/shm/dcx-emu.<uid>.sys, and points each
 * device's dev_path and ibdev_path into it:
 *
 *   devices/pci0000:00/0000:BB:00.0/         one per device, BB = index + 1
 *       vendor device class numa_node local_cpus local_cpulist
 *       current_link_speed current_link_width ...
 *       infiniband/mlx5_N/                   node and port attributes
 *       infiniband_verbs/uverbsN/            ibdev, dev, abi_version
 *       (each of the two with a link "device" to the function)
 *   class/infiniband/mlx5_N -> the device's infiniband/mlx5_N
 *   class/infiniband_verbs/uverbsN -> its infiniband_verbs/uverbsN
 *
 * so that a client resolving ibdev_path and stripping two components finds
 * the PCI function, as on a host.  The tree holds what every process of
 * the user sees alike.  Each process's port is a port of its own on the
 * fabric, with the LID the LID directory gives it when the device opens
 * and a GID made from that: neither is in the tree (ibv_query_port and
 * ibv_query_gid tell them); the GID's type and the P_Key table are.
 *
 * The tree lasts as long as a process uses it: each process holds a shared
 * flock on <dir>.lock from its first device list to its exit; the process
 * leaving last gets the exclusive lock and removes the tree and the lock
 * file.  A process killed last leaves both; the next process that finds no
 * other user removes the tree before it builds its own.  A device
 * directory is built under a temporary name and renamed into place, so a
 * reader sees all of it or none; two processes building the same one at
 * once both succeed, the later rename finding the first.
 */
#include "emu/emu.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

/* The PCI function of a ConnectX-6 (vendor Mellanox, device 0x101b) */
#define EMU_PCI_VENDOR   0x15b3
#define EMU_PCI_CLASS    0x020700 /* InfiniBand controller */
#define EMU_UVERBS_MAJOR 231
#define EMU_UVERBS_MINOR 192 /* of uverbs0 */
#define EMU_UVERBS_ABI   1
#define EMU_VERBS_ABI    6 /* class/infiniband_verbs/abi_version */

static char emu_sysfs_root[64];
static char emu_sysfs_lock_name[80];
static int emu_sysfs_fd = -1; /* holds the shared flock */
static pid_t emu_sysfs_pid;   /* the process holding it (not a fork) */

/* A path from fmt into buf (PATH_MAX bytes); ENAMETOOLONG if cut */
static int emu_sysfs_path(char *buf, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int emu_sysfs_path(char *buf, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(buf, PATH_MAX, fmt, ap);
    va_end(ap);
    return ((n < 0) || (n >= PATH_MAX)) ? ENAMETOOLONG : 0;
}

/* dir/device, a link to the PCI function two levels up, as sysfs has */
static int emu_sysfs_device_link(const char *dir)
{
    char link[PATH_MAX];

    if (emu_sysfs_path(link, "%s/device", dir) != 0) {
        return ENAMETOOLONG;
    }
    return ((symlink("../..", link) != 0) && (errno != EEXIST)) ? errno : 0;
}

/* Writes one attribute file, fmt a line without its newline */
static int emu_sysfs_file(const char *dir, const char *name, const char *fmt,
                          ...) __attribute__((format(printf, 3, 4)));

static int emu_sysfs_file(const char *dir, const char *name, const char *fmt,
                          ...)
{
    char path[PATH_MAX];
    va_list ap;
    FILE *f;
    int ok;

    if (emu_sysfs_path(path, "%s/%s", dir, name) != 0) {
        return ENAMETOOLONG;
    }
    f = fopen(path, "we");
    if (f == NULL) {
        return errno;
    }
    va_start(ap, fmt);
    ok = (vfprintf(f, fmt, ap) >= 0) && (fputc('\n', f) != EOF);
    va_end(ap);
    ok = (fclose(f) == 0) && ok;
    return ok ? 0 : EIO;
}

/* mkdir -p of dir, or of dir/sub when sub is not NULL */
static int emu_sysfs_mkdirs(const char *dir, const char *sub)
{
    char path[PATH_MAX];
    char *p;

    if (emu_sysfs_path(path, "%s%s%s", dir, (sub != NULL) ? "/" : "",
                       (sub != NULL) ? sub : "") != 0) {
        return ENAMETOOLONG;
    }
    for (p = path + 1;; ++p) {
        if ((*p == '/') || (*p == '\0')) {
            char c = *p;

            *p = '\0';
            if ((mkdir(path, 0700) != 0) && (errno != EEXIST)) {
                return errno;
            }
            if (c == '\0') {
                return 0;
            }
            *p = c;
        }
    }
}

/* The CPUs of this host, as local_cpus (a hex mask in 32-bit words,
 * most significant first) and local_cpulist ("0-N") show them */
static void emu_sysfs_cpus(char *mask, size_t mask_len, char *list,
                           size_t list_len)
{
    long n     = sysconf(_SC_NPROCESSORS_CONF);
    int words  = (n <= 0) ? 1 : (int)((n + 31) / 32);
    size_t off = 0;
    int w;

    if (n <= 0) {
        n = 1;
    }
    mask[0] = '\0';
    for (w = words - 1; (w >= 0) && (off + 10 < mask_len); --w) {
        long bits     = n - (long)w * 32;
        uint32_t word = (bits >= 32) ? 0xffffffffu : ((1u << bits) - 1);

        off += (size_t)snprintf(mask + off, mask_len - off, "%s%08x",
                                (w == words - 1) ? "" : ",", word);
    }
    if (n == 1) {
        snprintf(list, list_len, "0");
    } else {
        snprintf(list, list_len, "0-%ld", n - 1);
    }
}

/* The NUMA node a device is put on: 0 where the host has NUMA nodes,
 * -1 (unknown) where it does not, as the kernel shows it */
static int emu_sysfs_numa_node(void)
{
    struct stat st;

    return (stat("/sys/devices/system/node/node0", &st) == 0) ? 0 : -1;
}

static int emu_sysfs_port(const char *ibdir)
{
    char port[PATH_MAX];
    int ret;

    ret = emu_sysfs_path(port, "%s/ports/1", ibdir);
    ret = ret ?: emu_sysfs_mkdirs(port, "pkeys");
    ret = ret ?: emu_sysfs_mkdirs(port, "gid_attrs/types");
    ret = ret ?: emu_sysfs_mkdirs(port, "gid_attrs/ndevs");
    ret = ret ?: emu_sysfs_file(port, "state", "4: ACTIVE");
    ret = ret ?: emu_sysfs_file(port, "phys_state", "5: LinkUp");
    ret = ret ?: emu_sysfs_file(port, "link_layer", "InfiniBand");
    ret = ret ?: emu_sysfs_file(port, "rate", "100 Gb/sec (4X EDR)");
    ret = ret ?: emu_sysfs_file(port, "lid_mask_count", "0");
    ret = ret ?: emu_sysfs_file(port, "sm_sl", "0");
    ret = ret ?: emu_sysfs_file(port, "cap_mask", "0x00010000");
    ret = ret ?: emu_sysfs_file(port, "gid_attrs/types/0", "IB/RoCE v1");
    ret = ret ?: emu_sysfs_file(port, "pkeys/0", "0x%04x", EMU_PKEY_DEFAULT);
    return ret;
}

static int emu_sysfs_ibdev(const char *fn, const emu_dev_t *dev)
{
    char ibdir[PATH_MAX];
    uint64_t guid = EMU_GUID_BASE | dev->index;
    char guid_str[24];
    int ret;

    snprintf(guid_str, sizeof(guid_str), "%04x:%04x:%04x:%04x",
             (unsigned)(guid >> 48) & 0xffff, (unsigned)(guid >> 32) & 0xffff,
             (unsigned)(guid >> 16) & 0xffff, (unsigned)guid & 0xffff);
    ret = emu_sysfs_path(ibdir, "%s/infiniband/%s", fn, dev->ibdev.name);
    ret = ret ?: emu_sysfs_mkdirs(fn, "infiniband");
    ret = ret ?: emu_sysfs_mkdirs(ibdir, "ports");
    ret = ret ?: emu_sysfs_device_link(ibdir);
    ret = ret ?: emu_sysfs_file(ibdir, "node_type", "1: CA");
    ret = ret ?: emu_sysfs_file(ibdir, "node_guid", "%s", guid_str);
    ret = ret ?: emu_sysfs_file(ibdir, "sys_image_guid", "%s", guid_str);
    ret = ret ?: emu_sysfs_file(ibdir, "fw_ver", "%s", EMU_FW_VER);
    ret = ret ?: emu_sysfs_file(ibdir, "hca_type", "MT%u", EMU_VENDOR_PART_ID);
    ret = ret ?: emu_sysfs_file(ibdir, "hw_rev", "0x%x", EMU_HW_VER);
    ret = ret ?:
                emu_sysfs_file(ibdir, "board_id", "DCX_EMU_%04u",
                               EMU_VENDOR_PART_ID);
    ret = ret ?:
                emu_sysfs_file(ibdir, "node_desc", "dcx-emu %s", dev->ibdev.name);
    return ret ?: emu_sysfs_port(ibdir);
}

static int emu_sysfs_uverbs(const char *fn, const emu_dev_t *dev)
{
    char dir[PATH_MAX];
    int ret;

    ret = emu_sysfs_path(dir, "%s/infiniband_verbs/%s", fn,
                         dev->ibdev.dev_name);
    ret = ret ?: emu_sysfs_mkdirs(fn, "infiniband_verbs");
    ret = ret ?: emu_sysfs_mkdirs(dir, NULL);
    ret = ret ?: emu_sysfs_device_link(dir);
    ret = ret ?: emu_sysfs_file(dir, "ibdev", "%s", dev->ibdev.name);
    ret = ret ?: emu_sysfs_file(dir, "abi_version", "%u", EMU_UVERBS_ABI);
    ret = ret ?:
                emu_sysfs_file(dir, "dev", "%u:%u", EMU_UVERBS_MAJOR,
                               EMU_UVERBS_MINOR + dev->index);
    return ret;
}

/* The PCI function of dev, its attributes and the device's directories */
static int emu_sysfs_function(const char *fn, const emu_dev_t *dev)
{
    char mask[160], list[32];
    int ret;

    emu_sysfs_cpus(mask, sizeof(mask), list, sizeof(list));
    ret = emu_sysfs_mkdirs(fn, NULL);
    ret = ret ?: emu_sysfs_file(fn, "vendor", "0x%04x", EMU_PCI_VENDOR);
    ret = ret ?: emu_sysfs_file(fn, "device", "0x%04x", EMU_VENDOR_PART_ID);
    ret = ret ?:
                emu_sysfs_file(fn, "subsystem_vendor", "0x%04x", EMU_PCI_VENDOR);
    ret = ret ?: emu_sysfs_file(fn, "subsystem_device", "0x0007");
    ret = ret ?: emu_sysfs_file(fn, "class", "0x%06x", EMU_PCI_CLASS);
    ret = ret ?: emu_sysfs_file(fn, "numa_node", "%d", emu_sysfs_numa_node());
    ret = ret ?: emu_sysfs_file(fn, "local_cpus", "%s", mask);
    ret = ret ?: emu_sysfs_file(fn, "local_cpulist", "%s", list);
    ret = ret ?: emu_sysfs_file(fn, "current_link_speed", "16.0 GT/s PCIe");
    ret = ret ?: emu_sysfs_file(fn, "current_link_width", "16");
    ret = ret ?: emu_sysfs_file(fn, "max_link_speed", "16.0 GT/s PCIe");
    ret = ret ?: emu_sysfs_file(fn, "max_link_width", "16");
    ret = ret ?: emu_sysfs_ibdev(fn, dev);
    return ret ?: emu_sysfs_uverbs(fn, dev);
}

static int emu_sysfs_rm_one(const char *path, const struct stat *st, int flag,
                            struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    return ((flag == FTW_DP) ? rmdir(path) : unlink(path)) ? errno : 0;
}

static int emu_sysfs_rm(const char *path)
{
    int ret = nftw(path, emu_sysfs_rm_one, 16, FTW_DEPTH | FTW_PHYS);

    if (ret == -1) {
        return (errno == ENOENT) ? 0 : errno;
    }
    return ret;
}

/* class/<cls>/<name>, a link to the device's directory of the kind */
static int emu_sysfs_link(const char *cls, const char *name, unsigned bus)
{
    char link[PATH_MAX], target[PATH_MAX];
    int ret;

    ret = emu_sysfs_path(link, "%s/class/%s/%s", emu_sysfs_root, cls, name);
    ret = ret ?:
                emu_sysfs_path(target,
                               "../../devices/pci0000:00/0000:%02x:00.0/%s/%s",
                               bus, cls, name);
    if ((ret == 0) && (symlink(target, link) != 0) && (errno != EEXIST)) {
        ret = errno;
    }
    return ret;
}

/* Device dev's directories in the tree, built when missing */
static int emu_sysfs_device(const emu_dev_t *dev)
{
    unsigned bus = dev->index + 1;
    char fn[PATH_MAX], tmp[PATH_MAX];
    struct stat st;
    int ret;

    ret = emu_sysfs_path(fn, "%s/devices/pci0000:00/0000:%02x:00.0",
                         emu_sysfs_root, bus);
    ret = ret ?:
                emu_sysfs_path(tmp, "%s/devices/.new.%d.%u", emu_sysfs_root,
                               (int)getpid(), dev->index);
    if ((ret == 0) && (stat(fn, &st) != 0)) {
        ret = emu_sysfs_function(tmp, dev);
        if ((ret == 0) && (rename(tmp, fn) != 0) && (errno != EEXIST) &&
            (errno != ENOTEMPTY)) {
            ret = errno;
        }
        emu_sysfs_rm(tmp); /* left only when another process won */
    }
    ret = ret ?: emu_sysfs_link("infiniband", dev->ibdev.name, bus);
    return ret ?: emu_sysfs_link("infiniband_verbs", dev->ibdev.dev_name, bus);
}

/* The lock on fd, shared: a process that finds no other user (the
 * exclusive lock is free) first removes what is there, the tree of a user
 * killed before it could remove it, whose files may say what that
 * process's set-up said and not this one's.  Then, or when others hold
 * it, the shared lock (which waits while the last user removes the tree).
 * The exclusive lock's conversion to shared is not atomic: a process
 * arriving meanwhile may clear the tree too, before anyone builds it. */
static int emu_sysfs_lock(int fd)
{
    int ret;

    if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
        ret = emu_sysfs_rm(emu_sysfs_root);
        if (ret != 0) {
            emu_warn("sysfs view %s: cannot remove a former user's (%s)",
                     emu_sysfs_root, strerror(ret));
        }
    } else if (errno != EWOULDBLOCK) {
        return -1;
    }
    return flock(fd, LOCK_SH);
}

/* The shared lock on the tree, taken once per process */
static int emu_sysfs_hold(void)
{
    struct stat st;
    int fd, ret;

    for (;;) {
        fd = open(emu_sysfs_lock_name, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0) {
            return errno;
        }
        /* (another user's lock file is never locked: its tree stays) */
        if (fstat(fd, &st) != 0) {
            ret = errno;
        } else if ((st.st_uid != getuid()) || (st.st_mode & 077)) {
            ret = EPERM;
        } else if ((emu_sysfs_lock(fd) != 0) || (fstat(fd, &st) != 0)) {
            ret = errno;
        } else if (st.st_nlink > 0) {
            break;
        } else {
            ret = EAGAIN; /* removed meanwhile: take the new one */
        }
        close(fd);
        if (ret != EAGAIN) {
            return ret;
        }
    }
    emu_sysfs_fd  = fd;
    emu_sysfs_pid = getpid();
    return 0;
}

void emu_sysfs_publish(emu_dev_t *devs, unsigned count)
{
    const char *dirs[] = {"devices/pci0000:00", "class/infiniband",
                          "class/infiniband_verbs"};
    char cls[PATH_MAX];
    unsigned i;
    int ret;

    snprintf(emu_sysfs_root, sizeof(emu_sysfs_root), "/dev/shm/dcx-emu.%u.sys",
             (unsigned)getuid());
    snprintf(emu_sysfs_lock_name, sizeof(emu_sysfs_lock_name), "%s.lock",
             emu_sysfs_root);
    for (i = 0; i < count; ++i) {
        emu_dev_t *dev = &devs[i];

        snprintf(dev->ibdev.dev_path, sizeof(dev->ibdev.dev_path),
                 "%s/class/infiniband_verbs/%s", emu_sysfs_root,
                 dev->ibdev.dev_name);
        snprintf(dev->ibdev.ibdev_path, sizeof(dev->ibdev.ibdev_path),
                 "%s/class/infiniband/%s", emu_sysfs_root, dev->ibdev.name);
    }
    ret = emu_sysfs_hold();
    if (ret != 0) {
        emu_warn("sysfs view %s: cannot lock %s (%s); devices have no "
                 "attribute files",
                 emu_sysfs_root, emu_sysfs_lock_name, strerror(ret));
        return;
    }
    ret = 0;
    for (i = 0; (i < 3) && (ret == 0); ++i) {
        ret = emu_sysfs_mkdirs(emu_sysfs_root, dirs[i]);
    }
    if (ret == 0) {
        ret = emu_sysfs_path(cls, "%s/class/infiniband_verbs", emu_sysfs_root);
        ret = ret ?: emu_sysfs_file(cls, "abi_version", "%u", EMU_VERBS_ABI);
    }
    for (i = 0; (i < count) && (ret == 0); ++i) {
        ret = emu_sysfs_device(&devs[i]);
    }
    if (ret != 0) {
        emu_warn("sysfs view %s: cannot build it (%s); devices have "
                 "incomplete attribute files",
                 emu_sysfs_root, strerror(ret));
    }
}

/* At exit: the process leaving last removes the tree and its lock file */
static void __attribute__((destructor)) emu_sysfs_leave(void)
{
    int ret;

    if ((emu_sysfs_fd < 0) || (emu_sysfs_pid != getpid())) {
        return; /* a forked child leaves the lock to its parent */
    }
    if (flock(emu_sysfs_fd, LOCK_EX | LOCK_NB) == 0) {
        ret = emu_sysfs_rm(emu_sysfs_root);
        if ((ret != 0) ||
            ((unlink(emu_sysfs_lock_name) != 0) && (errno != ENOENT))) {
            emu_warn("sysfs view %s: cannot remove it (%s)", emu_sysfs_root,
                     strerror(ret ? ret : errno));
        }
    }
    close(emu_sysfs_fd);
    emu_sysfs_fd = -1;
}
