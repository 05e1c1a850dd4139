// SPDX-License-Identifier: GPL-2.0
/*
 * What a host operator does while a VMM has the device open: unload the
 * module (refused while open), remove the mdev (it leaves the mdev bus at
 * once, the vfio device request interrupt asks the user to let go, the
 * removal waits while the device is open, which keeps working, and
 * completes once it is closed), with and without a request eventfd; and
 * disable the namespace under I/O.  The
 * removal cases re-create the mdev with the same UUID and type, so this
 * program runs last.
 */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kselftest_harness.h"
#include "client.h"
#include "host.h"

/*
 * How long the removal may take once the device is closed, and the wait
 * for the request interrupt: generous, the host VM is TCG-emulated.
 */
#define REMOVE_MS	60000

static void mdev_path(char *buf, size_t len, const char *leaf)
{
	snprintf(buf, len, "/sys/bus/mdev/devices/%s/%s", vfio_env_uuid(), leaf);
}

static bool mdev_exists(void)
{
	char path[PATH_MAX];

	mdev_path(path, sizeof(path), "");
	return access(path, F_OK) == 0;
}

/*
 * A child that writes 1 to the mdev's remove attribute: its pid.  It exits
 * with 0 when the write succeeded, with the errno otherwise.  It closes the
 * descriptors it inherited first: it would hold the device open itself,
 * and wait for itself.
 */
static pid_t remove_in_child(void)
{
	char path[PATH_MAX];
	pid_t pid;

	mdev_path(path, sizeof(path), "remove");
	pid = fork();
	if (pid == 0) {
		int ret;

		close_range(3, ~0U, 0);
		ret = host_write_file(path, "1");

		_exit(ret ? -ret : 0);
	}
	return pid;
}

/* Wait up to @ms for @pid: its wait status, or -1 if it is still there. */
static int wait_child_ms(pid_t pid, unsigned int ms)
{
	uint64_t end = nvme_now_ms() + ms;
	int status;

	do {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(20 * 1000);
	} while (nvme_now_ms() < end);
	return -1;
}

/* The mdev's type directory (resolved while the mdev exists). */
static int mdev_type_dir(char *buf)
{
	char path[PATH_MAX];

	mdev_path(path, sizeof(path), "mdev_type");
	return realpath(path, buf) ? 0 : -errno;
}

static int mdev_create(const char *type_dir)
{
	char path[PATH_MAX + 8];

	snprintf(path, sizeof(path), "%s/create", type_dir);
	return host_write_file(path, vfio_env_uuid());
}

FIXTURE(lifecycle) {
};

FIXTURE_SETUP(lifecycle)
{
}

FIXTURE_TEARDOWN(lifecycle)
{
}

TEST_F(lifecycle, module_in_use_while_open)
{
	struct client c;
	int status;

	CLIENT_OPEN(&c);
	status = system("modprobe -r nvmet-mdev 2>/dev/null");
	EXPECT_NE(0, status);
	EXPECT_EQ(0, access("/sys/module/nvmet_mdev", F_OK));
	/* The open device is unharmed. */
	EXPECT_EQ(0, client_recover_and_check(&c));
	client_close(&c);
}

/*
 * The removal of an mdev that is open: the request interrupt fires, the
 * removal waits while the device stays open, and completes once it is
 * closed.  @req: with a request eventfd (QEMU registers one); without,
 * the removal just waits.
 */
static void remove_while_open(struct __test_metadata *_metadata, bool req)
{
	char type[PATH_MAX];
	struct client c;
	uint64_t t0, count;
	int efd = -1, status;
	pid_t pid;

	CLIENT_OPEN(&c);
	ASSERT_EQ(0, mdev_type_dir(type));
	if (req) {
		uint32_t n = 0, flags = 0;

		ASSERT_EQ(0, vfio_irq_count(&c.dev, VFIO_PCI_REQ_IRQ_INDEX,
					    &n, &flags));
		ASSERT_EQ(1, n);
		efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		ASSERT_LE(0, efd);
		ASSERT_EQ(0, vfio_irq_set_eventfds(&c.dev, VFIO_PCI_REQ_IRQ_INDEX,
						   0, 1, &efd));
	}

	t0 = nvme_now_ms();
	pid = remove_in_child();
	ASSERT_LT(0, pid);
	if (req) {
		struct pollfd p = { .fd = efd, .events = POLLIN };

		EXPECT_EQ(1, poll(&p, 1, REMOVE_MS)) {
			TH_LOG("no request interrupt within %u ms", REMOVE_MS);
		}
		EXPECT_EQ(sizeof(count), read(efd, &count, sizeof(count)));
		TH_LOG("request interrupt %llu ms after the removal began",
		       (unsigned long long)(nvme_now_ms() - t0));
	} else {
		usleep(500 * 1000);
	}
	/*
	 * The removal waits for the user (the mdev has left the bus at once:
	 * no new user finds it), and the device still works.
	 */
	EXPECT_EQ(-1, wait_child_ms(pid, 1000));
	EXPECT_FALSE(mdev_exists());
	EXPECT_EQ(0, client_recover_and_check(&c));

	t0 = nvme_now_ms();
	client_close(&c);
	status = wait_child_ms(pid, REMOVE_MS);
	if (status == -1) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) {
		TH_LOG("the removal did not complete within %u ms of the close (status %#x)",
		       REMOVE_MS, status);
	}
	TH_LOG("the removal completed %llu ms after the close",
	       (unsigned long long)(nvme_now_ms() - t0));
	EXPECT_FALSE(mdev_exists());
	if (efd >= 0)
		close(efd);

	/* The next user finds the mdev again. */
	if (!mdev_exists())
		ASSERT_EQ(0, mdev_create(type));
	ASSERT_TRUE(mdev_exists());
}

/*
 * The namespace disabled in configfs while commands to it are in flight:
 * each completes, with success or Internal Path Error; so do the next
 * ones (nvmet's status for a namespace that exists but is disabled: a
 * path error, without DNR, which a multipath host fails over and others
 * may retry), and an outstanding Asynchronous Event Request completes with
 * Namespace Attribute Changed; once enabled again the data is there.  The
 * namespace is the first of the subsystem that Identify's SUBNQN names.
 */
#define NS_INFLIGHT	32

TEST_F_TIMEOUT(lifecycle, ns_disabled_during_io, 120)
{
	unsigned int i, ok = 0, path = 0;
	struct nvme_cqe aer;
	int status;
	char enable[PATH_MAX + 512];
	struct nvme_ctrl *ctrl;
	struct nvme_dma w, r;
	struct client c;
	size_t bs;

	CLIENT_BRINGUP(&c, 1, 64, false);
	ctrl = &c.ctrl;
	if (!ctrl->nsid)
		SKIP(return, "no namespace");
	snprintf(enable, sizeof(enable),
		 "/sys/kernel/config/nvmet/subsystems/%.256s/namespaces/%u/enable",
		 ctrl->id.subnqn, ctrl->nsid);
	ASSERT_EQ(0, access(enable, W_OK)) {
		TH_LOG("%s: %s", enable, strerror(errno));
	}
	bs = 1UL << ctrl->lba_shift;
	ASSERT_EQ(0, nvme_dma_alloc(ctrl, NVME_PAGE_SIZE, &w));
	ASSERT_EQ(0, nvme_dma_alloc(ctrl, NVME_PAGE_SIZE, &r));
	pattern_fill(w.va, NVME_PAGE_SIZE, 0x5eed);
	ASSERT_OK(nvme_rw(ctrl, 1, nvme_cmd_write, 0, NVME_PAGE_SIZE / bs, &w, 0));

	/* Namespace Attribute Notices on, one AER outstanding. */
	ASSERT_OK(nvme_set_features(ctrl, NVME_FEAT_ASYNC_EVENT, 1 << 8, NULL));
	nvme_submit(ctrl, 0, &(struct nvme_sqe){ .opcode = nvme_admin_async_event });

	for (i = 0; i < NS_INFLIGHT; i++) {
		struct nvme_sqe sqe = {
			.opcode = nvme_cmd_read,
			.nsid = ctrl->nsid,
			.cdw12 = NVME_PAGE_SIZE / bs - 1,
		};

		ASSERT_EQ(0, nvme_build_prps(ctrl, &r, 0, NVME_PAGE_SIZE, &sqe));
		nvme_sq_push(ctrl, 1, &sqe, false);
	}
	nvme_sq_ring(ctrl, 1);
	ASSERT_EQ(0, host_write_file(enable, "0"));
	for (i = 0; i < NS_INFLIGHT; i++) {
		struct nvme_cqe cqe;

		ASSERT_EQ(0, nvme_cq_poll(ctrl, 1, &cqe, 10000)) {
			TH_LOG("%u of %u completions", i, NS_INFLIGHT);
		}
		if (nvme_sc(cqe.status >> 1) == NVME_SC_SUCCESS)
			ok++;
		else if (nvme_sc(cqe.status >> 1) == NVME_SC_INTERNAL_PATH_ERROR)
			path++;
	}
	TH_LOG("in flight at the disable: %u read, %u Internal Path Error", ok, path);
	EXPECT_EQ(NS_INFLIGHT, ok + path);
	status = nvme_rw(ctrl, 1, nvme_cmd_read, 0, 1, &r, 0);
	EXPECT_STATUS(NVME_SC_INTERNAL_PATH_ERROR, status);
	EXPECT_EQ(0, status & NVME_STATUS_DNR);
	ASSERT_EQ(0, nvme_cq_poll(ctrl, 0, &aer, 10000)) {
		TH_LOG("no asynchronous event for the disabled namespace");
	}
	EXPECT_EQ(0, aer.status >> 1);
	EXPECT_EQ(NVME_AER_NOTICE, aer.result & 7);
	EXPECT_EQ(NVME_AER_NOTICE_NS_CHANGED, (aer.result >> 8) & 0xff);
	EXPECT_EQ(NVME_LOG_CHANGED_NS, (aer.result >> 16) & 0xff);

	ASSERT_EQ(0, host_write_file(enable, "1"));
	memset(r.va, 0, NVME_PAGE_SIZE);
	EXPECT_OK(nvme_rw(ctrl, 1, nvme_cmd_read, 0, NVME_PAGE_SIZE / bs, &r, 0));
	EXPECT_EQ(-1, pattern_check(r.va, NVME_PAGE_SIZE, 0x5eed));
	nvme_dma_free(ctrl, &w);
	nvme_dma_free(ctrl, &r);
	client_close(&c);
}

/* Up to 2 x REMOVE_MS for the waits, and the recovery check. */
TEST_F_TIMEOUT(lifecycle, remove_while_open_signals_request, 180)
{
	remove_while_open(_metadata, true);
}

TEST_F_TIMEOUT(lifecycle, remove_while_open_without_request_eventfd, 180)
{
	remove_while_open(_metadata, false);
}

TEST_HARNESS_MAIN
