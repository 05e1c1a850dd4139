// SPDX-License-Identifier: GPL-2.0
/*
 * nvmet-mdev-perf: drive an nvmet-mdev controller from user space as a
 * polling driver would and report throughput and latency.  Not a test: it
 * is the tool behind the host-side benchmark and the doorbell wake-up
 * measurements.
 *
 *   perf [-b container|iommufd] [-d mmap|pwrite] [-S] [-q QUEUES]
 *        [-D DEPTH] [-s BYTES] [-t SECS] [-w] [-g GAP_US] UUID
 *
 * -d   doorbells through the mmap'ed page (default) or trapped pwrite
 * -S   use shadow doorbells (Doorbell Buffer Config)
 * -q   I/O queues (default 1), each with DEPTH commands in flight (1)
 * -s   transfer size (4096), random offsets in the first 64 MiB
 * -w   writes instead of reads
 * -g   sleep this long after each completion before the next submission
 *      (lets the queue thread go idle: measures the wake-up path)
 *
 * Output, one line: "iops=N mibps=N lat_us avg=N p50=N p99=N max=N
 * over100ms=N errors=N".  Exit status 1 on a command error or when a
 * command took longer than 10 s (a stall).
 */
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nvme.h"
#include "util.h"
#include "vfio.h"

#define STALL_NS	(10ull * 1000 * 1000 * 1000)
/*
 * Latency histogram, log-linear: each power of two of nanoseconds is split
 * into 8 buckets, so that a percentile is known to 12.5%.
 */
#define HIST_SUB_BITS	3
#define HIST_BUCKETS	(64 << HIST_SUB_BITS)

struct slot {
	struct nvme_dma	buf;
	uint64_t	start_ns;
};

struct perf {
	struct vfio_dev	dev;
	struct nvme_ctrl ctrl;
	struct rng	rng;
	unsigned int	queues, depth, bs, gap_us;
	bool		write, shadow;
	struct slot	*slots;		/* [queues * depth] */
	uint16_t	cid_slot[65536];
	uint64_t	hist[HIST_BUCKETS];
	uint64_t	ops, errors, over100ms, sum_ns, max_ns;
	uint64_t	span_lbas;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: perf [-b container|iommufd] [-d mmap|pwrite] [-S] [-q N] [-D N]\n"
		"            [-s BYTES] [-t SECS] [-w] [-g GAP_US] UUID\n");
	exit(2);
}

static int submit(struct perf *p, uint16_t qid, unsigned int idx)
{
	struct slot *s = &p->slots[idx];
	uint32_t nlb = p->bs >> p->ctrl.lba_shift;
	uint64_t slba = rng_below(&p->rng, p->span_lbas / nlb) * nlb;
	struct nvme_sqe sqe = {
		.opcode = p->write ? nvme_cmd_write : nvme_cmd_read,
		.nsid = p->ctrl.nsid,
		.cdw10 = (uint32_t)slba,
		.cdw11 = (uint32_t)(slba >> 32),
		.cdw12 = nlb - 1,
	};
	uint16_t cid;
	int ret;

	ret = nvme_build_prps(&p->ctrl, &s->buf, 0, p->bs, &sqe);
	if (ret)
		return ret;
	cid = nvme_sq_push(&p->ctrl, qid, &sqe, false);
	p->cid_slot[cid] = idx;
	s->start_ns = now_ns();
	return 0;
}

static unsigned int hist_bucket(uint64_t ns)
{
	unsigned int msb;

	if (ns < (1u << HIST_SUB_BITS))
		return ns;
	msb = 63 - __builtin_clzll(ns);
	return ((msb - HIST_SUB_BITS + 1) << HIST_SUB_BITS) +
		((ns >> (msb - HIST_SUB_BITS)) & ((1u << HIST_SUB_BITS) - 1));
}

/* The first nanosecond value beyond bucket @b. */
static uint64_t hist_upper(unsigned int b)
{
	unsigned int sub = b & ((1u << HIST_SUB_BITS) - 1);
	unsigned int shift = (b >> HIST_SUB_BITS) - 1;

	if (b < (1u << HIST_SUB_BITS))
		return b + 1;
	return ((uint64_t)(1u << HIST_SUB_BITS) + sub + 1) << shift;
}

static void account(struct perf *p, uint64_t ns)
{
	p->hist[hist_bucket(ns)]++;
	p->ops++;
	p->sum_ns += ns;
	if (ns > p->max_ns)
		p->max_ns = ns;
	if (ns > 100ull * 1000 * 1000)
		p->over100ms++;
}

/* Upper bound of the bucket holding the @pct percentile, in ns. */
static uint64_t percentile(struct perf *p, unsigned int pct)
{
	uint64_t want = (p->ops * pct + 99) / 100, seen = 0;
	unsigned int b;

	for (b = 0; b < HIST_BUCKETS; b++) {
		seen += p->hist[b];
		if (seen >= want && seen)
			return hist_upper(b);
	}
	return 0;
}

static int run(struct perf *p, unsigned int secs)
{
	uint64_t start = now_ns(), end = start + secs * 1000000000ull, t;
	unsigned int q, i;
	struct nvme_cqe cqe;

	for (q = 0; q < p->queues; q++) {
		for (i = 0; i < p->depth; i++)
			if (submit(p, q + 1, q * p->depth + i))
				return -EINVAL;
		nvme_sq_ring(&p->ctrl, q + 1);
	}
	for (;;) {
		bool done = now_ns() >= end, idle = true;
		unsigned int busy = 0;

		for (q = 0; q < p->queues; q++) {
			unsigned int resubmit = 0;

			while (nvme_cq_pending(&p->ctrl, q + 1)) {
				unsigned int idx;

				if (nvme_cq_poll(&p->ctrl, q + 1, &cqe, 0))
					break;
				t = now_ns();
				idx = p->cid_slot[cqe.cid];
				account(p, t - p->slots[idx].start_ns);
				p->slots[idx].start_ns = 0;
				if (cqe.status >> 1) {
					fprintf(stderr, "perf: status %s\n",
						nvme_status_str(cqe.status >> 1));
					p->errors++;
				}
				idle = false;
				if (done)
					continue;
				if (p->gap_us)
					usleep(p->gap_us);
				if (submit(p, q + 1, idx))
					return -EINVAL;
				resubmit++;
			}
			if (resubmit)
				nvme_sq_ring(&p->ctrl, q + 1);
		}
		t = now_ns();
		for (i = 0; i < p->queues * p->depth; i++) {
			if (!p->slots[i].start_ns)
				continue;
			busy++;
			if (t - p->slots[i].start_ns > STALL_NS) {
				fprintf(stderr,
					"perf: command on queue %u stalled for %llu ms\n",
					i / p->depth + 1,
					(unsigned long long)((t - p->slots[i].start_ns) / 1000000));
				return -ETIMEDOUT;
			}
		}
		if (done && !busy)
			break;
		if (idle)
			sched_yield();
	}
	return 0;
}

int main(int argc, char **argv)
{
	static struct perf perf;
	struct perf *p = &perf;
	enum vfio_binding binding;
	unsigned int secs = 5, i;
	double elapsed;
	uint64_t t0;
	int opt, ret;

	p->queues = 1;
	p->depth = 1;
	p->bs = 4096;
	while ((opt = getopt(argc, argv, "b:d:Sq:D:s:t:wg:")) != -1) {
		switch (opt) {
		case 'b':
			setenv("NVMET_MDEV_BINDING", optarg, 1);
			break;
		case 'd':
			setenv("NVMET_MDEV_DOORBELL", optarg, 1);
			break;
		case 'S':
			p->shadow = true;
			break;
		case 'q':
			p->queues = strtoul(optarg, NULL, 0);
			break;
		case 'D':
			p->depth = strtoul(optarg, NULL, 0);
			break;
		case 's':
			p->bs = strtoul(optarg, NULL, 0);
			break;
		case 't':
			secs = strtoul(optarg, NULL, 0);
			break;
		case 'w':
			p->write = true;
			break;
		case 'g':
			p->gap_us = strtoul(optarg, NULL, 0);
			break;
		default:
			usage();
		}
	}
	if (optind != argc - 1 || !p->queues || p->queues > 64 || !p->depth ||
	    p->depth > 1023 || !p->bs || p->bs % 4096 || p->bs > 1 << 20)
		usage();

	if (vfio_env_binding(&binding))
		usage();
	rng_seed(&p->rng, env_u64("NVMET_MDEV_SEED", 1));
	p->dev.device_fd = -1;
	p->dev.group_fd = -1;
	p->dev.container_fd = -1;
	p->dev.iommufd = -1;
	ret = vfio_open(&p->dev, argv[optind], binding);
	if (ret)
		return 1;
	ret = nvme_ctrl_init(&p->ctrl, &p->dev);
	if (!ret)
		ret = nvme_bringup(&p->ctrl, 32, p->queues, p->depth + 1, false);
	if (!ret && p->ctrl.nr_io_queues < p->queues)
		ret = -ENOSPC;
	if (!ret && p->shadow)
		ret = nvme_dbbuf_config(&p->ctrl);
	if (ret) {
		fprintf(stderr, "perf: bring-up failed: %d\n", ret);
		return 1;
	}
	if (p->ctrl.mdts_bytes && p->bs > p->ctrl.mdts_bytes)
		usage();
	p->span_lbas = p->ctrl.nsze;
	if (p->span_lbas > (64ull << 20) >> p->ctrl.lba_shift)
		p->span_lbas = (64ull << 20) >> p->ctrl.lba_shift;
	p->slots = calloc(p->queues * p->depth, sizeof(*p->slots));
	if (!p->slots)
		return 1;
	for (i = 0; i < p->queues * p->depth; i++)
		if (nvme_dma_alloc(&p->ctrl, p->bs, &p->slots[i].buf))
			return 1;

	t0 = now_ns();
	ret = run(p, secs);
	elapsed = (now_ns() - t0) / 1e9;
	printf("iops=%.0f mibps=%.1f lat_us avg=%llu p50=%llu p99=%llu max=%llu over100ms=%llu errors=%llu\n",
	       p->ops / elapsed, p->ops * (double)p->bs / elapsed / (1 << 20),
	       (unsigned long long)(p->ops ? p->sum_ns / p->ops / 1000 : 0),
	       (unsigned long long)(percentile(p, 50) / 1000),
	       (unsigned long long)(percentile(p, 99) / 1000),
	       (unsigned long long)(p->max_ns / 1000),
	       (unsigned long long)p->over100ms,
	       (unsigned long long)p->errors);
	nvme_disable(&p->ctrl);
	nvme_ctrl_fini(&p->ctrl);
	vfio_close(&p->dev);
	return ret || p->errors ? 1 : 0;
}
