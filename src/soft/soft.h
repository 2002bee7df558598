/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Soft device internals, shared by the files of src/soft: the headers of
 * its layers, each holding one layer's types and functions and including
 * the layers it sits on (each compiles on its own: contrib/headers.sh),
 * listed below from the bottom up.  A file may include the few it uses
 * instead.
 *
 * The model: every opened soft device owns one shared-memory "port" segment
 * on its fabric.  The segment carries two multi-producer single-consumer
 * rings: one for inbound requests (filled by peers' requesters) and one for
 * inbound responses (filled by peers' responders).  Everything else
 * (MRs, CQs, SRQs, QPs, the engine state) is private to the owning process.
 *
 * One mutex per device ("engine lock") serialises the engine: application
 * calls (post, poll, progress, control path) take it, the helper thread only
 * try-locks it; copies done within the call take it biased, without a
 * locked instruction (soft_lock.h).
 *
 * Protocol, in short:
 *  - A WQE is split into packets of at most the MTU (the smaller of both
 *    ends' slot payloads); each carries the DCI's message number (msn), the
 *    oldest msn still unacknowledged (ack_base) and its byte offset.  A
 *    request is checksummed only when its sender has a fault rule set
 *    (SOFT_PKT_CSUM): the only source of corruption the model has.
 *  - The responder handles a source (port, DCI) strictly in order, answers
 *    the last packet of a message (ACK/NAK), every READ packet (data) and
 *    every atomic (result); RNR and errors are NAKed at the first packet.
 *    A request marked SOFT_PKT_WACK (the light paths of small inline SENDs
 *    and RDMA WRITEs, soft_req_post_inline, and of SENDs of an sg list,
 *    soft_req_post_sge, which send them in the compact form
 *    SOFT_PKT_LIGHT; the last packet of a SEND or WRITE of the general
 *    path, soft_req_table_ack) is acknowledged in the requester's ack
 *    table (soft_ack_t) instead of by an ACK packet; the responder kicks
 *    the requester's port after the store only for a signaled one of the
 *    general path or of the sg list's light path (SOFT_PKT_WKICK), whose
 *    completion a requester asleep on a completion channel waits for.
 *    The responder handles single-packet messages in one pass
 *    (soft_resp_fast).
 *  - A READ request packet asks for a range of up to SOFT_READ_BURST
 *    response packets (args[0] bytes, args[1] bytes per response), so a
 *    large READ streams: the responder answers a whole burst at once and
 *    the requester asks for the next burst as slots free up.
 *  - The requester keeps one response slot of its own ring reserved for
 *    every answer it expects ("credits"), so responders never wait: a
 *    response that does not fit is dropped and recovered by a retry.  One
 *    slot is never lent out: the response being processed still holds its
 *    slot when its credit returns and the next request goes out.
 *  - Losses are recovered go-back-N from the oldest WQE after the ack
 *    timeout; duplicates are re-answered (atomics from saved results).
 *  - A full request ring is back-pressure: the requester tries again on its
 *    next progress.
 */
#ifndef DCX_SOFT_INT_H_
#define DCX_SOFT_INT_H_

#include "soft_base.h"      /* the protocol's constants, the opcode table */
#include "soft_wire.h"      /* packets, the segment's layout, peers */
#include "soft_ring.h"      /* ring slots, their consumer state and functions */
#include "soft_lock_word.h" /* the engine lock's word */
#include "soft_lock.h"      /* the engine lock */
#include "soft_clock.h"     /* the clocks */
#include "soft_objs.h"      /* the objects: keys, CQs, SRQs, QPs, ... */
#include "soft_dev.h"       /* the device */
#include "soft_mem.h"       /* registered memory and strided keys */
#include "soft_port.h"      /* ports, peers, kicks, the helper, wakes */
#include "soft_verbs.h"     /* the device's objects made and destroyed */
#include "soft_cq.h"        /* CQs */
#include "soft_engine.h"    /* the engine, fault injection */
#include "soft_poll.h"      /* the polls' unlocked looks */
#include "soft_req.h"       /* the requester: send WQEs, DCIs */
#include "soft_resp.h"      /* the responder, tag matching */

#endif
