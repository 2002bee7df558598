/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DC objects for the emulation's QP tests: a CQ for each side, an SRQ, a
 * DCT and DCIs taken through their states with the masks rdma-core's DC
 * recipe uses, an AH to this device's own port, and a registered buffer.
 */
#ifndef DCX_TEST_EMU_QP_FIXTURE_H_
#define DCX_TEST_EMU_QP_FIXTURE_H_

#include "emu_fixture.h"

#include <vector>

#define EMU_DCI_OPS                                                   \
    (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |             \
     IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM | \
     IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |   \
     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
#define EMU_DCT_KEY 0x1234abcdull

/* A DCT on ctx taking its receives from srq, completing on cq, created
 * with mlx5dv create_flags (0: none), left in RESET (NULL if refused) */
struct ibv_qp *emu_dct_create(struct ibv_context *ctx, struct ibv_pd *pd,
                              struct ibv_cq *cq, struct ibv_srq *srq,
                              uint64_t key, uint64_t create_flags = 0);
/* RESET -> INIT -> RTR with the masks rdma-core's DC recipe uses */
int emu_dct_connect(struct ibv_qp *qp, unsigned access);

/* One completion as read through the extended API */
struct emu_wc {
    uint64_t wr_id;
    enum ibv_wc_status status;
    enum ibv_wc_opcode opcode;
    uint32_t byte_len;
    uint32_t qp_num;
    unsigned wc_flags;
    uint32_t imm; /* host order */
};

class emu_qp_test : public emu_test {
protected:
    void SetUp() override;
    void TearDown() override;

    struct ibv_cq_ex *make_cq();
    /* A DCT in RTR on m_srq / m_rx_cq; access IBV_ACCESS_REMOTE_* */
    /* A DCT with that key, created and left in RESET (NULL if refused) */
    struct ibv_qp *create_dct(uint64_t key);
    struct ibv_qp *make_dct(uint64_t key, unsigned access);
    /* A DCI created with the given caps (cap is updated), not modified */
    struct ibv_qp *
    create_dci(struct ibv_qp_cap *cap, uint64_t ops = EMU_DCI_OPS,
               const struct mlx5dv_dci_streams *streams = nullptr);
    /* RESET -> INIT -> RTR [-> RTS]; returns the first failure */
    int connect_dci(struct ibv_qp *qp, uint8_t to_state = IBV_QPS_RTS,
                    uint8_t timeout = 14, uint8_t retry_cnt = 7,
                    uint8_t rnr_retry = 7);
    struct ibv_qp *make_dci(uint8_t timeout = 14, uint8_t retry_cnt = 7,
                            uint8_t rnr_retry = 7);
    struct ibv_ah *make_ah(uint16_t dlid);
    void post_recvs(unsigned count, uint32_t len = 256);
    /* Waits (bounded) for one completion on cq; false if none came */
    bool poll_one(struct ibv_cq_ex *cq, emu_wc *wc);
    /* Posts one WR: builder by opcode, dc address, then data */
    int post(struct ibv_qp *dci, uint64_t wr_id, int opcode, void *buf,
             uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
             uint64_t key = EMU_DCT_KEY, bool inl = false,
             struct ibv_ah *ah = nullptr, uint32_t dctn = 0, int stream = -1,
             bool signaled = true);

    /* set by a derived fixture's constructor: both CQs on m_channel */
    bool m_with_channel                = false;
    struct ibv_comp_channel *m_channel = nullptr;
    struct ibv_cq_ex *m_tx_cq          = nullptr;
    struct ibv_cq_ex *m_rx_cq          = nullptr;
    struct ibv_srq *m_srq              = nullptr;
    struct ibv_qp *m_dct               = nullptr;
    struct ibv_ah *m_ah                = nullptr;
    struct ibv_mr *m_mr                = nullptr;
    uint16_t m_lid                     = 0;
    std::vector<char> m_buf;
    std::vector<struct ibv_qp *> m_qps;
};

#endif
