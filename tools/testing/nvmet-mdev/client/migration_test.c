// SPDX-License-Identifier: GPL-2.0
/*
 * nvmet-mdev live migration support: the dirty page log a VMM reads while
 * it copies the guest's memory (VFIO_DEVICE_FEATURE_DMA_LOGGING_*).  The
 * device reports exactly the pages it wrote (read data, completion queue
 * entries), not those it only read (write data, submission queues), and a
 * report clears what it returned.
 *
 * And the device state (VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE): the
 * controller moves, with commands in flight, completions it could not post
 * yet and the AERs it holds, to a second mdev of the same subsystem
 * (NVMET_MDEV_PEER) that sees the same memory (every DMA mapping is made
 * in both); a migration can be cancelled; damaged and hostile states are
 * refused.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "client.h"

/* The IOVA range logged: all the client's IOVAs lie below it. */
#define LOG_LEN		(1ull << 36)
#define LOG_PAGE	4096ull

FIXTURE(migration) {
	struct client c;
	struct nvme_ctrl *ctrl;
	uint32_t bs;		/* LBA size */
	uint64_t *bitmap;	/* one bit per page below LOG_LEN */
};

FIXTURE_SETUP(migration)
{
	CLIENT_BRINGUP(&self->c, CLIENT_IO_QUEUES, CLIENT_IO_DEPTH, true);
	self->ctrl = &self->c.ctrl;
	if (!self->ctrl->nsid)
		SKIP(return, "the controller has no active namespace");
	self->bs = 1u << self->ctrl->lba_shift;
	ASSERT_GT(LOG_LEN, self->ctrl->next_iova + (64u << 20));
	self->bitmap = calloc(LOG_LEN / LOG_PAGE / 64, sizeof(uint64_t));
	ASSERT_NE(NULL, self->bitmap);
}

FIXTURE_TEARDOWN(migration)
{
	free(self->bitmap);
	client_close(&self->c);
}

/* VFIO_DEVICE_FEATURE @feature with @payload of @len bytes: 0 or -errno. */
static int feature(struct client *c, uint32_t flags, uint32_t feature,
		   const void *payload, size_t len)
{
	struct vfio_device_feature *f;
	int ret;

	f = calloc(1, sizeof(*f) + len);
	if (!f)
		return -ENOMEM;
	f->argsz = sizeof(*f) + len;
	f->flags = flags | feature;
	memcpy(f->data, payload, len);
	ret = ioctl(c->dev.device_fd, VFIO_DEVICE_FEATURE, f);
	ret = ret ? -errno : 0;
	free(f);
	return ret;
}

static int log_start(struct client *c, uint64_t page_size)
{
	struct vfio_device_feature_dma_logging_range range = {
		.iova = 0,
		.length = LOG_LEN,
	};
	struct vfio_device_feature_dma_logging_control ctl = {
		.page_size = page_size,
		.num_ranges = 1,
		.ranges = (uintptr_t)&range,
	};

	return feature(c, VFIO_DEVICE_FEATURE_SET,
		       VFIO_DEVICE_FEATURE_DMA_LOGGING_START, &ctl, sizeof(ctl));
}

static int log_stop(struct client *c)
{
	return feature(c, VFIO_DEVICE_FEATURE_SET,
		       VFIO_DEVICE_FEATURE_DMA_LOGGING_STOP, NULL, 0);
}

/* Read and clear the log into @bitmap (one bit per LOG_PAGE). */
static int log_report(struct client *c, uint64_t *bitmap)
{
	struct vfio_device_feature_dma_logging_report rep = {
		.iova = 0,
		.length = LOG_LEN,
		.page_size = LOG_PAGE,
		.bitmap = (uintptr_t)bitmap,
	};

	memset(bitmap, 0, LOG_LEN / LOG_PAGE / 8);
	return feature(c, VFIO_DEVICE_FEATURE_GET,
		       VFIO_DEVICE_FEATURE_DMA_LOGGING_REPORT, &rep, sizeof(rep));
}

static bool dirty(const uint64_t *bitmap, uint64_t iova)
{
	uint64_t page = iova / LOG_PAGE;

	return bitmap[page / 64] & (1ull << (page % 64));
}

/* Pages of [iova, iova + len) reported dirty. */
static unsigned int dirty_pages(const uint64_t *bitmap, uint64_t iova,
				size_t len)
{
	unsigned int n = 0;
	uint64_t a;

	for (a = iova & ~(LOG_PAGE - 1); a < iova + len; a += LOG_PAGE)
		n += dirty(bitmap, a);
	return n;
}

/* All pages reported dirty. */
static unsigned int dirty_total(const uint64_t *bitmap)
{
	unsigned int n = 0;
	size_t i;

	for (i = 0; i < LOG_LEN / LOG_PAGE / 64; i++)
		n += __builtin_popcountll(bitmap[i]);
	return n;
}

TEST_F(migration, dirty_log_reports_written_pages)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	size_t len = 8 * NVME_PAGE_SIZE;
	struct nvme_dma w, r, idle;
	uint64_t cq1 = ctrl->cq[1].mem.iova;

	ASSERT_EQ(0, nvme_dma_alloc(ctrl, len, &w));
	ASSERT_EQ(0, nvme_dma_alloc(ctrl, len, &r));
	ASSERT_EQ(0, nvme_dma_alloc(ctrl, len, &idle));
	pattern_fill(w.va, len, 0x3003);
	ASSERT_OK(nvme_rw(ctrl, 1, nvme_cmd_write, 0, len / self->bs, &w, 0));

	ASSERT_EQ(0, log_start(&self->c, LOG_PAGE));
	ASSERT_EQ(0, log_report(&self->c, self->bitmap));
	TH_LOG("dirty at the start: %u pages", dirty_total(self->bitmap));

	/* The device reads w and writes r, and one CQE in queue 1's CQ. */
	ASSERT_OK(nvme_rw(ctrl, 1, nvme_cmd_write, 0, len / self->bs, &w, 0));
	ASSERT_OK(nvme_rw(ctrl, 1, nvme_cmd_read, 0, len / self->bs, &r, 0));
	EXPECT_EQ(-1, mem_diff(w.va, r.va, len));
	ASSERT_EQ(0, log_report(&self->c, self->bitmap));
	TH_LOG("dirty after a write and a read: %u pages",
	       dirty_total(self->bitmap));
	EXPECT_EQ(len / LOG_PAGE, dirty_pages(self->bitmap, r.iova, len));
	EXPECT_EQ(0, dirty_pages(self->bitmap, w.iova, len));
	EXPECT_EQ(0, dirty_pages(self->bitmap, idle.iova, len));
	EXPECT_TRUE(dirty(self->bitmap, cq1));
	/* SQ 1's ring is only read. */
	EXPECT_FALSE(dirty(self->bitmap, ctrl->sq[1].mem.iova));
	/* Only the read's pages, CQ pages and EventIdx, nothing else. */
	EXPECT_GE(len / LOG_PAGE + 4, dirty_total(self->bitmap));

	/* A report clears what it returned. */
	ASSERT_EQ(0, log_report(&self->c, self->bitmap));
	EXPECT_EQ(0, dirty_pages(self->bitmap, r.iova, len));

	/* Admin data the device writes: Identify into the scratch page. */
	ASSERT_OK(nvme_identify(ctrl, 1, 0, 0, &ctrl->scratch));
	ASSERT_EQ(0, log_report(&self->c, self->bitmap));
	EXPECT_TRUE(dirty(self->bitmap, ctrl->scratch.iova));
	EXPECT_TRUE(dirty(self->bitmap, ctrl->cq[0].mem.iova));

	EXPECT_EQ(0, log_stop(&self->c));
	nvme_dma_free(ctrl, &w);
	nvme_dma_free(ctrl, &r);
	nvme_dma_free(ctrl, &idle);
}

TEST_F(migration, dirty_log_states)
{
	/* No report without a log, no second start, stop twice is fine. */
	EXPECT_EQ(-EINVAL, log_report(&self->c, self->bitmap));
	ASSERT_EQ(0, log_start(&self->c, LOG_PAGE));
	EXPECT_EQ(-EBUSY, log_start(&self->c, LOG_PAGE));
	EXPECT_EQ(0, log_stop(&self->c));
	EXPECT_EQ(0, log_stop(&self->c));
	EXPECT_EQ(-EINVAL, log_report(&self->c, self->bitmap));
	/* A page size the device does not log at is raised to one it does. */
	ASSERT_EQ(0, log_start(&self->c, 512));
	EXPECT_EQ(0, log_report(&self->c, self->bitmap));
	EXPECT_EQ(0, log_stop(&self->c));
}

/* ------------------------------------------------------------------ */
/* The device state                                                    */

/* The header of the device's state: magic, version, length, CRC32C. */
#define STATE_VERSION_OFF	4
#define STATE_LEN_OFF		8
#define STATE_CRC_OFF		12
#define STATE_CFG_OFF		16
#define STATE_CFG_SIZE		4096
/* Version 1's controller part: the host NQN after CAP, VS and the rest. */
#define STATE_HOSTNQN_OFF	4160
#define STATE_CC_OFF		4420	/* after the host ID, ASQ, ACQ, INTMS */

FIXTURE(mig) {
	struct client c;
	struct vfio_dev peer;	/* the destination */
	bool peer_open;
	struct nvme_ctrl *ctrl;
	uint32_t bs;
};

FIXTURE_SETUP(mig)
{
	const char *peer = getenv("NVMET_MDEV_PEER");
	enum vfio_binding b;
	unsigned int busy;

	self->peer.device_fd = -1;
	self->peer.group_fd = -1;
	self->peer.container_fd = -1;
	self->peer.iommufd = -1;
	if (!peer || !*peer)
		SKIP(return, "NVMET_MDEV_PEER (a second mdev) is not set");
	ASSERT_EQ(0, vfio_env_binding(&b));
	ASSERT_EQ(0, client_vfio_open(&self->peer, peer, b, &busy));
	self->peer_open = true;
	vfio_dma_mirror = &self->peer;
	CLIENT_BRINGUP(&self->c, CLIENT_IO_QUEUES, CLIENT_IO_DEPTH, true);
	self->ctrl = &self->c.ctrl;
	if (!self->ctrl->nsid)
		SKIP(return, "the controller has no active namespace");
	self->bs = 1u << self->ctrl->lba_shift;
}

FIXTURE_TEARDOWN(mig)
{
	/* The controller may be on either device now. */
	client_close(&self->c);
	vfio_dma_mirror = NULL;
	if (self->peer_open)
		vfio_close(&self->peer);
}

/* VFIO_DEVICE_FEATURE @feature with @len bytes in and out: 0 or -errno. */
static int feature_rw(struct vfio_dev *dev, uint32_t flags, uint32_t feature,
		      void *payload, size_t len)
{
	struct vfio_device_feature *f;
	int ret;

	f = calloc(1, sizeof(*f) + len);
	if (!f)
		return -ENOMEM;
	f->argsz = sizeof(*f) + len;
	f->flags = flags | feature;
	memcpy(f->data, payload, len);
	ret = ioctl(dev->device_fd, VFIO_DEVICE_FEATURE, f);
	ret = ret ? -errno : 0;
	memcpy(payload, f->data, len);
	free(f);
	return ret;
}

/* Move @dev to @state; *@fd gets the data fd (else it is closed). */
static int mig_set(struct vfio_dev *dev, enum vfio_device_mig_state state,
		   int *fd)
{
	struct vfio_device_feature_mig_state m = {
		.device_state = state,
		.data_fd = -1,
	};
	int ret;

	ret = feature_rw(dev, VFIO_DEVICE_FEATURE_SET,
			 VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE, &m, sizeof(m));
	if (fd)
		*fd = ret ? -1 : m.data_fd;
	else if (!ret && m.data_fd >= 0)
		close(m.data_fd);
	return ret;
}

static int mig_get(struct vfio_dev *dev)
{
	struct vfio_device_feature_mig_state m = {};
	int ret;

	ret = feature_rw(dev, VFIO_DEVICE_FEATURE_GET,
			 VFIO_DEVICE_FEATURE_MIG_DEVICE_STATE, &m, sizeof(m));
	return ret ? ret : (int)m.device_state;
}

/* Stop @dev and read its state into a malloc()ed buffer: its length. */
static ssize_t mig_save(struct vfio_dev *dev, uint8_t **buf)
{
	size_t len = 0, cap = 1 << 16;
	uint8_t *p = malloc(cap);
	ssize_t n;
	int fd, ret;

	if (!p)
		return -ENOMEM;
	ret = mig_set(dev, VFIO_DEVICE_STATE_STOP, NULL);
	if (!ret)
		ret = mig_set(dev, VFIO_DEVICE_STATE_STOP_COPY, &fd);
	if (ret) {
		free(p);
		return ret;
	}
	for (;;) {
		if (len == cap) {
			uint8_t *q = realloc(p, cap *= 2);

			if (!q) {
				n = -ENOMEM;
				break;
			}
			p = q;
		}
		n = read(fd, p + len, cap - len);
		if (n <= 0)
			break;
		len += n;
	}
	close(fd);
	if (n < 0) {
		free(p);
		return n == -1 ? -errno : n;
	}
	ret = mig_set(dev, VFIO_DEVICE_STATE_STOP, NULL);
	if (ret) {
		free(p);
		return ret;
	}
	*buf = p;
	return len;
}

/* Give @dev the state @buf: RESUMING, write, STOP.  0 or -errno. */
static int mig_load(struct vfio_dev *dev, const uint8_t *buf, size_t len)
{
	size_t done = 0;
	ssize_t n;
	int fd, ret;

	ret = mig_set(dev, VFIO_DEVICE_STATE_RESUMING, &fd);
	if (ret)
		return ret;
	/* In pieces, as a VMM's stream may cut it. */
	while (done < len) {
		n = write(fd, buf + done, len - done > 1000 ? 1000 : len - done);
		if (n <= 0) {
			close(fd);
			return n ? -errno : -EIO;
		}
		done += n;
	}
	close(fd);
	return mig_set(dev, VFIO_DEVICE_STATE_STOP, NULL);
}

static uint32_t crc32c(const uint8_t *p, size_t len)
{
	uint32_t crc = ~0u;
	int k;

	while (len--) {
		crc ^= *p++;
		for (k = 0; k < 8; k++)
			crc = crc & 1 ? (crc >> 1) ^ 0x82f63b78 : crc >> 1;
	}
	return ~crc;
}

/* Recompute the CRC of a state a test changed on purpose. */
static void state_seal(uint8_t *buf, size_t len)
{
	uint32_t crc;

	memset(buf + STATE_CRC_OFF, 0, 4);
	crc = crc32c(buf, len);
	memcpy(buf + STATE_CRC_OFF, &crc, 4);
}

/* The controller now lives on @to: its doorbells and interrupts. */
static int move_to(struct nvme_ctrl *ctrl, struct vfio_dev *to)
{
	const char *dbmode = getenv("NVMET_MDEV_DOORBELL");
	unsigned int n = 0;

	if (ctrl->db_map)
		munmap(ctrl->db_map, ctrl->db_map_len);
	ctrl->db_map = NULL;
	ctrl->db = NULL;
	ctrl->dev = to;
	if ((!dbmode || strcmp(dbmode, "pwrite")) &&
	    vfio_region_mmap_ok(to, VFIO_PCI_BAR0_REGION_INDEX, NVME_REG_DBS,
				NVME_PAGE_SIZE)) {
		ctrl->db_map = vfio_region_mmap(to, VFIO_PCI_BAR0_REGION_INDEX,
						NVME_REG_DBS, NVME_PAGE_SIZE);
		if (!ctrl->db_map)
			return -ENOMEM;
		ctrl->db_map_len = NVME_PAGE_SIZE;
		ctrl->db = ctrl->db_map;
	}
	while (n < NVME_MAX_VECTORS && ctrl->irq_fd[n] >= 0)
		n++;
	return n ? vfio_irq_set_eventfds(to, VFIO_PCI_MSIX_IRQ_INDEX, 0, n,
					 ctrl->irq_fd) : 0;
}

/* Queue (without waiting) a write of @nlb blocks at @slba from @buf. */
static uint16_t push_write(struct nvme_ctrl *ctrl, uint16_t qid,
			   uint64_t slba, uint32_t nlb,
			   const struct nvme_dma *buf, size_t off)
{
	struct nvme_sqe sqe = {
		.opcode = nvme_cmd_write,
		.nsid = ctrl->nsid,
		.cdw10 = (uint32_t)slba,
		.cdw11 = (uint32_t)(slba >> 32),
		.cdw12 = nlb - 1,
	};

	if (nvme_build_prps(ctrl, buf, off, (size_t)nlb << ctrl->lba_shift,
			    &sqe))
		return 0xffff;
	return nvme_sq_push(ctrl, qid, &sqe, false);
}

TEST_F(mig, features)
{
	struct vfio_device_feature_migration m = {};
	struct vfio_device_feature_mig_data_size sz = {};

	ASSERT_EQ(0, feature_rw(&self->c.dev, VFIO_DEVICE_FEATURE_GET,
				VFIO_DEVICE_FEATURE_MIGRATION, &m, sizeof(m)));
	EXPECT_EQ(VFIO_MIGRATION_STOP_COPY | VFIO_MIGRATION_P2P, m.flags);
	EXPECT_EQ(VFIO_DEVICE_STATE_RUNNING, mig_get(&self->c.dev));
	ASSERT_EQ(0, feature_rw(&self->c.dev, VFIO_DEVICE_FEATURE_GET,
				VFIO_DEVICE_FEATURE_MIG_DATA_SIZE, &sz,
				sizeof(sz)));
	TH_LOG("state size %llu bytes", (unsigned long long)sz.stop_copy_length);
	EXPECT_GT(sz.stop_copy_length, STATE_CFG_OFF + STATE_CFG_SIZE);
	EXPECT_LT(sz.stop_copy_length, 64 * 1024);
	/* No state to read or write while running; no PRE_COPY. */
	EXPECT_EQ(-EINVAL, mig_set(&self->c.dev, VFIO_DEVICE_STATE_PRE_COPY,
				   NULL));
}

/*
 * The controller moves to the peer with commands in flight and
 * completions parked on a full CQ, shadow doorbells on, and four AERs
 * outstanding; everything completes there and it keeps working.
 */
TEST_F(mig, move_with_io_in_flight)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	const unsigned int nr = 8;	/* writes on the small queue pair */
	struct nvme_sqe aer = { .opcode = nvme_admin_async_event };
	struct nvme_dma w, r;
	bool seen[65536] = {};
	uint16_t cids[8], qid = 3, last;
	struct nvme_cqe cqe;
	uint64_t start;
	long waited;
	uint8_t *state;
	ssize_t len;
	uint32_t v;
	unsigned int i;

	/* Beyond the queues the client asked for, within the mdev's. */
	ASSERT_EQ(2, ctrl->nr_io_queues);
	ASSERT_EQ(0, nvme_dbbuf_config(ctrl));
	/* A CQ of 4 entries (3 usable) under an SQ of 16. */
	ASSERT_EQ(0, nvme_create_cq(ctrl, qid, 4, false, 0));
	ASSERT_EQ(0, nvme_create_sq(ctrl, qid, 16, qid));
	ASSERT_EQ(0, nvme_dma_alloc(ctrl, nr * NVME_PAGE_SIZE, &w));
	ASSERT_EQ(0, nvme_dma_alloc(ctrl, nr * NVME_PAGE_SIZE, &r));
	pattern_fill(w.va, nr * NVME_PAGE_SIZE, 0x6016);

	/* Four AERs: nvmet holds them (its limit). */
	for (i = 0; i < 4; i++)
		nvme_submit(ctrl, 0, &aer);
	ASSERT_OK(nvme_identify(ctrl, 1, 0, 0, NULL));

	for (i = 0; i < nr; i++)
		cids[i] = push_write(ctrl, qid, i * (NVME_PAGE_SIZE / self->bs),
				     NVME_PAGE_SIZE / self->bs, &w,
				     i * NVME_PAGE_SIZE);
	nvme_sq_ring(ctrl, qid);
	/* Three fit; the other five wait for the guest to free entries. */
	start = nvme_now_ms();
	while (!nvme_cq_pending(ctrl, qid) && nvme_now_ms() - start < 10000)
		usleep(1000);
	usleep(100 * 1000);
	/* And one on queue 1, in flight when the device stops, if slow. */
	last = push_write(ctrl, 1, 128, NVME_PAGE_SIZE / self->bs, &w, 0);
	nvme_sq_ring(ctrl, 1);

	len = mig_save(&self->c.dev, &state);
	ASSERT_GT(len, 0) {
		TH_LOG("save: %s", strerror((int)-len));
	}
	waited = host_mdev_stat("stop_waited_commands");
	TH_LOG("state: %zd bytes; the stop waited for %ld commands", len,
	       waited);
	/* A backend that takes 100 ms or more still has it when stopping. */
	if (env_u64("NVMET_MDEV_BACKEND_LATENCY_MS", 0) >= 100)
		EXPECT_LE(1, waited);
	EXPECT_EQ(VFIO_DEVICE_STATE_STOP, mig_get(&self->c.dev));
	/* A stopped device takes no register writes. */
	v = nvme_cc_default();
	EXPECT_EQ(-EBUSY, vfio_region_write(&self->c.dev,
					    VFIO_PCI_BAR0_REGION_INDEX,
					    NVME_REG_CC, &v, 4));

	ASSERT_EQ(0, mig_load(&self->peer, state, len));
	ASSERT_EQ(0, mig_set(&self->peer, VFIO_DEVICE_STATE_RUNNING, NULL));
	free(state);
	/* The guest memory's other user is the peer now. */
	ASSERT_EQ(0, move_to(ctrl, &self->peer));
	vfio_dma_mirror = &self->c.dev;

	v = nvme_read32(ctrl, NVME_REG_CSTS);
	EXPECT_EQ(NVME_CSTS_RDY, v);
	/* All eight complete, once each, the parked ones as the head moves. */
	for (i = 0; i < nr; i++) {
		ASSERT_EQ(0, nvme_cq_poll(ctrl, qid, &cqe, 10000)) {
			TH_LOG("%u of %u completions", i, nr);
		}
		EXPECT_EQ(0, cqe.status >> 1);
		EXPECT_FALSE(seen[cqe.cid]);
		seen[cqe.cid] = true;
	}
	for (i = 0; i < nr; i++)
		EXPECT_TRUE(seen[cids[i]]);
	/* The write on queue 1 completed on the source or here, once. */
	ASSERT_EQ(0, nvme_cq_poll(ctrl, 1, &cqe, 10000));
	EXPECT_EQ(last, cqe.cid);
	EXPECT_EQ(0, cqe.status >> 1);

	/* The data arrived; I/O, admin commands and shadow doorbells work. */
	ASSERT_OK(nvme_rw(ctrl, 1, nvme_cmd_read, 0,
			  nr * NVME_PAGE_SIZE / self->bs, &r, 0));
	EXPECT_EQ(-1, mem_diff(w.va, r.va, nr * NVME_PAGE_SIZE));
	ASSERT_OK(nvme_rw(ctrl, 2, nvme_cmd_write, 64,
			  NVME_PAGE_SIZE / self->bs, &w, 0));
	ASSERT_OK(nvme_identify(ctrl, 1, 0, 0, NULL));
	/* The four AERs are outstanding on the peer: a fifth is refused. */
	EXPECT_STATUS(NVME_SC_ASYNC_LIMIT, nvme_admin(ctrl, &aer, NULL));
	EXPECT_EQ(NVME_CSTS_RDY, nvme_read32(ctrl, NVME_REG_CSTS));

	nvme_dma_free(ctrl, &w);
	nvme_dma_free(ctrl, &r);
}

/* A cancelled migration: the source runs on, its commands complete. */
TEST_F(mig, cancel_resumes_source)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	struct nvme_dma w, r;
	struct nvme_cqe cqe;
	uint8_t *state;
	uint64_t start;
	ssize_t len;
	uint16_t cid;
	long waited;

	ASSERT_EQ(0, nvme_dma_alloc(ctrl, NVME_PAGE_SIZE, &w));
	ASSERT_EQ(0, nvme_dma_alloc(ctrl, NVME_PAGE_SIZE, &r));
	pattern_fill(w.va, NVME_PAGE_SIZE, 0xcace);
	cid = push_write(ctrl, 1, 8, NVME_PAGE_SIZE / self->bs, &w, 0);
	nvme_sq_ring(ctrl, 1);

	start = nvme_now_ms();
	len = mig_save(&self->c.dev, &state);
	ASSERT_GT(len, 0);
	free(state);
	waited = host_mdev_stat("stop_waited_commands");
	TH_LOG("the stop waited for %ld commands; stopping and saving took %llu ms",
	       waited, (unsigned long long)(nvme_now_ms() - start));
	if (env_u64("NVMET_MDEV_BACKEND_LATENCY_MS", 0) >= 100)
		EXPECT_LE(1, waited);
	ASSERT_EQ(0, mig_set(&self->c.dev, VFIO_DEVICE_STATE_RUNNING, NULL));
	ASSERT_EQ(0, nvme_cq_poll(ctrl, 1, &cqe, 10000));
	EXPECT_EQ(cid, cqe.cid);
	EXPECT_EQ(0, cqe.status >> 1);
	ASSERT_OK(nvme_rw(ctrl, 1, nvme_cmd_read, 8, NVME_PAGE_SIZE / self->bs,
			  &r, 0));
	EXPECT_EQ(-1, mem_diff(w.va, r.va, NVME_PAGE_SIZE));
	EXPECT_EQ(NVME_CSTS_RDY, nvme_read32(ctrl, NVME_REG_CSTS));

	/* Stopped and run again without saving: nothing lost either. */
	ASSERT_EQ(0, mig_set(&self->c.dev, VFIO_DEVICE_STATE_STOP, NULL));
	ASSERT_EQ(0, mig_set(&self->c.dev, VFIO_DEVICE_STATE_RUNNING, NULL));
	ASSERT_OK(nvme_rw(ctrl, 1, nvme_cmd_read, 8, NVME_PAGE_SIZE / self->bs,
			  &r, 0));
	nvme_dma_free(ctrl, &w);
	nvme_dma_free(ctrl, &r);
}

/*
 * A source stopped between the guest's CC.EN = 1 and CSTS.RDY (before its
 * admin queue's thread ran) carries the registers but no controller: the
 * destination enables as that write did and becomes ready by itself.
 */
TEST_F(mig, stopped_while_enabling)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	struct nvme_queue *q[] = { &ctrl->sq[0], &ctrl->cq[0] };
	uint8_t *state;
	unsigned int i;
	ssize_t len;
	uint32_t cc;

	/* Disabled, AQA, ASQ and ACQ kept: the state of such a source... */
	ASSERT_EQ(0, nvme_disable(ctrl));
	len = mig_save(&self->c.dev, &state);
	ASSERT_GT(len, STATE_CC_OFF + 4);
	memcpy(&cc, state + STATE_CC_OFF, 4);
	ASSERT_EQ(0, cc & NVME_CC_EN);
	/* ...but for CC.EN, which its guest had just set. */
	cc |= NVME_CC_EN;
	memcpy(state + STATE_CC_OFF, &cc, 4);
	state_seal(state, len);
	ASSERT_EQ(0, mig_load(&self->peer, state, len));
	ASSERT_EQ(0, mig_set(&self->peer, VFIO_DEVICE_STATE_RUNNING, NULL));
	free(state);
	ASSERT_EQ(0, move_to(ctrl, &self->peer));
	vfio_dma_mirror = &self->c.dev;

	ASSERT_EQ(0, nvme_wait_ready(ctrl, true)) {
		TH_LOG("CSTS %#x", nvme_read32(ctrl, NVME_REG_CSTS));
	}
	/* Its admin queues are the ones the registers give, empty. */
	for (i = 0; i < 2; i++) {
		memset(q[i]->mem.va, 0, q[i]->mem.size);
		q[i]->head = 0;
		q[i]->tail = 0;
		q[i]->phase = 1;
		q[i]->live = true;
	}
	ASSERT_OK(nvme_identify(ctrl, 1, 0, 0, NULL));
}

/*
 * Damaged and hostile states are refused (or, if consistent, taken) and
 * the destination can be reset and used; the source is unharmed.
 */
TEST_F(mig, hostile_states)
{
	struct nvme_ctrl *ctrl = self->ctrl;
	uint64_t seed = env_u64("NVMET_MDEV_SEED", nvme_now_ms());
	unsigned int i, refused = 0, taken = 0;
	struct rng rng;
	uint8_t *zeros;
	ssize_t n = 0;
	int fd;
	uint8_t *state, *bad;
	uint16_t v16;
	ssize_t len;
	int ret;

	len = mig_save(&self->c.dev, &state);
	ASSERT_GT(len, STATE_CFG_OFF + STATE_CFG_SIZE);
	bad = malloc(len + 16);
	ASSERT_NE(NULL, bad);

	/*
	 * Cut short, one byte flipped (CRC), another version, not ours.  A
	 * state refused leaves the device in ERROR, which nothing but a
	 * reset leaves (once a second STOP found no state to load).
	 */
	EXPECT_EQ(-EINVAL, mig_load(&self->peer, state, len - 1));
	EXPECT_EQ(VFIO_DEVICE_STATE_ERROR, mig_get(&self->peer));
	EXPECT_EQ(-EINVAL, mig_set(&self->peer, VFIO_DEVICE_STATE_STOP, NULL));
	EXPECT_EQ(-EINVAL, mig_set(&self->peer, VFIO_DEVICE_STATE_RUNNING,
				   NULL));
	EXPECT_EQ(VFIO_DEVICE_STATE_ERROR, mig_get(&self->peer));
	ASSERT_EQ(0, vfio_reset(&self->peer));
	EXPECT_EQ(VFIO_DEVICE_STATE_RUNNING, mig_get(&self->peer));
	memcpy(bad, state, len);
	bad[len / 2] ^= 0x10;
	EXPECT_EQ(-EINVAL, mig_load(&self->peer, bad, len));
	ASSERT_EQ(0, vfio_reset(&self->peer));
	memcpy(bad, state, len);
	bad[STATE_VERSION_OFF] = 2;
	state_seal(bad, len);
	EXPECT_EQ(-EINVAL, mig_load(&self->peer, bad, len));
	ASSERT_EQ(0, vfio_reset(&self->peer));
	/* Another PCI device ID: config space read-only bits must match. */
	memcpy(bad, state, len);
	memcpy(&v16, bad + STATE_CFG_OFF + 2, 2);
	v16 ^= 1;
	memcpy(bad + STATE_CFG_OFF + 2, &v16, 2);
	state_seal(bad, len);
	EXPECT_EQ(-EINVAL, mig_load(&self->peer, bad, len));
	ASSERT_EQ(0, vfio_reset(&self->peer));
	/* Another host: the peer's identity is the administrator's. */
	memcpy(bad, state, len);
	ASSERT_EQ(0, memcmp(bad + STATE_HOSTNQN_OFF, "nqn.", 4));
	bad[STATE_HOSTNQN_OFF + strlen((char *)bad + STATE_HOSTNQN_OFF) - 1] ^= 1;
	state_seal(bad, len);
	EXPECT_EQ(-EINVAL, mig_load(&self->peer, bad, len));
	ASSERT_EQ(0, vfio_reset(&self->peer));
	/* Longer than it says. */
	memcpy(bad, state, len);
	memset(bad + len, 0, 16);
	state_seal(bad, len + 16);
	EXPECT_EQ(-EINVAL, mig_load(&self->peer, bad, len + 16));
	ASSERT_EQ(0, vfio_reset(&self->peer));
	/* Longer than any controller's state: refused as it is written. */
	zeros = calloc(1, 1 << 20);
	ASSERT_NE(NULL, zeros);
	ASSERT_EQ(0, mig_set(&self->peer, VFIO_DEVICE_STATE_RESUMING, &fd));
	for (i = 0; i < 16 && n >= 0; i++)
		n = write(fd, zeros, 1 << 20);
	EXPECT_EQ(-1, n);
	EXPECT_EQ(EFBIG, errno);
	TH_LOG("a state of %u MiB refused", i);
	close(fd);
	free(zeros);
	EXPECT_EQ(-EINVAL, mig_set(&self->peer, VFIO_DEVICE_STATE_STOP, NULL));
	ASSERT_EQ(0, vfio_reset(&self->peer));

	/* Random values in the controller's part, with a good CRC. */
	rng_seed(&rng, seed);
	for (i = 0; i < 300; i++) {
		size_t off = STATE_CFG_OFF + STATE_CFG_SIZE +
			     rng_below(&rng, len - STATE_CFG_OFF - STATE_CFG_SIZE);

		memcpy(bad, state, len);
		bad[off] = rng_next(&rng);
		if (rng_below(&rng, 2))
			bad[off + (off + 1 < (size_t)len)] = rng_next(&rng);
		state_seal(bad, len);
		ret = mig_load(&self->peer, bad, len);
		ASSERT_TRUE(ret == 0 || ret == -EINVAL) {
			TH_LOG("byte %zu: %s", off, strerror(-ret));
		}
		if (ret)
			refused++;
		else
			taken++;
		ASSERT_EQ(0, vfio_reset(&self->peer));
		ASSERT_EQ(VFIO_DEVICE_STATE_RUNNING, mig_get(&self->peer));
	}
	TH_LOG("seed %llu: %u states refused, %u taken",
	       (unsigned long long)seed, refused, taken);
	EXPECT_GT(refused, 0);

	/* The genuine state still loads after all that. */
	ASSERT_EQ(0, mig_load(&self->peer, state, len));
	ASSERT_EQ(0, vfio_reset(&self->peer));
	free(bad);
	free(state);

	/* The source was never harmed: it runs on. */
	ASSERT_EQ(0, mig_set(&self->c.dev, VFIO_DEVICE_STATE_RUNNING, NULL));
	ASSERT_OK(nvme_identify(ctrl, 1, 0, 0, NULL));
	EXPECT_EQ(NVME_CSTS_RDY, nvme_read32(ctrl, NVME_REG_CSTS));
}

TEST_HARNESS_MAIN
