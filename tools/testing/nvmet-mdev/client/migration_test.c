// SPDX-License-Identifier: GPL-2.0
/*
 * nvmet-mdev live migration support: the dirty page log a VMM reads while
 * it copies the guest's memory (VFIO_DEVICE_FEATURE_DMA_LOGGING_*).  The
 * device reports exactly the pages it wrote (read data, completion queue
 * entries), not those it only read (write data, submission queues), and a
 * report clears what it returned.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/ioctl.h>

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

TEST_HARNESS_MAIN
