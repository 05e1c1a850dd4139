/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Shared glue for the test programs: open the mdev named by the environment
 * (NVMET_MDEV_UUID, NVMET_MDEV_BINDING), bring a fresh controller up, and
 * a few assertion helpers.  Include after kselftest_harness.h.
 *
 * Every test runs in its own process (the harness forks), so every test
 * opens the device afresh and the kernel closes it when the test exits,
 * even when it dies.
 */
#ifndef NVMET_MDEV_CLIENT_CLIENT_H
#define NVMET_MDEV_CLIENT_CLIENT_H

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "host.h"
#include "mdev/model.h"
#include "nvme.h"
#include "util.h"
#include "vfio.h"

struct client {
	struct vfio_dev	dev;
	struct nvme_ctrl ctrl;
	bool		open;
	unsigned int	busy_ms;	/* how long the open saw -EBUSY */
};

/*
 * Open, retrying for up to 5 s while the device is still held by its
 * previous user: the release of the last reference to the device file is
 * deferred (a few ms, tens under load), so a new open right after the
 * previous user exits can find the device busy.
 */
static inline int client_vfio_open(struct vfio_dev *dev, const char *uuid,
				   enum vfio_binding b, unsigned int *busy_ms)
{
	uint64_t start = nvme_now_ms();
	int ret;

	for (;;) {
		vfio_quiet = true;
		ret = vfio_open(dev, uuid, b);
		vfio_quiet = false;
		/*
		 * Container: the group is busy.  iommufd: the cdev opens but
		 * VFIO_DEVICE_BIND_IOMMUFD says -EINVAL while the device is
		 * still open (vfio_df_open(): open_count != 0).
		 */
		if ((ret != -EBUSY &&
		     !(ret == -EINVAL && b == VFIO_BINDING_IOMMUFD)) ||
		    nvme_now_ms() - start > 5000)
			break;
		usleep(10 * 1000);
	}
	if (ret)	/* once more, saying why */
		ret = vfio_open(dev, uuid, b);
	*busy_ms = nvme_now_ms() - start > 5 ? nvme_now_ms() - start : 0;
	return ret;
}

/*
 * Wait for an interrupt that must come: the device raises it with a
 * completion the caller has seen (or is about to see), or in a register
 * write that has returned.  Waits as long as a command may take
 * (nvme_exec()), for the test VMs can stall for seconds (QEMU's lost
 * wake-ups, a loaded machine: see the README).  When none comes, prints
 * how long the wait took and the device's interrupt count (debugfs) from
 * before and after it.  Returns nvme_irq_wait()'s count.
 */
#define CLIENT_IRQ_WAIT_MS	10000

static inline int client_irq_wait(struct nvme_ctrl *ctrl, unsigned int v)
{
	long before = host_mdev_stat("interrupts");
	uint64_t start = nvme_now_ms();
	int n = nvme_irq_wait(ctrl, v, CLIENT_IRQ_WAIT_MS);

	if (n < 1)
		fprintf(TH_LOG_STREAM,
			"#      no interrupt on vector %u (%d) after %llu ms; the device counted %ld interrupts before, %ld after\n",
			v, n, (unsigned long long)(nvme_now_ms() - start),
			before, host_mdev_stat("interrupts"));
	return n;
}

/* Queue geometry of the standard fixture. */
#define CLIENT_AQ_DEPTH		32
#define CLIENT_IO_QUEUES	2
#define CLIENT_IO_DEPTH		64

static inline void __client_open(struct __test_metadata *_metadata,
				 struct client *c)
{
	enum vfio_binding b;
	const char *uuid = vfio_env_uuid();

	memset(c, 0, sizeof(*c));
	c->dev.device_fd = -1;
	c->dev.group_fd = -1;
	c->dev.container_fd = -1;
	c->dev.iommufd = -1;
	if (!uuid || !*uuid)
		SKIP(return, "NVMET_MDEV_UUID is not set");
	ASSERT_EQ(0, vfio_env_binding(&b));
	ASSERT_EQ(0, client_vfio_open(&c->dev, uuid, b, &c->busy_ms)) {
		TH_LOG("cannot open mdev %s via %s", uuid, vfio_binding_name(b));
	}
	if (c->busy_ms)
		TH_LOG("the device was busy for %u ms after its last user",
		       c->busy_ms);
	ASSERT_EQ(0, nvme_ctrl_init(&c->ctrl, &c->dev));
	c->open = true;
}

static inline void client_close(struct client *c)
{
	if (!c->open)
		return;
	nvme_ctrl_fini(&c->ctrl);
	vfio_close(&c->dev);
	c->open = false;
}

/* Open and bring up; setup code returns early when skipped. */
#define CLIENT_OPEN(c) do {						\
	__client_open(_metadata, (c));					\
	if (_metadata->exit_code)					\
		return;							\
} while (0)

#define CLIENT_BRINGUP(c, nr_io, depth, irqs) do {			\
	struct client *__c = (c);					\
									\
	CLIENT_OPEN(__c);						\
	ASSERT_EQ(0, nvme_bringup(&__c->ctrl, CLIENT_AQ_DEPTH, (nr_io),	\
				  (depth), (irqs)));			\
} while (0)

/*
 * Status checks.  They expand to a harness EXPECT/ASSERT, so an optional
 * { TH_LOG(...); } block may follow, and print the status by name when
 * they fail.  Never put a bare { block } right after any EXPECT_*():
 * the harness takes it as the failure handler.  And an EXPECT_*() or
 * ASSERT_*() is two statements (the check and the handler's loop): as the
 * body of an if, else or loop it takes braces, even alone.
 */
static inline int __status_check(int status, int expected)
{
	if (nvme_sc(status) != expected)
		fprintf(TH_LOG_STREAM, "#      status %s, expected %#x\n",
			nvme_status_str(status), expected);
	return nvme_sc(status);
}

#define EXPECT_STATUS(expected, status) \
	EXPECT_EQ((expected), __status_check((status), (expected)))
#define ASSERT_STATUS(expected, status) \
	ASSERT_EQ((expected), __status_check((status), (expected)))
#define ASSERT_OK(status) ASSERT_STATUS(NVME_SC_SUCCESS, (status))
#define EXPECT_OK(status) EXPECT_STATUS(NVME_SC_SUCCESS, (status))

/* The status is one of a short list (an uncertain expectation). */
static inline bool __status_in(int status, const int *list, size_t n,
			       const char *names)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (nvme_sc(status) == list[i])
			return true;
	fprintf(TH_LOG_STREAM, "#      status %s not in { %s }\n",
		nvme_status_str(status), names);
	return false;
}

#define EXPECT_STATUS_IN(status, ...)					\
	EXPECT_TRUE(__status_in((status), (const int[]){ __VA_ARGS__ },	\
		sizeof((const int[]){ __VA_ARGS__ }) / sizeof(int),	\
		#__VA_ARGS__))

/* A command the device must fail: an error status, not a timeout. */
static inline bool __status_error(int status)
{
	if (status <= 0)
		fprintf(TH_LOG_STREAM, "#      status %s, expected an error status\n",
			nvme_status_str(status));
	return status > 0;
}

#define EXPECT_ERROR_STATUS(status) EXPECT_TRUE(__status_error(status))

static inline const char *client_backing(void)
{
	return env_str("NVMET_MDEV_BACKING");
}

/*
 * After hostile actions: the device must come back after a controller
 * reset and do I/O.  Returns 0 or an error/status.
 */
static inline int client_recover_and_check(struct client *c)
{
	struct nvme_dma buf;
	int ret;

	ret = nvme_bringup(&c->ctrl, CLIENT_AQ_DEPTH, 1, 16, true);
	if (ret)
		return ret;
	if (!c->ctrl.nsid)
		return 0;
	ret = nvme_dma_alloc(&c->ctrl, NVME_PAGE_SIZE, &buf);
	if (ret)
		return ret;
	ret = nvme_rw(&c->ctrl, 1, nvme_cmd_read, 0,
		      NVME_PAGE_SIZE >> c->ctrl.lba_shift, &buf, 0);
	nvme_dma_free(&c->ctrl, &buf);
	return ret;
}

#endif /* NVMET_MDEV_CLIENT_CLIENT_H */
