// SPDX-License-Identifier: GPL-2.0
/*
 * A small user space NVMe driver for testing nvmet-mdev through VFIO.
 *
 * Memory model: every DMA buffer is its own anonymous mapping, mapped for
 * the device at an IOVA from a bump allocator that leaves one unmapped page
 * after each buffer, so an overrun by the device hits an unmapped IOVA.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include <linux/pci_regs.h>

#include "nvme.h"

#define IOVA_BASE	0x40000000ull

_Static_assert(sizeof(struct nvme_sqe) == 64, "SQE size");
_Static_assert(sizeof(struct nvme_cqe) == 16, "CQE size");
_Static_assert(sizeof(struct nvme_sgl_desc) == 16, "SGL descriptor size");
_Static_assert(sizeof(struct nvme_id_ctrl) == 4096, "id_ctrl size");
_Static_assert(sizeof(struct nvme_id_ns) == 4096, "id_ns size");
_Static_assert(offsetof(struct nvme_id_ctrl, oacs) == 256, "oacs");
_Static_assert(offsetof(struct nvme_id_ctrl, kas) == 320, "kas");
_Static_assert(offsetof(struct nvme_id_ctrl, sqes) == 512, "sqes");
_Static_assert(offsetof(struct nvme_id_ctrl, sgls) == 536, "sgls");
_Static_assert(offsetof(struct nvme_id_ctrl, subnqn) == 768, "subnqn");
_Static_assert(offsetof(struct nvme_id_ctrl, ioccsz) == 1792, "ioccsz");
_Static_assert(offsetof(struct nvme_id_ns, anagrpid) == 92, "anagrpid");
_Static_assert(offsetof(struct nvme_id_ns, nguid) == 104, "nguid");
_Static_assert(offsetof(struct nvme_id_ns, lbaf) == 128, "lbaf");

#define pr_err(fmt, ...) fprintf(stderr, "nvme: " fmt "\n", ##__VA_ARGS__)

uint64_t nvme_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void short_sleep(void)
{
	struct timespec ts = { .tv_nsec = 20 * 1000 };

	nanosleep(&ts, NULL);
}

/* ---- DMA memory ---- */

static size_t page_align(size_t size)
{
	return (size + NVME_PAGE_SIZE - 1) & ~(size_t)(NVME_PAGE_SIZE - 1);
}

uint64_t nvme_iova_hole(struct nvme_ctrl *ctrl, size_t size)
{
	uint64_t iova = ctrl->next_iova;

	ctrl->next_iova += page_align(size) + NVME_PAGE_SIZE;
	return iova;
}

int nvme_dma_alloc(struct nvme_ctrl *ctrl, size_t size, struct nvme_dma *dma)
{
	size_t len = page_align(size ? size : 1);
	void *va;
	int ret;

	va = mmap(NULL, len, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (va == MAP_FAILED)
		return -errno;
	dma->va = va;
	dma->size = len;
	dma->iova = nvme_iova_hole(ctrl, len);
	ret = vfio_dma_map(ctrl->dev, va, dma->iova, len);
	if (ret) {
		pr_err("dma map %zu bytes at %#llx: %s", len,
		       (unsigned long long)dma->iova, strerror(-ret));
		munmap(va, len);
		dma->va = NULL;
		return ret;
	}
	return 0;
}

void nvme_dma_free(struct nvme_ctrl *ctrl, struct nvme_dma *dma)
{
	if (!dma->va)
		return;
	vfio_dma_unmap(ctrl->dev, dma->iova, dma->size);
	munmap(dma->va, dma->size);
	memset(dma, 0, sizeof(*dma));
}

/* ---- Registers and doorbells ---- */

uint32_t nvme_read32(struct nvme_ctrl *ctrl, uint32_t off)
{
	uint32_t v;

	if (vfio_region_read(ctrl->dev, VFIO_PCI_BAR0_REGION_INDEX, off, &v, 4))
		return 0xffffffff;
	return v;
}

uint64_t nvme_read64(struct nvme_ctrl *ctrl, uint32_t off)
{
	uint64_t v;

	if (vfio_region_read(ctrl->dev, VFIO_PCI_BAR0_REGION_INDEX, off, &v, 8))
		return ~0ull;
	return v;
}

int nvme_write32(struct nvme_ctrl *ctrl, uint32_t off, uint32_t val)
{
	return vfio_region_write(ctrl->dev, VFIO_PCI_BAR0_REGION_INDEX, off,
				 &val, 4);
}

int nvme_write64(struct nvme_ctrl *ctrl, uint32_t off, uint64_t val)
{
	return vfio_region_write(ctrl->dev, VFIO_PCI_BAR0_REGION_INDEX, off,
				 &val, 8);
}

uint32_t nvme_db_offset(struct nvme_ctrl *ctrl, uint16_t qid, bool cq)
{
	return NVME_REG_DBS + (2 * qid + (cq ? 1 : 0)) * ctrl->db_stride;
}

static void ring(struct nvme_ctrl *ctrl, uint16_t qid, bool cq, uint32_t val)
{
	uint32_t off = nvme_db_offset(ctrl, qid, cq);
	unsigned int idx = (off - NVME_REG_DBS) / 4;

	/* SQ entries / consumed CQ entries must be visible first. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (ctrl->dbbuf_on && qid && idx < NVME_PAGE_SIZE / 4) {
		uint32_t *shadow = ctrl->dbbuf_db.va;
		uint32_t *ei = ctrl->dbbuf_ei.va;
		uint32_t old = READ_ONCE(shadow[idx]);
		bool force = idx < 2 * NVME_MAX_QUEUES && ctrl->dbbuf_force[idx];

		WRITE_ONCE(shadow[idx], val);
		/* The shadow write before the EventIdx read (Linux: mb()). */
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		if (force) {
			ctrl->dbbuf_force[idx] = false;
		} else if (!nvme_dbbuf_need_event(READ_ONCE(ei[idx]), val, old)) {
			ctrl->dbbuf_skipped++;
			return;
		}
		ctrl->dbbuf_mmio++;
	}
	if (ctrl->db)
		WRITE_ONCE(ctrl->db[idx], val);
	else
		nvme_write32(ctrl, off, val);
}

void nvme_ring_sq(struct nvme_ctrl *ctrl, uint16_t qid, uint32_t tail)
{
	ring(ctrl, qid, false, tail);
}

void nvme_ring_cq(struct nvme_ctrl *ctrl, uint16_t qid, uint32_t head)
{
	ring(ctrl, qid, true, head);
}

/* ---- Init ---- */

/*
 * Memory decoding and bus mastering on, as a driver's pci_enable_device()
 * and pci_set_master(): without bus mastering the device does no DMA.
 */
int nvme_pci_enable(struct nvme_ctrl *ctrl)
{
	const uint16_t on = PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER;
	uint16_t cmd = vfio_cfg_read16(ctrl->dev, PCI_COMMAND);

	if ((cmd & on) == on)
		return 0;
	return vfio_cfg_write16(ctrl->dev, PCI_COMMAND, cmd | on);
}

int nvme_ctrl_init(struct nvme_ctrl *ctrl, struct vfio_dev *dev)
{
	const char *dbmode = getenv("NVMET_MDEV_DOORBELL");
	unsigned int i;
	int ret;

	memset(ctrl, 0, sizeof(*ctrl));
	ctrl->dev = dev;
	ctrl->next_iova = IOVA_BASE;
	ctrl->next_cid = 1;
	for (i = 0; i < NVME_MAX_VECTORS; i++)
		ctrl->irq_fd[i] = -1;
	for (i = 0; i < NVME_MAX_QUEUES; i++) {
		ctrl->sq[i].qid = i;
		ctrl->cq[i].qid = i;
	}

	ret = nvme_pci_enable(ctrl);
	if (ret)
		return ret;
	ctrl->cap = nvme_read64(ctrl, NVME_REG_CAP);
	ctrl->vs = nvme_read32(ctrl, NVME_REG_VS);
	if (ctrl->cap == ~0ull) {
		pr_err("cannot read CAP");
		return -EIO;
	}
	ctrl->db_stride = 4u << NVME_CAP_DSTRD(ctrl->cap);
	ctrl->timeout_ms = NVME_CAP_TO(ctrl->cap) * 500;
	if (!ctrl->timeout_ms)
		ctrl->timeout_ms = 500;

	if (!dbmode || strcmp(dbmode, "pwrite")) {
		if (vfio_region_mmap_ok(dev, VFIO_PCI_BAR0_REGION_INDEX,
					NVME_REG_DBS, NVME_PAGE_SIZE)) {
			ctrl->db_map = vfio_region_mmap(dev, VFIO_PCI_BAR0_REGION_INDEX,
							NVME_REG_DBS, NVME_PAGE_SIZE);
			if (ctrl->db_map) {
				ctrl->db_map_len = NVME_PAGE_SIZE;
				ctrl->db = ctrl->db_map;
			}
		}
		if (dbmode && !strcmp(dbmode, "mmap") && !ctrl->db) {
			pr_err("NVMET_MDEV_DOORBELL=mmap but no doorbell mmap");
			return -ENODEV;
		}
	}

	if (vfio_irq_count(dev, VFIO_PCI_MSIX_IRQ_INDEX, &ctrl->nr_vectors, NULL))
		ctrl->nr_vectors = 0;
	if (ctrl->nr_vectors > NVME_MAX_VECTORS)
		ctrl->nr_vectors = NVME_MAX_VECTORS;

	ret = nvme_dma_alloc(ctrl, NVME_PAGE_SIZE, &ctrl->scratch);
	if (ret)
		return ret;
	return nvme_dma_alloc(ctrl, NVME_PRP_POOL_PAGES * NVME_PAGE_SIZE,
			      &ctrl->prp_pool);
}

void nvme_forget_queues(struct nvme_ctrl *ctrl)
{
	unsigned int i;

	for (i = 1; i < NVME_MAX_QUEUES; i++) {
		nvme_dma_free(ctrl, &ctrl->sq[i].mem);
		nvme_dma_free(ctrl, &ctrl->cq[i].mem);
		ctrl->sq[i].live = false;
		ctrl->cq[i].live = false;
	}
	ctrl->sq[0].live = false;
	ctrl->cq[0].live = false;
	ctrl->dbbuf_on = false;	/* a reset forgets the shadow doorbells */
}

void nvme_ctrl_fini(struct nvme_ctrl *ctrl)
{
	if (!ctrl->dev)
		return;
	nvme_irq_teardown(ctrl);
	nvme_forget_queues(ctrl);
	nvme_dma_free(ctrl, &ctrl->sq[0].mem);
	nvme_dma_free(ctrl, &ctrl->cq[0].mem);
	nvme_dma_free(ctrl, &ctrl->scratch);
	nvme_dma_free(ctrl, &ctrl->prp_pool);
	nvme_dma_free(ctrl, &ctrl->dbbuf_db);
	nvme_dma_free(ctrl, &ctrl->dbbuf_ei);
	if (ctrl->db_map)
		munmap(ctrl->db_map, ctrl->db_map_len);
	ctrl->db = NULL;
	ctrl->db_map = NULL;
	ctrl->dev = NULL;
}

/* ---- Controller state ---- */

uint32_t nvme_cc_default(void)
{
	return NVME_CC_CSS_NVM | NVME_CC_IOSQES | NVME_CC_IOCQES;
}

int nvme_wait_ready(struct nvme_ctrl *ctrl, bool rdy)
{
	uint64_t deadline = nvme_now_ms() + ctrl->timeout_ms;
	uint32_t csts;

	for (;;) {
		csts = nvme_read32(ctrl, NVME_REG_CSTS);
		if (csts == 0xffffffff)
			return -EIO;
		if (!!(csts & NVME_CSTS_RDY) == rdy)
			return 0;
		if (rdy && (csts & NVME_CSTS_CFS))
			return -EIO;
		if (nvme_now_ms() > deadline)
			return -ETIMEDOUT;
		usleep(1000);
	}
}

int nvme_disable(struct nvme_ctrl *ctrl)
{
	uint32_t cc = nvme_read32(ctrl, NVME_REG_CC);
	int ret;

	ret = nvme_write32(ctrl, NVME_REG_CC, cc & ~NVME_CC_EN);
	if (ret)
		return ret;
	ret = nvme_wait_ready(ctrl, false);
	nvme_forget_queues(ctrl);
	return ret;
}

static int alloc_queue(struct nvme_ctrl *ctrl, struct nvme_queue *q,
		       uint16_t depth, size_t entry)
{
	size_t need = page_align((size_t)depth * entry);

	if (q->mem.va && q->mem.size < need)
		nvme_dma_free(ctrl, &q->mem);
	if (!q->mem.va) {
		int ret = nvme_dma_alloc(ctrl, need, &q->mem);

		if (ret)
			return ret;
	}
	memset(q->mem.va, 0, q->mem.size);
	q->depth = depth;
	q->head = 0;
	q->tail = 0;
	q->phase = 1;
	return 0;
}

int nvme_enable_cc(struct nvme_ctrl *ctrl, uint16_t depth, uint32_t cc)
{
	int ret;

	if (nvme_read32(ctrl, NVME_REG_CC) & NVME_CC_EN) {
		ret = nvme_disable(ctrl);
		if (ret)
			return ret;
	}
	ret = alloc_queue(ctrl, &ctrl->sq[0], depth, sizeof(struct nvme_sqe));
	if (ret)
		return ret;
	ret = alloc_queue(ctrl, &ctrl->cq[0], depth, sizeof(struct nvme_cqe));
	if (ret)
		return ret;
	ctrl->sq[0].cq = &ctrl->cq[0];
	ctrl->cq[0].irq = true;
	ctrl->cq[0].vector = 0;

	/* A function reset or a hostile test may have turned it off. */
	ret = nvme_pci_enable(ctrl);
	if (ret)
		return ret;
	nvme_write32(ctrl, NVME_REG_AQA, (uint32_t)(depth - 1) << 16 | (depth - 1));
	nvme_write64(ctrl, NVME_REG_ASQ, ctrl->sq[0].mem.iova);
	nvme_write64(ctrl, NVME_REG_ACQ, ctrl->cq[0].mem.iova);
	nvme_write32(ctrl, NVME_REG_CC, cc | NVME_CC_EN);
	ret = nvme_wait_ready(ctrl, true);
	if (ret)
		return ret;
	ctrl->cq[0].live = true;
	ctrl->sq[0].live = true;
	return 0;
}

int nvme_enable(struct nvme_ctrl *ctrl, uint16_t depth)
{
	return nvme_enable_cc(ctrl, depth, nvme_cc_default());
}

int nvme_shutdown(struct nvme_ctrl *ctrl)
{
	uint64_t deadline = nvme_now_ms() + ctrl->timeout_ms;
	uint32_t cc = nvme_read32(ctrl, NVME_REG_CC);

	cc = (cc & ~NVME_CC_SHN_MASK) | NVME_CC_SHN_NORMAL;
	nvme_write32(ctrl, NVME_REG_CC, cc);
	for (;;) {
		uint32_t csts = nvme_read32(ctrl, NVME_REG_CSTS);

		if ((csts & NVME_CSTS_SHST_MASK) == NVME_CSTS_SHST_CMPLT)
			return 0;
		if (nvme_now_ms() > deadline)
			return -ETIMEDOUT;
		usleep(1000);
	}
}

/* ---- Submission and completion ---- */

uint16_t nvme_sq_push(struct nvme_ctrl *ctrl, uint16_t qid,
		      struct nvme_sqe *sqe, bool keep_cid)
{
	struct nvme_queue *sq = &ctrl->sq[qid];
	struct nvme_sqe *slot = (struct nvme_sqe *)sq->mem.va + sq->tail;

	if (!keep_cid) {
		if (ctrl->next_cid == 0xffff)
			ctrl->next_cid = 1;
		sqe->cid = ctrl->next_cid++;
	}
	memcpy(slot, sqe, sizeof(*sqe));
	if (++sq->tail == sq->depth)
		sq->tail = 0;
	return sqe->cid;
}

void nvme_sq_ring(struct nvme_ctrl *ctrl, uint16_t qid)
{
	nvme_ring_sq(ctrl, qid, ctrl->sq[qid].tail);
}

uint16_t nvme_submit(struct nvme_ctrl *ctrl, uint16_t qid, struct nvme_sqe *sqe)
{
	uint16_t cid = nvme_sq_push(ctrl, qid, sqe, false);

	nvme_sq_ring(ctrl, qid);
	return cid;
}

/* The CQE at the head: the device writes it, read its fields with READ_ONCE(). */
static struct nvme_cqe *cq_slot(struct nvme_queue *cq)
{
	return (struct nvme_cqe *)cq->mem.va + cq->head;
}

bool nvme_cq_pending(struct nvme_ctrl *ctrl, uint16_t cqid)
{
	struct nvme_queue *cq = &ctrl->cq[cqid];

	if (!cq->mem.va)
		return false;
	return (READ_ONCE(cq_slot(cq)->status) & 1) == cq->phase;
}

int nvme_cq_poll(struct nvme_ctrl *ctrl, uint16_t cqid, struct nvme_cqe *cqe,
		 unsigned int timeout_ms)
{
	struct nvme_queue *cq = &ctrl->cq[cqid];
	uint64_t start = nvme_now_ms(), last_csts = start;
	unsigned int spins = 0;

	if (!cq->mem.va)
		return -EINVAL;
	for (;;) {
		struct nvme_cqe *e = cq_slot(cq);

		if ((READ_ONCE(e->status) & 1) == cq->phase) {
			__atomic_thread_fence(__ATOMIC_ACQUIRE);
			cqe->result = READ_ONCE(e->result);
			cqe->dw1 = READ_ONCE(e->dw1);
			cqe->sq_head = READ_ONCE(e->sq_head);
			cqe->sq_id = READ_ONCE(e->sq_id);
			cqe->cid = READ_ONCE(e->cid);
			cqe->status = READ_ONCE(e->status);
			if (++cq->head == cq->depth) {
				cq->head = 0;
				cq->phase ^= 1;
			}
			nvme_ring_cq(ctrl, cqid, cq->head);
			if (cqe->sq_id < NVME_MAX_QUEUES)
				ctrl->sq[cqe->sq_id].head = cqe->sq_head;
			return 0;
		}
		if (++spins < 200)
			continue;
		short_sleep();
		if (nvme_now_ms() - last_csts >= 100) {
			last_csts = nvme_now_ms();
			if (nvme_read32(ctrl, NVME_REG_CSTS) & NVME_CSTS_CFS)
				return -EIO;
		}
		if (nvme_now_ms() - start >= timeout_ms)
			return -ETIMEDOUT;
	}
}

int nvme_exec_timeout(struct nvme_ctrl *ctrl, uint16_t qid,
		      struct nvme_sqe *sqe, struct nvme_cqe *cqe,
		      unsigned int timeout_ms)
{
	struct nvme_queue *sq = &ctrl->sq[qid];
	struct nvme_cqe tmp;
	uint64_t deadline;
	uint16_t cid;
	int ret;

	if (!cqe)
		cqe = &tmp;
	if (!sq->mem.va || !sq->cq)
		return -EINVAL;
	cid = nvme_submit(ctrl, qid, sqe);
	deadline = nvme_now_ms() + timeout_ms;
	for (;;) {
		uint64_t now = nvme_now_ms();

		if (now >= deadline)
			return -ETIMEDOUT;
		ret = nvme_cq_poll(ctrl, sq->cq->qid, cqe, deadline - now);
		if (ret)
			return ret;
		if (cqe->cid == cid && cqe->sq_id == qid)
			return cqe->status >> 1;
		fprintf(stderr,
			"nvme: stray completion sq %u cid %u status %#x (waiting for sq %u cid %u)\n",
			cqe->sq_id, cqe->cid, cqe->status >> 1, qid, cid);
	}
}

int nvme_exec(struct nvme_ctrl *ctrl, uint16_t qid, struct nvme_sqe *sqe,
	      struct nvme_cqe *cqe)
{
	return nvme_exec_timeout(ctrl, qid, sqe, cqe, 10000);
}

/* ---- Admin helpers ---- */

int nvme_identify(struct nvme_ctrl *ctrl, uint8_t cns, uint32_t nsid,
		  uint8_t csi, struct nvme_dma *buf)
{
	struct nvme_sqe sqe = {
		.opcode = nvme_admin_identify,
		.nsid = nsid,
		.cdw10 = cns,
		.cdw11 = (uint32_t)csi << 24,
	};

	if (!buf)
		buf = &ctrl->scratch;
	memset(buf->va, 0, NVME_PAGE_SIZE);
	sqe.prp1 = buf->iova;
	return nvme_admin(ctrl, &sqe, NULL);
}

int nvme_get_log(struct nvme_ctrl *ctrl, uint8_t lid, uint32_t nsid,
		 uint32_t len, uint64_t offset, struct nvme_dma *buf)
{
	uint32_t numd = len / 4 - 1;
	struct nvme_sqe sqe = {
		.opcode = nvme_admin_get_log_page,
		.nsid = nsid,
		.cdw10 = lid | (numd & 0xffff) << 16,
		.cdw11 = numd >> 16,
		.cdw12 = (uint32_t)offset,
		.cdw13 = (uint32_t)(offset >> 32),
	};
	int ret;

	if (!buf)
		buf = &ctrl->scratch;
	if (len > buf->size || len < 4)
		return -EINVAL;
	memset(buf->va, 0, len);
	ret = nvme_build_prps(ctrl, buf, 0, len, &sqe);
	if (ret)
		return ret;
	return nvme_admin(ctrl, &sqe, NULL);
}

int nvme_set_features(struct nvme_ctrl *ctrl, uint8_t fid, uint32_t dw11,
		      uint32_t *result)
{
	struct nvme_sqe sqe = {
		.opcode = nvme_admin_set_features,
		.cdw10 = fid,
		.cdw11 = dw11,
	};
	struct nvme_cqe cqe;
	int ret;

	ret = nvme_admin(ctrl, &sqe, &cqe);
	if (ret >= 0 && result)
		*result = cqe.result;
	return ret;
}

int nvme_get_features(struct nvme_ctrl *ctrl, uint8_t fid, uint8_t sel,
		      uint32_t dw11, uint32_t *result)
{
	struct nvme_sqe sqe = {
		.opcode = nvme_admin_get_features,
		.cdw10 = fid | (uint32_t)sel << 8,
		.cdw11 = dw11,
	};
	struct nvme_cqe cqe;
	int ret;

	ret = nvme_admin(ctrl, &sqe, &cqe);
	if (ret >= 0 && result)
		*result = cqe.result;
	return ret;
}

int nvme_dbbuf_config(struct nvme_ctrl *ctrl)
{
	struct nvme_sqe sqe = { .opcode = nvme_admin_dbbuf };
	uint32_t *shadow;
	unsigned int i;
	int ret;

	if (!ctrl->dbbuf_db.va) {
		ret = nvme_dma_alloc(ctrl, NVME_PAGE_SIZE, &ctrl->dbbuf_db);
		if (ret)
			return ret;
	}
	if (!ctrl->dbbuf_ei.va) {
		ret = nvme_dma_alloc(ctrl, NVME_PAGE_SIZE, &ctrl->dbbuf_ei);
		if (ret)
			return ret;
	}
	memset(ctrl->dbbuf_db.va, 0, NVME_PAGE_SIZE);
	memset(ctrl->dbbuf_ei.va, 0, NVME_PAGE_SIZE);
	/*
	 * Live queues: the shadow page must hold their current doorbell
	 * values before the controller starts reading it (a zero there
	 * would be a tail update to 0), and their next update also goes to
	 * BAR0 (their EventIdx is not published yet).
	 */
	shadow = ctrl->dbbuf_db.va;
	memset(ctrl->dbbuf_force, 0, sizeof(ctrl->dbbuf_force));
	for (i = 1; i < NVME_MAX_QUEUES; i++) {
		unsigned int sidx = (nvme_db_offset(ctrl, i, false) - NVME_REG_DBS) / 4;
		unsigned int cidx = (nvme_db_offset(ctrl, i, true) - NVME_REG_DBS) / 4;

		if (ctrl->sq[i].live) {
			shadow[sidx] = ctrl->sq[i].tail;
			ctrl->dbbuf_force[sidx] = true;
		}
		if (ctrl->cq[i].live) {
			shadow[cidx] = ctrl->cq[i].head;
			ctrl->dbbuf_force[cidx] = true;
		}
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	sqe.prp1 = ctrl->dbbuf_db.iova;
	sqe.prp2 = ctrl->dbbuf_ei.iova;
	ret = nvme_admin(ctrl, &sqe, NULL);
	if (ret == 0) {
		ctrl->dbbuf_on = true;
		ctrl->dbbuf_mmio = 0;
		ctrl->dbbuf_skipped = 0;
	}
	return ret;
}

int nvme_create_cq_raw(struct nvme_ctrl *ctrl, uint16_t qid, uint16_t qsize0,
		       uint64_t prp1, uint16_t flags, uint16_t vector)
{
	struct nvme_sqe sqe = {
		.opcode = nvme_admin_create_cq,
		.prp1 = prp1,
		.cdw10 = qid | (uint32_t)qsize0 << 16,
		.cdw11 = flags | (uint32_t)vector << 16,
	};

	return nvme_admin(ctrl, &sqe, NULL);
}

int nvme_create_sq_raw(struct nvme_ctrl *ctrl, uint16_t qid, uint16_t qsize0,
		       uint64_t prp1, uint16_t flags, uint16_t cqid)
{
	struct nvme_sqe sqe = {
		.opcode = nvme_admin_create_sq,
		.prp1 = prp1,
		.cdw10 = qid | (uint32_t)qsize0 << 16,
		.cdw11 = flags | (uint32_t)cqid << 16,
	};

	return nvme_admin(ctrl, &sqe, NULL);
}

int nvme_delete_queue(struct nvme_ctrl *ctrl, bool cq, uint16_t qid)
{
	struct nvme_sqe sqe = {
		.opcode = cq ? nvme_admin_delete_cq : nvme_admin_delete_sq,
		.cdw10 = qid,
	};

	return nvme_admin(ctrl, &sqe, NULL);
}

/* A new queue starts at 0 in the shadow doorbell page too. */
static void dbbuf_reset_entry(struct nvme_ctrl *ctrl, uint16_t qid, bool cq)
{
	if (ctrl->dbbuf_on)
		((uint32_t *)ctrl->dbbuf_db.va)[(nvme_db_offset(ctrl, qid, cq) -
						 NVME_REG_DBS) / 4] = 0;
}

int nvme_create_cq(struct nvme_ctrl *ctrl, uint16_t cqid, uint16_t depth,
		   bool irq, uint16_t vector)
{
	struct nvme_queue *cq = &ctrl->cq[cqid];
	int ret;

	if (!cqid || cqid >= NVME_MAX_QUEUES)
		return -EINVAL;
	dbbuf_reset_entry(ctrl, cqid, true);
	ret = alloc_queue(ctrl, cq, depth, sizeof(struct nvme_cqe));
	if (ret)
		return ret;
	cq->irq = irq;
	cq->vector = vector;
	ret = nvme_create_cq_raw(ctrl, cqid, depth - 1, cq->mem.iova,
				 NVME_QUEUE_PHYS_CONTIG |
				 (irq ? NVME_CQ_IRQ_ENABLED : 0), vector);
	cq->live = ret == 0;
	return ret;
}

int nvme_create_sq(struct nvme_ctrl *ctrl, uint16_t sqid, uint16_t depth,
		   uint16_t cqid)
{
	struct nvme_queue *sq = &ctrl->sq[sqid];
	int ret;

	if (!sqid || sqid >= NVME_MAX_QUEUES || cqid >= NVME_MAX_QUEUES)
		return -EINVAL;
	dbbuf_reset_entry(ctrl, sqid, false);
	ret = alloc_queue(ctrl, sq, depth, sizeof(struct nvme_sqe));
	if (ret)
		return ret;
	sq->cq = &ctrl->cq[cqid];
	ret = nvme_create_sq_raw(ctrl, sqid, depth - 1, sq->mem.iova,
				 NVME_QUEUE_PHYS_CONTIG, cqid);
	sq->live = ret == 0;
	return ret;
}

int nvme_delete_sq(struct nvme_ctrl *ctrl, uint16_t sqid)
{
	int ret = nvme_delete_queue(ctrl, false, sqid);

	if (ret == 0 && sqid < NVME_MAX_QUEUES)
		ctrl->sq[sqid].live = false;
	return ret;
}

int nvme_delete_cq(struct nvme_ctrl *ctrl, uint16_t cqid)
{
	int ret = nvme_delete_queue(ctrl, true, cqid);

	if (ret == 0 && cqid < NVME_MAX_QUEUES)
		ctrl->cq[cqid].live = false;
	return ret;
}

int nvme_bringup(struct nvme_ctrl *ctrl, uint16_t aq_depth, uint16_t nr_io,
		 uint16_t depth, bool irqs)
{
	uint32_t res, *list;
	struct nvme_id_ns *ns;
	unsigned int i;
	int ret;

	ret = nvme_disable(ctrl);
	if (ret) {
		pr_err("disable: %d", ret);
		return ret;
	}
	ctrl->nr_io_queues = 0;
	if (irqs && ctrl->nr_vectors) {
		ret = nvme_irq_setup(ctrl, ctrl->nr_vectors);
		if (ret) {
			pr_err("MSI-X setup: %s", strerror(-ret));
			return ret;
		}
	}
	ret = nvme_enable(ctrl, aq_depth);
	if (ret) {
		pr_err("enable: %d (CSTS %#x)", ret,
		       nvme_read32(ctrl, NVME_REG_CSTS));
		return ret;
	}
	ret = nvme_identify(ctrl, NVME_ID_CNS_CTRL, 0, 0, NULL);
	if (ret) {
		pr_err("identify controller: %s", nvme_status_str(ret));
		return ret;
	}
	memcpy(&ctrl->id, ctrl->scratch.va, sizeof(ctrl->id));
	ctrl->mdts_bytes = ctrl->id.mdts ?
		(NVME_PAGE_SIZE << NVME_CAP_MPSMIN(ctrl->cap)) << ctrl->id.mdts : 0;

	if (nr_io) {
		ret = nvme_set_features(ctrl, NVME_FEAT_NUM_QUEUES,
					(nr_io - 1) | (uint32_t)(nr_io - 1) << 16,
					&res);
		if (ret) {
			pr_err("set number of queues: %s", nvme_status_str(ret));
			return ret;
		}
		ctrl->nr_io_queues = nr_io;
		if ((res & 0xffff) + 1 < ctrl->nr_io_queues)
			ctrl->nr_io_queues = (res & 0xffff) + 1;
		if ((res >> 16) + 1 < ctrl->nr_io_queues)
			ctrl->nr_io_queues = (res >> 16) + 1;
		if (ctrl->nr_io_queues >= NVME_MAX_QUEUES)
			ctrl->nr_io_queues = NVME_MAX_QUEUES - 1;
	}
	if (depth > NVME_CAP_MQES(ctrl->cap) + 1)
		depth = NVME_CAP_MQES(ctrl->cap) + 1;
	for (i = 1; i <= ctrl->nr_io_queues; i++) {
		uint16_t vec = 0;
		bool irq = irqs && ctrl->nr_vectors;

		if (irq)
			vec = i < ctrl->nr_vectors ? i : i % ctrl->nr_vectors;
		ret = nvme_create_cq(ctrl, i, depth, irq, vec);
		if (ret) {
			pr_err("create CQ %u: %s", i, nvme_status_str(ret));
			return ret;
		}
		ret = nvme_create_sq(ctrl, i, depth, i);
		if (ret) {
			pr_err("create SQ %u: %s", i, nvme_status_str(ret));
			return ret;
		}
	}

	ret = nvme_identify(ctrl, NVME_ID_CNS_NS_ACTIVE_LIST, 0, 0, NULL);
	if (ret) {
		pr_err("active namespace list: %s", nvme_status_str(ret));
		return ret;
	}
	list = ctrl->scratch.va;
	ctrl->nsid = list[0];
	if (!ctrl->nsid)
		return 0;	/* no namespace: admin-only tests still work */
	ret = nvme_identify(ctrl, NVME_ID_CNS_NS, ctrl->nsid, 0, NULL);
	if (ret) {
		pr_err("identify namespace %u: %s", ctrl->nsid,
		       nvme_status_str(ret));
		return ret;
	}
	ns = ctrl->scratch.va;
	ctrl->nsze = ns->nsze;
	ctrl->lba_shift = ns->lbaf[(ns->flbas & 0xf) | ((ns->flbas >> 1) & 0x30)].ds;
	if (ctrl->lba_shift < 9 || ctrl->lba_shift > 16) {
		pr_err("namespace %u: bad LBA size 2^%u", ctrl->nsid,
		       ctrl->lba_shift);
		return -EINVAL;
	}
	return 0;
}

/* ---- PRPs and SGLs ---- */

void *nvme_pool_page(struct nvme_ctrl *ctrl, uint64_t *iova)
{
	unsigned int i = ctrl->prp_next++ % NVME_PRP_POOL_PAGES;
	void *va = (char *)ctrl->prp_pool.va + (size_t)i * NVME_PAGE_SIZE;

	memset(va, 0, NVME_PAGE_SIZE);
	*iova = ctrl->prp_pool.iova + (uint64_t)i * NVME_PAGE_SIZE;
	return va;
}

int nvme_build_prps(struct nvme_ctrl *ctrl, const struct nvme_dma *buf,
		    size_t off, size_t len, struct nvme_sqe *sqe)
{
	const uint64_t per_page = NVME_PAGE_SIZE / 8;
	uint64_t iova = buf->iova + off, addr, *list, list_iova;
	size_t first, left;
	unsigned int idx;

	if (off + len > buf->size)
		return -EINVAL;
	sqe->flags = (sqe->flags & ~0xc0) | NVME_CMD_PSDT_PRP;
	sqe->prp1 = iova;
	sqe->prp2 = 0;
	first = NVME_PAGE_SIZE - (iova & (NVME_PAGE_SIZE - 1));
	if (len <= first)
		return 0;
	left = len - first;
	addr = iova + first;
	if (left <= NVME_PAGE_SIZE) {
		sqe->prp2 = addr;
		return 0;
	}
	list = nvme_pool_page(ctrl, &list_iova);
	sqe->prp2 = list_iova;
	idx = 0;
	while (left) {
		if (idx == per_page - 1 && left > NVME_PAGE_SIZE) {
			/* last slot chains to the next list page */
			uint64_t next_iova;
			uint64_t *next = nvme_pool_page(ctrl, &next_iova);

			list[idx] = next_iova;
			list = next;
			idx = 0;
		}
		list[idx++] = addr;
		addr += NVME_PAGE_SIZE;
		left = left > NVME_PAGE_SIZE ? left - NVME_PAGE_SIZE : 0;
	}
	return 0;
}

int nvme_build_sgl(struct nvme_ctrl *ctrl, const struct nvme_dma *buf,
		   size_t off, size_t len, unsigned int nr_desc,
		   struct nvme_sqe *sqe)
{
	struct nvme_sgl_desc *list;
	uint64_t list_iova;
	size_t chunk, pos = 0;
	unsigned int i;

	if (off + len > buf->size)
		return -EINVAL;
	sqe->flags = (sqe->flags & ~0xc0) | NVME_CMD_PSDT_SGL_MPTR_CONTIG;
	if (nr_desc <= 1) {
		sqe->sgl.addr = buf->iova + off;
		sqe->sgl.length = len;
		memset(sqe->sgl.rsvd, 0, sizeof(sqe->sgl.rsvd));
		sqe->sgl.type = NVME_SGL_FMT_DATA_DESC << 4;
		return 0;
	}
	if (nr_desc > NVME_PAGE_SIZE / sizeof(*list) || nr_desc > len)
		return -EINVAL;
	list = nvme_pool_page(ctrl, &list_iova);
	chunk = len / nr_desc;
	for (i = 0; i < nr_desc; i++) {
		size_t n = i == nr_desc - 1 ? len - pos : chunk;

		list[i].addr = buf->iova + off + pos;
		list[i].length = n;
		list[i].type = NVME_SGL_FMT_DATA_DESC << 4;
		pos += n;
	}
	sqe->sgl.addr = list_iova;
	sqe->sgl.length = nr_desc * sizeof(*list);
	memset(sqe->sgl.rsvd, 0, sizeof(sqe->sgl.rsvd));
	sqe->sgl.type = NVME_SGL_FMT_LAST_SEG_DESC << 4;
	return 0;
}

int nvme_rw(struct nvme_ctrl *ctrl, uint16_t qid, uint8_t opcode,
	    uint64_t slba, uint32_t nlb, const struct nvme_dma *buf,
	    size_t off)
{
	struct nvme_sqe sqe = {
		.opcode = opcode,
		.nsid = ctrl->nsid,
		.cdw10 = (uint32_t)slba,
		.cdw11 = (uint32_t)(slba >> 32),
		.cdw12 = nlb - 1,
	};
	int ret;

	if (!nlb)
		return -EINVAL;
	ret = nvme_build_prps(ctrl, buf, off, (size_t)nlb << ctrl->lba_shift,
			      &sqe);
	if (ret)
		return ret;
	return nvme_exec(ctrl, qid, &sqe, NULL);
}

/* ---- MSI-X ---- */

int nvme_irq_setup(struct nvme_ctrl *ctrl, unsigned int n)
{
	int fds[NVME_MAX_VECTORS];
	unsigned int i;
	int ret;

	nvme_irq_teardown(ctrl);
	if (n > ctrl->nr_vectors)
		n = ctrl->nr_vectors;
	if (!n)
		return -ENODEV;
	for (i = 0; i < n; i++) {
		fds[i] = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (fds[i] < 0) {
			ret = -errno;
			while (i--)
				close(fds[i]);
			return ret;
		}
	}
	ret = vfio_irq_set_eventfds(ctrl->dev, VFIO_PCI_MSIX_IRQ_INDEX, 0, n,
				    fds);
	if (ret) {
		for (i = 0; i < n; i++)
			close(fds[i]);
		return ret;
	}
	for (i = 0; i < n; i++)
		ctrl->irq_fd[i] = fds[i];
	return 0;
}

void nvme_irq_teardown(struct nvme_ctrl *ctrl)
{
	bool any = false;
	unsigned int i;

	for (i = 0; i < NVME_MAX_VECTORS; i++) {
		if (ctrl->irq_fd[i] >= 0) {
			close(ctrl->irq_fd[i]);
			ctrl->irq_fd[i] = -1;
			any = true;
		}
	}
	if (any)
		vfio_irq_disable(ctrl->dev, VFIO_PCI_MSIX_IRQ_INDEX);
}

int nvme_irq_wait(struct nvme_ctrl *ctrl, unsigned int v,
		  unsigned int timeout_ms)
{
	struct pollfd pfd;
	uint64_t cnt;
	int ret;

	if (v >= NVME_MAX_VECTORS || ctrl->irq_fd[v] < 0)
		return -EINVAL;
	pfd.fd = ctrl->irq_fd[v];
	pfd.events = POLLIN;
	ret = poll(&pfd, 1, timeout_ms);
	if (ret < 0)
		return -errno;
	if (ret == 0)
		return 0;
	if (read(ctrl->irq_fd[v], &cnt, sizeof(cnt)) != sizeof(cnt))
		return errno == EAGAIN ? 0 : -errno;
	return cnt > 0x7fffffff ? 0x7fffffff : (int)cnt;
}

int nvme_irq_drain(struct nvme_ctrl *ctrl, unsigned int v)
{
	uint64_t cnt;

	if (v >= NVME_MAX_VECTORS || ctrl->irq_fd[v] < 0)
		return 0;
	if (read(ctrl->irq_fd[v], &cnt, sizeof(cnt)) != sizeof(cnt))
		return 0;
	return cnt > 0x7fffffff ? 0x7fffffff : (int)cnt;
}

/* ---- Misc ---- */

/* The names of the statuses the tests meet, by SCT and SC. */
static const char * const nvme_sc_names[NVME_SC_MASK + 1] = {
	[NVME_SC_SUCCESS] = "SUCCESS",
	[NVME_SC_INVALID_OPCODE] = "INVALID_OPCODE",
	[NVME_SC_INVALID_FIELD] = "INVALID_FIELD",
	[NVME_SC_CMDID_CONFLICT] = "CMDID_CONFLICT",
	[NVME_SC_DATA_XFER_ERROR] = "DATA_XFER_ERROR",
	[NVME_SC_INTERNAL] = "INTERNAL",
	[NVME_SC_ABORT_REQ] = "ABORT_REQ",
	[NVME_SC_ABORT_QUEUE] = "ABORT_QUEUE",
	[NVME_SC_INVALID_NS] = "INVALID_NS",
	[NVME_SC_CMD_SEQ_ERROR] = "CMD_SEQ_ERROR",
	[NVME_SC_SGL_INVALID_LAST] = "SGL_INVALID_LAST",
	[NVME_SC_SGL_INVALID_COUNT] = "SGL_INVALID_COUNT",
	[NVME_SC_SGL_INVALID_DATA] = "SGL_INVALID_DATA",
	[NVME_SC_SGL_INVALID_TYPE] = "SGL_INVALID_TYPE",
	[NVME_SC_PRP_INVALID_OFFSET] = "PRP_INVALID_OFFSET",
	[NVME_SC_SGL_INVALID_OFFSET] = "SGL_INVALID_OFFSET",
	[NVME_SC_KA_TIMEOUT_INVALID] = "KA_TIMEOUT_INVALID",
	[NVME_SC_INVALID_IO_CMD_SET] = "INVALID_IO_CMD_SET",
	[NVME_SC_LBA_RANGE] = "LBA_RANGE",
	[NVME_SC_CAP_EXCEEDED] = "CAP_EXCEEDED",
	[NVME_SC_NS_NOT_READY] = "NS_NOT_READY",
	[NVME_SC_SGL_INVALID_GRANULARITY] = "SGL_INVALID_GRANULARITY",
	[NVME_SC_FUSED_FAIL] = "FUSED_FAIL",
	[NVME_SC_FUSED_MISSING] = "FUSED_MISSING",
	[NVME_SC_SGL_INVALID_METADATA] = "SGL_INVALID_METADATA",
	[NVME_SC_HOST_ID_INCONSIST] = "HOST_ID_INCONSIST",
	[NVME_SC_NS_WRITE_PROTECTED] = "NS_WRITE_PROTECTED",
	[NVME_SC_ABORT_MISSING] = "ABORT_MISSING",
	[NVME_SC_INVALID_FORMAT] = "INVALID_FORMAT",
	[NVME_SC_FEATURE_NOT_PER_NS] = "FEATURE_NOT_PER_NS",
	[NVME_SC_READ_ONLY] = "READ_ONLY",
	[NVME_SC_CQ_INVALID] = "CQ_INVALID",
	[NVME_SC_QID_INVALID] = "QID_INVALID",
	[NVME_SC_QUEUE_SIZE] = "QUEUE_SIZE",
	[NVME_SC_ABORT_LIMIT] = "ABORT_LIMIT",
	[NVME_SC_ASYNC_LIMIT] = "ASYNC_LIMIT",
	[NVME_SC_INVALID_VECTOR] = "INVALID_VECTOR",
	[NVME_SC_INVALID_LOG_PAGE] = "INVALID_LOG_PAGE",
	[NVME_SC_INVALID_QUEUE] = "INVALID_QUEUE",
	[NVME_SC_FEATURE_NOT_SAVEABLE] = "FEATURE_NOT_SAVEABLE",
	[NVME_SC_FEATURE_NOT_CHANGEABLE] = "FEATURE_NOT_CHANGEABLE",
	[NVME_SC_CMD_SIZE_LIM_EXCEEDED] = "CMD_SIZE_LIM_EXCEEDED",
};

const char *nvme_status_str(int status)
{
	static __thread char buf[64];
	const char *name;

	if (status < 0) {
		snprintf(buf, sizeof(buf), "%s", strerror(-status));
		return buf;
	}
	name = nvme_sc_names[status & NVME_SC_MASK];
	snprintf(buf, sizeof(buf), "%#x (%s%s)", status, name ? name : "?",
		 status & NVME_STATUS_DNR ? ", DNR" : "");
	return buf;
}
