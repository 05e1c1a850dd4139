// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: submission queues.
 *
 * Each SQ has a queue thread (see doorbell.c for how it polls and sleeps)
 * which fetches commands from the guest's ring and submits them to nvmet;
 * a trapped doorbell write fetches in the writer's context instead while
 * the thread sleeps.  The threads pause between two commands when the
 * data path must stand still (Doorbell Buffer Config, dma_unmap, bus
 * mastering off).  Also here: queue creation and deletion for both kinds
 * of queue, the admin queues' start at controller enable, and the
 * unmapping of rings whose guest memory goes away.
 */

#include <linux/cgroup.h>
#include <linux/delay.h>
#include <linux/kthread.h>
#include <linux/sched/clock.h>
#include <linux/sched/mm.h>
#include <linux/sched/signal.h>
#include <linux/sched/stat.h>
#include <linux/slab.h>

#include "../pci-common.h"
#include "datapath.h"

/* Hold the calling queue thread while the data path is paused. */
static bool nvmet_mdev_sq_check_pause(struct nvmet_mdev_sq *sq)
{
	struct nvmet_mdev_dp *dp = sq->dp;

	if (likely(!READ_ONCE(dp->pause_count) && !sq->paused))
		return false;

	spin_lock(&dp->pause_lock);
	if (!dp->pause_count) {
		sq->paused = false;
		spin_unlock(&dp->pause_lock);
		return false;
	}
	sq->paused = true;
	spin_unlock(&dp->pause_lock);

	nvmet_mdev_sq_unlock(sq);	/* wakes the pauser */
	wait_event_idle(sq->wq, !READ_ONCE(dp->pause_count) ||
			kthread_should_stop());
	nvmet_mdev_sq_thread_lock(sq);
	return true;
}

static bool nvmet_mdev_sq_is_paused(struct nvmet_mdev_sq *sq)
{
	bool paused;

	spin_lock(&sq->dp->pause_lock);
	paused = (sq->paused || !sq->thread) &&
		 !test_bit(NVMET_MDEV_SQ_RUNNING, &sq->state);
	spin_unlock(&sq->dp->pause_lock);
	return paused;
}

static void nvmet_mdev_wait_paused(struct nvmet_mdev_sq *sq, bool drain)
{
	struct nvmet_mdev_dp *dp = sq->dp;

	nvmet_mdev_sq_kick(sq);
	wait_event(dp->pause_wq, nvmet_mdev_sq_is_paused(sq));
	if (drain)
		wait_event(dp->pause_wq, !atomic_read(&sq->inflight));
}

/**
 * nvmet_mdev_pause() - stop the queue threads between two commands
 * @ctrl: the controller
 * @self: the SQ the caller fetches from (admin SQ, Doorbell Buffer Config), or
 *	NULL for dma_unmap (ctrl->lock held): then all threads are paused and
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

	/* Admin commands create and delete queues: pause their SQ first. */
	if (!self) {
		sq = rcu_dereference_protected(dp->sqs[0],
					       lockdep_is_held(&ctrl->lock));
		if (sq)
			nvmet_mdev_wait_paused(sq, true);
	}

	mutex_lock(&dp->qlock);
	for (qid = 1; qid <= NVMET_MDEV_MAX_IO_QUEUES; qid++) {
		sq = rcu_dereference_protected(dp->sqs[qid],
					       lockdep_is_held(&dp->qlock));
		if (sq && sq != self)
			nvmet_mdev_wait_paused(sq, !self);
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
	nvmet_mdev_kick_all(ctrl);
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
		nvmet_mdev_kick_all(ctrl);
		return;
	}
	nvmet_mdev_pause(ctrl, NULL);
	nvmet_mdev_resume(ctrl);
}

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
void nvmet_mdev_iod_put(struct nvmet_mdev_iod *iod)
{
	struct nvmet_mdev_sq *sq = iod->sq;

	llist_add(&iod->free_node, &sq->free_iods);
	/* llist_add() is a full barrier, pairs with the thread's smp_mb() */
	if (READ_ONCE(sq->starved))
		nvmet_mdev_sq_kick(sq);
}

static void nvmet_mdev_exec(struct nvmet_mdev_sq *sq, struct nvmet_mdev_iod *iod)
{
	struct nvmet_req *req = &iod->req;
	size_t len;
	u16 status;

	atomic_inc(&sq->busy);	/* until nvmet_mdev_queue_response() */
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
bool nvmet_mdev_remap_later(struct nvmet_mdev_sq *sq, bool grace)
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
int nvmet_mdev_sq_process(struct nvmet_mdev_sq *sq, bool thread)
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
	if (unlikely(!nvmet_pci_sq_tail_valid(tail, sq->size))) {
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
		nvmet_pci_ring_advance(&head, sq->size);
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
bool nvmet_mdev_sq_has_work(struct nvmet_mdev_sq *sq)
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

	/*
	 * The admin queues are mapped before the controller is ready (a
	 * controller restored by a migration is ready, its rings mapped).
	 */
	if (!sq->qid && !(READ_ONCE(ctrl->regs.csts) & NVME_CSTS_RDY)) {
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
		if (!nvmet_mdev_watch_done(sq)) {
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

/* Create the queue thread of @sq (not woken yet). */
static int nvmet_mdev_sq_thread_create(struct nvmet_mdev_ctrl *ctrl,
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
	return 0;
}

static void nvmet_mdev_sq_publish(struct nvmet_mdev_ctrl *ctrl,
				  struct nvmet_mdev_sq *sq)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;

	mutex_lock(&dp->qlock);
	rcu_assign_pointer(dp->sqs[sq->qid], sq);
	mutex_unlock(&dp->qlock);
}

static int nvmet_mdev_sq_start(struct nvmet_mdev_ctrl *ctrl,
			       struct nvmet_mdev_sq *sq)
{
	int ret;

	ret = nvmet_mdev_sq_thread_create(ctrl, sq);
	if (ret)
		return ret;
	nvmet_mdev_sq_publish(ctrl, sq);
	wake_up_process(sq->thread);
	return 0;
}

/* The operator's clue when a Create I/O queue fails for want of memory. */
void nvmet_mdev_queue_nomem(struct nvmet_mdev_ctrl *ctrl,
			    const char *what, u16 qid, u32 entries)
{
	dev_warn_ratelimited(ctrl->vdev.dev,
			     "no memory for I/O %s %u of %u entries (the VMM's memory.max?)\n",
			     what, qid, entries);
}

u16 nvmet_mdev_create_sq(struct nvmet_ctrl *tctrl, u16 sqid, u16 cqid,
			 u16 flags, u16 qsize, u64 prp1)
{
	struct nvmet_mdev_ctrl *ctrl = tctrl->drvdata;
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvmet_mdev_sq *sq;
	struct nvmet_mdev_cq *cq;
	u16 status;

	/*
	 * nvmet has checked the queue identifier, that it is free, that the
	 * I/O CQ exists, the size and the queue memory.
	 */
	cq = rcu_access_pointer(dp->cqs[cqid]);
	if (WARN_ON_ONCE(!cq))
		return NVME_SC_INTERNAL | NVME_STATUS_DNR;

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

	/* nvmet has checked that the SQ exists. */
	sq = rcu_access_pointer(ctrl->dp->sqs[sqid]);
	if (WARN_ON_ONCE(!sq))
		return NVME_SC_INTERNAL | NVME_STATUS_DNR;

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
 * nvmet_mdev_quiet() - whether the commands fetched have all completed
 * @ctrl: the controller, enabled
 *
 * But the Asynchronous Event Requests nvmet keeps (admin SQ).  The caller
 * holds tctrl->lock for an exact answer; without it, the AERs nvmet
 * completes meanwhile may count in one and not the other.
 */
bool nvmet_mdev_quiet(struct nvmet_mdev_ctrl *ctrl)
{
	return !nvmet_mdev_busy(ctrl);
}

/**
 * nvmet_mdev_busy() - the commands fetched and not completed
 * @ctrl: the controller, enabled
 *
 * But the Asynchronous Event Requests nvmet keeps; see nvmet_mdev_quiet().
 */
unsigned int nvmet_mdev_busy(struct nvmet_mdev_ctrl *ctrl)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	unsigned int n = 0, aers;
	struct nvmet_mdev_sq *sq;
	int qid, busy;

	rcu_read_lock();
	for (qid = 0; qid <= NVMET_MDEV_MAX_IO_QUEUES; qid++) {
		sq = rcu_dereference(dp->sqs[qid]);
		if (!sq)
			continue;
		busy = atomic_read(&sq->busy);
		aers = qid ? 0 : READ_ONCE(ctrl->tctrl->nr_async_event_cmds);
		if (busy > aers)
			n += busy - aers;
	}
	rcu_read_unlock();
	return n;
}

/*
 * Restoring a controller a migration saved (state.c): the controller is
 * stopped (nvmet_mdev_ctrl_stop()) and the lock held throughout, so no
 * runner exists until nvmet_mdev_start_threads(), and the rings are mapped
 * under ctrl->lock.  That is safe here: no backend holds, while it calls
 * dma_unmap, the locks pinning takes (see datapath.h), and nothing else of
 * the device runs.
 */

/**
 * nvmet_mdev_restore_sq() - create an SQ as a migration saved it
 * @ctrl: the controller, being restored
 * @qid: the SQ's identifier
 * @cqid: its CQ's, which exists
 * @size: its entries, checked against CAP.MQES
 * @iova: its ring
 * @head: the next entry to fetch, below @size
 *
 * Return: the SQ, published without a thread, or NULL if its memory or
 * its ring could not be had (-ENOMEM or an unmapped ring: the caller
 * fails the restore either way).
 */
struct nvmet_mdev_sq *nvmet_mdev_restore_sq(struct nvmet_mdev_ctrl *ctrl,
					    u16 qid, u16 cqid, u16 size,
					    u64 iova, u16 head)
{
	struct nvmet_mdev_cq *cq = rcu_access_pointer(ctrl->dp->cqs[cqid]);
	struct nvmet_mdev_sq *sq;

	if (WARN_ON_ONCE(!cq))
		return NULL;
	sq = nvmet_mdev_sq_alloc(ctrl, qid, size, iova, cq);
	if (!sq)
		return NULL;
	if (nvmet_mdev_gmap(ctrl, iova, size * sizeof(struct nvme_command),
			    &sq->ring) ||
	    nvmet_sq_create(ctrl->tctrl, &sq->nvme_sq, &cq->nvme_cq, qid,
			    size)) {
		nvmet_mdev_sq_free(ctrl, sq);
		return NULL;
	}
	sq->sqes = sq->ring.vaddr;
	sq->nvme_sq.sqhd_disabled = true;
	sq->head = head;
	nvmet_mdev_sq_publish(ctrl, sq);
	return sq;
}

/**
 * nvmet_mdev_resubmit() - submit a command the guest awaits again
 * @sq: a restored SQ without a thread yet
 * @cmd: the command (an Asynchronous Event Request)
 *
 * Return: 0, or -ENOSPC when the SQ has no command context left.
 */
int nvmet_mdev_resubmit(struct nvmet_mdev_sq *sq, const struct nvme_command *cmd)
{
	struct nvmet_mdev_iod *iod = nvmet_mdev_iod_get(sq);

	if (!iod)
		return -ENOSPC;
	memcpy(&iod->cmd, cmd, sizeof(iod->cmd));
	nvmet_mdev_exec(sq, iod);
	return 0;
}

/**
 * nvmet_mdev_repark() - a completion the guest has not seen yet
 * @sq: a restored SQ without a thread yet
 * @cqe: its completion entry (without the phase tag)
 *
 * Parked on the SQ's CQ, in the order of the calls.
 *
 * Return: 0, or -ENOSPC when the SQ has no command context left.
 */
int nvmet_mdev_repark(struct nvmet_mdev_sq *sq, const struct nvme_completion *cqe)
{
	struct nvmet_mdev_iod *iod = nvmet_mdev_iod_get(sq);
	unsigned long flags;

	if (!iod)
		return -ENOSPC;
	iod->cqe = *cqe;
	spin_lock_irqsave(&sq->cq->lock, flags);
	list_add_tail(&iod->parked, &sq->cq->parked);
	spin_unlock_irqrestore(&sq->cq->lock, flags);
	return 0;
}

/**
 * nvmet_mdev_start_threads() - start the threads of a restored controller
 * @ctrl: the controller (ctrl->lock held), its SQs published
 *
 * Return: 0 or a negative errno (the caller disables the controller).
 */
int nvmet_mdev_start_threads(struct nvmet_mdev_ctrl *ctrl)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvmet_mdev_sq *sq;
	int qid, ret;

	lockdep_assert_held(&ctrl->lock);
	for (qid = 0; qid <= NVMET_MDEV_MAX_IO_QUEUES; qid++) {
		sq = rcu_access_pointer(dp->sqs[qid]);
		if (!sq || sq->thread)
			continue;
		ret = nvmet_mdev_sq_thread_create(ctrl, sq);
		if (ret)
			return ret;
		wake_up_process(sq->thread);
	}
	return 0;
}
