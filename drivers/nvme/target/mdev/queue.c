// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: queues.
 *
 * Every SQ has a kthread which polls the SQ tail doorbell (BAR0 doorbell
 * page, or shadow doorbell), copies new entries out of the guest ring and
 * submits them to nvmet.  After poll_idle_us without new commands (or as
 * soon as another task wants the CPU) it sleeps.
 *
 * All doorbells share one page, which the guest writes without trapping
 * while it is mapped.  So while any queue thread is awake, it watches the
 * doorbells of the sleeping ones and wakes them; the last thread to go to
 * sleep zaps the page, and the next guest access faults, which maps the
 * page again and wakes the admin queue thread to watch for the write the
 * guest is about to retry.  No wake-up is lost:
 *
 *	thread going to sleep		guest / device model
 *	asleep, kicked = false; mb
 *	EventIdx = head (shadow dbs); mb
 *	last asleep: zap the page	write doorbell (faults if zapped)
 *	re-check own doorbells		fault: map page, admin thread watches
 *	last asleep: check all others	(trapped write: store, then fetch)
 *	sleep until kicked		awake threads: check the sleepers
 *
 * A doorbell write that traps (the doorbell page is not mmapped, see
 * "doorbell_mmap" in Documentation/nvme/mdev.rst) does better than waking a
 * thread: the writer, the vCPU thread of the VMM that took the exit, fetches
 * the new commands itself while the SQ's thread is asleep.  When the guest
 * shares its CPU with the device, a woken thread would only run once the
 * vCPU leaves guest mode again (a tick, a halt), one I/O per tick at worst,
 * and one admin command per tick for a guest (firmware) that polls for it.
 * Whoever fetches from an SQ holds its NVMET_MDEV_SQ_RUNNING bit: the thread
 * from its wake-up until it sleeps again, a trapped write for one burst.
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
 *
 * Completions are posted by nvmet_mdev_queue_response() from whatever
 * context nvmet completes in.  When the CQ is full, completions are parked
 * on the CQ and posted by the queue threads once the host moves the CQ head.
 */

#include <linux/cgroup.h>
#include <linux/delay.h>
#include <linux/sched/clock.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>
#include <linux/slab.h>

#include "datapath.h"

/* ------------------------------------------------------------------ */
/* Thread wake-ups and pausing                                          */

static void nvmet_mdev_sq_kick(struct nvmet_mdev_sq *sq)
{
	WRITE_ONCE(sq->kicked, true);
	wake_up(&sq->wq);
}

/**
 * nvmet_mdev_doorbell_kick() - wake every queue thread of a controller
 * @ctrl: the controller
 *
 * For changes every thread must look at: the end of a pause, a CQ that
 * became full (its head doorbell must be watched).  Any context.
 */
static void nvmet_mdev_doorbell_kick(struct nvmet_mdev_ctrl *ctrl)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvmet_mdev_sq *sq;
	int qid;

	rcu_read_lock();
	for (qid = 0; qid <= NVMET_MDEV_MAX_IO_QUEUES; qid++) {
		sq = rcu_dereference(dp->sqs[qid]);
		if (sq)
			nvmet_mdev_sq_kick(sq);
	}
	rcu_read_unlock();
}

/*
 * How long the admin thread watches the doorbells after a page fault.  The
 * access the guest retries once the fault is resolved must reach the page
 * before the last thread to sleep zaps it again, or the retry faults, the
 * watch starts over, and the guest never gets past its doorbell write.  A
 * nested or overcommitted vCPU can take longer than the first window to
 * retry (seen: a nested guest under TCG stuck for minutes at one doorbell
 * write).  A fault that finds no doorbell changed since the last one is
 * taken as such a retry, and the window doubles, up to
 * NVMET_MDEV_WATCH_MAX_NS; once the guest's writes land, faults start from
 * NVMET_MDEV_WATCH_NS again.
 */
#define NVMET_MDEV_WATCH_NS	(2 * NSEC_PER_MSEC)
#define NVMET_MDEV_WATCH_MAX_NS	(128 * NSEC_PER_MSEC)

/* A digest of the doorbell values, to tell whether the guest wrote any. */
static u32 nvmet_mdev_db_digest(struct nvmet_mdev_ctrl *ctrl)
{
	unsigned int i, n = 2 * (ctrl->params.nr_io_queues + 1);
	u32 digest = 0;

	for (i = 0; i < n; i++)
		digest = digest * 31 + le32_to_cpu(READ_ONCE(ctrl->db[i]));
	return digest;
}

/**
 * nvmet_mdev_doorbell_fault() - the guest touched the zapped doorbell page
 * @ctrl: the controller
 *
 * Called by the device model after it mapped the page again: the access
 * (usually a doorbell write, retried once the fault is resolved) has not
 * happened yet, so the admin queue thread watches every doorbell for a
 * while and wakes the queue threads that get work.  Any process context.
 */
void nvmet_mdev_doorbell_fault(struct nvmet_mdev_ctrl *ctrl)
{
	u32 digest = nvmet_mdev_db_digest(ctrl);
	struct nvmet_mdev_sq *sq;
	u64 watch;

	nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_DB_FAULTS, 1);
	rcu_read_lock();
	sq = rcu_dereference(ctrl->dp->sqs[0]);
	if (sq) {
		/*
		 * Nothing written since the last fault: its access missed
		 * the watch.  Concurrent faults race here harmlessly.
		 */
		watch = READ_ONCE(sq->watch_ns);
		if (watch && digest == READ_ONCE(sq->watch_digest))
			watch = min(2 * watch, NVMET_MDEV_WATCH_MAX_NS);
		else
			watch = NVMET_MDEV_WATCH_NS;
		WRITE_ONCE(sq->watch_digest, digest);
		WRITE_ONCE(sq->watch_ns, watch);
		WRITE_ONCE(sq->watch_until, local_clock() + watch);
		nvmet_mdev_sq_kick(sq);
	}
	rcu_read_unlock();
}

/* Take the right to fetch from @sq; see NVMET_MDEV_SQ_RUNNING. */
static bool nvmet_mdev_sq_trylock(struct nvmet_mdev_sq *sq)
{
	return !test_and_set_bit_lock(NVMET_MDEV_SQ_RUNNING, &sq->state);
}

static void nvmet_mdev_sq_unlock(struct nvmet_mdev_sq *sq)
{
	clear_bit_unlock(NVMET_MDEV_SQ_RUNNING, &sq->state);
	/* wq_has_sleeper() orders the clear before looking for waiters. */
	if (wq_has_sleeper(&sq->dp->pause_wq))
		wake_up_all(&sq->dp->pause_wq);
	if (wq_has_sleeper(&sq->wq))
		wake_up(&sq->wq);
}

/* The thread takes its SQ back from a trapped doorbell write (one burst). */
static void nvmet_mdev_sq_thread_lock(struct nvmet_mdev_sq *sq)
{
	wait_event_idle(sq->wq, nvmet_mdev_sq_trylock(sq));
}

/* Park the calling queue thread while the data path is paused. */
static bool nvmet_mdev_sq_check_pause(struct nvmet_mdev_sq *sq)
{
	struct nvmet_mdev_dp *dp = sq->dp;

	if (likely(!READ_ONCE(dp->pause_count) && !sq->parked))
		return false;

	spin_lock(&dp->pause_lock);
	if (!dp->pause_count) {
		sq->parked = false;
		spin_unlock(&dp->pause_lock);
		return false;
	}
	sq->parked = true;
	spin_unlock(&dp->pause_lock);

	nvmet_mdev_sq_unlock(sq);	/* wakes the pauser */
	wait_event_idle(sq->wq, !READ_ONCE(dp->pause_count) ||
			kthread_should_stop());
	nvmet_mdev_sq_thread_lock(sq);
	return true;
}

static bool nvmet_mdev_sq_is_parked(struct nvmet_mdev_sq *sq)
{
	bool parked;

	spin_lock(&sq->dp->pause_lock);
	parked = (sq->parked || !sq->thread) &&
		 !test_bit(NVMET_MDEV_SQ_RUNNING, &sq->state);
	spin_unlock(&sq->dp->pause_lock);
	return parked;
}

static void nvmet_mdev_wait_parked(struct nvmet_mdev_sq *sq, bool drain)
{
	struct nvmet_mdev_dp *dp = sq->dp;

	nvmet_mdev_sq_kick(sq);
	wait_event(dp->pause_wq, nvmet_mdev_sq_is_parked(sq));
	if (drain)
		wait_event(dp->pause_wq, !atomic_read(&sq->inflight));
}

/**
 * nvmet_mdev_pause() - stop the queue threads between two commands
 * @ctrl: the controller
 * @self: the SQ the caller fetches from (admin SQ, Doorbell Buffer Config), or
 *	NULL for dma_unmap (ctrl->lock held): then all threads are parked and
 *	every command holding guest data pages has completed on return.
 *
 * Pauses nest; each one must be followed by nvmet_mdev_resume().
 */
void nvmet_mdev_pause(struct nvmet_mdev_ctrl *ctrl, struct nvmet_mdev_sq *self)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvmet_mdev_sq *sq;
	int qid;

	spin_lock(&dp->pause_lock);
	dp->pause_count++;
	spin_unlock(&dp->pause_lock);
	/* pause_count before RUNNING: pairs with nvmet_mdev_db_written() */
	smp_mb();

	/* Admin commands create and delete queues: park their SQ first. */
	if (!self) {
		sq = rcu_dereference_protected(dp->sqs[0],
					       lockdep_is_held(&ctrl->lock));
		if (sq)
			nvmet_mdev_wait_parked(sq, true);
	}

	mutex_lock(&dp->qlock);
	for (qid = 1; qid <= NVMET_MDEV_MAX_IO_QUEUES; qid++) {
		sq = rcu_dereference_protected(dp->sqs[qid],
					       lockdep_is_held(&dp->qlock));
		if (sq && sq != self)
			nvmet_mdev_wait_parked(sq, !self);
	}
	mutex_unlock(&dp->qlock);
}

/**
 * nvmet_mdev_resume() - undo nvmet_mdev_pause()
 * @ctrl: the controller
 */
void nvmet_mdev_resume(struct nvmet_mdev_ctrl *ctrl)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;

	spin_lock(&dp->pause_lock);
	if (!WARN_ON_ONCE(!dp->pause_count))
		dp->pause_count--;
	spin_unlock(&dp->pause_lock);
	nvmet_mdev_doorbell_kick(ctrl);
}

/**
 * nvmet_mdev_bus_master_changed() - PCI_COMMAND bus mastering toggled
 * @ctrl: the controller (ctrl->lock held)
 *
 * Turned off, the device stops touching the guest's memory: nobody fetches
 * from the SQs any more (nvmet_mdev_sq_process()), completions wait on
 * their CQ's parked list, EventIdx is left alone, and on return every
 * command that was moving data to or from guest pages has finished (the
 * pause drains them, as for dma_unmap).  Commands already submitted to the
 * namespace complete there; the guest learns of them once bus mastering
 * is back, or never if it resets the controller first.  Turned on, the
 * queue threads post the parked completions and fetch again.
 */
void nvmet_mdev_bus_master_changed(struct nvmet_mdev_ctrl *ctrl)
{
	lockdep_assert_held(&ctrl->lock);

	if (nvmet_mdev_bus_master(ctrl)) {
		nvmet_mdev_doorbell_kick(ctrl);
		return;
	}
	nvmet_mdev_pause(ctrl, NULL);
	nvmet_mdev_resume(ctrl);
}

/* ------------------------------------------------------------------ */
/* Commands                                                             */

static struct nvmet_mdev_iod *nvmet_mdev_iod_get(struct nvmet_mdev_sq *sq)
{
	struct llist_node *node = sq->free_local;

	if (!node) {
		node = llist_del_all(&sq->free_iods);
		if (!node)
			return NULL;
	}
	sq->free_local = node->next;
	return container_of(node, struct nvmet_mdev_iod, free_node);
}

/* Give back the iod just taken, unused (runner private). */
static void nvmet_mdev_iod_unget(struct nvmet_mdev_sq *sq,
				 struct nvmet_mdev_iod *iod)
{
	iod->free_node.next = sq->free_local;
	sq->free_local = &iod->free_node;
}

/* Any context. */
static void nvmet_mdev_iod_put(struct nvmet_mdev_iod *iod)
{
	struct nvmet_mdev_sq *sq = iod->sq;

	llist_add(&iod->free_node, &sq->free_iods);
	/* llist_add() is a full barrier, pairs with the thread's smp_mb() */
	if (READ_ONCE(sq->starved))
		nvmet_mdev_sq_kick(sq);
}

static void nvmet_mdev_async_error(struct nvmet_mdev_ctrl *ctrl, u8 info)
{
	if (ctrl->tctrl)
		nvmet_add_async_event(ctrl->tctrl, NVME_AER_ERROR, info,
				      NVME_LOG_ERROR);
}

/*
 * Invalid value in a doorbell of an existing queue (queue thread): fatal
 * for the admin queue, else an Asynchronous Event.  The caller reports
 * once per invalid episode (until the doorbell holds a valid value again),
 * and the queue has no work while the value stays invalid: a guest cannot
 * make the host spin or queue events with a single write.
 */
static void nvmet_mdev_bad_db(struct nvmet_mdev_ctrl *ctrl, u16 qid, u32 val)
{
	if (!qid) {
		dev_warn_ratelimited(ctrl->vdev.dev,
				     "invalid admin doorbell value %u\n", val);
		nvmet_mdev_ctrl_fatal(ctrl);
		return;
	}
	nvmet_mdev_async_error(ctrl, NVMET_MDEV_AER_INVALID_DB_VALUE);
}

static void nvmet_mdev_exec(struct nvmet_mdev_sq *sq, struct nvmet_mdev_iod *iod)
{
	struct nvmet_req *req = &iod->req;
	size_t len;
	u16 status;

	/* On failure nvmet_req_init() has already completed the command. */
	if (!nvmet_req_init(req, &sq->nvme_sq, &nvmet_mdev_fabrics_ops))
		return;

	len = nvmet_req_transfer_len(req);
	if (len) {
		status = nvmet_mdev_map_data(iod, len);
		if (status) {
			nvmet_req_complete(req, status);
			return;
		}
	}

	req->execute(req);
}

/*
 * Map a ring again: at queue creation the rings are mapped, but the guest
 * (its VMM) may unmap and map again the memory holding them while they
 * are live; QEMU does so for all of RAM when the firmware changes the
 * memory layout, with the firmware's NVMe queues in use.  The queue
 * threads map such rings again when they next need them, and only a ring
 * whose memory is still not mapped a while later is a fatal error.
 */

/* How long a live ring may stay unmapped once it is needed. */
#define NVMET_MDEV_REMAP_GRACE	HZ

/*
 * A ring is needed but its memory is not mapped.  The VMM may be changing
 * the guest's memory map (unmapping, then mapping again): with @grace,
 * keep trying (see the thread loop) for NVMET_MDEV_REMAP_GRACE first.
 * Returns whether to try again later.
 */
static bool nvmet_mdev_remap_later(struct nvmet_mdev_sq *sq, bool grace)
{
	if (!grace)
		return false;
	if (!sq->remap_since) {
		sq->remap_since = jiffies | 1;
		return true;
	}
	if (time_before(jiffies, sq->remap_since + NVMET_MDEV_REMAP_GRACE))
		return true;
	sq->remap_since = 0;
	return false;
}

/*
 * Whether a doorbell holds a new value: neither the one last acted upon
 * nor the invalid one last reported.
 */
static bool nvmet_mdev_db_changed(struct nvmet_mdev_ctrl *ctrl,
				  unsigned int idx, u16 cur, u64 bad)
{
	u32 val = nvmet_mdev_db_read(ctrl, idx);

	return val != cur && val != bad;
}

/* Whether a ring of this thread is still unmapped and still needed. */
static bool nvmet_mdev_remap_needed(struct nvmet_mdev_sq *sq)
{
	struct nvmet_mdev_cq *cq = sq->cq;

	if (READ_ONCE(sq->broken))
		return false;
	if (!sq->sqes &&
	    nvmet_mdev_db_changed(sq->ctrl, nvmet_mdev_sq_db_idx(sq->qid),
				  sq->head, sq->bad_tail))
		return true;
	return !READ_ONCE(cq->cqes) && !READ_ONCE(cq->dead) &&
		!list_empty_careful(&cq->parked);
}

static int nvmet_mdev_sq_remap(struct nvmet_mdev_sq *sq, bool grace)
{
	struct nvmet_mdev_ctrl *ctrl = sq->ctrl;
	int ret;

	ret = nvmet_mdev_gmap(ctrl, sq->iova,
			      sq->size * sizeof(struct nvme_command), &sq->ring);
	if (ret && nvmet_mdev_remap_later(sq, grace))
		return -EAGAIN;
	if (ret) {
		dev_warn_ratelimited(ctrl->vdev.dev,
				     "SQ %u ring at %#llx is not mapped\n",
				     sq->qid, sq->iova);
		WRITE_ONCE(sq->broken, true);
		nvmet_mdev_ctrl_fatal(ctrl);
		return ret;
	}
	sq->sqes = sq->ring.vaddr;
	sq->remap_since = 0;
	return 0;
}

static int nvmet_mdev_cq_remap(struct nvmet_mdev_sq *sq, bool grace)
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
 * Commands a trapped doorbell write leaves to the SQ's thread.  Deleting an
 * I/O SQ waits for the commands in flight on it, as long as the backend
 * takes; the writer is the VMM's vCPU thread, which must get back to the
 * guest (and to a fatal signal).
 */
static bool nvmet_mdev_thread_only(struct nvmet_mdev_sq *sq,
				   const struct nvme_command *cmd)
{
	return !sq->qid && cmd->common.opcode == nvme_admin_delete_sq;
}

/*
 * Fetch and submit up to a burst of new commands; returns how many.  The
 * caller holds NVMET_MDEV_SQ_RUNNING: the SQ's thread (@thread), or a
 * trapped doorbell write.
 */
static int nvmet_mdev_sq_process(struct nvmet_mdev_sq *sq, bool thread)
{
	struct nvmet_mdev_ctrl *ctrl = sq->ctrl;
	struct nvmet_mdev_iod *iod;
	/* Where nvmet_mdev_db_read() looks, for the counters. */
	bool shadow = sq->qid && READ_ONCE(ctrl->dp->sdb);
	u32 tail;
	u16 head = sq->head;
	int n = 0;

	/* Fetching is a DMA read: see nvmet_mdev_bus_master_changed(). */
	if (unlikely(!nvmet_mdev_bus_master(ctrl)))
		return 0;
	tail = nvmet_mdev_db_read(ctrl, nvmet_mdev_sq_db_idx(sq->qid));
	if (unlikely(tail >= sq->size)) {
		if (sq->bad_tail == NVMET_MDEV_DB_VALID)
			nvmet_mdev_bad_db(ctrl, sq->qid, tail);
		WRITE_ONCE(sq->bad_tail, tail);
		if (!sq->qid)
			WRITE_ONCE(sq->broken, true);
		return 0;
	}
	if (unlikely(sq->bad_tail != NVMET_MDEV_DB_VALID))
		WRITE_ONCE(sq->bad_tail, NVMET_MDEV_DB_VALID);

	if (unlikely(!sq->sqes) && head != tail && nvmet_mdev_sq_remap(sq, true))
		return 0;

	while (head != tail && n < NVMET_MDEV_SQ_BURST &&
	       !(thread ? kthread_should_stop() : fatal_signal_pending(current))) {
		iod = nvmet_mdev_iod_get(sq);
		if (unlikely(!iod)) {
			WRITE_ONCE(sq->starved, true);
			smp_mb();	/* pairs with nvmet_mdev_iod_put() */
			iod = nvmet_mdev_iod_get(sq);
			if (!iod)
				break;
			WRITE_ONCE(sq->starved, false);
		}

		/* Copy the entry: the guest may rewrite the ring any time. */
		memcpy(&iod->cmd, &sq->sqes[head], sizeof(iod->cmd));
		if (unlikely(!thread && nvmet_mdev_thread_only(sq, &iod->cmd))) {
			nvmet_mdev_iod_unget(sq, iod);
			break;
		}
		if (++head == sq->size)
			head = 0;
		WRITE_ONCE(sq->head, head);

		nvmet_mdev_exec(sq, iod);
		n++;
	}

	/* Hosts using shadow doorbells for the admin SQ must ring BAR0. */
	if (!sq->qid)
		nvmet_mdev_eventidx_write(ctrl, nvmet_mdev_sq_db_idx(0), head);
	nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_COMMANDS, n);
	if (shadow)
		nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_SHADOW_COMMANDS, n);
	if (!thread)
		nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_TRAP_COMMANDS, n);
	return n;
}

/* Also called by other queue threads for a sleeping one. */
static bool nvmet_mdev_sq_has_work(struct nvmet_mdev_sq *sq)
{
	struct nvmet_mdev_cq *cq = sq->cq;

	if (READ_ONCE(sq->broken) || !nvmet_mdev_bus_master(sq->ctrl))
		return false;
	/* Starved: new commands wait for a free iod. */
	if (READ_ONCE(sq->starved) ? !llist_empty(&sq->free_iods) :
	    nvmet_mdev_db_changed(sq->ctrl, nvmet_mdev_sq_db_idx(sq->qid),
				  READ_ONCE(sq->head), READ_ONCE(sq->bad_tail)))
		return true;
	/* Parked completions wait for the host to move the CQ head. */
	return !list_empty_careful(&cq->parked) &&
		nvmet_mdev_db_changed(sq->ctrl, nvmet_mdev_cq_db_idx(cq->qid),
				      READ_ONCE(cq->head),
				      READ_ONCE(cq->bad_head));
}

/* ------------------------------------------------------------------ */
/* Completions                                                          */

/*
 * Whether the CQ has no free entry, reading the head doorbell again if it
 * looks full.  A head value beyond the queue or beyond the entries posted
 * is ignored; a queue thread (@report non-NULL) records it, and sets
 * *@report if it starts an invalid episode.  cq->lock held.
 */
static bool nvmet_mdev_cq_full(struct nvmet_mdev_cq *cq, bool *report)
{
	u16 next = cq->tail + 1 == cq->size ? 0 : cq->tail + 1;
	u16 posted, consumed;
	u32 head;

	if (likely(next != cq->head))
		return false;

	/* Any context: the shadow doorbells go away after a grace period. */
	rcu_read_lock();
	head = nvmet_mdev_db_read(cq->ctrl, nvmet_mdev_cq_db_idx(cq->qid));
	rcu_read_unlock();
	if (head == cq->head)
		return true;

	posted = (cq->tail + cq->size - cq->head) % cq->size;
	consumed = (head + cq->size - cq->head) % cq->size;
	if (head >= cq->size || consumed > posted) {
		if (report) {
			*report = cq->bad_head == NVMET_MDEV_DB_VALID;
			WRITE_ONCE(cq->bad_head, head);
		}
		return true;
	}
	WRITE_ONCE(cq->bad_head, NVMET_MDEV_DB_VALID);
	WRITE_ONCE(cq->head, head);	/* read locklessly by the threads */
	return next == head;
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

	if (++cq->tail == cq->size) {
		cq->tail = 0;
		cq->phase = !cq->phase;
	}
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
static void nvmet_mdev_cq_trapped(struct nvmet_mdev_cq *cq)
{
	struct nvmet_mdev_dp *dp = cq->ctrl->dp;
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
		if (cq->nr_coalesced &&
		    (!READ_ONCE(dp->coal_thr) || !READ_ONCE(dp->coal_time))) {
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
	u8 thr = READ_ONCE(dp->coal_thr);
	u8 time = READ_ONCE(dp->coal_time);

	if (!cq->irq_enabled || !n)
		return false;
	if (!cq->qid || test_bit(cq->vector, dp->vec_cd))
		return true;
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
	if (tail >= sq->size || tail == head)
		return 1;
	return (tail + sq->size - head) % sq->size;
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
static void nvmet_mdev_sq_trap_next(struct nvmet_mdev_sq *sq)
{
	unsigned int every = min(NVMET_MDEV_TRAP_EVERY, sq->size / 2);
	struct nvmet_mdev_cq *cq = sq->cq;
	u16 next = sq->head;
	unsigned long flags;

	if (!READ_ONCE(sq->ctrl->dp->eidx))
		return;
	spin_lock_irqsave(&cq->lock, flags);
	/* The write that fills the round traps (and gets it signalled). */
	if (cq->hold > cq->nr_coalesced)
		every = min_t(unsigned int, every,
			      cq->hold - cq->nr_coalesced);
	if (cq->streaming && every > 1) {
		next = (next + every - 1) % sq->size;
		cq->deferred = true;
		nvmet_mdev_cq_arm(cq);
		nvmet_mdev_stat_add(cq->ctrl, NVMET_MDEV_STAT_DEFERRED_TRAPS, 1);
	}
	nvmet_mdev_eventidx_write(sq->ctrl, nvmet_mdev_sq_db_idx(sq->qid),
				  next);
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
		return;
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
			nvmet_mdev_doorbell_kick(cq->ctrl);
		return;
	}
	nvmet_mdev_cq_post(cq, iod);
	irq = nvmet_mdev_cq_irq_needed(cq, 1);
	spin_unlock_irqrestore(&cq->lock, flags);

	nvmet_mdev_iod_put(iod);
	if (irq)
		nvmet_mdev_irq_raise(cq->ctrl, cq->vector);
}

/* Post parked completions that fit now (queue thread). */
static void nvmet_mdev_cq_retry(struct nvmet_mdev_sq *sq)
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

/* ------------------------------------------------------------------ */
/* Queue threads                                                        */

/* Wake the sleeping queue threads that have work to do. */
static void nvmet_mdev_wake_sleepers(struct nvmet_mdev_sq *self)
{
	struct nvmet_mdev_dp *dp = self->dp;
	struct nvmet_mdev_sq *sq;
	int qid;

	if (!READ_ONCE(dp->nr_asleep))
		return;
	rcu_read_lock();
	for (qid = 0; qid <= dp->nr_io_queues; qid++) {
		sq = rcu_dereference(dp->sqs[qid]);
		if (sq && sq != self && READ_ONCE(sq->asleep) &&
		    nvmet_mdev_sq_has_work(sq))
			nvmet_mdev_sq_kick(sq);
	}
	rcu_read_unlock();
}

/* Sleep until kicked, following the protocol at the top of this file. */
static void nvmet_mdev_sq_sleep(struct nvmet_mdev_sq *sq)
{
	struct nvmet_mdev_ctrl *ctrl = sq->ctrl;
	struct nvmet_mdev_dp *dp = sq->dp;
	bool last;

	spin_lock(&dp->pause_lock);
	WRITE_ONCE(sq->kicked, false);
	WRITE_ONCE(sq->asleep, true);
	WRITE_ONCE(dp->nr_asleep, dp->nr_asleep + 1);
	last = dp->nr_asleep == dp->nr_threads;
	spin_unlock(&dp->pause_lock);
	smp_mb();	/* asleep and kicked before looking at the doorbells */

	nvmet_mdev_eventidx_write(ctrl, nvmet_mdev_sq_db_idx(sq->qid),
				  sq->head);
	/* From here on a trapped doorbell write may fetch for us. */
	nvmet_mdev_sq_unlock(sq);
	smp_mb();	/* EventIdx and RUNNING before reading the doorbells */

	if (last)
		nvmet_mdev_doorbell_zap(ctrl);
	if (!nvmet_mdev_sq_has_work(sq)) {
		if (last)
			nvmet_mdev_wake_sleepers(sq);
		wait_event_idle(sq->wq, READ_ONCE(sq->kicked) ||
				READ_ONCE(dp->pause_count) ||
				kthread_should_stop());
	}

	spin_lock(&dp->pause_lock);
	WRITE_ONCE(sq->asleep, false);
	WRITE_ONCE(dp->nr_asleep, dp->nr_asleep - 1);
	spin_unlock(&dp->pause_lock);

	nvmet_mdev_sq_thread_lock(sq);
}

static int nvmet_mdev_sq_thread(void *data)
{
	struct nvmet_mdev_sq *sq = data;
	struct nvmet_mdev_ctrl *ctrl = sq->ctrl;
	u64 poll_ns = (u64)ctrl->params.poll_idle_us * NSEC_PER_USEC;
	u64 now, last = local_clock();
	struct mem_cgroup *old_memcg;
	int n;

	/*
	 * The guest's work: run in the VMM's cgroups (CPU, cpuset) and
	 * charge the guest-sized allocations (__GFP_ACCOUNT) to its memcg.
	 */
	if (cgroup_attach_task_all(ctrl->owner, current))
		dev_warn_once(ctrl->vdev.dev,
			      "queue threads stay out of the VMM's cgroups\n");
	old_memcg = set_active_memcg(ctrl->memcg);
	/* See nvmet_mdev_sq_stop(). */
	allow_signal(SIGKILL);
	nvmet_mdev_sq_thread_lock(sq);

	/* The admin queues are mapped before the controller is ready. */
	if (!sq->qid) {
		if (nvmet_mdev_cq_remap(sq, false) ||
		    nvmet_mdev_sq_remap(sq, false)) {
			WRITE_ONCE(sq->broken, true);
		} else {
			nvmet_mdev_csts_set(ctrl, NVME_CSTS_RDY, 0);
			nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_ENABLES, 1);
		}
	}

	while (!kthread_should_stop()) {
		if (nvmet_mdev_sq_check_pause(sq))
			continue;

		n = READ_ONCE(sq->broken) ? 0 : nvmet_mdev_sq_process(sq, true);
		nvmet_mdev_cq_retry(sq);
		nvmet_mdev_wake_sleepers(sq);
		now = local_clock();
		if (n) {
			last = now;
			cond_resched();
			continue;
		}
		/* A ring to map again (see nvmet_mdev_remap_later()). */
		if (unlikely(sq->remap_since)) {
			if (nvmet_mdev_remap_needed(sq)) {
				schedule_timeout_idle(max(HZ / 100, 1));
				continue;
			}
			sq->remap_since = 0;
		}
		/* Spin only while nobody else wants this CPU (the vCPU?). */
		if (now - last < poll_ns && !need_resched() &&
		    single_task_running()) {
			cpu_relax();
			continue;
		}
		/* After a doorbell page fault: wait for the guest's write. */
		if (now < READ_ONCE(sq->watch_until)) {
			usleep_range(20, 50);
			continue;
		}
		nvmet_mdev_sq_sleep(sq);
		last = local_clock();
	}
	nvmet_mdev_sq_unlock(sq);
	set_active_memcg(old_memcg);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Queue creation and deletion                                          */

/*
 * The guest sizes its queues (an SQ has a command context per entry), and
 * their memory is charged to the memory cgroup of the device's opener (see
 * nvmet_mdev_sq_thread()).  Beyond the group's limit Create I/O SQ or CQ
 * fails with Internal Error, which a host survives with fewer queues,
 * rather than the group's OOM killer picking a victim (the VMM) for the
 * guest's request; and a guest cannot fill the log with failed allocations.
 */
#define NVMET_MDEV_GFP_QUEUE	\
	(GFP_KERNEL_ACCOUNT | __GFP_RETRY_MAYFAIL | __GFP_NOWARN)

static struct nvmet_mdev_cq *nvmet_mdev_cq_alloc(struct nvmet_mdev_ctrl *ctrl,
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

static void nvmet_mdev_cq_free(struct nvmet_mdev_ctrl *ctrl,
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

/* How long a queue thread may take to stop before it gets SIGKILL. */
#define NVMET_MDEV_STOP_GRACE	(3 * HZ)

static void nvmet_mdev_sq_stop_work(struct work_struct *work)
{
	struct nvmet_mdev_sq *sq =
		container_of(to_delayed_work(work), struct nvmet_mdev_sq,
			     stop_work);

	send_sig(SIGKILL, sq->thread, 1);
}

static struct nvmet_mdev_sq *nvmet_mdev_sq_alloc(struct nvmet_mdev_ctrl *ctrl,
						 u16 qid, u16 size, u64 iova,
						 struct nvmet_mdev_cq *cq)
{
	struct nvmet_mdev_sq *sq;
	struct nvmet_mdev_iod *iod;
	unsigned int i;

	sq = kzalloc_obj(*sq, NVMET_MDEV_GFP_QUEUE);
	if (!sq)
		return NULL;
	sq->ctrl = ctrl;
	sq->dp = ctrl->dp;
	sq->cq = cq;
	sq->qid = qid;
	sq->size = size;
	sq->iova = iova;
	sq->bad_tail = NVMET_MDEV_DB_VALID;
	init_waitqueue_head(&sq->wq);
	INIT_DELAYED_WORK(&sq->stop_work, nvmet_mdev_sq_stop_work);
	atomic_set(&sq->inflight, 0);
	init_llist_head(&sq->free_iods);

	sq->nr_iods = qid ? size : min_t(unsigned int, size,
					 NVMET_MDEV_ADMIN_IODS);
	sq->iods = kvzalloc_objs(*sq->iods, sq->nr_iods, NVMET_MDEV_GFP_QUEUE);
	sq->sgl_descs = kmalloc_objs(*sq->sgl_descs, NVMET_MDEV_MAX_SGL_DESCS,
				     NVMET_MDEV_GFP_QUEUE);
	if (!sq->iods || !sq->sgl_descs)
		goto free;

	for (i = 0; i < sq->nr_iods; i++) {
		iod = &sq->iods[i];
		iod->sq = sq;
		iod->req.cmd = &iod->cmd;
		iod->req.cqe = &iod->cqe;
		iod->req.port = ctrl->port->nport;
		llist_add(&iod->free_node, &sq->free_iods);
	}
	return sq;

free:
	kvfree(sq->iods);
	kfree(sq->sgl_descs);
	kfree(sq);
	return NULL;
}

/* Stop the queue thread, if it is still running. */
static void nvmet_mdev_sq_stop(struct nvmet_mdev_sq *sq)
{
	struct nvmet_mdev_dp *dp = sq->dp;

	if (!sq->thread)
		return;
	/*
	 * Pinning may wait for the VMM to resolve a userfaultfd fault
	 * (iommufd lets GUP wait), which nothing but a fatal signal ends.
	 * A thread still running a while after being told to stop gets one:
	 * such waits, and its further pins, fail.
	 */
	schedule_delayed_work(&sq->stop_work, NVMET_MDEV_STOP_GRACE);
	kthread_stop(sq->thread);
	cancel_delayed_work_sync(&sq->stop_work);
	spin_lock(&dp->pause_lock);
	sq->thread = NULL;
	dp->nr_threads--;
	spin_unlock(&dp->pause_lock);
}

/*
 * Stop trapped doorbell writes from fetching from @sq, and wait for one
 * that still is.
 */
static void nvmet_mdev_sq_fence(struct nvmet_mdev_sq *sq)
{
	set_bit(NVMET_MDEV_SQ_DEAD, &sq->state);
	smp_mb__after_atomic();	/* DEAD before RUNNING, see db_written */
	wait_event(sq->dp->pause_wq,
		   !test_bit(NVMET_MDEV_SQ_RUNNING, &sq->state));
}

static void nvmet_mdev_sq_free(struct nvmet_mdev_ctrl *ctrl,
			       struct nvmet_mdev_sq *sq)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvmet_mdev_cq *cq = sq->cq;
	struct nvmet_mdev_iod *iod, *tmp;
	unsigned long flags;

	mutex_lock(&dp->qlock);
	RCU_INIT_POINTER(dp->sqs[sq->qid], NULL);
	mutex_unlock(&dp->qlock);

	nvmet_mdev_sq_stop(sq);
	nvmet_mdev_sq_fence(sq);

	/* Waits for the commands in flight, failing AERs on the admin SQ. */
	if (sq->nvme_sq.ctrl)
		nvmet_sq_destroy(&sq->nvme_sq);

	/* The host no longer expects the completions still parked. */
	spin_lock_irqsave(&cq->lock, flags);
	list_for_each_entry_safe(iod, tmp, &cq->parked, parked)
		if (iod->sq == sq)
			list_del(&iod->parked);
	spin_unlock_irqrestore(&cq->lock, flags);

	nvmet_mdev_gunmap(&sq->ring);
	kvfree(sq->iods);
	kfree(sq->sgl_descs);
	kfree_rcu(sq, rcu);
}

static int nvmet_mdev_sq_start(struct nvmet_mdev_ctrl *ctrl,
			       struct nvmet_mdev_sq *sq)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct task_struct *t;

	t = kthread_create(nvmet_mdev_sq_thread, sq, "nvmet-mdev%u/%u",
			   ctrl->tctrl->cntlid, sq->qid);
	if (IS_ERR(t))
		return PTR_ERR(t);

	spin_lock(&dp->pause_lock);
	sq->thread = t;
	dp->nr_threads++;
	spin_unlock(&dp->pause_lock);

	mutex_lock(&dp->qlock);
	rcu_assign_pointer(dp->sqs[sq->qid], sq);
	mutex_unlock(&dp->qlock);

	wake_up_process(t);
	return 0;
}

static void nvmet_mdev_db_reset(struct nvmet_mdev_ctrl *ctrl, unsigned int idx)
{
	__le32 *sdb = ctrl->dp->sdb;

	WRITE_ONCE(ctrl->db[idx], 0);
	if (sdb)
		WRITE_ONCE(sdb[idx], 0);
	nvmet_mdev_eventidx_write(ctrl, idx, 0);
}

/* The operator's clue when a Create I/O queue fails for want of memory. */
static void nvmet_mdev_queue_nomem(struct nvmet_mdev_ctrl *ctrl,
				   const char *what, u16 qid, u32 entries)
{
	dev_warn_ratelimited(ctrl->vdev.dev,
			     "no memory for I/O %s %u of %u entries (the VMM's memory.max?)\n",
			     what, qid, entries);
}

static u16 nvmet_mdev_check_io_qid(struct nvmet_mdev_ctrl *ctrl, u16 qid)
{
	if (!qid || qid > ctrl->dp->nr_io_queues)
		return NVME_SC_QID_INVALID | NVME_STATUS_DNR;
	return NVME_SC_SUCCESS;
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

	status = nvmet_mdev_check_io_qid(ctrl, cqid);
	if (status)
		return status;
	if (rcu_access_pointer(dp->cqs[cqid]))
		return NVME_SC_QID_INVALID | NVME_STATUS_DNR;
	if (!(flags & NVME_QUEUE_PHYS_CONTIG))
		return NVME_SC_INVALID_FIELD | NVME_STATUS_DNR;
	if (!qsize || qsize > dp->mqes)
		return NVME_SC_QUEUE_SIZE | NVME_STATUS_DNR;
	if (!IS_ALIGNED(prp1, NVMET_MDEV_MPS))
		return NVME_SC_PRP_INVALID_OFFSET | NVME_STATUS_DNR;
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
	u16 status;

	status = nvmet_mdev_check_io_qid(ctrl, cqid);
	if (status)
		return status;
	cq = rcu_access_pointer(ctrl->dp->cqs[cqid]);
	if (!cq)
		return NVME_SC_QID_INVALID | NVME_STATUS_DNR;
	if (nvmet_cq_in_use(&cq->nvme_cq))
		return NVME_SC_QID_INVALID | NVME_STATUS_DNR;

	nvmet_mdev_cq_free(ctrl, cq);
	return NVME_SC_SUCCESS;
}

u16 nvmet_mdev_create_sq(struct nvmet_ctrl *tctrl, u16 sqid, u16 cqid,
			 u16 flags, u16 qsize, u64 prp1)
{
	struct nvmet_mdev_ctrl *ctrl = tctrl->drvdata;
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvmet_mdev_sq *sq;
	struct nvmet_mdev_cq *cq;
	u16 status;

	status = nvmet_mdev_check_io_qid(ctrl, sqid);
	if (status)
		return status;
	if (rcu_access_pointer(dp->sqs[sqid]))
		return NVME_SC_QID_INVALID | NVME_STATUS_DNR;
	if (!cqid || cqid > dp->nr_io_queues)
		return NVME_SC_CQ_INVALID | NVME_STATUS_DNR;
	cq = rcu_access_pointer(dp->cqs[cqid]);
	if (!cq)
		return NVME_SC_CQ_INVALID | NVME_STATUS_DNR;
	if (!(flags & NVME_QUEUE_PHYS_CONTIG))
		return NVME_SC_INVALID_FIELD | NVME_STATUS_DNR;
	if (!qsize || qsize > dp->mqes)
		return NVME_SC_QUEUE_SIZE | NVME_STATUS_DNR;
	if (!IS_ALIGNED(prp1, NVMET_MDEV_MPS))
		return NVME_SC_PRP_INVALID_OFFSET | NVME_STATUS_DNR;

	sq = nvmet_mdev_sq_alloc(ctrl, sqid, qsize + 1, prp1, cq);
	if (!sq) {
		nvmet_mdev_queue_nomem(ctrl, "SQ", sqid, qsize + 1);
		return NVME_SC_INTERNAL;
	}

	if (nvmet_mdev_gmap(ctrl, prp1, sq->size * sizeof(struct nvme_command),
			    &sq->ring)) {
		status = NVME_SC_INVALID_FIELD | NVME_STATUS_DNR;
		goto free;
	}
	sq->sqes = sq->ring.vaddr;

	status = nvmet_sq_create(tctrl, &sq->nvme_sq, &cq->nvme_cq, sqid,
				 sq->size);
	if (status)
		goto free;
	sq->nvme_sq.sqhd_disabled = true;	/* we report the real head */

	nvmet_mdev_db_reset(ctrl, nvmet_mdev_sq_db_idx(sqid));
	if (nvmet_mdev_sq_start(ctrl, sq)) {
		status = NVME_SC_INTERNAL;
		goto free;
	}
	return NVME_SC_SUCCESS;

free:
	nvmet_mdev_sq_free(ctrl, sq);
	return status;
}

u16 nvmet_mdev_delete_sq(struct nvmet_ctrl *tctrl, u16 sqid)
{
	struct nvmet_mdev_ctrl *ctrl = tctrl->drvdata;
	struct nvmet_mdev_sq *sq;
	u16 status;

	status = nvmet_mdev_check_io_qid(ctrl, sqid);
	if (status)
		return status;
	sq = rcu_access_pointer(ctrl->dp->sqs[sqid]);
	if (!sq)
		return NVME_SC_QID_INVALID | NVME_STATUS_DNR;

	nvmet_mdev_sq_free(ctrl, sq);
	return NVME_SC_SUCCESS;
}

/**
 * nvmet_mdev_start_admin() - create the admin queues and their thread
 * @ctrl: the controller, being enabled (ctrl->lock held, tctrl set)
 *
 * The thread maps the rings (pinning is not allowed under ctrl->lock) and
 * then sets CSTS.RDY, or CSTS.CFS if the rings are not in guest memory.
 *
 * Return: 0 or a negative errno.
 */
int nvmet_mdev_start_admin(struct nvmet_mdev_ctrl *ctrl)
{
	struct nvmet_ctrl *tctrl = ctrl->tctrl;
	struct nvmet_mdev_dp *dp = ctrl->dp;
	u32 aqa = ctrl->regs.aqa;
	struct nvmet_mdev_cq *cq;
	struct nvmet_mdev_sq *sq;
	int ret = -ENOMEM;

	lockdep_assert_held(&ctrl->lock);
	cq = nvmet_mdev_cq_alloc(ctrl, 0, FIELD_GET(NVMET_MDEV_AQA_ACQS, aqa) + 1,
				 ctrl->regs.acq, 0, true);
	if (!cq)
		return -ENOMEM;
	if (nvmet_cq_create(tctrl, &cq->nvme_cq, 0, cq->size)) {
		kfree(cq);
		return -EINVAL;
	}
	mutex_lock(&dp->qlock);
	rcu_assign_pointer(dp->cqs[0], cq);
	mutex_unlock(&dp->qlock);

	sq = nvmet_mdev_sq_alloc(ctrl, 0, FIELD_GET(NVMET_MDEV_AQA_ASQS, aqa) + 1,
				 ctrl->regs.asq, cq);
	if (!sq)
		goto free_cq;
	if (nvmet_sq_create(tctrl, &sq->nvme_sq, &cq->nvme_cq, 0, sq->size)) {
		ret = -EINVAL;
		goto free_sq;
	}
	sq->nvme_sq.sqhd_disabled = true;

	ret = nvmet_mdev_sq_start(ctrl, sq);
	if (ret)
		goto free_sq;
	return 0;

free_sq:
	nvmet_mdev_sq_free(ctrl, sq);
free_cq:
	nvmet_mdev_cq_free(ctrl, cq);
	return ret;
}

/**
 * nvmet_mdev_stop_queues() - delete every queue
 * @ctrl: the controller (ctrl->lock held)
 *
 * Stops the admin SQ's runners first (its thread, trapped doorbell writes)
 * so that no queue is created meanwhile, then deletes the I/O queues,
 * waiting for their commands, then the admin queues.
 */
void nvmet_mdev_stop_queues(struct nvmet_mdev_ctrl *ctrl)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvmet_mdev_sq *sq;
	struct nvmet_mdev_cq *cq;
	int qid;

	lockdep_assert_held(&ctrl->lock);
	sq = rcu_access_pointer(dp->sqs[0]);
	if (sq) {
		nvmet_mdev_sq_stop(sq);
		nvmet_mdev_sq_fence(sq);
	}

	for (qid = NVMET_MDEV_MAX_IO_QUEUES; qid >= 0; qid--) {
		sq = rcu_access_pointer(dp->sqs[qid]);
		if (sq)
			nvmet_mdev_sq_free(ctrl, sq);
	}
	for (qid = NVMET_MDEV_MAX_IO_QUEUES; qid >= 0; qid--) {
		cq = rcu_access_pointer(dp->cqs[qid]);
		if (cq)
			nvmet_mdev_cq_free(ctrl, cq);
	}
}

/**
 * nvmet_mdev_unmap_queues() - the guest unmaps memory holding rings
 * @ctrl: the controller, every queue thread paused
 * @first: first byte of the range being unmapped
 * @last: its last byte
 *
 * The rings in the range are unmapped; the queue threads map them again
 * when they next need them (see nvmet_mdev_sq_remap()).
 */
void nvmet_mdev_unmap_queues(struct nvmet_mdev_ctrl *ctrl, u64 first, u64 last)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvmet_mdev_gmap map;
	struct nvmet_mdev_sq *sq;
	struct nvmet_mdev_cq *cq;
	unsigned long flags;
	int qid;

	mutex_lock(&dp->qlock);
	for (qid = 0; qid <= NVMET_MDEV_MAX_IO_QUEUES; qid++) {
		sq = rcu_dereference_protected(dp->sqs[qid],
					       lockdep_is_held(&dp->qlock));
		if (sq && nvmet_mdev_gmap_overlaps(&sq->ring, first, last)) {
			sq->sqes = NULL;
			nvmet_mdev_gunmap(&sq->ring);
		}
		cq = rcu_dereference_protected(dp->cqs[qid],
					       lockdep_is_held(&dp->qlock));
		if (cq && nvmet_mdev_gmap_overlaps(&cq->ring, first, last)) {
			spin_lock_irqsave(&cq->lock, flags);
			cq->cqes = NULL;
			map = cq->ring;
			memset(&cq->ring, 0, sizeof(cq->ring));
			spin_unlock_irqrestore(&cq->lock, flags);
			nvmet_mdev_gunmap(&map);
			dev_dbg(ctrl->vdev.dev,
				"CQ %d ring unmapped while live\n", qid);
		}
	}
	mutex_unlock(&dp->qlock);
}

/**
 * nvmet_mdev_db_write() - a trapped write to the doorbell page
 * @ctrl: the controller (ctrl->lock held)
 * @off: offset in the doorbell page, dword aligned
 * @val: the value written
 *
 * Valid values are stored (nvmet_mdev_db_written() then serves an SQ's
 * new commands; a CQ head wakes the threads if completions are parked);
 * invalid ones are dropped and reported (Asynchronous Event, or CSTS.CFS
 * for the admin queue).
 */
void nvmet_mdev_db_write(struct nvmet_mdev_ctrl *ctrl, u32 off, u32 val)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	unsigned int idx = off / sizeof(u32);
	u16 qid = idx / 2;
	struct nvmet_mdev_sq *sq = NULL;
	struct nvmet_mdev_cq *cq = NULL;
	u16 size = 0;

	lockdep_assert_held(&ctrl->lock);
	if (!ctrl->tctrl)
		return;		/* disabled: doorbells are ignored */

	rcu_read_lock();
	if (qid <= NVMET_MDEV_MAX_IO_QUEUES) {
		if (idx & 1) {
			cq = rcu_dereference(dp->cqs[qid]);
			size = cq ? cq->size : 0;
		} else {
			sq = rcu_dereference(dp->sqs[qid]);
			size = sq ? sq->size : 0;
		}
	}
	if (!size) {
		rcu_read_unlock();
		nvmet_mdev_async_error(ctrl, NVMET_MDEV_AER_INVALID_DB_REG);
		return;
	}
	if (val >= size) {
		rcu_read_unlock();
		if (!qid)
			nvmet_mdev_ctrl_fatal(ctrl);
		else
			nvmet_mdev_async_error(ctrl,
					       NVMET_MDEV_AER_INVALID_DB_VALUE);
		return;
	}

	WRITE_ONCE(ctrl->db[idx], cpu_to_le32(val));
	smp_mb();	/* store the doorbell before waking */
	/*
	 * An SQ's new commands: see nvmet_mdev_db_written().  Only parked
	 * completions wait for a CQ head.
	 */
	if (cq && list_empty_careful(&cq->parked))
		cq = NULL;
	rcu_read_unlock();
	if (cq)
		nvmet_mdev_doorbell_kick(ctrl);
}

/**
 * nvmet_mdev_db_written() - a trapped doorbell write has been stored
 * @ctrl: the controller (ctrl->lock not held)
 * @off: offset of the doorbell in the doorbell page, dword aligned
 *
 * For an SQ tail doorbell, fetch and submit the new commands in the
 * writer's context if nobody else is fetching from the SQ, one burst at
 * most, and wake the SQ's thread for whatever is left (and for the
 * commands only the thread runs, see nvmet_mdev_thread_only()).  The
 * writer is the vCPU thread whose exit trapped the write: on a CPU shared
 * with the guest this is the only context that runs before the guest does
 * again, and a guest that polls for its admin completions (firmware) would
 * otherwise wait for a scheduler tick per command.  Process context; may
 * pin guest pages (never under ctrl->lock, see datapath.h).
 */
void nvmet_mdev_db_written(struct nvmet_mdev_ctrl *ctrl, u32 off)
{
	unsigned int idx = off / sizeof(u32);
	struct nvmet_mdev_dp *dp = ctrl->dp;
	u16 qid = idx / 2;
	struct nvmet_mdev_sq *sq;

	nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_TRAPPED_WRITES, 1);
	if ((idx & 1) || qid > NVMET_MDEV_MAX_IO_QUEUES)
		return;

	rcu_read_lock();
	sq = rcu_dereference(dp->sqs[qid]);
	if (!sq)
		goto out;
	/* The doorbell before RUNNING: pairs with nvmet_mdev_sq_sleep(). */
	smp_mb();
	if (!nvmet_mdev_sq_trylock(sq))
		goto out;	/* the runner will see the doorbell */
	/* RUNNING before pause_count and DEAD: see pause() and sq_free() */
	smp_mb__after_atomic();
	/* Only the plain case; the thread handles the others. */
	if (test_bit(NVMET_MDEV_SQ_DEAD, &sq->state) ||
	    READ_ONCE(dp->pause_count) || READ_ONCE(sq->broken) ||
	    !nvmet_mdev_bus_master(ctrl) ||
	    !sq->sqes || sq->starved || sq->remap_since) {
		nvmet_mdev_sq_unlock(sq);	/* a full barrier */
		if (nvmet_mdev_sq_has_work(sq))
			nvmet_mdev_sq_kick(sq);
		goto out;
	}
	/* RUNNING without DEAD keeps the SQ: see nvmet_mdev_sq_free() */
	rcu_read_unlock();
	/* Admin completions are neither moderated nor deferred. */
	if (qid)
		nvmet_mdev_cq_trapped(sq->cq);
	nvmet_mdev_sq_process(sq, false);
	if (qid)
		nvmet_mdev_sq_trap_next(sq);
	rcu_read_lock();
	nvmet_mdev_sq_unlock(sq);	/* a full barrier */
	if (nvmet_mdev_sq_has_work(sq))
		nvmet_mdev_sq_kick(sq);
out:
	rcu_read_unlock();
}
