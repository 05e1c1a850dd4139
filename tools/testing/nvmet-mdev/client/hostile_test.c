// SPDX-License-Identifier: GPL-2.0
/*
 * nvmet-mdev against a hostile guest: garbage register writes, bad
 * doorbells, random commands, PRPs/SGLs that point nowhere or loop, DMA
 * unmapped under the device's feet, resets and closes with I/O in flight.
 *
 * Every case checks that the device answers with an NVMe status (or
 * CSTS.CFS) rather than hanging, and that a controller reset brings it
 * back to working order.  The kernel side (KASAN, lockdep, splats) is
 * watched by the VM harness.
 *
 * Seeded cases print their seed; NVMET_MDEV_SEED reproduces a run.
 */
#include <signal.h>
#include <sys/wait.h>

#include <linux/pci_regs.h>

#include "kselftest_harness.h"
#include "client.h"

#define HOSTILE_DEPTH	32

FIXTURE(hostile) {
	struct client c;
	struct nvme_ctrl *ctrl;
	struct nvme_dma buf;		/* 64 KiB scratch data buffer */
	uint64_t seed;
	struct rng rng;
};

FIXTURE_SETUP(hostile)
{
	CLIENT_BRINGUP(&self->c, CLIENT_IO_QUEUES, HOSTILE_DEPTH, true);
	self->ctrl = &self->c.ctrl;
	ASSERT_EQ(0, nvme_dma_alloc(self->ctrl, 64 * 1024, &self->buf));
	self->seed = env_u64("NVMET_MDEV_SEED", nvme_now_ms());
	rng_seed(&self->rng, self->seed);
}

FIXTURE_TEARDOWN(hostile)
{
	client_close(&self->c);
}

/* The device must come back after a reset; log what state it was in. */
#define RECOVER() do {							\
	TH_LOG("recovering: CSTS %#x", nvme_read32(self->ctrl, NVME_REG_CSTS)); \
	ASSERT_EQ(0, client_recover_and_check(&self->c));		\
} while (0)

/* Still works without a reset: admin + one read on each queue. */
static int still_works(struct nvme_ctrl *ctrl, struct nvme_dma *buf)
{
	unsigned int q;
	int ret;

	ret = nvme_identify(ctrl, NVME_ID_CNS_CTRL, 0, 0, NULL);
	if (ret || !ctrl->nsid)
		return ret;
	for (q = 1; q <= ctrl->nr_io_queues; q++) {
		if (!ctrl->sq[q].live)
			continue;
		ret = nvme_rw(ctrl, q, nvme_cmd_read, 0, 1, buf, 0);
		if (ret)
			return ret;
	}
	return 0;
}

/* ---- Registers ---- */

TEST_F_TIMEOUT(hostile, random_bar0_writes, 300)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	struct vfio_dev *dev = &self->c.dev;
	static const unsigned int sizes[] = { 1, 2, 4, 8, 3, 16 };
	uint64_t cap = nvme_read64(ctrl, NVME_REG_CAP);
	unsigned int i, round;

	TH_LOG("seed %llu", (unsigned long long)self->seed);
	for (round = 0; round < 4; round++) {
		for (i = 0; i < 500; i++) {
			unsigned int size = sizes[rng_below(&self->rng, 6)];
			uint64_t off, val[2];

			/* Mostly the register page, sometimes anywhere in BAR0. */
			if (rng_below(&self->rng, 4))
				off = rng_below(&self->rng, 0x100);
			else
				off = rng_below(&self->rng, NVMET_MDEV_BAR0_SIZE + 16);
			val[0] = rng_next(&self->rng);
			val[1] = rng_next(&self->rng);
			if (rng_below(&self->rng, 3))
				vfio_region_write(dev, VFIO_PCI_BAR0_REGION_INDEX,
						  off, val, size);
			else
				vfio_region_read(dev, VFIO_PCI_BAR0_REGION_INDEX,
						 off, val, size);
		}
		/* CAP is read-only whatever happened. */
		EXPECT_EQ(cap, nvme_read64(ctrl, NVME_REG_CAP));
		RECOVER();
	}
}

TEST_F(hostile, bar0_odd_accesses)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	struct vfio_dev *dev = &self->c.dev;
	uint64_t cap = nvme_read64(ctrl, NVME_REG_CAP);
	static uint8_t big[2 * NVMET_MDEV_BAR0_SIZE];
	uint8_t b[32];
	int ret;

	memset(b, 0xff, sizeof(b));
	/* Crossing register boundaries and sizes no CPU would use. */
	vfio_region_read(dev, VFIO_PCI_BAR0_REGION_INDEX, 0x1a, b, 8);
	vfio_region_read(dev, VFIO_PCI_BAR0_REGION_INDEX, 0x06, b, 3);
	vfio_region_read(dev, VFIO_PCI_BAR0_REGION_INDEX, 0x00, b, 32);
	vfio_region_write(dev, VFIO_PCI_BAR0_REGION_INDEX, 0x1e, b, 4);
	vfio_region_write(dev, VFIO_PCI_BAR0_REGION_INDEX, 0x09, b, 7);
	vfio_region_write(dev, VFIO_PCI_BAR0_REGION_INDEX, 0xffe, b, 8);
	/* The end of the BAR and beyond: refused, never past the region. */
	ret = vfio_region_read(dev, VFIO_PCI_BAR0_REGION_INDEX,
			       NVMET_MDEV_BAR0_SIZE - 2, b, 4);
	EXPECT_NE(0, ret);
	ret = vfio_region_write(dev, VFIO_PCI_BAR0_REGION_INDEX,
				NVMET_MDEV_BAR0_SIZE, b, 4);
	EXPECT_NE(0, ret);
	ret = vfio_region_read(dev, VFIO_PCI_BAR0_REGION_INDEX,
			       1ull << 30, b, 4);
	EXPECT_NE(0, ret);
	/* Config space past its end. */
	ret = vfio_region_read(dev, VFIO_PCI_CONFIG_REGION_INDEX,
			       NVMET_MDEV_CFG_SIZE - 2, b, 4);
	EXPECT_NE(0, ret);
	/* A huge single access. */
	vfio_region_read(dev, VFIO_PCI_BAR0_REGION_INDEX, 0, big, sizeof(big));
	vfio_region_write(dev, VFIO_PCI_BAR0_REGION_INDEX, 0, big, sizeof(big));
	EXPECT_EQ(cap, nvme_read64(ctrl, NVME_REG_CAP));
	RECOVER();
}

TEST_F(hostile, random_config_writes)
{
	struct vfio_dev *dev = &self->c.dev;
	unsigned int i;

	TH_LOG("seed %llu", (unsigned long long)self->seed);
	for (i = 0; i < 2000; i++) {
		uint32_t off = rng_below(&self->rng, NVMET_MDEV_CFG_SIZE);
		uint32_t size = 1u << rng_below(&self->rng, 3);
		uint32_t val = rng_next(&self->rng);

		/* Spare the FLR bit half the time so the run is not all resets. */
		vfio_region_write(dev, VFIO_PCI_CONFIG_REGION_INDEX, off, &val,
				  size);
	}
	EXPECT_EQ(NVMET_MDEV_PCI_VENDOR_ID, vfio_cfg_read16(dev, PCI_VENDOR_ID));
	EXPECT_EQ(NVMET_MDEV_PCI_CLASS,
		  vfio_cfg_read32(dev, PCI_CLASS_REVISION) >> 8);
	nvme_irq_teardown(self->ctrl);
	RECOVER();
}

TEST_F(hostile, cc_changed_while_enabled)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	uint32_t cc = nvme_read32(ctrl, NVME_REG_CC);
	static const uint32_t changes[] = {
		NVME_CC_IOSQES_MASK, NVME_CC_IOCQES_MASK, NVME_CC_MPS_MASK,
		NVME_CC_CSS_MASK, NVME_CC_AMS_MASK, 0xff000000,
	};
	unsigned int i;

	/*
	 * The spec forbids changing CC fields other than EN/SHN while
	 * enabled; the controller may ignore the change or fail (CFS).  It
	 * must keep answering or report CFS, and a reset must recover.
	 */
	for (i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
		uint32_t csts;
		int st;

		nvme_write32(ctrl, NVME_REG_CC, cc ^ changes[i]);
		st = nvme_exec_timeout(ctrl, 0, &(struct nvme_sqe){
			.opcode = nvme_admin_identify, .cdw10 = 1,
			.prp1 = ctrl->scratch.iova }, NULL, 5000);
		csts = nvme_read32(ctrl, NVME_REG_CSTS);
		EXPECT_TRUE(st == 0 || (csts & NVME_CSTS_CFS)) {
			TH_LOG("CC ^= %#x: identify %s, CSTS %#x", changes[i],
			       nvme_status_str(st), csts);
		}
		RECOVER();
		cc = nvme_read32(ctrl, NVME_REG_CC);
	}
}

TEST_F(hostile, admin_queue_registers_changed_while_enabled)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	uint64_t hole = nvme_iova_hole(ctrl, NVME_PAGE_SIZE);

	/* The spec says the host shall not; the controller must survive. */
	nvme_write64(ctrl, NVME_REG_ASQ, hole);
	nvme_write64(ctrl, NVME_REG_ACQ, hole);
	nvme_write32(ctrl, NVME_REG_AQA, 0x0fff0fff);
	nvme_exec_timeout(ctrl, 0, &(struct nvme_sqe){
		.opcode = nvme_admin_identify, .cdw10 = 1,
		.prp1 = ctrl->scratch.iova }, NULL, 3000);
	RECOVER();
}

TEST_F(hostile, nssr_and_reserved_registers)
{
	struct nvme_ctrl *ctrl = self->ctrl;

	/* NVM Subsystem Reset "NVMe" without CAP.NSSRS: ignored. */
	nvme_write32(ctrl, NVME_REG_NSSR, 0x4e564d65);
	nvme_write32(ctrl, NVME_REG_CMBMSC, 0xffffffff);
	nvme_write32(ctrl, NVME_REG_BPINFO, 0xffffffff);
	nvme_write32(ctrl, 0x54, 0xffffffff);	/* reserved */
	nvme_write32(ctrl, NVME_REG_PMRCAP, 0xffffffff);
	nvme_write32(ctrl, 0xe04, 0xffffffff);	/* PMRCTL */
	EXPECT_EQ(0, still_works(ctrl, &self->buf));
	EXPECT_EQ(0, nvme_read32(ctrl, NVME_REG_CSTS) & NVME_CSTS_NSSRO);
}

/* ---- Doorbells ---- */

TEST_F(hostile, doorbell_values_beyond_queue_size)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	static const uint32_t vals[] = { HOSTILE_DEPTH, HOSTILE_DEPTH + 1, 0xffff,
					 0x10000, 0xffffffff };
	unsigned int i;

	/*
	 * SQ tail / CQ head >= queue size: Invalid Doorbell Write Value
	 * (AER if one is outstanding, none here).  The queue is unusable
	 * until reset; the rest of the controller goes on.
	 */
	for (i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
		nvme_ring_sq(ctrl, 1, vals[i]);
		usleep(10 * 1000);
		EXPECT_OK(nvme_identify(ctrl, NVME_ID_CNS_CTRL, 0, 0, NULL)) {
			TH_LOG("after SQ1 tail %#x", vals[i]);
		}
		RECOVER();
		nvme_ring_cq(ctrl, 1, vals[i]);
		usleep(10 * 1000);
		EXPECT_OK(nvme_identify(ctrl, NVME_ID_CNS_CTRL, 0, 0, NULL)) {
			TH_LOG("after CQ1 head %#x", vals[i]);
		}
		RECOVER();
	}
	/* The admin queue's own doorbells too (through the trapped path). */
	nvme_write32(ctrl, nvme_db_offset(ctrl, 0, false), 0xffff);
	usleep(10 * 1000);
	RECOVER();
	nvme_write32(ctrl, nvme_db_offset(ctrl, 0, true), 0xffff);
	usleep(10 * 1000);
	RECOVER();
}

TEST_F(hostile, doorbells_of_nonexistent_queues)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	unsigned int q;

	/* Through mmap (if offered) and through the trapped path. */
	for (q = ctrl->nr_io_queues + 1; q < NVME_MAX_QUEUES; q++) {
		nvme_ring_sq(ctrl, q, q);
		nvme_ring_cq(ctrl, q, q);
		nvme_write32(ctrl, nvme_db_offset(ctrl, q, false), q + 1);
		nvme_write32(ctrl, nvme_db_offset(ctrl, q, true), q + 1);
	}
	/* The rest of the doorbell page, which maps to no queue at all. */
	for (q = NVME_MAX_QUEUES; q < NVMET_MDEV_DB_SIZE / 8; q += 7) {
		nvme_write32(ctrl, nvme_db_offset(ctrl, q, false), 1);
		nvme_write32(ctrl, nvme_db_offset(ctrl, q, true), 1);
	}
	/* Live queues are unaffected. */
	EXPECT_EQ(0, still_works(ctrl, &self->buf));
	/* A deleted queue's doorbell. */
	ASSERT_OK(nvme_delete_sq(ctrl, 2));
	nvme_ring_sq(ctrl, 2, 5);
	nvme_write32(ctrl, nvme_db_offset(ctrl, 2, false), 6);
	EXPECT_EQ(0, still_works(ctrl, &self->buf));
}

TEST_F(hostile, cq_head_ahead_of_tail)
{
	struct nvme_ctrl *ctrl = self->ctrl;

	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	/*
	 * Claim to have consumed entries the controller never posted: the
	 * controller must not overwrite unconsumed entries or run wild.
	 */
	nvme_ring_cq(ctrl, 1, 5);
	usleep(10 * 1000);
	nvme_exec_timeout(ctrl, 1, &(struct nvme_sqe){
		.opcode = nvme_cmd_flush, .nsid = ctrl->nsid }, NULL, 3000);
	RECOVER();
}

TEST_F(hostile, sq_tail_moves_backwards)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	struct nvme_sqe sqe = { .opcode = nvme_cmd_flush, .nsid = ctrl->nsid };
	unsigned int i;

	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	for (i = 0; i < 5; i++)
		nvme_sq_push(ctrl, 1, &sqe, false);
	nvme_sq_ring(ctrl, 1);
	/* Tail jumps back and forth: commands may run again; no hang. */
	nvme_ring_sq(ctrl, 1, 1);
	nvme_ring_sq(ctrl, 1, 4);
	nvme_ring_sq(ctrl, 1, 0);
	nvme_ring_sq(ctrl, 1, HOSTILE_DEPTH - 1);
	usleep(100 * 1000);
	RECOVER();
}

TEST_F(hostile, cq_full_is_not_overwritten)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	struct nvme_sqe sqe = { .opcode = nvme_cmd_flush, .nsid = ctrl->nsid };
	volatile struct nvme_cqe *cqes;
	unsigned int i, posted = 0, got = 0;

	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	/* CQ of 4 entries under an SQ of 16: at most 3 completions fit. */
	ASSERT_OK(nvme_delete_sq(ctrl, 1));
	ASSERT_OK(nvme_delete_cq(ctrl, 1));
	ASSERT_OK(nvme_create_cq(ctrl, 1, 4, true, 1));
	ASSERT_OK(nvme_create_sq(ctrl, 1, 16, 1));
	for (i = 0; i < 10; i++)
		nvme_sq_push(ctrl, 1, &sqe, false);
	nvme_sq_ring(ctrl, 1);
	usleep(300 * 1000);
	cqes = ctrl->cq[1].mem.va;
	for (i = 0; i < 4; i++)
		posted += (cqes[i].status & 1) == 1;
	/* The spec: full when head == tail + 1, so 3 (not 4) entries. */
	EXPECT_EQ(3, posted);
	/* Consuming lets the rest through; none is lost. */
	while (got < 10) {
		struct nvme_cqe cqe;

		ASSERT_EQ(0, nvme_cq_poll(ctrl, 1, &cqe, 5000)) {
			TH_LOG("%u of 10 completions", got);
		}
		EXPECT_EQ(0, cqe.status >> 1);
		got++;
	}
	EXPECT_FALSE(nvme_cq_pending(ctrl, 1));
}

/* ---- Random commands ---- */

static void random_sqe(struct rng *rng, struct nvme_sqe *sqe)
{
	rng_fill(rng, sqe, sizeof(*sqe));
	/* Keep PSDT random, no fused operations (see fused_commands). */
	sqe->flags &= 0xc0;
}

TEST_F_TIMEOUT(hostile, random_admin_commands, 300)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	unsigned int i, ok = 0, err = 0;

	TH_LOG("seed %llu", (unsigned long long)self->seed);
	for (i = 0; i < 1000; i++) {
		struct nvme_sqe sqe;
		int st;

		random_sqe(&self->rng, &sqe);
		/* Small opcodes are the interesting ones; half the time. */
		if (rng_below(&self->rng, 2))
			sqe.opcode &= 0x1f;
		/* AERs never complete by themselves; keep-alive timers fire. */
		if (sqe.opcode == nvme_admin_async_event)
			sqe.opcode = nvme_admin_get_features;
		if (sqe.opcode == nvme_admin_set_features &&
		    (sqe.cdw10 & 0xff) == NVME_FEAT_KATO)
			sqe.cdw11 = 0;
		/* Sometimes point the data at real memory. */
		if (rng_below(&self->rng, 2)) {
			sqe.prp1 = self->buf.iova + (rng_below(&self->rng, 16) << 12);
			sqe.prp2 = self->buf.iova + (rng_below(&self->rng, 16) << 12);
		}
		st = nvme_exec_timeout(ctrl, 0, &sqe, NULL, 10000);
		ASSERT_GE(st, 0) {
			TH_LOG("command %u (opcode %#x cdw10 %#x): %s", i,
			       sqe.opcode, sqe.cdw10, nvme_status_str(st));
		}
		if (st)
			err++;
		else
			ok++;
	}
	TH_LOG("%u succeeded, %u failed", ok, err);
	EXPECT_EQ(0, nvme_read32(ctrl, NVME_REG_CSTS) & NVME_CSTS_CFS);
	ASSERT_OK(nvme_identify(ctrl, NVME_ID_CNS_CTRL, 0, 0, NULL));
	RECOVER();
}

TEST_F_TIMEOUT(hostile, random_io_commands, 300)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	unsigned int i, ok = 0, err = 0;
	uint64_t list_iova;
	uint64_t *list;

	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	TH_LOG("seed %llu", (unsigned long long)self->seed);
	for (i = 0; i < 2000; i++) {
		struct nvme_sqe sqe;
		int st;

		random_sqe(&self->rng, &sqe);
		if (rng_below(&self->rng, 2))
			sqe.opcode &= 0x1f;
		if (rng_below(&self->rng, 2))
			sqe.nsid = ctrl->nsid;
		if (rng_below(&self->rng, 2)) {
			sqe.cdw10 %= ctrl->nsze;	/* in range, mostly */
			sqe.cdw11 = 0;
			sqe.cdw12 &= 0xffff00ff;	/* up to 256 blocks */
		}
		switch (rng_below(&self->rng, 4)) {
		case 0:		/* real memory */
			sqe.prp1 = self->buf.iova + rng_below(&self->rng, 16 * 1024) * 4;
			sqe.prp2 = self->buf.iova + (rng_below(&self->rng, 16) << 12);
			break;
		case 1:		/* a list page full of garbage */
			list = nvme_pool_page(ctrl, &list_iova);
			rng_fill(&self->rng, list, NVME_PAGE_SIZE);
			sqe.prp1 = self->buf.iova;
			sqe.prp2 = list_iova + (rng_below(&self->rng, 512) << 3);
			break;
		default:	/* random */
			break;
		}
		st = nvme_exec_timeout(ctrl, 1 + i % ctrl->nr_io_queues, &sqe,
				       NULL, 10000);
		ASSERT_GE(st, 0) {
			TH_LOG("command %u (opcode %#x flags %#x): %s", i,
			       sqe.opcode, sqe.flags, nvme_status_str(st));
		}
		if (st)
			err++;
		else
			ok++;
	}
	TH_LOG("%u succeeded, %u failed", ok, err);
	EXPECT_EQ(0, nvme_read32(ctrl, NVME_REG_CSTS) & NVME_CSTS_CFS);
	EXPECT_EQ(0, still_works(ctrl, &self->buf));
}

TEST_F(hostile, fused_commands)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	struct nvme_sqe a = { .opcode = nvme_cmd_compare, .nsid = ctrl->nsid,
			      .flags = NVME_CMD_FUSE_FIRST };
	struct nvme_sqe b = { .opcode = nvme_cmd_write, .nsid = ctrl->nsid,
			      .flags = NVME_CMD_FUSE_SECOND };
	struct nvme_cqe cqe;
	unsigned int i;

	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	a.prp1 = b.prp1 = self->buf.iova;
	/*
	 * FUSES = 0 (nvmet): fused operations are not supported, so both
	 * commands fail (Invalid Field, or Missing/Failed Fused Command).
	 * A lone first or second half must complete too.
	 */
	EXPECT_EQ(0, ctrl->id.fuses);
	nvme_sq_push(ctrl, 1, &a, false);
	nvme_sq_push(ctrl, 1, &b, false);
	nvme_sq_ring(ctrl, 1);
	for (i = 0; i < 2; i++) {
		ASSERT_EQ(0, nvme_cq_poll(ctrl, 1, &cqe, 5000));
		EXPECT_NE(0, cqe.status >> 1);
	}
	EXPECT_ERROR_STATUS(nvme_exec(ctrl, 1, &a, NULL));
	EXPECT_ERROR_STATUS(nvme_exec(ctrl, 1, &b, NULL));
	EXPECT_EQ(0, still_works(ctrl, &self->buf));
}

TEST_F(hostile, duplicate_command_ids)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	struct nvme_sqe sqe = { .opcode = nvme_cmd_flush, .nsid = ctrl->nsid,
				.cid = 77 };
	struct nvme_cqe cqe;
	unsigned int i;

	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	/* Same CID outstanding twice: both complete (conflict optional). */
	for (i = 0; i < 8; i++)
		nvme_sq_push(ctrl, 1, &sqe, true);
	nvme_sq_ring(ctrl, 1);
	for (i = 0; i < 8; i++) {
		ASSERT_EQ(0, nvme_cq_poll(ctrl, 1, &cqe, 5000));
		EXPECT_EQ(77, cqe.cid);
	}
	EXPECT_EQ(0, still_works(ctrl, &self->buf));
}

/* ---- Data pointers ---- */

static int read_with(struct nvme_ctrl *ctrl, uint32_t nlb, uint8_t flags,
		     uint64_t prp1, uint64_t prp2)
{
	struct nvme_sqe sqe = {
		.opcode = nvme_cmd_read, .flags = flags, .nsid = ctrl->nsid,
		.cdw12 = nlb - 1, .prp1 = prp1, .prp2 = prp2,
	};

	return nvme_exec_timeout(ctrl, 1, &sqe, NULL, 10000);
}

TEST_F(hostile, prp_unmapped)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	uint32_t ppb = NVME_PAGE_SIZE >> ctrl->lba_shift;	/* blocks per page */
	uint64_t hole = nvme_iova_hole(ctrl, 64 * NVME_PAGE_SIZE);
	struct nvme_sqe w = { .opcode = nvme_cmd_write, .nsid = ctrl->nsid };
	uint64_t *list, list_iova;

	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	/*
	 * Unmapped data pages: the controller cannot pin them.  spec: Data
	 * Transfer Error is the natural status; Invalid Field is accepted
	 * too (unsure which the driver picks).  Writes (device reads) and
	 * reads (device writes) alike.
	 */
	EXPECT_STATUS_IN(read_with(ctrl, 1, 0, hole, 0),
			 NVME_SC_DATA_XFER_ERROR, NVME_SC_INVALID_FIELD);
	EXPECT_STATUS_IN(read_with(ctrl, 2 * ppb, 0, self->buf.iova, hole),
			 NVME_SC_DATA_XFER_ERROR, NVME_SC_INVALID_FIELD);
	/* PRP list pointer into the void. */
	EXPECT_STATUS_IN(read_with(ctrl, 4 * ppb, 0, self->buf.iova, hole),
			 NVME_SC_DATA_XFER_ERROR, NVME_SC_INVALID_FIELD);
	/* A list whose entries point into the void. */
	list = nvme_pool_page(ctrl, &list_iova);
	list[0] = self->buf.iova + NVME_PAGE_SIZE;
	list[1] = hole;
	list[2] = hole + NVME_PAGE_SIZE;
	EXPECT_STATUS_IN(read_with(ctrl, 4 * ppb, 0, self->buf.iova, list_iova),
			 NVME_SC_DATA_XFER_ERROR, NVME_SC_INVALID_FIELD);
	/* Address 0 and the top of the address space. */
	EXPECT_STATUS_IN(read_with(ctrl, 1, 0, 0, 0),
			 NVME_SC_DATA_XFER_ERROR, NVME_SC_INVALID_FIELD);
	EXPECT_STATUS_IN(read_with(ctrl, 2 * ppb, 0, ~0ull << 12, 0),
			 NVME_SC_DATA_XFER_ERROR, NVME_SC_INVALID_FIELD,
			 NVME_SC_PRP_INVALID_OFFSET);
	/* Half mapped: the transfer runs off the end of a buffer. */
	EXPECT_ERROR_STATUS(read_with(ctrl, 2 * ppb, 0,
				      ctrl->scratch.iova, ctrl->scratch.iova +
				      NVME_PAGE_SIZE));
	/* Writes from unmapped memory. */
	w.prp1 = hole;
	EXPECT_STATUS_IN(nvme_exec(ctrl, 1, &w, NULL),
			 NVME_SC_DATA_XFER_ERROR, NVME_SC_INVALID_FIELD);
	EXPECT_EQ(0, still_works(ctrl, &self->buf));
}

TEST_F(hostile, prp_bad_offsets)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	uint32_t ppb = NVME_PAGE_SIZE >> ctrl->lba_shift;
	uint64_t *list, list_iova;
	uint64_t b = self->buf.iova;

	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	/* PRP1 must be dword aligned (bits 1:0 clear). */
	EXPECT_STATUS(NVME_SC_PRP_INVALID_OFFSET, read_with(ctrl, 1, 0, b + 2, 0));
	/* PRP2 as a second data page must have offset 0. */
	EXPECT_STATUS(NVME_SC_PRP_INVALID_OFFSET,
		      read_with(ctrl, 2 * ppb, 0, b, b + NVME_PAGE_SIZE + 512));
	/* List entries must have offset 0. */
	list = nvme_pool_page(ctrl, &list_iova);
	list[0] = b + NVME_PAGE_SIZE;
	list[1] = b + 2 * NVME_PAGE_SIZE + 8;
	list[2] = b + 3 * NVME_PAGE_SIZE;
	EXPECT_STATUS(NVME_SC_PRP_INVALID_OFFSET,
		      read_with(ctrl, 4 * ppb, 0, b, list_iova));
	/* The list pointer itself must be qword aligned. */
	list[1] = b + 2 * NVME_PAGE_SIZE;
	EXPECT_STATUS(NVME_SC_PRP_INVALID_OFFSET,
		      read_with(ctrl, 4 * ppb, 0, b, list_iova + 4));
	/* Fine when fixed. */
	EXPECT_OK(read_with(ctrl, 4 * ppb, 0, b, list_iova));
}

TEST_F(hostile, prp_list_loops)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	uint32_t max = ctrl->mdts_bytes ? ctrl->mdts_bytes : 1u << 20;
	uint32_t nlb = (max > 64 * 1024 ? 64 * 1024 : max) >> ctrl->lba_shift;
	uint64_t *list, list_iova;
	unsigned int i;
	int st;

	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	/*
	 * A list page whose chain entry points back to itself (at its
	 * start), starting near its end so that chaining happens.  The
	 * transfer length bounds the walk; the controller may follow the
	 * loop (valid data pages all along) or refuse it.  It must finish.
	 */
	list = nvme_pool_page(ctrl, &list_iova);
	for (i = 0; i < 511; i++)
		list[i] = self->buf.iova + ((i % 15 + 1) << 12);
	list[511] = list_iova;
	st = read_with(ctrl, nlb, 0, self->buf.iova,
		       list_iova + NVME_PAGE_SIZE - 16);
	EXPECT_TRUE(st >= 0) {
		TH_LOG("self-chained PRP list: %s", nvme_status_str(st));
	}
	/* The chain entry points at the middle of itself, not page aligned. */
	list[511] = list_iova + NVME_PAGE_SIZE - 8;
	st = read_with(ctrl, nlb, 0, self->buf.iova,
		       list_iova + NVME_PAGE_SIZE - 16);
	EXPECT_TRUE(st >= 0);
	/* The list in the data buffer itself (device overwrites its list). */
	memset(self->buf.va, 0, NVME_PAGE_SIZE);
	for (i = 0; i < 16; i++)
		((uint64_t *)self->buf.va)[i] = self->buf.iova + ((i + 1) << 12);
	st = read_with(ctrl, nlb > 16 * 8 ? 16 * 8 : nlb, 0, self->buf.iova,
		       self->buf.iova);
	EXPECT_TRUE(st >= 0);
	EXPECT_EQ(0, still_works(ctrl, &self->buf));
}

TEST_F(hostile, data_into_queue_memory)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	uint32_t ppb = NVME_PAGE_SIZE >> ctrl->lba_shift;

	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	/* Read data over SQ 1's own ring: legal, the SQE is already fetched. */
	EXPECT_OK(read_with(ctrl, ppb, 0, ctrl->sq[1].mem.iova, 0));
	memset(ctrl->sq[1].mem.va, 0, ctrl->sq[1].mem.size);
	EXPECT_EQ(0, still_works(ctrl, &self->buf));
	/* Over CQ 2's ring: garbage completions there; reset afterwards. */
	EXPECT_OK(read_with(ctrl, ppb, 0, ctrl->cq[2].mem.iova, 0));
	/* Over the admin SQ and the PRP list of this very command. */
	EXPECT_OK(read_with(ctrl, ppb, 0, ctrl->sq[0].mem.iova, 0));
	RECOVER();
}

TEST_F(hostile, sgl_loops_and_garbage)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	struct nvme_sgl_desc *seg;
	uint64_t seg_iova, hole = nvme_iova_hole(ctrl, NVME_PAGE_SIZE);
	struct nvme_sqe sqe;
	unsigned int i;
	int st;

	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	if (!(ctrl->id.sgls & NVME_CTRL_SGLS_SUPP_MASK))
		SKIP(return, "no SGL support");
	seg = nvme_pool_page(ctrl, &seg_iova);
	/* A segment of zero-length data blocks that chains to itself. */
	seg[0] = (struct nvme_sgl_desc){ self->buf.iova, 0, {0}, 0 };
	seg[1] = (struct nvme_sgl_desc){ seg_iova, 2 * sizeof(*seg), {0},
					 NVME_SGL_FMT_SEG_DESC << 4 };
	sqe = (struct nvme_sqe){ .opcode = nvme_cmd_read, .nsid = ctrl->nsid,
		.flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG };
	sqe.sgl = (struct nvme_sgl_desc){ seg_iova, 2 * sizeof(*seg), {0},
					  NVME_SGL_FMT_SEG_DESC << 4 };
	st = nvme_exec_timeout(ctrl, 1, &sqe, NULL, 10000);
	EXPECT_ERROR_STATUS(st);
	/* Segment descriptors in the void / of absurd length. */
	sqe.sgl.addr = hole;
	EXPECT_ERROR_STATUS(nvme_exec_timeout(ctrl, 1, &sqe, NULL, 10000));
	sqe.sgl.addr = seg_iova;
	sqe.sgl.length = 0xfffffff0;
	EXPECT_ERROR_STATUS(nvme_exec_timeout(ctrl, 1, &sqe, NULL, 10000));
	sqe.sgl.length = 0;
	EXPECT_ERROR_STATUS(nvme_exec_timeout(ctrl, 1, &sqe, NULL, 10000));
	/* A full page of 1-byte data blocks, then garbage descriptors. */
	for (i = 0; i < 256; i++)
		seg[i] = (struct nvme_sgl_desc){ self->buf.iova + i, 1, {0}, 0 };
	sqe.sgl = (struct nvme_sgl_desc){ seg_iova, 256 * sizeof(*seg), {0},
					  NVME_SGL_FMT_LAST_SEG_DESC << 4 };
	st = nvme_exec_timeout(ctrl, 1, &sqe, NULL, 10000);
	EXPECT_TRUE(st >= 0);
	rng_fill(&self->rng, seg, NVME_PAGE_SIZE);
	st = nvme_exec_timeout(ctrl, 1, &sqe, NULL, 10000);
	EXPECT_ERROR_STATUS(st);
	/* A last segment that contains a segment descriptor: invalid. */
	seg[0] = (struct nvme_sgl_desc){ self->buf.iova, 512, {0}, 0 };
	seg[1] = (struct nvme_sgl_desc){ seg_iova, 32, {0},
					 NVME_SGL_FMT_SEG_DESC << 4 };
	sqe.sgl.length = 2 * sizeof(*seg);
	EXPECT_ERROR_STATUS(nvme_exec_timeout(ctrl, 1, &sqe, NULL, 10000));
	EXPECT_EQ(0, still_works(ctrl, &self->buf));
}

/* ---- DMA unmapped while in use ---- */

TEST_F(hostile, unmap_data_buffer_in_flight)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	uint32_t len = ctrl->mdts_bytes && ctrl->mdts_bytes < (1u << 20) ?
		       ctrl->mdts_bytes : 1u << 20;
	struct nvme_dma big;
	unsigned int i, n = 8;
	int ret;

	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	if ((uint64_t)(len >> ctrl->lba_shift) > ctrl->nsze)
		len = ctrl->nsze << ctrl->lba_shift;
	ASSERT_EQ(0, nvme_dma_alloc(ctrl, len, &big));
	for (i = 0; i < n; i++) {
		struct nvme_sqe sqe = {
			.opcode = i % 2 ? nvme_cmd_write : nvme_cmd_read,
			.nsid = ctrl->nsid,
			.cdw12 = (len >> ctrl->lba_shift) - 1,
		};

		ASSERT_EQ(0, nvme_build_prps(ctrl, &big, 0, len, &sqe));
		nvme_sq_push(ctrl, 1, &sqe, false);
	}
	nvme_sq_ring(ctrl, 1);
	/* Pull the memory right away: the unmap must succeed... */
	ret = vfio_dma_unmap(&self->c.dev, big.iova, big.size);
	EXPECT_EQ(0, ret);
	/* ...and every command completes, successfully or not. */
	for (i = 0; i < n; i++) {
		struct nvme_cqe cqe;

		ASSERT_EQ(0, nvme_cq_poll(ctrl, 1, &cqe, 20000)) {
			TH_LOG("%u of %u completions", i, n);
		}
	}
	munmap(big.va, big.size);
	/* The range is gone for good: a new command using it fails. */
	EXPECT_STATUS_IN(read_with(ctrl, 1, 0, big.iova, 0),
			 NVME_SC_DATA_XFER_ERROR, NVME_SC_INVALID_FIELD);
	EXPECT_EQ(0, still_works(ctrl, &self->buf));
}

TEST_F(hostile, unmap_rings_while_live)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	struct vfio_dev *dev = &self->c.dev;
	struct nvme_sqe sqe = { .opcode = nvme_cmd_flush, .nsid = ctrl->nsid };
	uint32_t csts;
	int st;

	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	/* The I/O SQ ring: the next fetch cannot happen. */
	ASSERT_EQ(0, vfio_dma_unmap(dev, ctrl->sq[1].mem.iova, ctrl->sq[1].mem.size));
	st = nvme_exec_timeout(ctrl, 1, &sqe, NULL, 3000);
	csts = nvme_read32(ctrl, NVME_REG_CSTS);
	TH_LOG("SQ ring unmapped: %s, CSTS %#x", nvme_status_str(st), csts);
	/* Either the queue stalls or the controller reports CFS. */
	EXPECT_TRUE(st == -ETIMEDOUT || st == -EIO || (csts & NVME_CSTS_CFS));
	munmap(ctrl->sq[1].mem.va, ctrl->sq[1].mem.size);
	memset(&ctrl->sq[1].mem, 0, sizeof(ctrl->sq[1].mem));
	RECOVER();

	/* The I/O CQ ring: the completion cannot be posted. */
	ASSERT_EQ(0, vfio_dma_unmap(dev, ctrl->cq[1].mem.iova, ctrl->cq[1].mem.size));
	nvme_submit(ctrl, 1, &sqe);
	usleep(500 * 1000);
	csts = nvme_read32(ctrl, NVME_REG_CSTS);
	TH_LOG("CQ ring unmapped: CSTS %#x", csts);
	munmap(ctrl->cq[1].mem.va, ctrl->cq[1].mem.size);
	memset(&ctrl->cq[1].mem, 0, sizeof(ctrl->cq[1].mem));
	RECOVER();

	/* The admin SQ and CQ rings. */
	ASSERT_EQ(0, vfio_dma_unmap(dev, ctrl->sq[0].mem.iova, ctrl->sq[0].mem.size));
	ASSERT_EQ(0, vfio_dma_unmap(dev, ctrl->cq[0].mem.iova, ctrl->cq[0].mem.size));
	nvme_submit(ctrl, 0, &(struct nvme_sqe){ .opcode = nvme_admin_identify,
		.cdw10 = 1, .prp1 = ctrl->scratch.iova });
	usleep(500 * 1000);
	TH_LOG("admin rings unmapped: CSTS %#x", nvme_read32(ctrl, NVME_REG_CSTS));
	/* Let nvme_enable() allocate fresh admin rings. */
	munmap(ctrl->sq[0].mem.va, ctrl->sq[0].mem.size);
	munmap(ctrl->cq[0].mem.va, ctrl->cq[0].mem.size);
	memset(&ctrl->sq[0].mem, 0, sizeof(ctrl->sq[0].mem));
	memset(&ctrl->cq[0].mem, 0, sizeof(ctrl->cq[0].mem));
	RECOVER();
}

/* Unmap a DMA buffer and map the same memory at the same IOVA again. */
static int remap(struct vfio_dev *dev, struct nvme_dma *m)
{
	return vfio_dma_unmap(dev, m->iova, m->size) ?:
	       vfio_dma_map(dev, m->va, m->iova, m->size);
}

/*
 * A VMM unmaps and maps again the memory holding live rings (QEMU does so
 * for all of RAM when the firmware changes the memory layout while its
 * NVMe driver has queues): the controller carries on, nothing is lost,
 * including a completion posted while its CQ was unmapped.
 */
TEST_F(hostile, remap_rings_while_live)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	struct vfio_dev *dev = &self->c.dev;
	struct nvme_sqe sqe = { .opcode = nvme_cmd_flush, .nsid = ctrl->nsid };
	struct nvme_cqe cqe;
	uint16_t cid;
	int i;

	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	for (i = 0; i < 3; i++) {
		ASSERT_EQ(0, remap(dev, &ctrl->sq[1].mem));
		ASSERT_EQ(0, remap(dev, &ctrl->cq[1].mem));
		ASSERT_EQ(0, remap(dev, &ctrl->sq[0].mem));
		ASSERT_EQ(0, remap(dev, &ctrl->cq[0].mem));
		ASSERT_EQ(0, still_works(ctrl, &self->buf));
	}

	/* The CQ unmapped with a command in flight. */
	ASSERT_EQ(0, vfio_dma_unmap(dev, ctrl->cq[1].mem.iova,
				    ctrl->cq[1].mem.size));
	cid = nvme_submit(ctrl, 1, &sqe);
	usleep(200 * 1000);
	ASSERT_EQ(0, vfio_dma_map(dev, ctrl->cq[1].mem.va, ctrl->cq[1].mem.iova,
				  ctrl->cq[1].mem.size));
	ASSERT_EQ(0, nvme_cq_poll(ctrl, 1, &cqe, 5000));
	EXPECT_EQ(cid, cqe.cid);
	EXPECT_OK(cqe.status >> 1);
	EXPECT_EQ(0, nvme_read32(ctrl, NVME_REG_CSTS) & NVME_CSTS_CFS);
	EXPECT_EQ(0, still_works(ctrl, &self->buf));
}

TEST_F(hostile, unmap_shadow_doorbells_while_live)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	struct vfio_dev *dev = &self->c.dev;
	unsigned int i;

	if (!(ctrl->id.oacs & NVME_CTRL_OACS_DBBUF_SUPP))
		SKIP(return, "no Doorbell Buffer Config");
	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	ASSERT_OK(nvme_dbbuf_config(ctrl));
	for (i = 0; i < 10; i++) {
		ASSERT_OK(nvme_rw(ctrl, 1, nvme_cmd_read, 0, 1, &self->buf, 0));
	}
	ASSERT_EQ(0, vfio_dma_unmap(dev, ctrl->dbbuf_db.iova, NVME_PAGE_SIZE));
	ASSERT_EQ(0, vfio_dma_unmap(dev, ctrl->dbbuf_ei.iova, NVME_PAGE_SIZE));
	/* Without shadow pages, BAR0 writes for every update. */
	ctrl->dbbuf_on = false;
	for (i = 0; i < 10; i++)
		nvme_exec_timeout(ctrl, 1, &(struct nvme_sqe){
			.opcode = nvme_cmd_flush, .nsid = ctrl->nsid }, NULL, 2000);
	munmap(ctrl->dbbuf_db.va, NVME_PAGE_SIZE);
	munmap(ctrl->dbbuf_ei.va, NVME_PAGE_SIZE);
	memset(&ctrl->dbbuf_db, 0, sizeof(ctrl->dbbuf_db));
	memset(&ctrl->dbbuf_ei, 0, sizeof(ctrl->dbbuf_ei));
	RECOVER();
}

TEST_F(hostile, queue_in_unmapped_memory)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	uint64_t hole = nvme_iova_hole(ctrl, 64 * NVME_PAGE_SIZE);
	int st;

	ASSERT_OK(nvme_delete_sq(ctrl, 2));
	ASSERT_OK(nvme_delete_cq(ctrl, 2));
	/* Create may refuse (can't pin) or accept and fail later. */
	st = nvme_create_cq_raw(ctrl, 2, 15, hole, NVME_QUEUE_PHYS_CONTIG, 0);
	TH_LOG("CQ in unmapped memory: %s", nvme_status_str(st));
	EXPECT_TRUE(st >= 0);
	/* A ring that starts in mapped memory and runs past its end. */
	if (st == 0)
		nvme_delete_queue(ctrl, true, 2);
	st = nvme_create_cq_raw(ctrl, 2, NVME_CAP_MQES(ctrl->cap),
				ctrl->scratch.iova, NVME_QUEUE_PHYS_CONTIG, 0);
	TH_LOG("CQ running off its mapping: %s", nvme_status_str(st));
	EXPECT_TRUE(st >= 0);
	if (st == 0) {
		st = nvme_create_sq_raw(ctrl, 2, 15, hole,
					NVME_QUEUE_PHYS_CONTIG, 2);
		TH_LOG("SQ in unmapped memory: %s", nvme_status_str(st));
		EXPECT_TRUE(st >= 0);
		if (st == 0)
			nvme_ring_sq(ctrl, 2, 3);	/* fetch from nowhere */
	}
	usleep(100 * 1000);
	RECOVER();
}

TEST_F(hostile, io_sq_on_admin_ring)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	int st;

	/* SQ 2's ring is the admin SQ's ring: both read the same memory. */
	ASSERT_OK(nvme_delete_sq(ctrl, 2));
	st = nvme_create_sq_raw(ctrl, 2, 3, ctrl->sq[0].mem.iova,
				NVME_QUEUE_PHYS_CONTIG, 2);
	EXPECT_TRUE(st >= 0);
	if (st == 0)
		nvme_ring_sq(ctrl, 2, 2);
	usleep(100 * 1000);
	RECOVER();
}

/* ---- Resets and closes with I/O in flight ---- */

static void fill_queues(struct nvme_ctrl *ctrl, struct nvme_dma *buf)
{
	unsigned int q, i;

	for (q = 1; q <= ctrl->nr_io_queues; q++) {
		for (i = 0; i < HOSTILE_DEPTH - 1; i++) {
			struct nvme_sqe sqe = {
				.opcode = i % 3 ? nvme_cmd_read : nvme_cmd_write,
				.nsid = ctrl->nsid,
				.cdw10 = i,
				.cdw12 = 7,
			};

			nvme_build_prps(ctrl, buf, (i % 8) * 4096,
					8 << ctrl->lba_shift, &sqe);
			nvme_sq_push(ctrl, q, &sqe, false);
		}
		nvme_sq_ring(ctrl, q);
	}
}

TEST_F_TIMEOUT(hostile, reset_with_io_in_flight, 120)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	struct vfio_dev *dev = &self->c.dev;
	uint16_t exp = vfio_cfg_find_cap(dev, PCI_CAP_ID_EXP);
	unsigned int round;

	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	for (round = 0; round < 3; round++) {
		/* CC.EN = 0 */
		fill_queues(ctrl, &self->buf);
		nvme_write32(ctrl, NVME_REG_CC, 0);
		EXPECT_EQ(0, nvme_wait_ready(ctrl, false));
		RECOVER();
		/* Function level reset */
		fill_queues(ctrl, &self->buf);
		vfio_cfg_write16(dev, exp + PCI_EXP_DEVCTL,
				 vfio_cfg_read16(dev, exp + PCI_EXP_DEVCTL) |
				 PCI_EXP_DEVCTL_BCR_FLR);
		usleep(100 * 1000);
		EXPECT_EQ(0, nvme_read32(ctrl, NVME_REG_CSTS) & NVME_CSTS_RDY);
		nvme_irq_teardown(ctrl);
		RECOVER();
		/* VFIO_DEVICE_RESET */
		fill_queues(ctrl, &self->buf);
		EXPECT_EQ(0, vfio_reset(dev));
		EXPECT_EQ(0, nvme_read32(ctrl, NVME_REG_CSTS) & NVME_CSTS_RDY);
		nvme_irq_teardown(ctrl);
		RECOVER();
		/* Shutdown */
		fill_queues(ctrl, &self->buf);
		EXPECT_EQ(0, nvme_shutdown(ctrl));
		RECOVER();
	}
}

TEST_F(hostile, delete_sq_with_io_in_flight)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	struct nvme_cqe cqe;
	unsigned int n = 0;
	int st;

	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	fill_queues(ctrl, &self->buf);
	/*
	 * Delete SQ: outstanding commands complete first or are aborted
	 * (Command Aborted due to SQ Deletion), and their CQEs are posted
	 * before the Delete SQ completion (spec).
	 */
	st = nvme_delete_sq(ctrl, 1);
	EXPECT_OK(st);
	while (nvme_cq_poll(ctrl, 1, &cqe, 500) == 0) {
		int s = cqe.status >> 1;

		EXPECT_TRUE(s == 0 || (s & NVME_SC_MASK) == NVME_SC_ABORT_QUEUE) {
			TH_LOG("status %s", nvme_status_str(s));
		}
		n++;
	}
	TH_LOG("%u completions for %u outstanding commands", n,
	       HOSTILE_DEPTH - 1);
	EXPECT_OK(nvme_delete_cq(ctrl, 1));
	/* The other queue still works. */
	EXPECT_EQ(0, still_works(ctrl, &self->buf));
}

TEST_F(hostile, delete_cq_under_sq)
{
	struct nvme_ctrl *ctrl = self->ctrl;

	/* Deleting the CQ first must be refused while SQ 1 uses it. */
	EXPECT_STATUS_IN(nvme_delete_queue(ctrl, true, 1),
			 NVME_SC_INVALID_QUEUE, NVME_SC_QID_INVALID);
	EXPECT_EQ(0, still_works(ctrl, &self->buf));
}

/*
 * Not a fixture test: the fixture keeps the device open, and an mdev is
 * opened by one user at a time.  A child opens it, fills its queues and
 * exits without cleaning up; the device must then open cleanly again.
 */
FIXTURE(unopened) {
	int unused;
};

FIXTURE_SETUP(unopened)
{
	if (!vfio_env_uuid())
		SKIP(return, "NVMET_MDEV_UUID is not set");
}

FIXTURE_TEARDOWN(unopened)
{
}

TEST_F_TIMEOUT(unopened, close_with_io_in_flight, 120)
{
	unsigned int round;

	for (round = 0; round < 4; round++) {
		struct client c;
		int status;
		pid_t pid = fork();

		ASSERT_GE(pid, 0);
		if (pid == 0) {
			struct client cc;
			struct nvme_dma buf;
			enum vfio_binding b;

			vfio_env_binding(&b);
			if (vfio_open(&cc.dev, vfio_env_uuid(), b) ||
			    nvme_ctrl_init(&cc.ctrl, &cc.dev) ||
			    nvme_bringup(&cc.ctrl, CLIENT_AQ_DEPTH, 2,
					 HOSTILE_DEPTH, round % 2) ||
			    nvme_dma_alloc(&cc.ctrl, 64 * 1024, &buf))
				_exit(1);
			if (round == 2)
				nvme_dbbuf_config(&cc.ctrl);
			if (round == 3) {
				struct nvme_sqe aer = {
					.opcode = nvme_admin_async_event };

				nvme_submit(&cc.ctrl, 0, &aer);
			}
			if (cc.ctrl.nsid)
				fill_queues(&cc.ctrl, &buf);
			/* Die without closing anything; signal half the time. */
			if (round % 2)
				kill(getpid(), SIGKILL);
			_exit(0);
		}
		ASSERT_EQ(pid, waitpid(pid, &status, 0));
		EXPECT_TRUE(WIFSIGNALED(status) || WEXITSTATUS(status) == 0) {
			TH_LOG("child could not bring the controller up");
		}
		/*
		 * The device must open and work right away (a short -EBUSY
		 * window is tolerated, see client_vfio_open()).
		 */
		__client_open(_metadata, &c);
		ASSERT_TRUE(c.open);
		EXPECT_LT(c.busy_ms, 1000u);
		EXPECT_EQ(0, nvme_read32(&c.ctrl, NVME_REG_CC));
		ASSERT_EQ(0, client_recover_and_check(&c));
		client_close(&c);
	}
}

TEST_HARNESS_MAIN
