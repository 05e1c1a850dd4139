// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: completion queues.
 *
 * Completions are posted by nvmet_mdev_queue_response() from whatever
 * context nvmet completes in.  When the CQ is full, completions are parked
 * on the CQ and posted by the queue threads once the host moves the CQ head.
 *
 * Fetching in the writer's context completes a command (on a fast backend)
 * before the guest submits the next, so without care each command would
 * cost the guest an interrupt: injection, handler and EOI are the most
 * expensive part of an I/O when the CPU is shared.  A guest that streams
 * (submits again while completions are outstanding) gets its interrupts
 * moderated instead: completions are held until the guest stops submitting
 * for four times its usual gap between trapped writes, or until a round is
 * full: as many held as the guest keeps outstanding.  The gap is what the
 * guest's submission path costs, so it is measured, not assumed: a nested
 * or overcommitted guest takes tens of milliseconds per exit, and a hold
 * shorter than its gaps would signal every completion (and cost it the
 * interrupt) anyway.  Whether a guest streams shows by trying: a trap that
 * finds the CQ not moderated holds its completions (a probe); when the
 * guest waits for a single held completion instead of submitting again,
 * the probe failed and the next one comes after twice as many traps.  A
 * guest that configures Interrupt Coalescing gets what it asked.
 *
 * How many a guest keeps outstanding is learned the same way.  A round
 * starts at NVMET_MDEV_HOLD_CQES; when the hold timer ends one early, with
 * fewer held and queued than that, the guest waited for them, and that
 * many make a round from then on.  A full round now and then tries twice
 * as many: a guest that keeps more fills it, one that does not costs one
 * more wait for the timer, and the tries get rarer (as the probes do).
 *
 * The traps themselves are the other half of the cost.  Once a guest
 * streams, a trapped write leaves the SQ's EventIdx ahead, at most
 * NVMET_MDEV_TRAP_EVERY commands and no further than the write that fills
 * the round, so only every so many submissions trap, each fetching all
 * those before it.  When the guest stops submitting, the hold timer (armed
 * whenever EventIdx is left ahead) wakes the SQ's thread for the commands
 * that did not reach the next trap, and ends the moderation.
 */

#include <linux/hrtimer.h>
#include <linux/sched/clock.h>
#include <linux/slab.h>

#include "../pci-common.h"
#include "datapath.h"

int nvmet_mdev_cq_remap(struct nvmet_mdev_sq *sq, bool grace)
{
	struct nvmet_mdev_cq *cq = sq->cq;
	struct nvmet_mdev_gmap map = {};
	struct nvmet_mdev_iod *iod, *tmp;
	unsigned long flags;
	int ret;

	ret = nvmet_mdev_gmap(sq->ctrl, cq->iova,
			      cq->size * sizeof(struct nvme_completion), &map);
	if (ret && nvmet_mdev_remap_later(sq, grace))
		return -EAGAIN;	/* the completions stay parked */
	if (!ret)
		sq->remap_since = 0;
	spin_lock_irqsave(&cq->lock, flags);
	if (ret) {
		/* Its completions can never be posted (see cq_retry). */
		cq->dead = true;
		list_for_each_entry_safe(iod, tmp, &cq->parked, parked) {
			list_del(&iod->parked);
			nvmet_mdev_iod_put(iod);
		}
	} else if (!cq->cqes && !cq->dead) {
		cq->ring = map;
		cq->cqes = map.vaddr;
		memset(&map, 0, sizeof(map));
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	nvmet_mdev_gunmap(&map);	/* another thread was first */
	if (ret) {
		dev_warn_ratelimited(sq->ctrl->vdev.dev,
				     "CQ %u ring at %#llx is not mapped\n",
				     cq->qid, cq->iova);
		nvmet_mdev_ctrl_fatal(sq->ctrl);
	}
	return ret;
}

/*
 * Whether the CQ has no free entry, reading the head doorbell again if it
 * looks full.  A head value beyond the queue or beyond the entries posted
 * is ignored; a queue thread (@report non-NULL) records it, and sets
 * *@report if it starts an invalid episode.  cq->lock held.
 */
static bool nvmet_mdev_cq_full(struct nvmet_mdev_cq *cq, bool *report)
{
	u32 head;

	if (likely(!nvmet_pci_cq_full(cq->head, cq->tail, cq->size)))
		return false;

	/* Any context: the shadow doorbells go away after a grace period. */
	rcu_read_lock();
	head = nvmet_mdev_db_read(cq->ctrl, nvmet_mdev_cq_db_idx(cq->qid));
	rcu_read_unlock();
	if (head == cq->head)
		return true;

	if (!nvmet_pci_cq_head_valid(head, cq->head, cq->tail, cq->size)) {
		if (report) {
			*report = cq->bad_head == NVMET_MDEV_DB_VALID;
			WRITE_ONCE(cq->bad_head, head);
		}
		return true;
	}
	WRITE_ONCE(cq->bad_head, NVMET_MDEV_DB_VALID);
	WRITE_ONCE(cq->head, head);	/* read locklessly by the threads */
	return nvmet_pci_cq_full(head, cq->tail, cq->size);
}

static void nvmet_mdev_cq_post(struct nvmet_mdev_cq *cq,
			       struct nvmet_mdev_iod *iod)
{
	struct nvme_completion *cqe = &cq->cqes[cq->tail];

	cqe->result = iod->cqe.result;
	cqe->sq_head = iod->cqe.sq_head;
	cqe->sq_id = iod->cqe.sq_id;
	cqe->command_id = iod->cqe.command_id;
	/* The phase tag must become visible last. */
	smp_wmb();
	WRITE_ONCE(cqe->status, iod->cqe.status | cpu_to_le16(cq->phase));
	nvmet_mdev_dirty_mark(cq->ctrl, cq->iova + cq->tail * sizeof(*cqe),
			      sizeof(*cqe));
	nvmet_mdev_stat_add(cq->ctrl, NVMET_MDEV_STAT_COMPLETIONS, 1);

	if (nvmet_pci_ring_advance(&cq->tail, cq->size))
		cq->phase = !cq->phase;
}

/* Interrupt moderation of trapped doorbells (see the top of this file). */
#define NVMET_MDEV_HOLD_CQES		32
#define NVMET_MDEV_HOLD_MIN_NS		(20 * NSEC_PER_USEC)
#define NVMET_MDEV_HOLD_MAX_NS		(100 * NSEC_PER_MSEC)
/* Longer gaps between traps are pauses, not the pace of a stream. */
#define NVMET_MDEV_PACE_MAX_NS		(NVMET_MDEV_HOLD_MAX_NS / 2)
#define NVMET_MDEV_PROBE_SHIFT_MAX	8
#define NVMET_MDEV_GROW_SHIFT_MAX	8
#define NVMET_MDEV_TRAP_EVERY		16

/* Interrupt Coalescing's Aggregation Time counts 100 microsecond units. */
#define NVMET_MDEV_COALESCE_TIME_US	100

/* The most completions @cq holds. */
static unsigned int nvmet_mdev_cq_hold_max(struct nvmet_mdev_cq *cq)
{
	return min(NVMET_MDEV_HOLD_CQES, cq->size / 2);
}

/* A trapped write to the tail doorbell of an SQ of @cq. */
void nvmet_mdev_cq_trapped(struct nvmet_mdev_cq *cq)
{
	u64 now = local_clock(), gap;
	unsigned long flags;

	spin_lock_irqsave(&cq->lock, flags);
	gap = now - cq->last_trap;
	cq->last_trap = now;
	if (gap < NVMET_MDEV_PACE_MAX_NS)
		cq->trap_gap = (3 * (u64)cq->trap_gap + gap) >> 2;
	if (cq->moderate) {
		/*
		 * Submitting again with completions held: it streams (the
		 * timer is the guest's while it coalesces itself).
		 */
		u8 thr, time;

		nvmet_pci_irq_coalesce(cq->nvme_cq.ctrl, &thr, &time);
		if (cq->nr_coalesced && (!thr || !time)) {
			cq->streaming = true;
			cq->probe_shift = 0;
		}
	} else if (!cq->probe_wait || !--cq->probe_wait) {
		cq->moderate = true;
		nvmet_mdev_stat_add(cq->ctrl, NVMET_MDEV_STAT_PROBES, 1);
	}
	spin_unlock_irqrestore(&cq->lock, flags);
}

/*
 * End the moderation: the guest stopped submitting (the next trap probes
 * again) or, @failed, waited for one held completion (it does not stream).
 */
static void nvmet_mdev_cq_moderate_off(struct nvmet_mdev_cq *cq, bool failed)
{
	cq->moderate = false;
	cq->streaming = false;
	if (!failed) {
		cq->probe_wait = 1;
		return;
	}
	if (cq->probe_shift < NVMET_MDEV_PROBE_SHIFT_MAX)
		cq->probe_shift++;
	cq->probe_wait = 1U << cq->probe_shift;
}

static void nvmet_mdev_cq_arm(struct nvmet_mdev_cq *cq)
{
	u64 hold = clamp(4ULL * cq->trap_gap, NVMET_MDEV_HOLD_MIN_NS,
			 NVMET_MDEV_HOLD_MAX_NS);

	hrtimer_start(&cq->coalesce_timer, ns_to_ktime(hold),
		      HRTIMER_MODE_REL);
}

/* Signal now; the timer stays while an EventIdx is ahead.  cq->lock held */
static void nvmet_mdev_cq_signal(struct nvmet_mdev_cq *cq)
{
	cq->nr_coalesced = 0;
	if (!cq->deferred)
		hrtimer_try_to_cancel(&cq->coalesce_timer);
}

/*
 * A round of held completions reached @cq->hold: the guest keeps that many
 * outstanding.  Now and then try twice as many; a guest that keeps fewer
 * waits for the hold timer once, and the tries get rarer.  cq->lock held.
 */
static void nvmet_mdev_cq_held_all(struct nvmet_mdev_cq *cq)
{
	unsigned int max = nvmet_mdev_cq_hold_max(cq);

	if (cq->growing) {
		cq->growing = false;
		cq->grow_shift = 0;
		cq->grow_wait = 0;
	}
	if (cq->hold >= max || (cq->grow_wait && --cq->grow_wait))
		return;
	cq->hold = min(2 * cq->hold, max);
	cq->growing = true;
}

/*
 * The hold timer found the guest waiting with @depth commands outstanding
 * (completions held, commands in flight or queued without reaching the
 * next trap), fewer than @cq->hold: hold no more than that from now on.
 * cq->lock held.
 */
static void nvmet_mdev_cq_held_some(struct nvmet_mdev_cq *cq,
				    unsigned int depth)
{
	if (depth >= cq->hold)
		return;
	cq->hold = max(depth, 2U);
	if (cq->growing) {
		cq->growing = false;
		if (cq->grow_shift < NVMET_MDEV_GROW_SHIFT_MAX)
			cq->grow_shift++;
	}
	cq->grow_wait = 1U << cq->grow_shift;
}

/* Moderation: whether to signal after @n new entries, else hold them. */
static bool nvmet_mdev_cq_hold(struct nvmet_mdev_cq *cq, unsigned int n)
{
	if (cq->nr_coalesced + n >= cq->hold) {
		nvmet_mdev_cq_signal(cq);
		nvmet_mdev_cq_held_all(cq);
		return true;
	}
	cq->nr_coalesced += n;
	nvmet_mdev_cq_arm(cq);
	return false;
}

/* Interrupt coalescing: whether to signal after @n new entries. */
static bool nvmet_mdev_cq_irq_needed(struct nvmet_mdev_cq *cq, unsigned int n)
{
	struct nvmet_mdev_dp *dp = cq->ctrl->dp;
	u8 thr, time;

	if (!cq->irq_enabled || !n)
		return false;
	if (!cq->qid || test_bit(cq->vector, dp->vec_cd))
		return true;
	/* The guest's Interrupt Coalescing feature, which nvmet keeps. */
	nvmet_pci_irq_coalesce(cq->nvme_cq.ctrl, &thr, &time);
	if (!thr || !time)
		return !cq->moderate || nvmet_mdev_cq_hold(cq, n);

	if (cq->nr_coalesced + n > thr) {
		nvmet_mdev_cq_signal(cq);
		return true;
	}
	if (!cq->nr_coalesced)
		hrtimer_start(&cq->coalesce_timer,
			      us_to_ktime(time * NVMET_MDEV_COALESCE_TIME_US),
			      HRTIMER_MODE_REL);
	cq->nr_coalesced += n;
	return false;
}

/* The I/O SQ @qid if it posts to @cq, else NULL.  Under rcu_read_lock(). */
static struct nvmet_mdev_sq *nvmet_mdev_cq_sq(struct nvmet_mdev_cq *cq, int qid)
{
	struct nvmet_mdev_sq *sq = rcu_dereference(cq->ctrl->dp->sqs[qid]);

	return sq && sq->cq == cq ? sq : NULL;
}

/* Commands the guest queued and nobody fetched yet (at least 1 if any). */
static unsigned int nvmet_mdev_sq_queued(struct nvmet_mdev_sq *sq)
{
	u32 tail = nvmet_mdev_db_read(sq->ctrl, nvmet_mdev_sq_db_idx(sq->qid));
	u16 head = READ_ONCE(sq->head);

	if (!nvmet_mdev_sq_has_work(sq))
		return 0;
	if (!nvmet_pci_sq_tail_valid(tail, sq->size) || tail == head)
		return 1;
	return nvmet_pci_ring_count(head, tail, sq->size);
}

/*
 * Commands to fetch in the SQs posting to @cq, and (@inflight) commands
 * fetched and not complete, roughly.  Any context.
 */
static unsigned int nvmet_mdev_cq_sqs_queued(struct nvmet_mdev_cq *cq,
					     unsigned int *inflight)
{
	struct nvmet_mdev_sq *sq;
	unsigned int queued = 0;
	int qid;

	*inflight = 0;
	rcu_read_lock();
	for (qid = 1; qid <= cq->ctrl->dp->nr_io_queues; qid++) {
		sq = nvmet_mdev_cq_sq(cq, qid);
		if (!sq)
			continue;
		queued += nvmet_mdev_sq_queued(sq);
		*inflight += atomic_read(&sq->inflight);
	}
	rcu_read_unlock();
	return queued;
}

/* Wake the threads of the SQs posting to @cq.  Any context. */
static void nvmet_mdev_cq_kick_sqs(struct nvmet_mdev_cq *cq)
{
	struct nvmet_mdev_sq *sq;
	int qid;

	rcu_read_lock();
	for (qid = 1; qid <= cq->ctrl->dp->nr_io_queues; qid++) {
		sq = nvmet_mdev_cq_sq(cq, qid);
		if (sq)
			nvmet_mdev_sq_kick(sq);
	}
	rcu_read_unlock();
}

static enum hrtimer_restart nvmet_mdev_coalesce_timer(struct hrtimer *timer)
{
	struct nvmet_mdev_cq *cq =
		container_of(timer, struct nvmet_mdev_cq, coalesce_timer);
	unsigned int queued, inflight;
	unsigned long flags;
	bool deferred;
	u8 n;

	spin_lock_irqsave(&cq->lock, flags);
	n = cq->nr_coalesced;
	cq->nr_coalesced = 0;
	deferred = cq->deferred;
	cq->deferred = false;
	spin_unlock_irqrestore(&cq->lock, flags);

	/*
	 * Commands the guest queued without reaching the next trap?  With
	 * EventIdx at the head, its write traps for them (or has, and runs).
	 */
	queued = nvmet_mdev_cq_sqs_queued(cq, &inflight);
	if (!deferred)
		queued = 0;

	spin_lock_irqsave(&cq->lock, flags);
	if (cq->moderate && (n || queued))
		nvmet_mdev_stat_add(cq->ctrl, NVMET_MDEV_STAT_HOLD_TIMEOUTS, 1);
	if (n > 1 && cq->streaming)
		nvmet_mdev_cq_held_some(cq, n + queued + inflight);
	if (queued) {
		nvmet_mdev_cq_moderate_off(cq, false);
	} else if (n == 1 && cq->moderate) {
		nvmet_mdev_cq_moderate_off(cq, true);
		nvmet_mdev_stat_add(cq->ctrl, NVMET_MDEV_STAT_PROBES_FAILED, 1);
	}
	spin_unlock_irqrestore(&cq->lock, flags);

	if (n)
		nvmet_mdev_irq_raise(cq->ctrl, cq->vector);
	/* The threads fetch the rest, and set EventIdx back to the head. */
	if (deferred)
		nvmet_mdev_cq_kick_sqs(cq);
	return HRTIMER_NORESTART;
}

/*
 * After a trapped write fetched from @sq: where the guest's next tail
 * write traps.  Only a guest with shadow doorbells reads EventIdx; one
 * without traps on every write whatever it says, and deferring would only
 * have the hold timer wake the SQ's thread, which then takes the next
 * writes' fetches (and their moderation probes) from the trapping vCPU.
 * The caller holds NVMET_MDEV_SQ_RUNNING.
 */
void nvmet_mdev_sq_trap_next(struct nvmet_mdev_sq *sq)
{
	unsigned int every = min(NVMET_MDEV_TRAP_EVERY, sq->size / 2);
	struct nvmet_mdev_cq *cq = sq->cq;
	unsigned long flags;

	if (!READ_ONCE(sq->ctrl->dp->eidx))
		return;
	spin_lock_irqsave(&cq->lock, flags);
	/* The write that fills the round traps (and gets it signalled). */
	if (cq->hold > cq->nr_coalesced)
		every = min_t(unsigned int, every,
			      cq->hold - cq->nr_coalesced);
	if (cq->streaming && every > 1) {
		cq->deferred = true;
		nvmet_mdev_cq_arm(cq);
		nvmet_mdev_stat_add(cq->ctrl, NVMET_MDEV_STAT_DEFERRED_TRAPS, 1);
	} else {
		every = 1;	/* the next write */
	}
	nvmet_mdev_eventidx_write(sq->ctrl, nvmet_mdev_sq_db_idx(sq->qid),
				  nvmet_pci_sq_eventidx(sq->head, every,
							sq->size));
	spin_unlock_irqrestore(&cq->lock, flags);
}

/**
 * nvmet_mdev_queue_response() - post the completion of a command
 * @req: the request
 *
 * nvmet's queue_response operation: any context, must not sleep.
 */
void nvmet_mdev_queue_response(struct nvmet_req *req)
{
	struct nvmet_mdev_iod *iod = container_of(req, struct nvmet_mdev_iod, req);
	struct nvmet_mdev_sq *sq = iod->sq;
	struct nvmet_mdev_cq *cq = sq->cq;
	unsigned long flags;
	bool irq = false;

	nvmet_mdev_unmap_data(iod);
	iod->cqe.sq_head = cpu_to_le16(READ_ONCE(sq->head));

	spin_lock_irqsave(&cq->lock, flags);
	if (unlikely(cq->dead)) {
		spin_unlock_irqrestore(&cq->lock, flags);
		nvmet_mdev_iod_put(iod);
		goto done;
	}
	/*
	 * Full, or its ring must be mapped again (by a queue thread), or
	 * no bus mastering: held until it is back.
	 */
	if (unlikely(!list_empty(&cq->parked) || !cq->cqes ||
		     !nvmet_mdev_bus_master(cq->ctrl) ||
		     nvmet_mdev_cq_full(cq, NULL))) {
		list_add_tail(&iod->parked, &cq->parked);
		spin_unlock_irqrestore(&cq->lock, flags);
		/* Have the threads watch the CQ head doorbell. */
		if (nvmet_mdev_bus_master(cq->ctrl))
			nvmet_mdev_kick_all(cq->ctrl);
		goto done;
	}
	nvmet_mdev_cq_post(cq, iod);
	irq = nvmet_mdev_cq_irq_needed(cq, 1);
	spin_unlock_irqrestore(&cq->lock, flags);

	nvmet_mdev_iod_put(iod);
	if (irq)
		nvmet_mdev_irq_raise(cq->ctrl, cq->vector);
done:
	/*
	 * Posted or parked, its interrupt raised or held: a stopping device
	 * waits for that (nvmet_mdev_ctrl_stop()).  nvmet still holds the
	 * SQ here.
	 */
	atomic_dec(&sq->busy);
	smp_mb__after_atomic();	/* busy before stopped, see ctrl_stop */
	if (unlikely(READ_ONCE(sq->ctrl->stopped)))
		wake_up(&sq->dp->pause_wq);
}

/* Post parked completions that fit now (queue thread). */
void nvmet_mdev_cq_retry(struct nvmet_mdev_sq *sq)
{
	struct nvmet_mdev_cq *cq = sq->cq;
	struct nvmet_mdev_iod *iod;
	unsigned long flags;
	unsigned int n = 0;
	bool irq, more, report = false;

	if (list_empty_careful(&cq->parked) || !nvmet_mdev_bus_master(sq->ctrl))
		return;
	if (unlikely(!READ_ONCE(cq->cqes)) && nvmet_mdev_cq_remap(sq, true))
		return;

	spin_lock_irqsave(&cq->lock, flags);
	while (!list_empty(&cq->parked) && cq->cqes &&
	       nvmet_mdev_bus_master(sq->ctrl) &&
	       !nvmet_mdev_cq_full(cq, &report)) {
		iod = list_first_entry(&cq->parked, struct nvmet_mdev_iod,
				       parked);
		list_del(&iod->parked);
		nvmet_mdev_cq_post(cq, iod);
		/*
		 * The iod may belong to another SQ of this CQ: free it
		 * before unlocking, nvmet_mdev_sq_free() of that SQ
		 * serialises on cq->lock.
		 */
		nvmet_mdev_iod_put(iod);
		n++;
	}
	irq = nvmet_mdev_cq_irq_needed(cq, n);
	more = !list_empty(&cq->parked);
	if (more)	/* have the host ring BAR0 when it moves the head */
		nvmet_mdev_eventidx_write(cq->ctrl,
					  nvmet_mdev_cq_db_idx(cq->qid),
					  cq->head);
	spin_unlock_irqrestore(&cq->lock, flags);

	if (irq)
		nvmet_mdev_irq_raise(sq->ctrl, cq->vector);
	if (report)
		nvmet_mdev_bad_db(sq->ctrl, cq->qid, READ_ONCE(cq->bad_head));
}

struct nvmet_mdev_cq *nvmet_mdev_cq_alloc(struct nvmet_mdev_ctrl *ctrl,
					  u16 qid, u16 size, u64 iova,
					  u16 vector, bool irq_enabled)
{
	struct nvmet_mdev_cq *cq;

	cq = kzalloc_obj(*cq, NVMET_MDEV_GFP_QUEUE);
	if (!cq)
		return NULL;
	cq->ctrl = ctrl;
	cq->qid = qid;
	cq->size = size;
	cq->iova = iova;
	cq->vector = vector;
	cq->irq_enabled = irq_enabled;
	cq->phase = true;
	cq->bad_head = NVMET_MDEV_DB_VALID;
	cq->hold = nvmet_mdev_cq_hold_max(cq);
	spin_lock_init(&cq->lock);
	INIT_LIST_HEAD(&cq->parked);
	hrtimer_setup(&cq->coalesce_timer, nvmet_mdev_coalesce_timer,
		      CLOCK_MONOTONIC, HRTIMER_MODE_REL);
	return cq;
}

void nvmet_mdev_cq_free(struct nvmet_mdev_ctrl *ctrl,
			struct nvmet_mdev_cq *cq)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;

	mutex_lock(&dp->qlock);
	RCU_INIT_POINTER(dp->cqs[cq->qid], NULL);
	mutex_unlock(&dp->qlock);

	hrtimer_cancel(&cq->coalesce_timer);
	WARN_ON_ONCE(!list_empty(&cq->parked));
	nvmet_mdev_gunmap(&cq->ring);
	if (cq->nvme_cq.ctrl)
		nvmet_cq_put(&cq->nvme_cq);
	kfree_rcu(cq, rcu);
}

/**
 * nvmet_mdev_cq_quiesce() - a stopped device's moderated interrupts
 * @cq: the CQ, of a controller stopped (nothing is posted any more)
 *
 * Entries posted whose interrupt the CQ still holds (moderation, Interrupt
 * Coalescing) get it now, held by the stopped device until it runs again
 * (or carried by a migration); the hold timer would otherwise raise it
 * later, after the state was saved.
 */
void nvmet_mdev_cq_quiesce(struct nvmet_mdev_cq *cq)
{
	unsigned long flags;
	bool irq;

	hrtimer_cancel(&cq->coalesce_timer);
	spin_lock_irqsave(&cq->lock, flags);
	irq = cq->nr_coalesced && cq->irq_enabled;
	cq->nr_coalesced = 0;
	cq->deferred = false;
	nvmet_mdev_cq_moderate_off(cq, false);
	spin_unlock_irqrestore(&cq->lock, flags);
	if (irq)
		nvmet_mdev_irq_raise(cq->ctrl, cq->vector);
}

/**
 * nvmet_mdev_restore_cq() - create a CQ as a migration saved it
 * @ctrl: the controller, being restored (see nvmet_mdev_restore_sq())
 * @qid: the CQ's identifier
 * @size: its entries, checked against CAP.MQES
 * @iova: its ring
 * @vector: its interrupt vector, checked
 * @irq_enabled: whether it interrupts
 * @tail: the next entry to post, below @size
 * @head: the last head the guest gave, below @size
 * @phase: the phase tag of the entries posted at @tail
 *
 * Return: the CQ, published, or NULL (no memory, ring not mapped).
 */
struct nvmet_mdev_cq *nvmet_mdev_restore_cq(struct nvmet_mdev_ctrl *ctrl,
					    u16 qid, u16 size, u64 iova,
					    u16 vector, bool irq_enabled,
					    u16 tail, u16 head, bool phase)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvmet_mdev_cq *cq;

	cq = nvmet_mdev_cq_alloc(ctrl, qid, size, iova, vector, irq_enabled);
	if (!cq)
		return NULL;
	if (nvmet_mdev_gmap(ctrl, iova, size * sizeof(struct nvme_completion),
			    &cq->ring))
		goto free;
	if (nvmet_cq_create(ctrl->tctrl, &cq->nvme_cq, qid, size))
		goto free;
	cq->cqes = cq->ring.vaddr;
	cq->tail = tail;
	cq->head = head;
	cq->phase = phase;
	mutex_lock(&dp->qlock);
	rcu_assign_pointer(dp->cqs[qid], cq);
	mutex_unlock(&dp->qlock);
	return cq;

free:
	nvmet_mdev_gunmap(&cq->ring);
	kfree(cq);
	return NULL;
}

u16 nvmet_mdev_create_cq(struct nvmet_ctrl *tctrl, u16 cqid, u16 flags,
			 u16 qsize, u64 prp1, u16 vector)
{
	struct nvmet_mdev_ctrl *ctrl = tctrl->drvdata;
	struct nvmet_mdev_dp *dp = ctrl->dp;
	bool ien = flags & NVME_CQ_IRQ_ENABLED;
	struct nvmet_mdev_cq *cq;
	unsigned long irqflags;
	struct nvmet_mdev_gmap map = {};
	u16 status;

	/*
	 * nvmet has checked the queue identifier, that it is free, the size
	 * and the queue memory (contiguous, page aligned): the vector is ours.
	 */
	if (ien && !nvmet_mdev_irq_vector_valid(ctrl, vector))
		return NVME_SC_INVALID_VECTOR | NVME_STATUS_DNR;

	cq = nvmet_mdev_cq_alloc(ctrl, cqid, qsize + 1, prp1, vector, ien);
	if (!cq) {
		nvmet_mdev_queue_nomem(ctrl, "CQ", cqid, qsize + 1);
		return NVME_SC_INTERNAL;
	}

	if (nvmet_mdev_gmap(ctrl, prp1,
			    cq->size * sizeof(struct nvme_completion), &map)) {
		status = NVME_SC_INVALID_FIELD | NVME_STATUS_DNR;
		goto free;
	}
	spin_lock_irqsave(&cq->lock, irqflags);
	cq->ring = map;
	cq->cqes = map.vaddr;
	spin_unlock_irqrestore(&cq->lock, irqflags);

	status = nvmet_cq_create(tctrl, &cq->nvme_cq, cqid, cq->size);
	if (status)
		goto free;

	nvmet_mdev_db_reset(ctrl, nvmet_mdev_cq_db_idx(cqid));
	mutex_lock(&dp->qlock);
	rcu_assign_pointer(dp->cqs[cqid], cq);
	mutex_unlock(&dp->qlock);
	return NVME_SC_SUCCESS;

free:
	nvmet_mdev_gunmap(&cq->ring);
	kfree(cq);
	return status;
}

u16 nvmet_mdev_delete_cq(struct nvmet_ctrl *tctrl, u16 cqid)
{
	struct nvmet_mdev_ctrl *ctrl = tctrl->drvdata;
	struct nvmet_mdev_cq *cq;

	/* nvmet has checked that the CQ exists and that no SQ uses it. */
	cq = rcu_access_pointer(ctrl->dp->cqs[cqid]);
	if (WARN_ON_ONCE(!cq))
		return NVME_SC_INTERNAL | NVME_STATUS_DNR;

	nvmet_mdev_cq_free(ctrl, cq);
	return NVME_SC_SUCCESS;
}
