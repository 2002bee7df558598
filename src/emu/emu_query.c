/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Emulated ConnectX: device, port, GID and P_Key queries.
 *
 * Sizes come from the soft device's capabilities; identity and link fields
 * are those of a ConnectX-6 on an InfiniBand fabric: one port, active,
 * 4096-byte MTU, the LID the fabric's directory gave the port
 * (emu_sm.c), one GID (link-local prefix, the port GUID), one P_Key
 * (0xffff).
 */
#include "emu/emu.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#define EMU_PORT_NUM 1

static void emu_fill_device_attr(emu_ctx_t *ectx, struct ibv_device_attr *a)
{
    const dcx_dev_caps_t *caps = dcx_dev_caps(ectx->dev->soft);

    memset(a, 0, sizeof(*a));
    snprintf(a->fw_ver, sizeof(a->fw_ver), "%s", EMU_FW_VER);
    a->node_guid        = htobe64(EMU_GUID_BASE | ectx->dev->index);
    a->sys_image_guid   = a->node_guid;
    a->max_mr_size      = caps->max_mr_size;
    a->page_size_cap    = 0xfffffffffffff000ull;
    a->vendor_id        = EMU_VENDOR_ID;
    a->vendor_part_id   = EMU_VENDOR_PART_ID;
    a->hw_ver           = EMU_HW_VER;
    a->max_qp           = (int)caps->max_dci;
    a->max_qp_wr        = (int)caps->max_qp_wr;
    a->device_cap_flags = IBV_DEVICE_BAD_PKEY_CNTR | IBV_DEVICE_BAD_QKEY_CNTR |
                          IBV_DEVICE_CHANGE_PHY_PORT |
                          IBV_DEVICE_PORT_ACTIVE_EVENT |
                          IBV_DEVICE_SYS_IMAGE_GUID |
                          IBV_DEVICE_RC_RNR_NAK_GEN |
                          IBV_DEVICE_MEM_MGT_EXTENSIONS;
    a->max_sge             = (int)caps->max_sge;
    a->max_sge_rd          = (int)caps->max_sge;
    a->max_cq              = 1 << 24;
    a->max_cqe             = (int)caps->max_cqe;
    a->max_mr              = (int)caps->max_mr;
    a->max_pd              = (int)EMU_MAX_PD;
    a->max_qp_rd_atom      = (int)caps->max_rd_atomic;
    a->max_qp_init_rd_atom = (int)caps->max_rd_atomic;
    a->max_res_rd_atom     = a->max_qp * a->max_qp_rd_atom;
    a->atomic_cap          = IBV_ATOMIC_HCA;
    a->max_ah              = (int)EMU_MAX_AH;
    a->max_srq             = 1 << 23;
    a->max_srq_wr          = (int)caps->max_srq_wr;
    a->max_srq_sge         = (int)caps->max_recv_sge;
    a->max_pkeys           = 1;
    a->local_ca_ack_delay  = 16;
    a->phys_port_cnt       = EMU_PORT_NUM;
}

int ibv_query_device(struct ibv_context *context,
                     struct ibv_device_attr *device_attr)
{
    emu_ctx_t *ectx = emu_ctx_check(context, "ibv_query_device");

    if (ectx == NULL) {
        return EINVAL;
    }
    emu_fill_device_attr(ectx, device_attr);
    return 0;
}

static int emu_query_device_ex(struct ibv_context *context,
                               const struct ibv_query_device_ex_input *input,
                               struct ibv_device_attr_ex *attr,
                               size_t attr_size)
{
    emu_ctx_t *ectx = emu_ctx(context);
    const dcx_dev_caps_t *caps;
    struct ibv_device_attr_ex a;

    if ((input != NULL) && (input->comp_mask != 0)) {
        emu_error("%s: query_device_ex: input comp_mask 0x%x (must be 0)",
                  context->device->name, input->comp_mask);
        return EINVAL;
    }
    if (attr_size < sizeof(attr->orig_attr)) {
        emu_error("%s: query_device_ex: attribute size %zu is below the "
                  "basic attributes (%zu)",
                  context->device->name, attr_size, sizeof(attr->orig_attr));
        return EINVAL;
    }
    memset(&a, 0, sizeof(a));
    emu_fill_device_attr(ectx, &a.orig_attr);
    caps = dcx_dev_caps(ectx->dev->soft);
    if (caps->flags & DCX_CAP_TM) {
        /* tag matching on XRQs made through DEVX, their rendezvous
         * fetched over DC only (emu_devx_rmp.c): no flag for RC, whose
         * TM SRQs are not modelled; the limits a kernel reports */
        a.tm_caps.max_rndv_hdr_size = caps->tm_max_rndv_hdr;
        a.tm_caps.max_num_tags      = caps->tm_max_tags;
        a.tm_caps.flags             = 0;
        a.tm_caps.max_ops           = caps->tm_max_ops;
        a.tm_caps.max_sge           = caps->tm_max_sge;
    }
    /* no ODP, no device memory */
    a.completion_timestamp_mask    = 0;
    a.hca_core_clock               = 0;
    a.device_cap_flags_ex          = a.orig_attr.device_cap_flags;
    a.pci_atomic_caps.fetch_add    = IBV_PCI_ATOMIC_OPERATION_8_BYTE_SIZE_SUP;
    a.pci_atomic_caps.swap         = IBV_PCI_ATOMIC_OPERATION_8_BYTE_SIZE_SUP;
    a.pci_atomic_caps.compare_swap = IBV_PCI_ATOMIC_OPERATION_8_BYTE_SIZE_SUP;
    a.max_dm_size                  = 0;
    a.phys_port_cnt_ex             = EMU_PORT_NUM;
    memcpy(attr, &a, (attr_size < sizeof(a)) ? attr_size : sizeof(a));
    return 0;
}

static int emu_port_check(struct ibv_context *context, unsigned port,
                          const char *what)
{
    if (port != EMU_PORT_NUM) {
        emu_error("%s: %s: port %u does not exist (the device has port %u)",
                  context->device->name, what, port, EMU_PORT_NUM);
        return EINVAL;
    }
    return 0;
}

static void emu_fill_port_attr(emu_ctx_t *ectx, struct ibv_port_attr *a)
{
    const dcx_dev_caps_t *caps = dcx_dev_caps(ectx->dev->soft);

    memset(a, 0, sizeof(*a));
    a->state          = IBV_PORT_ACTIVE;
    a->max_mtu        = IBV_MTU_4096;
    a->active_mtu     = IBV_MTU_4096;
    a->gid_tbl_len    = 1;
    a->port_cap_flags = IBV_PORT_CM_SUP | IBV_PORT_SYS_IMAGE_GUID_SUP |
                        IBV_PORT_PKEY_SW_EXT_PORT_TRAP_SUP;
    a->max_msg_sz      = (caps->max_msg_size < EMU_MAX_MSG_SZ) ?
                             (uint32_t)caps->max_msg_size :
                             EMU_MAX_MSG_SZ;
    a->bad_pkey_cntr   = 0;
    a->qkey_viol_cntr  = 0;
    a->pkey_tbl_len    = 1;
    a->lid             = ectx->dev->lid;
    a->sm_lid          = 1;
    a->lmc             = 0;
    a->max_vl_num      = 4;
    a->sm_sl           = 0;
    a->subnet_timeout  = 18;
    a->init_type_reply = 0;
    a->active_width    = 2;  /* 4X */
    a->active_speed    = 64; /* HDR */
    a->phys_state      = 5;  /* LinkUp */
    a->link_layer      = IBV_LINK_LAYER_INFINIBAND;
    a->flags           = 0;
}

/* The exported ibv_query_port, what the ibv_query_port macro falls back
 * to; the macro calls emu_query_port_op through the context. */
#undef ibv_query_port
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
                   struct _compat_ibv_port_attr *port_attr)
{
    emu_ctx_t *ectx = emu_ctx_check(context, "ibv_query_port");
    int ret;

    if (ectx == NULL) {
        return EINVAL;
    }
    ret = emu_port_check(context, port_num, "query_port");
    if (ret == 0) {
        emu_fill_port_attr(ectx, (struct ibv_port_attr *)port_attr);
    }
    return ret;
}

static int emu_query_port_op(struct ibv_context *context, uint8_t port_num,
                             struct ibv_port_attr *port_attr,
                             size_t port_attr_len)
{
    struct ibv_port_attr a;
    int ret;

    ret = emu_port_check(context, port_num, "query_port");
    if (ret != 0) {
        return ret;
    }
    emu_fill_port_attr(emu_ctx(context), &a);
    memcpy(port_attr, &a,
           (port_attr_len < sizeof(a)) ? port_attr_len : sizeof(a));
    return 0;
}

static void emu_port_gid(emu_ctx_t *ectx, union ibv_gid *gid)
{
    gid->global.subnet_prefix = htobe64(EMU_GID_PREFIX);
    gid->global.interface_id  = htobe64(emu_dev_guid(ectx->dev));
}

/* -1 on error, not an errno (as rdma-core) */
int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
                  union ibv_gid *gid)
{
    emu_ctx_t *ectx = emu_ctx_check(context, "ibv_query_gid");

    if ((ectx == NULL) ||
        (emu_port_check(context, port_num, "query_gid") != 0)) {
        return -1;
    }
    if (index != 0) {
        emu_error("%s: query_gid: index %d outside the GID table (1 entry)",
                  context->device->name, index);
        return -1;
    }
    emu_port_gid(ectx, gid);
    return 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
                      uint32_t gid_index, struct ibv_gid_entry *entry,
                      uint32_t flags, size_t entry_size)
{
    emu_ctx_t *ectx = emu_ctx_check(context, "ibv_query_gid_ex");
    struct ibv_gid_entry e;

    if (ectx == NULL) {
        return EINVAL;
    }
    if ((flags != 0) || (entry_size < sizeof(e))) {
        emu_error("%s: query_gid_ex: flags 0x%x (must be 0) or entry size "
                  "%zu (< %zu)",
                  context->device->name, flags, entry_size, sizeof(e));
        return EINVAL;
    }
    if (emu_port_check(context, port_num, "query_gid_ex") != 0) {
        return EINVAL;
    }
    if (gid_index != 0) {
        emu_error("%s: query_gid_ex: index %u outside the GID table (1 "
                  "entry)",
                  context->device->name, gid_index);
        return EINVAL;
    }
    memset(&e, 0, sizeof(e));
    emu_port_gid(ectx, &e.gid);
    e.gid_index = 0;
    e.port_num  = port_num;
    e.gid_type  = IBV_GID_TYPE_IB;
    memcpy(entry, &e, sizeof(e));
    return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context,
                             struct ibv_gid_entry *entries, size_t max_entries,
                             uint32_t flags, size_t entry_size)
{
    int ret;

    if (max_entries < 1) {
        emu_error("%s: query_gid_table: room for %zu entries, the table has "
                  "1",
                  (context != NULL) ? context->device->name : "?", max_entries);
        return -EINVAL;
    }
    ret = _ibv_query_gid_ex(context, EMU_PORT_NUM, 0, entries, flags,
                            entry_size);
    return (ret != 0) ? -ret : 1;
}

/* -1 on error (rdma-core reads it from sysfs and says so) */
int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
                   __be16 *pkey)
{
    if ((emu_ctx_check(context, "ibv_query_pkey") == NULL) ||
        (emu_port_check(context, port_num, "query_pkey") != 0)) {
        return -1;
    }
    if (index != 0) {
        emu_error("%s: query_pkey: index %d outside the P_Key table (1 "
                  "entry)",
                  context->device->name, index);
        return -1;
    }
    *pkey = htobe16(EMU_PKEY_DEFAULT);
    return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num,
                       __be16 pkey)
{
    if ((emu_ctx_check(context, "ibv_get_pkey_index") == NULL) ||
        (emu_port_check(context, port_num, "get_pkey_index") != 0)) {
        errno = EINVAL;
        return -1;
    }
    if (be16toh(pkey) != EMU_PKEY_DEFAULT) {
        emu_error("%s: get_pkey_index: P_Key 0x%x is not in the table",
                  context->device->name, be16toh(pkey));
        errno = ENOENT;
        return -1;
    }
    return 0;
}

void emu_ctx_set_query_ops(struct verbs_context *vctx)
{
    vctx->query_device_ex = emu_query_device_ex;
    vctx->query_port      = emu_query_port_op;

    /* The two typed compat ops of struct ibv_context_ops: rdma-core points
     * them at these exported verbs, which old programs called through
     * them */
    vctx->context.ops._compat_query_device = ibv_query_device;
    vctx->context.ops._compat_query_port   = ibv_query_port;
}
