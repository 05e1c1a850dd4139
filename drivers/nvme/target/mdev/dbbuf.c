// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: shadow doorbells.
 *
 * Doorbell Buffer Config hands the controller two pages of guest memory:
 * the shadow doorbells (PRP1), laid out like the BAR0 doorbells, which the
 * host updates instead of ringing BAR0, and the EventIdx buffer (PRP2)
 * with which the controller tells the host when to ring BAR0 anyway (to
 * wake a sleeping queue thread).  Both stay mapped until the controller
 * is disabled or the guest unmaps them.
 */

#include "datapath.h"

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
