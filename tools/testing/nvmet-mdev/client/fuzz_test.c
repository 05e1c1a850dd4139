// SPDX-License-Identifier: GPL-2.0
/*
 * Seeded fuzzer for nvmet-mdev: batches of valid and mutated I/O commands
 * on several queues, valid and mutated admin commands, register pokes and
 * now and then a disruptive action (controller reset, FLR, VFIO reset,
 * shutdown, an invalid doorbell, queue re-creation, shadow doorbells,
 * interrupt re-wiring).  Data written by valid commands is tracked per LBA
 * and every valid read is verified; mutated commands that may have
 * written invalidate what they may have touched.
 *
 * Failures: a command that never completes (without CSTS.CFS), CSTS.CFS
 * after anything but a disruptive action, a valid command that fails, a
 * data mismatch, a device that does not come back after a reset.
 *
 * Environment:
 *   NVMET_MDEV_FUZZ_SEED   seed (default: time; always printed)
 *   NVMET_MDEV_FUZZ_CMDS   command budget (default 20000)
 *   NVMET_MDEV_FUZZ_SECS   time budget in seconds (default 600)
 */
#include <sys/eventfd.h>

#include <linux/pci_regs.h>

#include "kselftest_harness.h"
#include "client.h"

#define FUZZ_QUEUES	4
#define FUZZ_DEPTH	32
#define FUZZ_BATCH	8
#define FUZZ_MAX_LBAS	2048	/* verified region */
#define FUZZ_BUF	(1u << 20)
#define FUZZ_TIMEOUT_MS	10000

struct fuzz {
	struct client	*c;
	struct nvme_ctrl *ctrl;
	struct rng	rng;
	uint64_t	seed;
	uint64_t	*tag;		/* per LBA: expected pattern, 0 unknown */
	uint64_t	nlbas;		/* verified region size */
	uint32_t	max_nlb;	/* per command */
	uint64_t	gen;
	struct nvme_dma	data;		/* per batch slot: FUZZ_BUF / FUZZ_BATCH */
	struct nvme_dma	admin_buf;
	/* statistics */
	unsigned long	cmds, valid, mutated, admin, pokes, resets, errors;
	unsigned long	cfs_after_reset;
	unsigned long	slow;		/* batches that took over a second */
	bool		sgl;
};

struct slot {
	struct nvme_sqe	sqe;
	uint16_t	qid;
	uint16_t	cid;
	bool		valid;		/* expect success (and verify reads) */
	bool		done;
	int		status;
	uint64_t	slba;		/* of a valid command */
	uint32_t	nlb;
	size_t		off;		/* data offset in the slot's buffer */
};

static uint64_t fuzz_timeout(void)
{
	return env_u64("NVMET_MDEV_FUZZ_SECS", 600) + 300;
}

FIXTURE(fuzz) {
	struct client c;
	struct fuzz f;
};

FIXTURE_SETUP(fuzz)
{
	struct fuzz *f = &self->f;

	CLIENT_BRINGUP(&self->c, FUZZ_QUEUES, FUZZ_DEPTH, true);
	if (!self->c.ctrl.nsid)
		SKIP(return, "no namespace");
	memset(f, 0, sizeof(*f));
	f->c = &self->c;
	f->ctrl = &self->c.ctrl;
	f->seed = env_u64("NVMET_MDEV_FUZZ_SEED", nvme_now_ms() ^ getpid());
	rng_seed(&f->rng, f->seed);
	f->nlbas = f->ctrl->nsze < FUZZ_MAX_LBAS ? f->ctrl->nsze : FUZZ_MAX_LBAS;
	f->tag = calloc(f->nlbas, sizeof(*f->tag));
	ASSERT_NE(NULL, f->tag);
	f->max_nlb = (FUZZ_BUF / FUZZ_BATCH) >> f->ctrl->lba_shift;
	if (f->ctrl->mdts_bytes &&
	    f->max_nlb > f->ctrl->mdts_bytes >> f->ctrl->lba_shift)
		f->max_nlb = f->ctrl->mdts_bytes >> f->ctrl->lba_shift;
	if (f->max_nlb > 64)
		f->max_nlb = 64;
	if (f->max_nlb > f->nlbas)
		f->max_nlb = f->nlbas;
	f->sgl = (f->ctrl->id.sgls & NVME_CTRL_SGLS_SUPP_MASK) != 0;
	ASSERT_EQ(0, nvme_dma_alloc(f->ctrl, FUZZ_BUF + NVME_PAGE_SIZE, &f->data));
	ASSERT_EQ(0, nvme_dma_alloc(f->ctrl, NVME_PAGE_SIZE, &f->admin_buf));
}

FIXTURE_TEARDOWN(fuzz)
{
	free(self->f.tag);
	client_close(&self->c);
}

/* NVMET_MDEV_FUZZ_VERBOSE=1: trace every non-I/O step on stderr. */
static bool verbose;

#define trace(f, fmt, ...) do {						\
	if (verbose)							\
		fprintf(stderr, "#      [%lu cmds] " fmt "\n", (f)->cmds,	\
			##__VA_ARGS__);					\
} while (0)

static uint64_t rnd(struct fuzz *f, uint64_t n)
{
	return rng_below(&f->rng, n);
}

static uint64_t new_tag(struct fuzz *f, uint64_t lba)
{
	return (1ull << 63) | (++f->gen << 24) | (lba & 0xffffff);
}

static void invalidate(struct fuzz *f, uint64_t slba, uint64_t nlb)
{
	uint64_t i;

	for (i = slba; i < slba + nlb && i < f->nlbas; i++)
		f->tag[i] = 0;
}

static void dump_sqe(const struct nvme_sqe *s)
{
	const uint32_t *d = (const void *)s;
	int i;

	fprintf(stderr, "#      SQE:");
	for (i = 0; i < 16; i++)
		fprintf(stderr, " %08x", d[i]);
	fprintf(stderr, "\n");
}

/* ---- Building commands ---- */

static void *slot_buf(struct fuzz *f, unsigned int i, uint64_t *iova)
{
	size_t per = FUZZ_BUF / FUZZ_BATCH;

	*iova = f->data.iova + i * per;
	return (char *)f->data.va + i * per;
}

/* A valid read or write of a range no other command in the batch uses. */
static bool build_valid_rw(struct fuzz *f, struct slot *s, unsigned int idx,
			   uint8_t *busy)
{
	struct nvme_ctrl *ctrl = f->ctrl;
	bool write = rnd(f, 2);
	uint32_t nlb = 1 + rnd(f, f->max_nlb);
	uint64_t slba, i, iova;
	size_t per = FUZZ_BUF / FUZZ_BATCH, len;
	struct nvme_dma win;
	char *buf;
	int tries;

	for (tries = 0; tries < 8; tries++) {
		slba = rnd(f, f->nlbas - nlb + 1);
		for (i = 0; i < nlb && !busy[slba + i]; i++)
			;
		if (i == nlb)
			break;
	}
	if (tries == 8)
		return false;
	memset(busy + slba, 1, nlb);
	len = (size_t)nlb << ctrl->lba_shift;
	/* A dword-aligned offset, keeping the transfer inside the slot. */
	s->off = rnd(f, (per - len) / 4 + 1) * 4;
	if (s->off > NVME_PAGE_SIZE * 2)
		s->off %= NVME_PAGE_SIZE * 2;
	buf = slot_buf(f, idx, &iova);
	win = (struct nvme_dma){ .va = buf, .iova = iova, .size = per };
	s->sqe = (struct nvme_sqe){
		.opcode = write ? nvme_cmd_write : nvme_cmd_read,
		.nsid = ctrl->nsid,
		.cdw10 = (uint32_t)slba,
		.cdw11 = (uint32_t)(slba >> 32),
		.cdw12 = nlb - 1,
	};
	if (write) {
		for (i = 0; i < nlb; i++) {
			uint64_t t = new_tag(f, slba + i);

			pattern_fill(buf + s->off + (i << ctrl->lba_shift),
				     1u << ctrl->lba_shift, t);
			f->tag[slba + i] = t;
		}
	} else {
		memset(buf + s->off, 0, len);
	}
	if (f->sgl && rnd(f, 3) == 0)
		nvme_build_sgl(ctrl, &win, s->off, len, 1u << rnd(f, 3), &s->sqe);
	else
		nvme_build_prps(ctrl, &win, s->off, len, &s->sqe);
	s->valid = true;
	s->slba = slba;
	s->nlb = nlb;
	return true;
}

static bool io_opcode_excluded(uint8_t op)
{
	/* Reservations could lock us out of our own namespace. */
	return op == nvme_cmd_resv_register || op == nvme_cmd_resv_acquire ||
	       op == nvme_cmd_resv_release;
}

/* Mutate a command: the result may or may not be valid. */
static void mutate(struct fuzz *f, struct nvme_sqe *sqe, bool admin)
{
	uint32_t *dw = (uint32_t *)sqe;
	unsigned int n = 1 + rnd(f, 3), i;

	for (i = 0; i < n; i++) {
		switch (rnd(f, 12)) {
		case 0:		/* flip a bit in CDW0 (not the CID), NSID or CDW10-15 */
		case 1: {
			static const unsigned int dws[] = { 0, 1, 10, 11, 12, 13, 14, 15 };
			unsigned int d = dws[rnd(f, 8)];
			unsigned int bit = rnd(f, d == 0 ? 16 : 32);

			dw[d] ^= 1u << bit;
			break;
		}
		case 2:
			sqe->nsid = (uint32_t[]){ 0, 0xffffffff, 0xfffffffe,
						  f->ctrl->nsid + 1 }[rnd(f, 4)];
			break;
		case 3: {	/* boundary LBAs */
			uint64_t lba = (uint64_t[]){ f->ctrl->nsze - 1,
				f->ctrl->nsze, ~0ull, 1ull << 32 }[rnd(f, 4)];

			sqe->cdw10 = (uint32_t)lba;
			sqe->cdw11 = (uint32_t)(lba >> 32);
			break;
		}
		case 4:		/* NLB: 0's based, big */
			sqe->cdw12 = (sqe->cdw12 & ~0xffffu) |
				(uint32_t[]){ 0xffff, 0x7fff, f->max_nlb,
					      (f->ctrl->mdts_bytes >> f->ctrl->lba_shift) }[rnd(f, 4)];
			break;
		case 5:		/* PRP1 into the void / unaligned / zero */
			sqe->prp1 = (uint64_t[]){ 0, 1, nvme_iova_hole(f->ctrl, 4096),
				f->data.iova + 2, rng_next(&f->rng) }[rnd(f, 5)];
			break;
		case 6:		/* PRP2 likewise */
			sqe->prp2 = (uint64_t[]){ 0, 8, nvme_iova_hole(f->ctrl, 4096),
				f->data.iova + 0x804, rng_next(&f->rng) }[rnd(f, 5)];
			break;
		case 7: {	/* PRP2 = a list page of garbage */
			uint64_t iova;
			void *p = nvme_pool_page(f->ctrl, &iova);

			rng_fill(&f->rng, p, NVME_PAGE_SIZE);
			sqe->prp2 = iova + (rnd(f, 512) << 3);
			break;
		}
		case 8:		/* PSDT */
			sqe->flags = (sqe->flags & ~0xc0) | (rnd(f, 4) << 6);
			break;
		case 9:		/* any opcode */
			sqe->opcode = rnd(f, 2) ? rnd(f, 256) : rnd(f, 0x20);
			break;
		case 10:	/* reserved dwords */
			sqe->cdw2 = rng_next(&f->rng);
			sqe->cdw3 = rng_next(&f->rng);
			sqe->mptr = rng_next(&f->rng);
			break;
		default:	/* CDW13-15: DSM attributes, PI, etc. */
			sqe->cdw13 = rng_next(&f->rng);
			sqe->cdw14 = rng_next(&f->rng);
			sqe->cdw15 = rng_next(&f->rng);
			break;
		}
	}
	sqe->flags &= 0xc0;	/* no fused operations */
	if (!admin && io_opcode_excluded(sqe->opcode))
		sqe->opcode = nvme_cmd_read;
}

/* Whether a command that succeeded may have changed data in the region. */
static void account_write(struct fuzz *f, const struct nvme_sqe *sqe)
{
	uint64_t slba = sqe->cdw10 | (uint64_t)sqe->cdw11 << 32;
	uint64_t nlb = (sqe->cdw12 & 0xffff) + 1;

	switch (sqe->opcode) {
	case nvme_cmd_read:
	case nvme_cmd_flush:
	case nvme_cmd_compare:
	case nvme_cmd_verify:
		return;
	case nvme_cmd_write:
	case nvme_cmd_write_zeroes:
	case nvme_cmd_write_uncor:
		invalidate(f, slba, nlb);
		return;
	default:	/* DSM, Copy, anything else: be conservative */
		invalidate(f, 0, f->nlbas);
	}
}

/* ---- Running a batch ---- */

static int run_batch(struct __test_metadata *_metadata, struct fuzz *f,
		     struct slot *slots, unsigned int n)
{
	struct nvme_ctrl *ctrl = f->ctrl;
	uint64_t deadline, start;
	unsigned int i, left = n;
	bool rung[NVME_MAX_QUEUES] = { false };

	for (i = 0; i < n; i++) {
		slots[i].cid = nvme_sq_push(ctrl, slots[i].qid, &slots[i].sqe, false);
		slots[i].sqe.cid = slots[i].cid;
		slots[i].done = false;
		rung[slots[i].qid] = true;
	}
	for (i = 0; i < NVME_MAX_QUEUES; i++)
		if (rung[i])
			nvme_sq_ring(ctrl, i);
	f->cmds += n;

	start = nvme_now_ms();
	deadline = start + FUZZ_TIMEOUT_MS;
	while (left) {
		bool progress = false;

		for (i = 1; i < NVME_MAX_QUEUES; i++) {
			struct nvme_cqe cqe;
			unsigned int j;

			if (!rung[i] || !nvme_cq_pending(ctrl, i))
				continue;
			if (nvme_cq_poll(ctrl, i, &cqe, 0))
				continue;
			progress = true;
			for (j = 0; j < n; j++) {
				if (!slots[j].done && slots[j].cid == cqe.cid &&
				    slots[j].qid == cqe.sq_id)
					break;
			}
			if (j == n) {
				TH_LOG("stray completion sq %u cid %u", cqe.sq_id,
				       cqe.cid);
				continue;
			}
			slots[j].done = true;
			slots[j].status = cqe.status >> 1;
			left--;
		}
		if (progress)
			continue;
		if (nvme_now_ms() > deadline) {
			for (i = 0; i < n; i++) {
				if (slots[i].done)
					continue;
				TH_LOG("seed %llu: command on SQ %u never completed (CSTS %#x)",
				       (unsigned long long)f->seed, slots[i].qid,
				       nvme_read32(ctrl, NVME_REG_CSTS));
				dump_sqe(&slots[i].sqe);
			}
			return -ETIMEDOUT;
		}
		usleep(20);
	}
	if (nvme_now_ms() - start > 1000) {
		f->slow++;
		TH_LOG("slow batch: %u commands took %llu ms (dbbuf %d)", n,
		       (unsigned long long)(nvme_now_ms() - start),
		       ctrl->dbbuf_on);
		for (i = 0; i < n; i++)
			dump_sqe(&slots[i].sqe);
	}
	return 0;
}

static void check_batch(struct __test_metadata *_metadata, struct fuzz *f,
			struct slot *slots, unsigned int n)
{
	struct nvme_ctrl *ctrl = f->ctrl;
	unsigned int i;
	uint64_t b;

	for (i = 0; i < n; i++) {
		struct slot *s = &slots[i];
		uint64_t iova;
		char *buf = slot_buf(f, i, &iova);

		if (!s->valid) {
			if (s->status == 0)
				account_write(f, &s->sqe);
			else
				f->errors++;
			continue;
		}
		EXPECT_EQ(0, s->status) {
			TH_LOG("seed %llu: valid %s slba %llu nlb %u: %s",
			       (unsigned long long)f->seed,
			       s->sqe.opcode == nvme_cmd_write ? "write" : "read",
			       (unsigned long long)s->slba, s->nlb,
			       nvme_status_str(s->status));
			dump_sqe(&s->sqe);
		}
		if (s->status) {
			/* A failed write leaves the range unknown. */
			if (s->sqe.opcode == nvme_cmd_write)
				invalidate(f, s->slba, s->nlb);
			continue;
		}
		if (s->sqe.opcode != nvme_cmd_read)
			continue;
		for (b = 0; b < s->nlb; b++) {
			uint64_t t = f->tag[s->slba + b];
			long d;

			if (!t)
				continue;
			d = pattern_check(buf + s->off + (b << ctrl->lba_shift),
					  1u << ctrl->lba_shift, t);
			EXPECT_EQ(-1, d) {
				TH_LOG("seed %llu: LBA %llu differs at byte %ld",
				       (unsigned long long)f->seed,
				       (unsigned long long)(s->slba + b), d);
			}
		}
	}
}

static void io_batch(struct __test_metadata *_metadata, struct fuzz *f)
{
	struct slot slots[FUZZ_BATCH];
	uint8_t busy[FUZZ_MAX_LBAS];
	unsigned int queued[NVME_MAX_QUEUES] = { 0 };
	unsigned int n = 1 + rnd(f, FUZZ_BATCH), i, k = 0;
	int ret;

	memset(busy, 0, sizeof(busy));
	for (i = 0; i < n; i++) {
		struct slot *s = &slots[k];

		memset(s, 0, sizeof(*s));
		s->qid = 1 + rnd(f, f->ctrl->nr_io_queues);
		/*
		 * An SQ of N entries holds N - 1 commands: one more makes the
		 * tail catch up with the head, and the queue looks empty.
		 * Queues re-created by disrupt_step() may be as small as 2.
		 */
		if (queued[s->qid] + 1 >= f->ctrl->sq[s->qid].depth)
			continue;
		switch (rnd(f, 10)) {
		case 0:
			s->sqe = (struct nvme_sqe){ .opcode = nvme_cmd_flush,
						    .nsid = f->ctrl->nsid };
			s->valid = true;
			f->valid++;
			break;
		case 1:
		case 2:		/* mutated: base it on a valid command */
			if (!build_valid_rw(f, s, k, busy))
				continue;
			if (s->sqe.opcode == nvme_cmd_write)
				invalidate(f, s->slba, s->nlb);
			mutate(f, &s->sqe, false);
			s->valid = false;
			f->mutated++;
			break;
		default:
			if (!build_valid_rw(f, s, k, busy))
				continue;
			f->valid++;
			break;
		}
		queued[s->qid]++;
		k++;
	}
	if (!k)
		return;
	/*
	 * Mutated commands may write anywhere in the region, so reads in
	 * the same batch are only verified when no mutation is present.
	 */
	for (i = 0; i < k; i++)
		if (!slots[i].valid)
			break;
	if (i < k) {
		for (i = 0; i < k; i++)
			if (slots[i].valid && slots[i].sqe.opcode == nvme_cmd_write)
				invalidate(f, slots[i].slba, slots[i].nlb);
	}
	ret = run_batch(_metadata, f, slots, k);
	ASSERT_EQ(0, ret);
	if (i < k) {
		/* Verify nothing, just account. */
		unsigned int j;

		for (j = 0; j < k; j++) {
			if (slots[j].status == 0 && !slots[j].valid)
				account_write(f, &slots[j].sqe);
			if (slots[j].valid && slots[j].status) {
				EXPECT_EQ(0, slots[j].status) {
					TH_LOG("seed %llu: valid command failed: %s",
					       (unsigned long long)f->seed,
					       nvme_status_str(slots[j].status));
					dump_sqe(&slots[j].sqe);
				}
			}
		}
		return;
	}
	check_batch(_metadata, f, slots, k);
}

static void admin_step(struct __test_metadata *_metadata, struct fuzz *f)
{
	struct nvme_ctrl *ctrl = f->ctrl;
	struct nvme_sqe sqe = { .prp1 = f->admin_buf.iova };
	bool valid = rnd(f, 2);
	int st;

	switch (rnd(f, 4)) {
	case 0:
		sqe.opcode = nvme_admin_identify;
		sqe.cdw10 = (uint8_t[]){ 0, 1, 2, 3, 5, 6, 8 }[rnd(f, 7)];
		sqe.nsid = sqe.cdw10 == 1 || sqe.cdw10 == 6 ? 0 : ctrl->nsid;
		if (sqe.cdw10 == 2)
			sqe.nsid = 0;
		break;
	case 1: {
		/* Log pages and the lengths nvmet serves them with. */
		static const struct { uint8_t lid; uint32_t len; } logs[] = {
			{ NVME_LOG_ERROR, 64 }, { NVME_LOG_ERROR, 4096 },
			{ NVME_LOG_SMART, 512 }, { NVME_LOG_FW_SLOT, 512 },
			{ NVME_LOG_CHANGED_NS, 4096 }, { NVME_LOG_CMD_EFFECTS, 4096 },
			{ NVME_LOG_SUPPORTED, 1024 },
		};
		unsigned int l = rnd(f, sizeof(logs) / sizeof(logs[0]));

		sqe.opcode = nvme_admin_get_log_page;
		sqe.nsid = 0xffffffff;
		sqe.cdw10 = logs[l].lid | ((logs[l].len / 4 - 1) << 16);
		break;
	}
	case 2:
		sqe.opcode = nvme_admin_get_features;
		sqe.cdw10 = (uint8_t[]){ 1, 6, 7, 8, 0x0b }[rnd(f, 5)];
		break;
	default:
		sqe.opcode = nvme_admin_set_features;
		sqe.cdw10 = (uint8_t[]){ 1, 8, 0x0b }[rnd(f, 3)];
		sqe.cdw11 = sqe.cdw10 == 0x0b ? 0 : (uint32_t)rnd(f, 1u << 16);
		break;
	}
	if (!valid) {
		mutate(f, &sqe, true);
		/* Not these: they change the rules under the fuzzer's feet. */
		if (sqe.opcode == nvme_admin_async_event ||
		    sqe.opcode == nvme_admin_dbbuf ||
		    sqe.opcode == 0x7f)
			sqe.opcode = nvme_admin_get_features;
		if (sqe.opcode == nvme_admin_set_features &&
		    ((sqe.cdw10 & 0xff) == NVME_FEAT_KATO ||
		     (sqe.cdw10 & 0xff) == NVME_FEAT_WRITE_PROTECT))
			sqe.cdw10 = NVME_FEAT_ARBITRATION;
		if ((sqe.opcode == nvme_admin_delete_sq ||
		     sqe.opcode == nvme_admin_delete_cq ||
		     sqe.opcode == nvme_admin_create_sq ||
		     sqe.opcode == nvme_admin_create_cq) &&
		    (sqe.cdw10 & 0xffff) <= NVMET_MDEV_MAX_IO_QUEUES)
			sqe.cdw10 = (sqe.cdw10 & ~0xffffu) | 0xfffe;
	}
	f->admin++;
	f->cmds++;
	st = nvme_exec_timeout(ctrl, 0, &sqe, NULL, FUZZ_TIMEOUT_MS);
	trace(f, "admin %s opcode %#x cdw10 %#x: %s", valid ? "valid" : "mutated",
	      sqe.opcode, sqe.cdw10, nvme_status_str(st));
	ASSERT_GE(st, 0) {
		TH_LOG("seed %llu: admin command: %s (CSTS %#x)",
		       (unsigned long long)f->seed, nvme_status_str(st),
		       nvme_read32(ctrl, NVME_REG_CSTS));
		dump_sqe(&sqe);
	}
	if (valid) {
		EXPECT_EQ(0, st) {
			TH_LOG("seed %llu: valid admin command: %s",
			       (unsigned long long)f->seed, nvme_status_str(st));
			dump_sqe(&sqe);
		}
	} else if (st) {
		f->errors++;
	}
}

static void poke_step(struct fuzz *f)
{
	struct nvme_ctrl *ctrl = f->ctrl;
	static const uint32_t regs[] = {
		NVME_REG_CAP, NVME_REG_CAP + 4, NVME_REG_VS, NVME_REG_CSTS,
		NVME_REG_NSSR, NVME_REG_CMBLOC, NVME_REG_CMBSZ, NVME_REG_BPINFO,
		0x48, 0x4c, NVME_REG_CMBMSC, 0x58, 0x5c, 0x60, 0x100, 0xe00,
		0xe04, 0xe08, 0xffc,
	};
	uint32_t off;

	f->pokes++;
	if (rnd(f, 2)) {
		off = regs[rnd(f, sizeof(regs) / sizeof(regs[0]))];
		trace(f, "poke register %#x", off);
		if (off == NVME_REG_NSSR)	/* never "NVMe" */
			nvme_write32(ctrl, off, (uint32_t)rng_next(&f->rng) | 1);
		else
			nvme_write32(ctrl, off, rng_next(&f->rng));
	} else {
		/* Doorbells of queues that do not exist (trapped path). */
		uint16_t q = ctrl->nr_io_queues + 1 +
			rnd(f, NVME_MAX_QUEUES - 1 - ctrl->nr_io_queues);

		bool cq = rnd(f, 2);
		uint32_t v = rng_next(&f->rng);

		trace(f, "poke %s doorbell of queue %u: %#x", cq ? "CQ" : "SQ", q, v);
		nvme_write32(ctrl, nvme_db_offset(ctrl, q, cq), v);
	}
	nvme_read32(ctrl, rnd(f, 0x1000) & ~3u);
}

static void bringup(struct __test_metadata *_metadata, struct fuzz *f,
		    const char *why)
{
	int ret;

	f->resets++;
	ret = nvme_bringup(f->ctrl, CLIENT_AQ_DEPTH, FUZZ_QUEUES, FUZZ_DEPTH,
			   true);
	ASSERT_EQ(0, ret) {
		TH_LOG("seed %llu: no recovery after %s: %s (CSTS %#x)",
		       (unsigned long long)f->seed, why, nvme_status_str(ret),
		       nvme_read32(f->ctrl, NVME_REG_CSTS));
	}
}

static void disrupt_step(struct __test_metadata *_metadata, struct fuzz *f)
{
	struct nvme_ctrl *ctrl = f->ctrl;
	struct vfio_dev *dev = &f->c->dev;
	uint16_t exp;
	unsigned int what = rnd(f, 8);

	trace(f, "disruptive action %u", what);
	switch (what) {
	case 0:
		nvme_write32(ctrl, NVME_REG_CC, 0);
		nvme_wait_ready(ctrl, false);
		bringup(_metadata, f, "CC.EN = 0");
		break;
	case 1:
		exp = vfio_cfg_find_cap(dev, PCI_CAP_ID_EXP);
		vfio_cfg_write16(dev, exp + PCI_EXP_DEVCTL,
				 vfio_cfg_read16(dev, exp + PCI_EXP_DEVCTL) |
				 PCI_EXP_DEVCTL_BCR_FLR);
		usleep(10 * 1000);
		nvme_irq_teardown(ctrl);
		bringup(_metadata, f, "FLR");
		break;
	case 2:
		vfio_reset(dev);
		nvme_irq_teardown(ctrl);
		bringup(_metadata, f, "VFIO_DEVICE_RESET");
		break;
	case 3:
		nvme_shutdown(ctrl);
		bringup(_metadata, f, "shutdown");
		break;
	case 4:		/* an invalid doorbell value on a live queue */
		nvme_ring_sq(ctrl, 1 + rnd(f, ctrl->nr_io_queues),
			     FUZZ_DEPTH + rnd(f, 1000));
		usleep(1000);
		bringup(_metadata, f, "an invalid doorbell");
		break;
	case 5: {	/* delete and re-create a queue pair */
		uint16_t q = 1 + rnd(f, ctrl->nr_io_queues);

		EXPECT_OK(nvme_delete_sq(ctrl, q));
		EXPECT_OK(nvme_delete_cq(ctrl, q));
		EXPECT_OK(nvme_create_cq(ctrl, q, 2 + rnd(f, FUZZ_DEPTH - 1),
					 true, q % ctrl->nr_vectors));
		EXPECT_OK(nvme_create_sq(ctrl, q, 2 + rnd(f, FUZZ_DEPTH - 1), q));
		f->cmds += 4;
		break;
	}
	case 6:		/* shadow doorbells on, until the next reset */
		if (ctrl->id.oacs & NVME_CTRL_OACS_DBBUF_SUPP) {
			EXPECT_OK(nvme_dbbuf_config(ctrl));
			f->cmds++;
		}
		break;
	default:	/* re-wire the interrupts */
		EXPECT_EQ(0, nvme_irq_setup(ctrl, ctrl->nr_vectors));
		break;
	}
}

TEST_F_TIMEOUT(fuzz, mixed, fuzz_timeout())
{
	struct fuzz *f = &self->f;
	uint64_t budget = env_u64("NVMET_MDEV_FUZZ_CMDS", 20000);
	uint64_t secs = env_u64("NVMET_MDEV_FUZZ_SECS", 600);
	uint64_t start = nvme_now_ms(), last = start;
	unsigned long step = 0;

	verbose = env_u64("NVMET_MDEV_FUZZ_VERBOSE", 0);

	TH_LOG("seed %llu (NVMET_MDEV_FUZZ_SEED=%llu reproduces), budget %llu commands / %llu s, %llu LBAs tracked",
	       (unsigned long long)f->seed, (unsigned long long)f->seed,
	       (unsigned long long)budget, (unsigned long long)secs,
	       (unsigned long long)f->nlbas);
	while (f->cmds < budget && nvme_now_ms() - start < secs * 1000) {
		unsigned int r = rnd(f, 1000);
		uint32_t csts;

		step++;
		if (r < 900)
			io_batch(_metadata, f);
		else if (r < 970)
			admin_step(_metadata, f);
		else if (r < 995)
			poke_step(f);
		else
			disrupt_step(_metadata, f);
		if (_metadata->exit_code == KSFT_FAIL && !env_u64("NVMET_MDEV_FUZZ_KEEP_GOING", 0))
			break;
		csts = nvme_read32(f->ctrl, NVME_REG_CSTS);
		if (csts & NVME_CSTS_CFS) {
			EXPECT_EQ(0, csts & NVME_CSTS_CFS) {
				TH_LOG("seed %llu: CSTS.CFS after step %lu",
				       (unsigned long long)f->seed, step);
			}
			bringup(_metadata, f, "CFS");
		}
		if (nvme_now_ms() - last > 30000) {
			last = nvme_now_ms();
			TH_LOG("%lu commands, %lu s", f->cmds,
			       (unsigned long)((last - start) / 1000));
		}
	}
	TH_LOG("seed %llu: %lu commands (%lu valid I/O, %lu mutated I/O, %lu admin), %lu error statuses, %lu register pokes, %lu resets, %lu slow batches, %lu steps in %llu s",
	       (unsigned long long)f->seed, f->cmds, f->valid, f->mutated,
	       f->admin, f->errors, f->pokes, f->resets, f->slow, step,
	       (unsigned long long)(nvme_now_ms() - start) / 1000);
	if (f->cmds < budget)
		TH_LOG("time budget ran out before the command budget (%lu of %llu)",
		       f->cmds, (unsigned long long)budget);
	/* The device is still fine. */
	ASSERT_EQ(0, client_recover_and_check(f->c));
}

TEST_HARNESS_MAIN
