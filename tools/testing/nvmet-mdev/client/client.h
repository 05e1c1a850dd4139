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

#include <linux/nvmet-mdev.h>

#include "nvme.h"
#include "util.h"
#include "vfio.h"

struct client {
	struct vfio_dev	dev;
	struct nvme_ctrl ctrl;
	bool		open;
};

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
	c->dev.device_fd = c->dev.group_fd = c->dev.container_fd = -1;
	c->dev.iommufd = -1;
	if (!uuid || !*uuid)
		SKIP(return, "NVMET_MDEV_UUID is not set");
	ASSERT_EQ(0, vfio_env_binding(&b));
	ASSERT_EQ(0, vfio_open(&c->dev, uuid, b)) {
		TH_LOG("cannot open mdev %s via %s", uuid, vfio_binding_name(b));
	}
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
	CLIENT_OPEN(c);							\
	ASSERT_EQ(0, nvme_bringup(&(c)->ctrl, CLIENT_AQ_DEPTH, (nr_io),	\
				  (depth), (irqs)));			\
} while (0)

/* Status checks that print the status by name when they fail. */
#define EXPECT_STATUS(expected, status) do {				\
	int __s = (status);						\
	EXPECT_EQ((expected), nvme_sc(__s)) {				\
		TH_LOG("status %s, expected %#x", nvme_status_str(__s),	\
		       (expected));					\
	}								\
} while (0)

#define ASSERT_STATUS(expected, status) do {				\
	int __s = (status);						\
	ASSERT_EQ((expected), nvme_sc(__s)) {				\
		TH_LOG("status %s, expected %#x", nvme_status_str(__s),	\
		       (expected));					\
	}								\
} while (0)

#define ASSERT_OK(status) ASSERT_STATUS(NVME_SC_SUCCESS, (status))
#define EXPECT_OK(status) EXPECT_STATUS(NVME_SC_SUCCESS, (status))

/* The status is one of a short list (an uncertain expectation). */
static inline bool status_in(int status, const int *list, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (nvme_sc(status) == list[i])
			return true;
	return false;
}

#define EXPECT_STATUS_IN(status, ...) do {				\
	int __s = (status);						\
	const int __l[] = { __VA_ARGS__ };				\
	EXPECT_TRUE(status_in(__s, __l, sizeof(__l) / sizeof(__l[0]))) { \
		TH_LOG("status %s not in { %s }", nvme_status_str(__s),	\
		       #__VA_ARGS__);					\
	}								\
} while (0)

/* A command the device must fail (any error status, not a timeout). */
#define EXPECT_ERROR_STATUS(status) do {				\
	int __s = (status);						\
	EXPECT_TRUE(__s > 0) {						\
		TH_LOG("status %s, expected an error status",		\
		       nvme_status_str(__s));				\
	}								\
} while (0)

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
