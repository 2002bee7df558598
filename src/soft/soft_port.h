/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device ports: the shared segments of the fabric (soft_seg.c) and
 * the peers mapped from them, the kicks that wake a port's helper
 * (soft_fabric.c), the helper thread (soft_helper.c) and the wake socket
 * of an application asleep on a completion channel (soft_wake.c).  Sits
 * on soft_wire.h (the port's header, peers), soft_clock.h (the poll age a
 * kick reads) and soft_dev.h.
 */
#ifndef DCX_SOFT_PORT_H_
#define DCX_SOFT_PORT_H_

#include "soft_base.h"
#include "soft_wire.h"
#include "soft_clock.h"
#include "soft_dev.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* After a full barrier between a sender's publish and this read of
 * 'sleeping': 1 if the port's helper must be woken for the packet, as it
 * sleeps deep, or naps while its application is not polling
 * (soft_port_kick_seen) */
static inline int soft_port_kick_due(const soft_port_hdr_t *hdr)
{
    uint32_t state = __atomic_load_n(&hdr->sleeping, __ATOMIC_RELAXED);

    return (state != SOFT_HELPER_PARKED) &&
           ((state == SOFT_HELPER_DEEP) ||
            soft_port_idle_at(hdr, soft_clock_now()));
}

/* The same with the poll age taken at 'clk', a soft_clock_now() reading
 * the sender took after its publish (the light post's own, from
 * soft_dev_now_clk: no second counter read; a stamp later than it is a
 * poll after the publish, which needs no wake).  The light post tests it
 * inline and calls soft_port_wake_once only to wake. */
static inline int soft_port_kick_due_at(const soft_port_hdr_t *hdr,
                                        uint64_t clk)
{
    uint32_t state = __atomic_load_n(&hdr->sleeping, __ATOMIC_RELAXED);

    return (state != SOFT_HELPER_PARKED) &&
           ((state == SOFT_HELPER_DEEP) || soft_port_idle_at(hdr, clk));
}

/* The name of a port segment (soft_seg.c says how it is made): its
 * owner creates it, its peers map it (soft_peer_map) */
#define SOFT_SEG_PREFIX "dcx-soft."

static inline void soft_seg_name(char *buf, size_t len, uint32_t uid,
                                 const char *fabric, uint32_t pid,
                                 uint64_t token)
{
    snprintf(buf, len, "/" SOFT_SEG_PREFIX "%u.%s.%u.%016llx", uid, fabric, pid,
             (unsigned long long)token);
}

/* soft_proc.c */
uint64_t soft_proc_start_time(uint32_t pid);
int soft_pid_alive(uint32_t pid, uint64_t start);

/* soft_seg.c */
int soft_port_create(soft_dev_t *dev);
void soft_port_destroy(soft_dev_t *dev);
void soft_fabric_sweep(uint32_t uid);

/* soft_fabric.c */
uint32_t soft_fabric_hash(const char *fabric);
uint32_t soft_host_id(void);
int soft_addr_check(soft_dev_t *dev, const void *addr, size_t len,
                    soft_addr_t *out, char *why, size_t why_len);
void soft_rings_warm(const soft_dev_t *dev, soft_port_hdr_t *hdr,
                     size_t map_size);
/* A peer already known (kept until the device closes) whose token agrees
 * with token on the bits of mask; NULL if none */
soft_peer_t *soft_peer_known(soft_dev_t *dev, uint32_t pid, uint32_t inst,
                             uint64_t token, uint64_t mask);
/* The peer of that name, known or made now (not mapped yet); NULL if out
 * of memory */
soft_peer_t *soft_peer_get(soft_dev_t *dev, uint32_t pid, uint32_t inst,
                           uint64_t token);
soft_port_hdr_t *soft_peer_map(soft_dev_t *dev, soft_peer_t *peer);
int soft_peer_dead(soft_dev_t *dev, soft_peer_t *peer);
int soft_peers_any_dead(void *dev); /* a soft_dev_t: 1 if a peer died */
void soft_peers_free(soft_dev_t *dev);
uint32_t soft_pkt_csum(const soft_pkt_t *pkt);
int soft_port_kick(soft_port_hdr_t *hdr);
int soft_port_kick_sleeping(soft_port_hdr_t *hdr);
int soft_port_kick_seen(soft_port_hdr_t *hdr);
int soft_port_wake_once(soft_port_hdr_t *hdr);
int soft_port_kick_sleeping_seen(soft_port_hdr_t *hdr);
void soft_port_ring(soft_port_hdr_t *hdr);
int soft_futex_wait(uint32_t *addr, uint32_t val, uint64_t timeout_ns);

/* soft_helper.c */
int soft_helper_start(soft_dev_t *dev);
void soft_helper_stop(soft_dev_t *dev);
void soft_helper_wake_if_sleeping(soft_dev_t *dev);

/* soft_wake.c */
void soft_wake_open(soft_dev_t *dev);
void soft_wake_close(soft_dev_t *dev);
void soft_wake_arm(soft_dev_t *dev);
void soft_wake_taken(soft_dev_t *dev);
int soft_wake_poke(soft_dev_t *dev, soft_port_hdr_t *hdr);
int soft_wake_sleeper(soft_dev_t *dev, soft_port_hdr_t *hdr, int recv);
int soft_wake_kick(soft_dev_t *dev, soft_port_hdr_t *hdr, int recv);
void soft_wake_asym_init(soft_dev_t *dev);
void soft_port_sleep_fence(soft_dev_t *dev);
void soft_port_hint_clear(soft_dev_t *dev, uint32_t arms);

/* After a full barrier between a sender's publish and this read: 1 if the
 * port's application (not ours) may sleep on a completion channel: the
 * packet wakes it or its helper (soft_wake_sleeper), whatever the helper's
 * state */
static inline int soft_wake_sleeps(const soft_dev_t *dev,
                                   const soft_port_hdr_t *hdr)
{
    return (__atomic_load_n(&hdr->app_wait, __ATOMIC_RELAXED) !=
            SOFT_WAKE_NONE) &&
           (hdr != dev->hdr);
}

#endif
