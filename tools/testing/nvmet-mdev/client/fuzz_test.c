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
 * The security review's triggers are mutations too: reads into distinct
 * unmapped 2 MiB chunks far above RAM (an IOVA sweep), invalid CQ heads and
 * SQ tails while completions are parked on a full CQ, Doorbell Buffer
 * Config while I/O completes, a DMA unmap of a buffer in the same 2 MiB
 * chunk as a live ring, Delete SQ while another thread consumes the
 * completions of a CQ two SQs share, and a CQ ring in a mapping that ends
 * at 2^64 (after its unmap, the device must not write there).  Register,
 * doorbell and config space writes are counted apart from commands.
 *
 * Failures: a command that never completes (without CSTS.CFS), CSTS.CFS
 * after anything but a disruptive action, a valid command that fails, a
 * data mismatch, a device that does not come back after a reset, a
 * completion written to a ring after its IOVA was unmapped, and a run that
 * ends (time budget) before its command or write budget is reached.
 *
 * After the run, four host budgets are results of their own (host.*): the
 * kernel memory grown while the controller is still enabled (after a last
 * sweep of FUZZ_FINAL_SWEEP reads into unmapped chunks), the CPU time of
 * the mdev threads over 2 s with the controller enabled, no I/O and bad
 * doorbells left behind, the pinned/locked pages of this process after
 * the close (type1 accounts mdev pins in VmLck, iommufd in VmPin), and the
 * kernel log records of the whole run.
 *
 * Environment:
 *   NVMET_MDEV_FUZZ_SEED   seed (default: time; always printed)
 *   NVMET_MDEV_FUZZ_CMDS   command budget (default 20000)
 *   NVMET_MDEV_FUZZ_WRITES register/doorbell/config write budget (default 2000)
 *   NVMET_MDEV_FUZZ_SECS   time budget in seconds (default 600)
 */
#include <pthread.h>
#include <sys/eventfd.h>
#include <sys/mman.h>

#include <linux/pci_regs.h>

#include "kselftest_harness.h"
#include "client.h"
#include "host.h"

#define FUZZ_QUEUES	4
#define FUZZ_DEPTH	32
#define FUZZ_BATCH	8
#define FUZZ_MAX_LBAS	2048	/* verified region */
#define FUZZ_BUF	SZ_1M
#define FUZZ_TIMEOUT_MS	10000
#define FUZZ_SLOTS	(FUZZ_QUEUES * FUZZ_DEPTH)

/* IOVA sweeps: distinct 2 MiB chunks far above any RAM. */
#define FUZZ_VOID_BASE	BIT_ULL(45)
#define FUZZ_CHUNK	(2ull << 20)
/* The last sweep before the memory budget: 32 MiB of chunk arrays if kept. */
#define FUZZ_FINAL_SWEEP 8192

/* Host budgets (see the top of the file). */
#define FUZZ_MEM_BUDGET_KB	(16 * 1024)
#define FUZZ_IDLE_CPU_MS	2000
#define FUZZ_IDLE_CPU_BUDGET_MS	200
#define FUZZ_KMSG_BUDGET	200

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
	/* random writes, apart from commands */
	unsigned long	reg_writes, db_writes, cfg_writes;
	/* the review's triggers */
	unsigned long	voids;		/* commands into unmapped chunks */
	uint64_t	void_chunk;	/* next chunk of the sweep */
	unsigned long	parked_bad_db, dbbc_in_flight, neighbour_unmaps;
	unsigned long	shared_cq_deletes, top_iova, top_iova_refused;
	uint16_t	pm_cap, exp_cap;
	bool		sgl;
	/* where the time goes: I/O, admin, writes, each disruptive action */
	uint64_t	ms_io, ms_admin, ms_poke, ms_disrupt[14];
	unsigned long	nr_disrupt[14];
};

static unsigned long fuzz_writes(const struct fuzz *f)
{
	return f->reg_writes + f->db_writes + f->cfg_writes;
}

/*
 * What the fuzz run measured, for the host.* results that follow it.  Each
 * test runs in its own child process: this page is shared with all of them.
 */
struct fuzz_report {
	bool		mem_done, cpu_done, pins_done, kmsg_done;
	int64_t		kmalloc_kb, unreclaim_kb;
	uint64_t	idle_cpu_ms;
	int64_t		vm_locked_kb, vm_pinned_kb;
	uint64_t	vm_locked_open_kb, vm_pinned_open_kb;
	uint64_t	kmsg, kmsg_seq;
	const char	*binding;
};

static struct fuzz_report *report;

static void __attribute__((constructor)) report_init(void)
{
	void *p = mmap(NULL, sizeof(*report), PROT_READ | PROT_WRITE,
		       MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	report = p == MAP_FAILED ? NULL : p;
}

struct slot {
	struct nvme_sqe	sqe;
	uint16_t	qid;
	uint16_t	cid;
	bool		valid;		/* expect success (and verify reads) */
	bool		harmless;	/* not valid, but cannot write data */
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
	struct host_snap before;	/* before the open */
	bool snapped;
};

FIXTURE_SETUP(fuzz)
{
	struct fuzz *f = &self->f;

	if (report)
		memset(report, 0, sizeof(*report));
	host_shrink();
	self->snapped = host_snap(&self->before) == 0;
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
	f->pm_cap = vfio_cfg_find_cap(&self->c.dev, PCI_CAP_ID_PM);
	f->exp_cap = vfio_cfg_find_cap(&self->c.dev, PCI_CAP_ID_EXP);
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

/* The next chunk of the IOVA sweep, at a dword-aligned offset. */
static uint64_t void_iova(struct fuzz *f, size_t len)
{
	uint64_t off = len < NVME_PAGE_SIZE ?
		rnd(f, (NVME_PAGE_SIZE - len) / 4 + 1) * 4 : 0;

	return FUZZ_VOID_BASE + (f->void_chunk++ << 21) + off;
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

/*
 * A read of one LBA into the next chunk of the IOVA sweep, through a PRP
 * or an SGL data block: never mapped, so it must fail, and whatever the
 * driver caches for the chunk must not stay behind.
 */
static void build_void_read(struct fuzz *f, struct slot *s)
{
	uint32_t len = 1u << f->ctrl->lba_shift;

	s->sqe = (struct nvme_sqe){
		.opcode = nvme_cmd_read,
		.nsid = f->ctrl->nsid,
		.cdw10 = (uint32_t)rnd(f, f->nlbas),
	};
	if (f->sgl && rnd(f, 2)) {
		s->sqe.flags = NVME_CMD_PSDT_SGL_MPTR_CONTIG;
		s->sqe.sgl.addr = void_iova(f, len);
		s->sqe.sgl.length = len;
		s->sqe.sgl.type = NVME_SGL_FMT_DATA_DESC << 4;
	} else {
		s->sqe.prp1 = void_iova(f, len);
		if ((s->sqe.prp1 & (NVME_PAGE_SIZE - 1)) + len > NVME_PAGE_SIZE)
			s->sqe.prp2 = (s->sqe.prp1 & ~(uint64_t)(NVME_PAGE_SIZE - 1)) +
				NVME_PAGE_SIZE;
	}
	s->valid = false;
	s->harmless = true;
	f->voids++;
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
		switch (rnd(f, 13)) {
		case 0:		/* flip a bit in CDW0 (not the CID), NSID or CDW10-15 */
		case 1: {
			static const unsigned int dws[] = { 0, 1, 10, 11, 12, 13, 14, 15 };
			unsigned int d = dws[rnd(f, 8)];
			unsigned int bit = rnd(f, d == 0 ? 16 : 32);

			dw[d] ^= 1u << bit;
			break;
		}
		case 2:
			sqe->nsid = ((uint32_t[]){ 0, 0xffffffff, 0xfffffffe,
						   f->ctrl->nsid + 1 })[rnd(f, 4)];
			break;
		case 3: {	/* boundary LBAs */
			uint64_t lba = ((uint64_t[]){ f->ctrl->nsze - 1,
				f->ctrl->nsze, ~0ull, 1ull << 32 })[rnd(f, 4)];

			sqe->cdw10 = (uint32_t)lba;
			sqe->cdw11 = (uint32_t)(lba >> 32);
			break;
		}
		case 4:		/* NLB: 0's based, big */
			sqe->cdw12 = (sqe->cdw12 & ~0xffffu) |
				((uint32_t[]){ 0xffff, 0x7fff, f->max_nlb,
					       (f->ctrl->mdts_bytes >>
						f->ctrl->lba_shift) })[rnd(f, 4)];
			break;
		case 5:		/* PRP1 into the void / unaligned / zero */
			sqe->prp1 = ((uint64_t[]){ 0, 1, nvme_iova_hole(f->ctrl, 4096),
				f->data.iova + 2, rng_next(&f->rng) })[rnd(f, 5)];
			break;
		case 6:		/* PRP2 likewise */
			sqe->prp2 = ((uint64_t[]){ 0, 8, nvme_iova_hole(f->ctrl, 4096),
				f->data.iova + 0x804, rng_next(&f->rng) })[rnd(f, 5)];
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
		case 12:	/* PRP1 / SGL address: the next unmapped chunk */
			sqe->prp1 = void_iova(f, 0);
			f->voids++;
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

typedef void (*mid_batch_fn)(struct __test_metadata *_metadata,
			     struct fuzz *f);

/*
 * Submit @n slots, ring, run @mid (if any) while they are in flight, then
 * wait for every completion.
 */
static int run_batch(struct __test_metadata *_metadata, struct fuzz *f,
		     struct slot *slots, unsigned int n, mid_batch_fn mid)
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
	if (mid)
		mid(_metadata, f);

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

/*
 * The tag whose pattern_fill() starts with the 8 bytes at @p (the inverse
 * of pattern_word() at offset 0), to tell which write a block came from.
 */
static uint64_t pattern_tag(const void *p)
{
	uint64_t v, x, inv = 0x100000001b3ull;
	int i;

	memcpy(&v, p, sizeof(v));
	x = v ^ (v >> 29) ^ (v >> 58);
	/* Newton's iteration for the inverse of the odd factor mod 2^64. */
	for (i = 0; i < 6; i++)
		inv *= 2 - 0x100000001b3ull * inv;
	return (x ^ 0x9e3779b97f4a7c15ull) * inv;
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
			/* Failed too: a write may have begun (Copy). */
			account_write(f, &s->sqe);
			if (s->status)
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
				uint64_t got = pattern_tag(buf + s->off +
							   (b << ctrl->lba_shift));

				TH_LOG("seed %llu: LBA %llu differs at byte %ld: expected write %llu of it, %s write %llu of LBA %llu (last write %llu)",
				       (unsigned long long)f->seed,
				       (unsigned long long)(s->slba + b), d,
				       (unsigned long long)((t >> 24) & 0x7fffffffffull),
				       got >> 63 ? "found" : "no known pattern, as if",
				       (unsigned long long)((got >> 24) & 0x7fffffffffull),
				       (unsigned long long)(got & 0xffffff),
				       (unsigned long long)f->gen);
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
		case 3:		/* into the void (IOVA sweep) */
			build_void_read(f, s);
			f->mutated++;
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
		if (!slots[i].valid && !slots[i].harmless)
			break;
	if (i < k) {
		for (i = 0; i < k; i++)
			if (slots[i].valid && slots[i].sqe.opcode == nvme_cmd_write)
				invalidate(f, slots[i].slba, slots[i].nlb);
	}
	ret = run_batch(_metadata, f, slots, k, NULL);
	ASSERT_EQ(0, ret);
	if (i < k) {
		/* Verify nothing, just account. */
		unsigned int j;

		for (j = 0; j < k; j++) {
			/*
			 * A mutated command that failed may still have
			 * written (a Copy stops at the range that fails).
			 */
			if (!slots[j].valid)
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
		sqe.cdw10 = ((uint8_t[]){ 0, 1, 2, 3, 5, 6, 8 })[rnd(f, 7)];
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
		unsigned int l = rnd(f, ARRAY_SIZE(logs));

		sqe.opcode = nvme_admin_get_log_page;
		sqe.nsid = 0xffffffff;
		sqe.cdw10 = logs[l].lid | ((logs[l].len / 4 - 1) << 16);
		break;
	}
	case 2:
		sqe.opcode = nvme_admin_get_features;
		sqe.cdw10 = ((uint8_t[]){ 1, 6, 7, 8, 0x0b })[rnd(f, 5)];
		break;
	default:
		sqe.opcode = nvme_admin_set_features;
		sqe.cdw10 = ((uint8_t[]){ 1, 8, 0x0b })[rnd(f, 3)];
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

/* One random config space write; never D3hot or FLR (disrupt_step's job). */
static void cfg_poke(struct fuzz *f)
{
	struct vfio_dev *dev = &f->c->dev;
	uint32_t size = 1u << rnd(f, 3), off, i;
	uint8_t val[4];

	if (rnd(f, 8))
		off = rnd(f, 0x100);
	else
		off = rnd(f, NVMET_MDEV_CFG_SIZE);
	off &= ~(size - 1);
	rng_fill(&f->rng, val, size);
	for (i = 0; i < size; i++) {
		if (f->pm_cap && off + i == f->pm_cap + PCI_PM_CTRL)
			val[i] &= ~PCI_PM_CTRL_STATE_MASK;
		if (f->exp_cap && off + i == f->exp_cap + PCI_EXP_DEVCTL + 1)
			val[i] &= ~(PCI_EXP_DEVCTL_BCR_FLR >> 8);
	}
	trace(f, "poke config %#x/%u", off, size);
	vfio_region_write(dev, VFIO_PCI_CONFIG_REGION_INDEX, off, val, size);
	f->cfg_writes++;
}

/*
 * A burst of random writes: registers other than CC, doorbells of queues
 * that do not exist (the trapped path), config space.  The command
 * register and MSI-X control are put back afterwards so that the run goes
 * on; everything else stays as written.
 */
static void poke_step(struct fuzz *f)
{
	struct nvme_ctrl *ctrl = f->ctrl;
	struct vfio_dev *dev = &f->c->dev;
	static const uint32_t regs[] = {
		NVME_REG_CAP, NVME_REG_CAP + 4, NVME_REG_VS, NVME_REG_CSTS,
		NVME_REG_NSSR, NVME_REG_CMBLOC, NVME_REG_CMBSZ, NVME_REG_BPINFO,
		0x48, 0x4c, NVME_REG_CMBMSC, 0x58, 0x5c, 0x60, 0x100, 0xe00,
		0xe04, 0xe08, 0xffc, NVME_REG_INTMS, NVME_REG_INTMC,
		NVME_REG_AQA, NVME_REG_ASQ, NVME_REG_ASQ + 4, NVME_REG_ACQ,
		NVME_REG_ACQ + 4,
	};
	uint16_t cmd = vfio_cfg_read16(dev, PCI_COMMAND), msix_flags = 0;
	unsigned int n = 1 + rnd(f, 64), i;
	bool cfg = false;

	if (f->c->ctrl.nr_vectors)
		msix_flags = vfio_cfg_read16(dev, vfio_cfg_find_cap(dev, PCI_CAP_ID_MSIX) +
					     PCI_MSIX_FLAGS);
	f->pokes++;
	for (i = 0; i < n; i++) {
		switch (rnd(f, 3)) {
		case 0: {
			uint32_t off = regs[rnd(f, ARRAY_SIZE(regs))];

			trace(f, "poke register %#x", off);
			if (off == NVME_REG_NSSR)	/* never "NVMe" */
				nvme_write32(ctrl, off, (uint32_t)rng_next(&f->rng) | 1);
			else if (!(off & 7) && off != NVME_REG_NSSR && rnd(f, 4) == 0)
				nvme_write64(ctrl, off, rng_next(&f->rng));
			else
				nvme_write32(ctrl, off, rng_next(&f->rng));
			f->reg_writes++;
			break;
		}
		case 1: {	/* doorbells of queues that do not exist */
			uint16_t q = ctrl->nr_io_queues + 1 +
				rnd(f, NVME_MAX_QUEUES - 1 - ctrl->nr_io_queues);
			bool cq = rnd(f, 2);
			uint32_t v = rng_next(&f->rng);

			trace(f, "poke %s doorbell of queue %u: %#x", cq ? "CQ" : "SQ", q, v);
			nvme_write32(ctrl, nvme_db_offset(ctrl, q, cq), v);
			f->db_writes++;
			break;
		}
		default:
			cfg_poke(f);
			cfg = true;
			break;
		}
	}
	if (cfg) {
		vfio_cfg_write16(dev, PCI_COMMAND, cmd);
		if (f->c->ctrl.nr_vectors)
			vfio_cfg_write16(dev, vfio_cfg_find_cap(dev, PCI_CAP_ID_MSIX) +
					 PCI_MSIX_FLAGS, msix_flags);
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

/*
 * @n reads into distinct unmapped 2 MiB chunks (finding 1), as many at a
 * time as the queues hold.  Every one must fail, none may hang.
 */
static void void_sweep(struct __test_metadata *_metadata, struct fuzz *f,
		       unsigned int n)
{
	struct nvme_ctrl *ctrl = f->ctrl;
	struct slot slots[FUZZ_SLOTS];
	unsigned int done = 0, k, q, i, ok = 0;

	trace(f, "sweep of %u unmapped chunks from %#llx", n,
	      (unsigned long long)(FUZZ_VOID_BASE + (f->void_chunk << 21)));
	while (done < n) {
		k = 0;
		for (q = 1; q <= ctrl->nr_io_queues; q++) {
			if (!ctrl->sq[q].live || ctrl->sq[q].cq != &ctrl->cq[q])
				continue;
			for (i = 0; i + 1 < ctrl->sq[q].depth && k < FUZZ_SLOTS &&
			     done + k < n; i++, k++) {
				memset(&slots[k], 0, sizeof(slots[k]));
				slots[k].qid = q;
				build_void_read(f, &slots[k]);
			}
		}
		if (!k)
			return;
		ASSERT_EQ(0, run_batch(_metadata, f, slots, k, NULL));
		for (i = 0; i < k; i++)
			if (!slots[i].status)
				ok++;
		done += k;
	}
	EXPECT_EQ(0, ok) {
		TH_LOG("seed %llu: %u reads into unmapped chunks succeeded",
		       (unsigned long long)f->seed, ok);
	}
}

/* Replace I/O queue pair @q by a fresh one of @depth entries. */
static int requeue(struct fuzz *f, uint16_t q, uint16_t depth)
{
	struct nvme_ctrl *ctrl = f->ctrl;
	int ret;

	if (ctrl->sq[q].live)
		nvme_delete_sq(ctrl, q);
	if (ctrl->cq[q].live)
		nvme_delete_cq(ctrl, q);
	f->cmds += 2;
	ret = nvme_create_cq(ctrl, q, depth, true,
			     ctrl->nr_vectors ? q % ctrl->nr_vectors : 0);
	if (!ret)
		ret = nvme_create_sq(ctrl, q, depth, q);
	f->cmds += 2;
	return ret;
}

/*
 * Completions parked on a full CQ, then an invalid CQ head and/or SQ tail
 * (review findings 2 and 3): I/O queue pair @q becomes a 2-entry CQ under
 * an 8-entry SQ holding 2-7 Flushes, of which one completion is posted
 * and the others wait for CQ space that never comes.  The controller is
 * left in that state.
 */
static void park_and_bad_doorbells(struct __test_metadata *_metadata,
				   struct fuzz *f, uint16_t q, unsigned int how)
{
	struct nvme_ctrl *ctrl = f->ctrl;
	unsigned int i, n = 2 + rnd(f, 6);
	uint64_t deadline;
	int ret;

	if (ctrl->sq[q].live)
		EXPECT_OK(nvme_delete_sq(ctrl, q));
	if (ctrl->cq[q].live)
		EXPECT_OK(nvme_delete_cq(ctrl, q));
	ret = nvme_create_cq(ctrl, q, 2, true,
			     ctrl->nr_vectors ? q % ctrl->nr_vectors : 0);
	EXPECT_OK(ret);
	if (!ret)
		EXPECT_OK(ret = nvme_create_sq(ctrl, q, 8, q));
	f->cmds += 4;
	if (ret)
		return;
	for (i = 0; i < n; i++) {
		struct nvme_sqe sqe = { .opcode = nvme_cmd_flush,
					.nsid = ctrl->nsid };

		nvme_sq_push(ctrl, q, &sqe, false);
	}
	nvme_sq_ring(ctrl, q);
	f->cmds += n;
	/* The first completion (the CQ is full with one). */
	deadline = nvme_now_ms() + FUZZ_TIMEOUT_MS;
	while (!nvme_cq_pending(ctrl, q) && nvme_now_ms() < deadline)
		usleep(100);
	EXPECT_TRUE(nvme_cq_pending(ctrl, q)) {
		TH_LOG("seed %llu: no completion on CQ %u", (unsigned long long)f->seed, q);
	}
	usleep(1000);		/* the rest park */
	if (how != 1) {
		uint32_t head = 2 + rnd(f, rnd(f, 2) ? 8 : 0xfffe);

		trace(f, "CQ %u head %u with %u completions parked", q, head, n - 1);
		nvme_ring_cq(ctrl, q, head);
		f->db_writes++;
	}
	if (how != 0) {
		uint32_t tail = 8 + rnd(f, rnd(f, 2) ? 8 : 0xfff8);

		trace(f, "SQ %u tail %u with completions parked", q, tail);
		nvme_ring_sq(ctrl, q, tail);
		f->db_writes++;
	}
	f->parked_bad_db++;
}

/* Finding 2/3 as a step: the admin queue still works, then a reset. */
static void parked_bad_db_step(struct __test_metadata *_metadata, struct fuzz *f)
{
	struct nvme_ctrl *ctrl = f->ctrl;

	park_and_bad_doorbells(_metadata, f, 1 + rnd(f, ctrl->nr_io_queues),
			       rnd(f, 3));
	usleep(rnd(f, 20) * 1000);
	EXPECT_OK(nvme_identify(ctrl, NVME_ID_CNS_CTRL, 0, 0, &f->admin_buf)) {
		TH_LOG("seed %llu: admin queue after bad I/O doorbells",
		       (unsigned long long)f->seed);
	}
	f->cmds++;
	bringup(_metadata, f, "bad doorbells with completions parked");
}

/*
 * Doorbell Buffer Config while I/O completes (finding 6): between ringing
 * the SQs full of Flushes and reaping the completions, switch the shadow
 * doorbells to a fresh pair of pages; the old pair is unmapped after.
 */
static void dbbc_mid(struct __test_metadata *_metadata, struct fuzz *f)
{
	struct nvme_ctrl *ctrl = f->ctrl;
	struct nvme_dma old_db = ctrl->dbbuf_db, old_ei = ctrl->dbbuf_ei;
	int st;

	memset(&ctrl->dbbuf_db, 0, sizeof(ctrl->dbbuf_db));
	memset(&ctrl->dbbuf_ei, 0, sizeof(ctrl->dbbuf_ei));
	st = nvme_dbbuf_config(ctrl);
	f->cmds++;
	EXPECT_OK(st) {
		TH_LOG("seed %llu: Doorbell Buffer Config with I/O in flight",
		       (unsigned long long)f->seed);
	}
	if (st) {
		nvme_dma_free(ctrl, &ctrl->dbbuf_db);
		nvme_dma_free(ctrl, &ctrl->dbbuf_ei);
		ctrl->dbbuf_db = old_db;
		ctrl->dbbuf_ei = old_ei;
		return;
	}
	nvme_dma_free(ctrl, &old_db);
	nvme_dma_free(ctrl, &old_ei);
}

static void dbbc_in_flight_step(struct __test_metadata *_metadata, struct fuzz *f)
{
	struct nvme_ctrl *ctrl = f->ctrl;
	struct slot slots[FUZZ_SLOTS];
	unsigned int n = 0, q, i;

	if (!(ctrl->id.oacs & NVME_CTRL_OACS_DBBUF_SUPP))
		return;
	for (q = 1; q <= ctrl->nr_io_queues; q++) {
		unsigned int depth = ctrl->sq[q].depth;

		if (!ctrl->sq[q].live || ctrl->sq[q].cq != &ctrl->cq[q])
			continue;
		/* Fill the SQ; the CQ fills up and completions park. */
		for (i = 0; i + 1 < depth && n < FUZZ_SLOTS; i++, n++) {
			memset(&slots[n], 0, sizeof(slots[n]));
			slots[n].qid = q;
			slots[n].sqe = (struct nvme_sqe){ .opcode = nvme_cmd_flush,
							  .nsid = ctrl->nsid };
			slots[n].valid = true;
		}
	}
	if (!n)
		return;
	trace(f, "Doorbell Buffer Config with %u Flushes in flight", n);
	ASSERT_EQ(0, run_batch(_metadata, f, slots, n, dbbc_mid));
	for (i = 0; i < n; i++) {
		EXPECT_OK(slots[i].status) {
			TH_LOG("seed %llu: Flush around Doorbell Buffer Config",
			       (unsigned long long)f->seed);
		}
	}
	f->dbbc_in_flight++;
}

/*
 * A DMA unmap of a neighbour of a live ring (finding 4): map one page in
 * the same 2 MiB chunk as an SQ or CQ ring (its guard page), read into it,
 * unmap it.  The ring must go on working, with no stale pin behind it.
 */
static void neighbour_unmap_step(struct __test_metadata *_metadata, struct fuzz *f)
{
	struct nvme_ctrl *ctrl = f->ctrl;
	uint16_t q = 1 + rnd(f, ctrl->nr_io_queues);
	struct nvme_queue *ring = rnd(f, 2) ? &ctrl->cq[q] : &ctrl->sq[q];
	struct nvme_dma b = { .size = NVME_PAGE_SIZE };
	uint64_t chunk = ring->mem.iova >> 21;
	int ret;

	if (!ring->live || !ctrl->sq[q].live || !ring->mem.va)
		return;
	/* The unmapped page after the ring, or the one before it. */
	b.iova = ring->mem.iova + ring->mem.size;
	if (b.iova >> 21 != chunk)
		b.iova = ring->mem.iova - NVME_PAGE_SIZE;
	if (b.iova >> 21 != chunk)
		return;
	b.va = mmap(NULL, b.size, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (b.va == MAP_FAILED)
		return;
	ret = vfio_dma_map(&f->c->dev, b.va, b.iova, b.size);
	if (ret) {
		trace(f, "map a neighbour of ring %u at %#llx: %d", q,
		      (unsigned long long)b.iova, ret);
		munmap(b.va, b.size);
		return;
	}
	trace(f, "neighbour %#llx of %s ring %u", (unsigned long long)b.iova,
	      ring == &ctrl->cq[q] ? "CQ" : "SQ", q);
	EXPECT_OK(nvme_rw(ctrl, q, nvme_cmd_read, 0, 1, &b, 0)) {
		TH_LOG("seed %llu: read into a neighbour of ring %u",
		       (unsigned long long)f->seed, q);
	}
	EXPECT_EQ(0, vfio_dma_unmap(&f->c->dev, b.iova, b.size));
	munmap(b.va, b.size);
	/* The ring right after: its chunk lost its pins with the neighbour. */
	EXPECT_OK(nvme_rw(ctrl, q, nvme_cmd_read, 0, 1, &f->admin_buf, 0)) {
		TH_LOG("seed %llu: queue %u after a neighbour's unmap",
		       (unsigned long long)f->seed, q);
	}
	f->cmds += 2;
	f->neighbour_unmaps++;
}

/*
 * Delete SQ racing completions on a shared CQ (finding 5): SQ 1 and SQ 2
 * on a 4-entry CQ 1, both full of Flushes; a second thread consumes CQ 1
 * (so parked completions move) while SQ 1 is deleted, a few rounds.
 */
struct drainer {
	struct nvme_ctrl *ctrl;
	uint16_t	cq;
	bool		stop;		/* READ_ONCE()/WRITE_ONCE() */
	unsigned long	reaped;
};

static void *drain_cq(void *arg)
{
	struct drainer *d = arg;
	struct nvme_cqe cqe;

	while (!READ_ONCE(d->stop)) {
		if (nvme_cq_pending(d->ctrl, d->cq) &&
		    !nvme_cq_poll(d->ctrl, d->cq, &cqe, 0))
			d->reaped++;
		else
			usleep(10);
	}
	return NULL;
}

static void shared_cq_delete_step(struct __test_metadata *_metadata, struct fuzz *f)
{
	struct nvme_ctrl *ctrl = f->ctrl;
	struct drainer d = { .ctrl = ctrl, .cq = 1 };
	unsigned int round, rounds = 1 + rnd(f, 4), i;
	pthread_t t;
	uint16_t q;
	int ret;

	if (ctrl->nr_io_queues < 2)
		return;
	for (q = 1; q <= 2; q++) {
		if (ctrl->sq[q].live)
			EXPECT_OK(nvme_delete_sq(ctrl, q));
		if (ctrl->cq[q].live)
			EXPECT_OK(nvme_delete_cq(ctrl, q));
	}
	f->cmds += 4;
	ret = nvme_create_cq(ctrl, 1, 4, true, ctrl->nr_vectors ? 1 % ctrl->nr_vectors : 0);
	EXPECT_OK(ret);
	if (!ret)
		EXPECT_OK(ret = nvme_create_sq(ctrl, 2, 16, 1));
	f->cmds += 2;
	if (ret) {
		bringup(_metadata, f, "shared CQ setup");
		return;
	}
	ASSERT_EQ(0, pthread_create(&t, NULL, drain_cq, &d));
	for (round = 0; round < rounds; round++) {
		EXPECT_OK(ret = nvme_create_sq(ctrl, 1, 16, 1));
		f->cmds++;
		if (ret)
			break;
		for (q = 1; q <= 2; q++) {
			/* SQ 2 may still hold the previous round's commands. */
			unsigned int n = q == 1 ? 15 : 3;

			for (i = 0; i < n; i++) {
				struct nvme_sqe sqe = { .opcode = nvme_cmd_flush,
							.nsid = ctrl->nsid };

				nvme_sq_push(ctrl, q, &sqe, false);
			}
			f->cmds += n;
		}
		nvme_sq_ring(ctrl, 1);
		nvme_sq_ring(ctrl, 2);
		usleep(rnd(f, 2000));
		EXPECT_OK(nvme_delete_sq(ctrl, 1)) {
			TH_LOG("seed %llu: Delete SQ 1 on a shared CQ, round %u",
			       (unsigned long long)f->seed, round);
		}
		f->cmds++;
		/* SQ 2's commands complete before it is used again. */
		usleep(5000);
	}
	EXPECT_OK(nvme_delete_sq(ctrl, 2));
	usleep(2000);
	WRITE_ONCE(d.stop, true);
	pthread_join(t, NULL);
	EXPECT_OK(nvme_delete_cq(ctrl, 1));
	f->cmds += 2;
	trace(f, "shared CQ: %u rounds, %lu completions reaped", rounds, d.reaped);
	f->shared_cq_deletes++;
	for (q = 1; q <= 2; q++) {
		if (requeue(f, q, FUZZ_DEPTH)) {
			bringup(_metadata, f, "re-creating queues after a shared CQ");
			return;
		}
	}
}

/*
 * A CQ ring at the top of the IOVA space (finding 8): map 2 MiB ending at
 * 2^64, put I/O CQ @q's ring in its last page, do I/O, unmap it, then
 * submit once more: the completion must not land in the unmapped ring.
 */
static void top_iova_step(struct __test_metadata *_metadata, struct fuzz *f)
{
	struct nvme_ctrl *ctrl = f->ctrl;
	uint16_t q = 1 + rnd(f, ctrl->nr_io_queues), depth = FUZZ_DEPTH, i;
	struct nvme_queue *cq = &ctrl->cq[q];
	uint64_t top = 0 - FUZZ_CHUNK;
	struct nvme_sqe sqe = { .opcode = nvme_cmd_flush };
	void *va;
	int ret;

	va = mmap(NULL, FUZZ_CHUNK, PROT_READ | PROT_WRITE,
		  MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (va == MAP_FAILED)
		return;
	ret = vfio_dma_map(&f->c->dev, va, top, FUZZ_CHUNK);
	if (ret) {
		if (!f->top_iova_refused++)
			TH_LOG("a mapping at 2^64 - 2 MiB is refused: %s", strerror(-ret));
		munmap(va, FUZZ_CHUNK);
		return;
	}
	if (ctrl->sq[q].live)
		EXPECT_OK(nvme_delete_sq(ctrl, q));
	if (cq->live)
		EXPECT_OK(nvme_delete_cq(ctrl, q));
	f->cmds += 2;
	nvme_dma_free(ctrl, &cq->mem);
	cq->mem = (struct nvme_dma){ .va = (char *)va + FUZZ_CHUNK - NVME_PAGE_SIZE,
				     .iova = top + FUZZ_CHUNK - NVME_PAGE_SIZE,
				     .size = NVME_PAGE_SIZE };
	memset(cq->mem.va, 0, NVME_PAGE_SIZE);
	cq->depth = depth;
	cq->head = 0;
	cq->tail = 0;
	cq->phase = 1;
	cq->irq = true;
	cq->vector = ctrl->nr_vectors ? q % ctrl->nr_vectors : 0;
	if (ctrl->dbbuf_on)	/* as nvme_create_cq() does */
		((uint32_t *)ctrl->dbbuf_db.va)[(nvme_db_offset(ctrl, q, true) -
						 NVME_REG_DBS) / 4] = 0;
	ret = nvme_create_cq_raw(ctrl, q, depth - 1, cq->mem.iova,
				 NVME_QUEUE_PHYS_CONTIG | NVME_CQ_IRQ_ENABLED,
				 cq->vector);
	EXPECT_OK(ret) {
		TH_LOG("seed %llu: create CQ %u at IOVA %#llx",
		       (unsigned long long)f->seed, q,
		       (unsigned long long)cq->mem.iova);
	}
	cq->live = ret == 0;
	if (!ret)
		EXPECT_OK(ret = nvme_create_sq(ctrl, q, depth, q));
	f->cmds += 2;
	for (i = 0; !ret && i < 4; i++) {
		EXPECT_OK(nvme_rw(ctrl, q, nvme_cmd_read, rnd(f, f->nlbas), 1,
				  &f->admin_buf, 0));
		f->cmds++;
	}
	EXPECT_EQ(0, vfio_dma_unmap(&f->c->dev, top, FUZZ_CHUNK));
	if (!ret) {
		sqe.nsid = ctrl->nsid;
		nvme_submit(ctrl, q, &sqe);
		f->cmds++;
		usleep(20 * 1000);
		EXPECT_FALSE(nvme_cq_pending(ctrl, q)) {
			TH_LOG("seed %llu: a completion was written to CQ %u at %#llx after its IOVA was unmapped",
			       (unsigned long long)f->seed, q,
			       (unsigned long long)cq->mem.iova);
		}
	}
	memset(&cq->mem, 0, sizeof(cq->mem));	/* not ours to unmap again */
	cq->live = false;
	munmap(va, FUZZ_CHUNK);
	f->top_iova++;
	bringup(_metadata, f, "a CQ at the top of the IOVA space");
}

static void disrupt_step(struct __test_metadata *_metadata, struct fuzz *f)
{
	struct nvme_ctrl *ctrl = f->ctrl;
	struct vfio_dev *dev = &f->c->dev;
	uint16_t exp;
	unsigned int what = rnd(f, 14);
	uint64_t start = nvme_now_ms();

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
	case 7:		/* re-wire the interrupts */
		EXPECT_EQ(0, nvme_irq_setup(ctrl, ctrl->nr_vectors));
		break;
	/* The security review's triggers. */
	case 8:
		parked_bad_db_step(_metadata, f);
		break;
	case 9:
		dbbc_in_flight_step(_metadata, f);
		break;
	case 10:
		neighbour_unmap_step(_metadata, f);
		break;
	case 11:
		shared_cq_delete_step(_metadata, f);
		break;
	case 12:
		top_iova_step(_metadata, f);
		break;
	default:	/* a burst of reads into distinct unmapped chunks */
		void_sweep(_metadata, f, 16 + rnd(f, 240));
		break;
	}
	f->ms_disrupt[what] += nvme_now_ms() - start;
	f->nr_disrupt[what]++;
}

TEST_F_TIMEOUT(fuzz, mixed, fuzz_timeout())
{
	struct fuzz *f = &self->f;
	uint64_t budget = env_u64("NVMET_MDEV_FUZZ_CMDS", 20000);
	uint64_t wbudget = env_u64("NVMET_MDEV_FUZZ_WRITES", 2000);
	uint64_t secs = env_u64("NVMET_MDEV_FUZZ_SECS", 600);
	uint64_t start = nvme_now_ms(), last = start, ms;
	unsigned long step = 0;
	/* " count/ms" for each disruptive action: at most 42 bytes each. */
	char dis[ARRAY_SIZE(f->nr_disrupt) * 42 + 1] = "";
	unsigned int k, o = 0;
	struct host_snap s;
	enum vfio_binding b;

	verbose = env_u64("NVMET_MDEV_FUZZ_VERBOSE", 0);

	TH_LOG("seed %llu (NVMET_MDEV_FUZZ_SEED=%llu reproduces), budget %llu commands and %llu register/doorbell/config writes / %llu s, %llu LBAs tracked",
	       (unsigned long long)f->seed, (unsigned long long)f->seed,
	       (unsigned long long)budget, (unsigned long long)wbudget,
	       (unsigned long long)secs, (unsigned long long)f->nlbas);
	while ((f->cmds < budget || fuzz_writes(f) < wbudget) &&
	       nvme_now_ms() - start < secs * 1000) {
		unsigned int r = rnd(f, 1000);
		uint64_t t = nvme_now_ms();
		uint32_t csts;

		step++;
		if (r < 880) {
			io_batch(_metadata, f);
			f->ms_io += nvme_now_ms() - t;
		} else if (r < 950) {
			admin_step(_metadata, f);
			f->ms_admin += nvme_now_ms() - t;
		} else if (r < 985) {
			poke_step(f);
			f->ms_poke += nvme_now_ms() - t;
		} else {
			disrupt_step(_metadata, f);
		}
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
			TH_LOG("%lu commands, %lu writes, %lu s", f->cmds,
			       fuzz_writes(f),
			       (unsigned long)((last - start) / 1000));
		}
	}
	ms = nvme_now_ms() - start;
	TH_LOG("seed %llu: %lu commands (%lu valid I/O, %lu mutated I/O, %lu into unmapped chunks, %lu admin), %lu error statuses, %lu resets, %lu slow batches, %lu steps in %llu s",
	       (unsigned long long)f->seed, f->cmds, f->valid, f->mutated,
	       f->voids, f->admin, f->errors, f->resets, f->slow, step,
	       (unsigned long long)ms / 1000);
	TH_LOG("seed %llu: %lu register/doorbell/config writes (%lu register, %lu doorbell, %lu config, in %lu bursts)",
	       (unsigned long long)f->seed, fuzz_writes(f), f->reg_writes,
	       f->db_writes, f->cfg_writes, f->pokes);
	TH_LOG("seed %llu: triggers: %lu bad doorbells with completions parked, %lu DBBC with I/O in flight, %lu neighbour unmaps, %lu shared-CQ SQ deletes, %lu top-of-IOVA CQs (%lu refused)",
	       (unsigned long long)f->seed, f->parked_bad_db, f->dbbc_in_flight,
	       f->neighbour_unmaps, f->shared_cq_deletes, f->top_iova,
	       f->top_iova_refused);
	for (k = 0; k < ARRAY_SIZE(f->nr_disrupt); k++)
		o += snprintf(dis + o, sizeof(dis) - o, " %lu/%llu",
			      f->nr_disrupt[k],
			      (unsigned long long)f->ms_disrupt[k]);
	TH_LOG("seed %llu: time (ms): I/O %llu, admin %llu, writes %llu, disruptive actions (count/ms)%s",
	       (unsigned long long)f->seed, (unsigned long long)f->ms_io,
	       (unsigned long long)f->ms_admin, (unsigned long long)f->ms_poke,
	       dis);
	TH_LOG("totals: %lu commands, %lu writes, %llu ms",
	       f->cmds, fuzz_writes(f), (unsigned long long)ms);
	/* With NVMET_MDEV_FUZZ_KEEP_GOING=1 the host budgets are measured anyway. */
	if (_metadata->exit_code == KSFT_FAIL &&
	    !env_u64("NVMET_MDEV_FUZZ_KEEP_GOING", 0))
		return;
	/* A run that silently does less is a failure. */
	EXPECT_GE(f->cmds, budget) {
		TH_LOG("seed %llu: the time budget (%llu s) ran out after %lu of %llu commands",
		       (unsigned long long)f->seed, (unsigned long long)secs,
		       f->cmds, (unsigned long long)budget);
	}
	EXPECT_GE(fuzz_writes(f), wbudget) {
		TH_LOG("seed %llu: the time budget (%llu s) ran out after %lu of %llu writes",
		       (unsigned long long)f->seed, (unsigned long long)secs,
		       fuzz_writes(f), (unsigned long long)wbudget);
	}

	/*
	 * Host budgets, measured here and judged by the host.* results.
	 * Memory: what the controller holds after one more sweep of
	 * unmapped chunks, still enabled (a reset frees a pin cache).
	 */
	start = nvme_now_ms();
	void_sweep(_metadata, f, FUZZ_FINAL_SWEEP);
	TH_LOG("final sweep of %u unmapped chunks: %llu ms", FUZZ_FINAL_SWEEP,
	       (unsigned long long)(nvme_now_ms() - start));
	if (!report || !self->snapped)
		goto check;
	vfio_env_binding(&b);
	report->binding = vfio_binding_name(b);
	report->kmsg_seq = self->before.kmsg_seq;
	host_shrink();
	if (!host_snap(&s)) {
		report->kmalloc_kb = (int64_t)(s.kmalloc_kb - self->before.kmalloc_kb);
		report->unreclaim_kb = (int64_t)(s.slab_unreclaim_kb -
						 self->before.slab_unreclaim_kb);
		report->vm_locked_open_kb = s.vm_locked_kb;
		report->vm_pinned_open_kb = s.vm_pinned_kb;
		report->mem_done = true;
	}
	/*
	 * CPU: enabled, no I/O, but the guest left completions parked
	 * behind an invalid CQ head and an invalid SQ tail.
	 */
	park_and_bad_doorbells(_metadata, f, 1, 2);
	report->idle_cpu_ms = host_mdev_cpu_over(FUZZ_IDLE_CPU_MS);
	report->cpu_done = true;
check:
	/* The device is still fine. */
	ASSERT_EQ(0, client_recover_and_check(f->c));
	if (!report || !self->snapped)
		return;
	/* Pins: all gone with the device. */
	client_close(f->c);
	if (!host_snap(&s)) {
		report->vm_locked_kb = (int64_t)(s.vm_locked_kb - self->before.vm_locked_kb);
		report->vm_pinned_kb = (int64_t)(s.vm_pinned_kb - self->before.vm_pinned_kb);
		report->pins_done = true;
	}
	report->kmsg = host_kmsg_since(self->before.kmsg_seq);
	report->kmsg_done = true;
	TH_LOG("sweep, host measurements and close: %llu ms",
	       (unsigned long long)(nvme_now_ms() - start));
}

/*
 * The host budgets of the fuzz run above, one result each (skipped when
 * the run did not get that far).
 */
FIXTURE(host) {
	int unused;
};

FIXTURE_SETUP(host)
{
	if (!report)
		SKIP(return, "no report page");
}

FIXTURE_TEARDOWN(host)
{
}

TEST_F(host, memory)
{
	if (!report->mem_done)
		SKIP(return, "the fuzz run did not measure it");
	TH_LOG("%s: kernel memory the enabled controller holds after the run and a sweep of %u unmapped chunks",
	       report->binding, FUZZ_FINAL_SWEEP);
	EXPECT_TRUE(host_within("kmalloc growth (kB)", report->kmalloc_kb,
				FUZZ_MEM_BUDGET_KB));
	EXPECT_TRUE(host_within("SUnreclaim growth (kB)", report->unreclaim_kb,
				FUZZ_MEM_BUDGET_KB));
}

TEST_F(host, idle_cpu)
{
	if (!report->cpu_done)
		SKIP(return, "the fuzz run did not measure it");
	TH_LOG("%s: mdev thread CPU over %u ms, enabled, no I/O, completions parked behind an invalid CQ head and SQ tail",
	       report->binding, FUZZ_IDLE_CPU_MS);
	EXPECT_TRUE(host_within("mdev thread CPU (ms)", report->idle_cpu_ms,
				FUZZ_IDLE_CPU_BUDGET_MS));
}

TEST_F(host, pinned_pages)
{
	if (!report->pins_done)
		SKIP(return, "the fuzz run did not measure it");
	/* type1 accounts the mdev's pins in VmLck, iommufd in VmPin. */
	TH_LOG("%s: VmLck %llu kB, VmPin %llu kB while open; after the close:",
	       report->binding, (unsigned long long)report->vm_locked_open_kb,
	       (unsigned long long)report->vm_pinned_open_kb);
	EXPECT_TRUE(host_within("VmLck after the close - before the open (kB)",
				report->vm_locked_kb, 0));
	EXPECT_TRUE(host_within("VmPin after the close - before the open (kB)",
				report->vm_pinned_kb, 0));
	EXPECT_GE(report->vm_locked_kb, 0);
	EXPECT_GE(report->vm_pinned_kb, 0);
}

TEST_F(host, kmsg)
{
	if (!report->kmsg_done)
		SKIP(return, "the fuzz run did not measure it");
	EXPECT_TRUE(host_within("kernel log records during the fuzz run",
				report->kmsg, FUZZ_KMSG_BUDGET)) {
		host_kmsg_print(report->kmsg_seq, 30);
	}
}

TEST_HARNESS_MAIN
