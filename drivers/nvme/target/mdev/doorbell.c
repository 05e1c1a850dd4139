// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: doorbells.
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
 * page again, wakes the threads of the SQs whose shadow doorbell already
 * shows new work, and wakes the admin queue thread to watch for the write
 * the guest is about to retry.  No wake-up is lost:
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
 * Doorbell Buffer Config hands the controller two pages of guest memory:
 * the shadow doorbells (PRP1), laid out like the BAR0 doorbells, which the
 * host updates instead of ringing BAR0, and the EventIdx buffer (PRP2)
 * with which the controller tells the host when to ring BAR0 anyway (to
 * wake a sleeping queue thread).  Both stay mapped until the controller
 * is disabled or the guest unmaps them.
 */

#include <linux/kthread.h>
#include <linux/mm.h>
#include <linux/sched/clock.h>

#include "datapath.h"

void nvmet_mdev_sq_kick(struct nvmet_mdev_sq *sq)
{
	if (READ_ONCE(sq->asleep) && !READ_ONCE(sq->kicked))
		nvmet_mdev_stat_add(sq->ctrl, NVMET_MDEV_STAT_WAKEUPS, 1);
	WRITE_ONCE(sq->kicked, true);
	wake_up(&sq->wq);
}

/**
 * nvmet_mdev_kick_all() - wake every queue thread of a controller
 * @ctrl: the controller
 *
 * For changes every thread must look at: the end of a pause, a CQ that
 * became full (its head doorbell must be watched).  Any context.
 */
void nvmet_mdev_kick_all(struct nvmet_mdev_ctrl *ctrl)
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
 * Wake the sleeping queue threads but @self (NULL: none) that have work to
 * do.  Any context.
 *
 * Return: whether one of them serves a polled queue (a CQ without
 * interrupts).
 */
static bool nvmet_mdev_kick_sleepers(struct nvmet_mdev_dp *dp,
				     struct nvmet_mdev_sq *self)
{
	struct nvmet_mdev_sq *sq;
	bool polled = false;
	int qid;

	rcu_read_lock();
	for (qid = 0; qid <= dp->nr_io_queues; qid++) {
		sq = rcu_dereference(dp->sqs[qid]);
		if (sq && sq != self && READ_ONCE(sq->asleep) &&
		    nvmet_mdev_sq_has_work(sq)) {
			nvmet_mdev_sq_kick(sq);
			polled |= !sq->cq->irq_enabled;
		}
	}
	rcu_read_unlock();
	return polled;
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
 * nvmet_mdev_watch_done() - whether the watch after a doorbell fault may end
 * @sq: the admin SQ, whose thread watches
 *
 * The watch ends when its window runs out.  Kept to the end, it keeps the
 * doorbell page mapped across the guest's next few doorbell writes, which
 * then wake their queue threads without a fault: what a guest waiting for
 * interrupts between bursts wants.  But the watching thread, runnable every
 * few tens of microseconds, also makes a polling queue thread give up its
 * CPU and sleep (see nvmet_mdev_sq_thread()), and a guest that polls its
 * CQ for the one command it just submitted wants that thread to keep
 * polling.  So a watch whose fault woke the thread of a polled queue (a CQ
 * without interrupts) ends as soon as a doorbell changed since the fault:
 * the access the guest retried has landed, and the thread's last look at
 * the sleepers (nvmet_mdev_wake_sleepers(), or the last sleeper's check in
 * nvmet_mdev_sq_sleep()) comes after it.  A fault on another vCPU racing
 * with the end of a watch at worst loses its own window: its retry faults
 * again, which starts a new one.
 *
 * Return: true when the admin queue thread may sleep.
 */
bool nvmet_mdev_watch_done(struct nvmet_mdev_sq *sq)
{
	u64 until = READ_ONCE(sq->watch_until);

	if (!until)
		return true;
	if (local_clock() >= until ||
	    (READ_ONCE(sq->watch_polled) &&
	     nvmet_mdev_db_digest(sq->ctrl) != READ_ONCE(sq->watch_digest))) {
		WRITE_ONCE(sq->watch_until, 0);
		return true;
	}
	return false;
}

/**
 * nvmet_mdev_doorbell_fault() - the guest touched the zapped doorbell page
 * @ctrl: the controller
 *
 * Called by the fault handler below once the page is mapped again: the access
 * (usually a doorbell write, retried once the fault is resolved) has not
 * happened yet, so the admin queue thread watches every doorbell until it
 * lands (or for a while) and wakes the queue threads that get work.  A host
 * that uses shadow doorbells has written the new SQ tail to its shadow
 * doorbell before the BAR0 write that faulted: the thread of that SQ is
 * woken here, without waiting for the admin thread to see it.  Any process
 * context.
 */
static void nvmet_mdev_doorbell_fault(struct nvmet_mdev_ctrl *ctrl)
{
	u32 digest = nvmet_mdev_db_digest(ctrl);
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvmet_mdev_sq *sq;
	bool polled = false;
	u64 watch;

	nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_DB_FAULTS, 1);
	if (READ_ONCE(dp->sdb))
		polled = nvmet_mdev_kick_sleepers(dp, NULL);
	rcu_read_lock();
	sq = rcu_dereference(dp->sqs[0]);
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
		WRITE_ONCE(sq->watch_polled, polled);
		WRITE_ONCE(sq->watch_ns, watch);
		WRITE_ONCE(sq->watch_until, local_clock() + watch);
		nvmet_mdev_sq_kick(sq);
	}
	rcu_read_unlock();
}

/* ------------------------------------------------------------------ */
/* The doorbell page mapping                                           */

static vm_fault_t nvmet_mdev_db_fault(struct vm_fault *vmf)
{
	struct vm_area_struct *vma = vmf->vma;
	struct nvmet_mdev_ctrl *ctrl = vma->vm_private_data;
	vm_fault_t ret;

	/*
	 * Map the page before waking the queue threads: a thread that zaps
	 * the mapping again after this will be woken by the next fault.
	 */
	ret = vmf_insert_page(vma, vmf->address, ctrl->db_page);
	nvmet_mdev_doorbell_fault(ctrl);
	return ret;
}

static const struct vm_operations_struct nvmet_mdev_db_vm_ops = {
	.fault = nvmet_mdev_db_fault,
};

int nvmet_mdev_mmap(struct vfio_device *vdev, struct vm_area_struct *vma)
{
	struct nvmet_mdev_ctrl *ctrl = vdev_to_ctrl(vdev);
	u64 db = NVMET_MDEV_REGION_OFFSET(VFIO_PCI_BAR0_REGION_INDEX) +
		 NVME_REG_DBS;

	if (!NVMET_MDEV_DB_MMAP || !ctrl->db_page || !ctrl->db_mmap)
		return -EINVAL;
	if (vma->vm_pgoff != db >> PAGE_SHIFT ||
	    vma->vm_end - vma->vm_start != NVMET_MDEV_DB_SIZE)
		return -EINVAL;
	if (!(vma->vm_flags & VM_SHARED))
		return -EINVAL;

	/*
	 * A mixed map of an ordinary page, not a PFN map: KVM maps it into
	 * the guest through GUP, and the zap still reaches KVM through the
	 * MMU notifiers.  With VM_PFNMAP and vmf_insert_pfn() of this RAM
	 * page, KVM_RUN failed with -EFAULT on the guest's first doorbell
	 * write.
	 */
	vm_flags_set(vma, VM_MIXEDMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_ops = &nvmet_mdev_db_vm_ops;
	vma->vm_private_data = ctrl;
	return 0;
}

/*
 * Unmap the doorbell page from user space: the next user access to the
 * page faults, which wakes the queue threads and maps the page again.
 */
static void nvmet_mdev_doorbell_zap(struct nvmet_mdev_ctrl *ctrl)
{
	if (!NVMET_MDEV_DB_MMAP || !ctrl->db_mmap)
		return;
	unmap_mapping_range(ctrl->vdev.inode->i_mapping,
			    NVMET_MDEV_REGION_OFFSET(VFIO_PCI_BAR0_REGION_INDEX) +
			    NVME_REG_DBS, NVMET_MDEV_DB_SIZE, true);
}

/* Take the right to fetch from @sq; see NVMET_MDEV_SQ_RUNNING. */
static bool nvmet_mdev_sq_trylock(struct nvmet_mdev_sq *sq)
{
	return !test_and_set_bit_lock(NVMET_MDEV_SQ_RUNNING, &sq->state);
}

void nvmet_mdev_sq_unlock(struct nvmet_mdev_sq *sq)
{
	clear_bit_unlock(NVMET_MDEV_SQ_RUNNING, &sq->state);
	/* wq_has_sleeper() orders the clear before looking for waiters. */
	if (wq_has_sleeper(&sq->dp->pause_wq))
		wake_up_all(&sq->dp->pause_wq);
	if (wq_has_sleeper(&sq->wq))
		wake_up(&sq->wq);
}

/* The thread takes its SQ back from a trapped doorbell write (one burst). */
void nvmet_mdev_sq_thread_lock(struct nvmet_mdev_sq *sq)
{
	wait_event_idle(sq->wq, nvmet_mdev_sq_trylock(sq));
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
void nvmet_mdev_bad_db(struct nvmet_mdev_ctrl *ctrl, u16 qid, u32 val)
{
	if (!qid) {
		dev_warn_ratelimited(ctrl->vdev.dev,
				     "invalid admin doorbell value %u\n", val);
		nvmet_mdev_ctrl_fatal(ctrl);
		return;
	}
	nvmet_mdev_async_error(ctrl, NVMET_MDEV_AER_INVALID_DB_VALUE);
}

/*
 * Whether a doorbell holds a new value: neither the one last acted upon
 * nor the invalid one last reported.
 */
bool nvmet_mdev_db_changed(struct nvmet_mdev_ctrl *ctrl,
			   unsigned int idx, u16 cur, u64 bad)
{
	u32 val = nvmet_mdev_db_read(ctrl, idx);

	return val != cur && val != bad;
}

/* Wake the sleeping queue threads that have work to do. */
void nvmet_mdev_wake_sleepers(struct nvmet_mdev_sq *self)
{
	if (READ_ONCE(self->dp->nr_asleep))
		nvmet_mdev_kick_sleepers(self->dp, self);
}

/* Sleep until kicked, following the protocol at the top of this file. */
void nvmet_mdev_sq_sleep(struct nvmet_mdev_sq *sq)
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
		nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_SLEEPS, 1);
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

void nvmet_mdev_db_reset(struct nvmet_mdev_ctrl *ctrl, unsigned int idx)
{
	__le32 *sdb = ctrl->dp->sdb;

	WRITE_ONCE(ctrl->db[idx], 0);
	if (sdb)
		WRITE_ONCE(sdb[idx], 0);
	nvmet_mdev_eventidx_write(ctrl, idx, 0);
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
		nvmet_mdev_kick_all(ctrl);
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

/* ------------------------------------------------------------------ */
/* Shadow doorbells (Doorbell Buffer Config) and EventIdx              */

/* Doorbells covered: two per queue pair. */
static unsigned int nvmet_mdev_dbbuf_slots(struct nvmet_mdev_dp *dp)
{
	return 2 * (dp->nr_io_queues + 1);
}

/**
 * nvmet_mdev_set_dbbuf() - execute Doorbell Buffer Config
 * @tctrl: the nvmet controller
 * @prp1: shadow doorbell buffer, page aligned
 * @prp2: EventIdx buffer, page aligned, distinct from @prp1
 *
 * Runs in the context fetching from the admin SQ (its thread, or a trapped
 * doorbell write).  The current doorbell values are copied into the new
 * shadow buffer (hosts may not clear it, e.g. after a reset) with the I/O
 * queue threads paused.
 *
 * Return: NVMe status.
 */
u16 nvmet_mdev_set_dbbuf(struct nvmet_ctrl *tctrl, u64 prp1, u64 prp2)
{
	struct nvmet_mdev_ctrl *ctrl = tctrl->drvdata;
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvmet_mdev_gmap db = {}, ei = {}, old_db, old_ei;
	struct nvmet_mdev_sq *self;
	__le32 *sdb, *eidx, *cur;
	unsigned int i;

	if (!prp1 || !prp2 || prp1 == prp2 ||
	    !IS_ALIGNED(prp1 | prp2, NVMET_MDEV_MPS))
		return NVME_SC_INVALID_FIELD | NVME_STATUS_DNR;

	if (nvmet_mdev_gmap(ctrl, prp1, SZ_4K, &db) ||
	    nvmet_mdev_gmap(ctrl, prp2, SZ_4K, &ei)) {
		nvmet_mdev_gunmap(&db);
		return NVME_SC_INVALID_FIELD | NVME_STATUS_DNR;
	}
	sdb = db.vaddr;
	eidx = ei.vaddr;

	self = rcu_access_pointer(dp->sqs[0]);
	nvmet_mdev_pause(ctrl, self);

	cur = dp->sdb ? dp->sdb : ctrl->db;
	for (i = 0; i < nvmet_mdev_dbbuf_slots(dp); i++) {
		__le32 v = nvmet_mdev_db_is_io(i) ? READ_ONCE(cur[i]) :
						     READ_ONCE(ctrl->db[i]);

		WRITE_ONCE(sdb[i], v);
		WRITE_ONCE(eidx[i], v);
	}

	old_db = dp->dbbuf_db;
	old_ei = dp->dbbuf_ei;
	dp->dbbuf_db = db;
	dp->dbbuf_ei = ei;
	WRITE_ONCE(dp->sdb, sdb);
	WRITE_ONCE(dp->eidx, eidx);

	nvmet_mdev_resume(ctrl);

	if (old_db.vbase) {
		nvmet_mdev_dbbuf_sync();
		nvmet_mdev_gunmap(&old_db);
		nvmet_mdev_gunmap(&old_ei);
	}
	return NVME_SC_SUCCESS;
}

/**
 * nvmet_mdev_dbbuf_restore() - shadow doorbells as a migration saved them
 * @ctrl: the controller, being restored (no queue thread yet)
 * @db: shadow doorbell buffer
 * @ei: EventIdx buffer
 *
 * The buffers hold what the guest and the source device wrote there (the
 * guest's memory came along): nothing is copied.
 *
 * Return: 0, or -EINVAL if the addresses are not those Doorbell Buffer
 * Config accepts or not mapped.
 */
int nvmet_mdev_dbbuf_restore(struct nvmet_mdev_ctrl *ctrl, u64 db, u64 ei)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;

	if (!db || !ei || db == ei || !IS_ALIGNED(db | ei, NVMET_MDEV_MPS))
		return -EINVAL;
	if (nvmet_mdev_gmap(ctrl, db, SZ_4K, &dp->dbbuf_db) ||
	    nvmet_mdev_gmap(ctrl, ei, SZ_4K, &dp->dbbuf_ei)) {
		nvmet_mdev_gunmap(&dp->dbbuf_db);
		return -EINVAL;
	}
	WRITE_ONCE(dp->sdb, dp->dbbuf_db.vaddr);
	WRITE_ONCE(dp->eidx, dp->dbbuf_ei.vaddr);
	return 0;
}

/*
 * Wait until nobody reads a shadow doorbell buffer just replaced: queue
 * threads are paused by then, but completions, posted from any context,
 * read the CQ head doorbells under rcu_read_lock() (nvmet_mdev_cq_full()).
 */
void nvmet_mdev_dbbuf_sync(void)
{
	synchronize_rcu();
}

/* Back to BAR0 doorbells; queue threads paused or stopped. */
static void nvmet_mdev_dbbuf_off(struct nvmet_mdev_ctrl *ctrl, bool copy)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	unsigned int i;

	if (!dp->sdb)
		return;
	if (copy)
		for (i = nvmet_mdev_sq_db_idx(1); i < nvmet_mdev_dbbuf_slots(dp); i++)
			WRITE_ONCE(ctrl->db[i], READ_ONCE(dp->sdb[i]));
	WRITE_ONCE(dp->sdb, NULL);
	WRITE_ONCE(dp->eidx, NULL);
	nvmet_mdev_dbbuf_sync();
	nvmet_mdev_gunmap(&dp->dbbuf_db);
	nvmet_mdev_gunmap(&dp->dbbuf_ei);
}

/**
 * nvmet_mdev_dbbuf_clear() - forget the shadow doorbells (disable, reset)
 * @ctrl: the controller, no queue thread running
 */
void nvmet_mdev_dbbuf_clear(struct nvmet_mdev_ctrl *ctrl)
{
	nvmet_mdev_dbbuf_off(ctrl, false);
}

/**
 * nvmet_mdev_dbbuf_unmap() - the guest unmaps memory
 * @ctrl: the controller, queue threads paused
 * @first: first byte of the range
 * @last: its last byte
 *
 * If the range holds a shadow doorbell buffer, fall back to the BAR0
 * doorbells (with the last shadow values) and report a controller fatal
 * status: the host still updates buffers we no longer read.
 */
void nvmet_mdev_dbbuf_unmap(struct nvmet_mdev_ctrl *ctrl, u64 first, u64 last)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;

	if (!nvmet_mdev_gmap_overlaps(&dp->dbbuf_db, first, last) &&
	    !nvmet_mdev_gmap_overlaps(&dp->dbbuf_ei, first, last))
		return;

	dev_warn_ratelimited(ctrl->vdev.dev,
			     "guest unmapped its shadow doorbell buffers\n");
	nvmet_mdev_dbbuf_off(ctrl, true);
	nvmet_mdev_ctrl_fatal(ctrl);
}
