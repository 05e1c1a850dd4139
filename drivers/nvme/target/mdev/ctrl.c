// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: the controller.
 *
 * The nvmet controller (tctrl) exists while CC.EN = 1: it is allocated
 * when the guest enables the controller and released when the guest
 * disables or shuts it down, resets the function, or closes the device.
 */

#include <linux/memcontrol.h>
#include <linux/module.h>
#include <linux/sched/task.h>
#include <linux/slab.h>

#include "../pci-common.h"
#include "datapath.h"

static bool nvmet_mdev_cc_valid(struct nvmet_mdev_ctrl *ctrl)
{
	u32 cc = ctrl->regs.cc, aqa = ctrl->regs.aqa;
	u8 css = nvmet_cc_css(cc) << NVME_CC_CSS_SHIFT;

	if (nvmet_cc_iosqes(cc) != NVME_NVM_IOSQES ||
	    nvmet_cc_iocqes(cc) != NVME_NVM_IOCQES ||
	    nvmet_cc_mps(cc) != 0 || nvmet_cc_ams(cc) != 0 ||
	    (css != NVME_CC_CSS_NVM && css != NVME_CC_CSS_CSI))
		return false;
	/* Admin queues of 2 to 4096 entries, page aligned. */
	if (!FIELD_GET(NVMET_MDEV_AQA_ASQS, aqa) ||
	    !FIELD_GET(NVMET_MDEV_AQA_ACQS, aqa))
		return false;
	if (!IS_ALIGNED(ctrl->regs.asq | ctrl->regs.acq, NVMET_MDEV_MPS))
		return false;
	return true;
}

/**
 * nvmet_mdev_ctrl_create() - create the nvmet controller for CC.EN = 1
 * @ctrl: the controller (ctrl->lock held), regs.cc already updated
 *
 * Allocates the nvmet controller, enables it and sets up the data path's
 * limits; no queue yet.
 *
 * Return: 0, or a negative errno (nothing created, the registers as they
 * were).
 */
int nvmet_mdev_ctrl_create(struct nvmet_mdev_ctrl *ctrl)
{
	struct nvmet_alloc_ctrl_args args = {};
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvmet_port *nport = ctrl->port->nport;
	char nqn[NVMF_NQN_SIZE + 1];
	struct nvmet_ctrl *tctrl;
	u8 mdts;
	int ret;

	lockdep_assert_held(&ctrl->lock);
	if (WARN_ON_ONCE(ctrl->tctrl))
		return -EBUSY;

	if (!nvmet_mdev_cc_valid(ctrl)) {
		dev_info_ratelimited(ctrl->vdev.dev,
				     "invalid controller configuration cc %#x aqa %#x\n",
				     ctrl->regs.cc, ctrl->regs.aqa);
		return -EINVAL;
	}

	ret = nvmet_mdev_port_subsysnqn(ctrl->port, ctrl->params.subsysnqn,
					nqn);
	if (ret) {
		dev_warn_ratelimited(ctrl->vdev.dev,
				     "no subsystem to connect to\n");
		return ret;
	}

	/* No Connect command, so no queue to authenticate (args.sq). */
	args.port = nport;
	args.subsysnqn = nqn;
	args.hostnqn = ctrl->hostnqn;
	args.hostid = &ctrl->hostid;
	args.ops = &nvmet_mdev_fabrics_ops;
	args.drvdata = ctrl;
	args.max_qid = ctrl->params.nr_io_queues;
	tctrl = nvmet_alloc_ctrl(&args);
	if (!tctrl) {
		dev_warn_ratelimited(ctrl->vdev.dev,
				     "cannot create a controller for %s (status %#x)\n",
				     nqn, args.status);
		return -EINVAL;
	}

	if (tctrl->pi_support) {
		dev_warn_ratelimited(ctrl->vdev.dev,
				     "protection information is not supported\n");
		ret = -EOPNOTSUPP;
		goto put;
	}

	/* Bounded by args.max_qid and nvmet_mdev_get_max_queue_size(). */
	dp->nr_io_queues = tctrl->max_qid;
	dp->mqes = NVME_CAP_MQES(tctrl->cap);
	tctrl->dbbuf_supported = ctrl->params.shadow_doorbells;

	mdts = ctrl->params.mdts;
	if (nport->mdts > 0 && nport->mdts < mdts)
		mdts = nport->mdts;
	dp->mdts = mdts;
	dp->max_xfer = nvmet_pci_mdts_bytes(mdts, ilog2(NVMET_MDEV_MPS));

	bitmap_zero(dp->vec_cd, NVMET_MDEV_MAX_VECTORS);

	ctrl->tctrl = tctrl;
	ctrl->regs.vs = tctrl->subsys->ver;

	nvmet_update_cc(tctrl, ctrl->regs.cc);
	if (!(tctrl->csts & NVME_CSTS_RDY)) {
		ret = -EINVAL;
		goto clear;
	}
	return 0;

clear:
	ctrl->tctrl = NULL;
	nvmet_update_cc(tctrl, 0);
put:
	nvmet_ctrl_put(tctrl);
	return ret;
}

/**
 * nvmet_mdev_ctrl_enable() - CC.EN 0 -> 1
 * @ctrl: the controller (ctrl->lock held), regs.cc already updated
 *
 * Creates the nvmet controller and the admin queues.  CSTS.RDY is set by
 * the admin queue thread once it has mapped the rings.
 *
 * Return: 0, or a negative errno after setting CSTS.CFS.
 */
int nvmet_mdev_ctrl_enable(struct nvmet_mdev_ctrl *ctrl)
{
	int ret;

	ret = nvmet_mdev_ctrl_create(ctrl);
	if (ret)
		goto fatal;
	ret = nvmet_mdev_start_admin(ctrl);
	if (ret) {
		nvmet_update_cc(ctrl->tctrl, 0);
		nvmet_ctrl_put(ctrl->tctrl);
		ctrl->tctrl = NULL;
		goto fatal;
	}
	return 0;

fatal:
	nvmet_mdev_ctrl_fatal(ctrl);
	return ret;
}

/**
 * nvmet_mdev_ctrl_disable() - tear the controller down
 * @ctrl: the controller (ctrl->lock held)
 * @shutdown: CC.SHN was set: report the shutdown as complete
 *
 * Stops the queue threads, waits for the commands in flight, deletes the
 * queues, drops every pin of guest memory and releases the nvmet
 * controller.  The registers are left to the caller.
 */
void nvmet_mdev_ctrl_disable(struct nvmet_mdev_ctrl *ctrl, bool shutdown)
{
	struct nvmet_ctrl *tctrl = ctrl->tctrl;

	lockdep_assert_held(&ctrl->lock);

	if (tctrl) {
		nvmet_mdev_stop_queues(ctrl);
		nvmet_mdev_dbbuf_clear(ctrl);
		nvmet_mdev_unpin_all(ctrl);
		nvmet_update_cc(tctrl, ctrl->regs.cc & ~NVME_CC_ENABLE);
		ctrl->tctrl = NULL;
		nvmet_ctrl_put(tctrl);
	}
	if (shutdown) {
		nvmet_mdev_csts_set(ctrl, NVME_CSTS_SHST_CMPLT,
				    NVME_CSTS_SHST_MASK);
		nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_SHUTDOWNS, 1);
	}
}

static void nvmet_mdev_delete_work(struct work_struct *work)
{
	struct nvmet_mdev_dp *dp =
		container_of(work, struct nvmet_mdev_dp, delete_work);
	struct nvmet_mdev_ctrl *ctrl = dp->ctrl;

	mutex_lock(&ctrl->lock);
	if (ctrl->tctrl) {
		dev_info(ctrl->vdev.dev, "controller deleted by nvmet\n");
		nvmet_mdev_ctrl_disable(ctrl, false);
		nvmet_mdev_ctrl_fatal(ctrl);
	}
	mutex_unlock(&ctrl->lock);
}

/* nvmet wants the controller gone (subsystem or port removed...). */
static void nvmet_mdev_delete_ctrl(struct nvmet_ctrl *tctrl)
{
	struct nvmet_mdev_ctrl *ctrl = tctrl->drvdata;

	/* Called under the subsystem lock: tear down from a work item. */
	if (ctrl)
		queue_work(nvmet_wq, &ctrl->dp->delete_work);
}

/* ------------------------------------------------------------------ */
/* Life cycle, called by the device model                               */

/**
 * nvmet_mdev_ctrl_init() - allocate the controller state at probe
 * @ctrl: the controller
 *
 * Return: 0 or a negative errno.
 */
int nvmet_mdev_ctrl_init(struct nvmet_mdev_ctrl *ctrl)
{
	struct nvmet_mdev_dp *dp;

	dp = kzalloc_obj(*dp);
	if (!dp)
		return -ENOMEM;
	ctrl->db_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
	if (!ctrl->db_page) {
		kfree(dp);
		return -ENOMEM;
	}
	ctrl->db = page_address(ctrl->db_page);

	dp->ctrl = ctrl;
	mutex_init(&dp->qlock);
	spin_lock_init(&dp->pause_lock);
	init_waitqueue_head(&dp->pause_wq);
	xa_init(&dp->pins);
	INIT_WORK(&dp->delete_work, nvmet_mdev_delete_work);
	ctrl->dp = dp;

	nvmet_mdev_regs_reset(ctrl, true);
	return 0;
}

/**
 * nvmet_mdev_ctrl_uninit() - free the controller state at release
 * @ctrl: the controller, closed
 */
void nvmet_mdev_ctrl_uninit(struct nvmet_mdev_ctrl *ctrl)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;

	cancel_work_sync(&dp->delete_work);
	WARN_ON_ONCE(ctrl->tctrl);
	WARN_ON_ONCE(!xa_empty(&dp->pins));
	xa_destroy(&dp->pins);
	mutex_destroy(&dp->qlock);
	__free_page(ctrl->db_page);
	ctrl->db_page = NULL;
	ctrl->db = NULL;
	kfree(dp);
	ctrl->dp = NULL;
}

/**
 * nvmet_mdev_ctrl_open() - the device is opened: power-on state
 * @ctrl: the controller (ctrl->lock held)
 */
void nvmet_mdev_ctrl_open(struct nvmet_mdev_ctrl *ctrl)
{
	lockdep_assert_held(&ctrl->lock);
	ctrl->owner = get_task_struct(current);
	ctrl->memcg = get_mem_cgroup_from_mm(current->mm);
	ctrl->regs.vs = 0;
	clear_bit(0, &ctrl->dp->pin_warned);
	nvmet_mdev_regs_reset(ctrl, true);
}

/**
 * nvmet_mdev_ctrl_close() - the device is closed: stop everything
 * @ctrl: the controller (ctrl->lock held)
 */
void nvmet_mdev_ctrl_close(struct nvmet_mdev_ctrl *ctrl)
{
	lockdep_assert_held(&ctrl->lock);
	nvmet_mdev_ctrl_disable(ctrl, false);
	nvmet_mdev_regs_reset(ctrl, false);
	mem_cgroup_put(ctrl->memcg);
	ctrl->memcg = NULL;
	put_task_struct(ctrl->owner);
	ctrl->owner = NULL;
}

/**
 * nvmet_mdev_ctrl_reset() - function level reset
 * @ctrl: the controller (ctrl->lock held)
 */
void nvmet_mdev_ctrl_reset(struct nvmet_mdev_ctrl *ctrl)
{
	lockdep_assert_held(&ctrl->lock);
	nvmet_mdev_ctrl_disable(ctrl, false);
	nvmet_mdev_regs_reset(ctrl, true);
	/* Messages held while bus mastering was off go with it. */
	nvmet_mdev_irq_flush_held(ctrl, false);
}

/**
 * nvmet_mdev_dma_unmap() - the guest is unmapping [iova, iova + length)
 * @ctrl: the controller, ctrl->lock held
 * @iova: start of the range
 * @length: its length
 *
 * Pauses the queue threads, waits for the commands holding guest data
 * pages, drops the pins of the range and resumes.  Rings in the range are
 * unmapped, to be mapped again by their queue thread when next needed;
 * shadow doorbell buffers in the range fall back to the BAR0 doorbells;
 * the pin cache drops the chunks the range overlaps (mem.c).  The guest
 * memory layer calls nobody back: the controller, which owns the queues
 * and the shadow doorbells, does what an unmap means for each.
 *
 * The threads are paused even when the cache holds nothing in the range:
 * one of them may have pinned pages there and not yet stored them, and
 * the backend (vfio type1: BUG_ON after ten rounds) unmaps only once
 * every pin is gone.
 */
void nvmet_mdev_dma_unmap(struct nvmet_mdev_ctrl *ctrl, u64 iova, u64 length)
{
	u64 end;

	lockdep_assert_held(&ctrl->lock);

	if (!length)
		return;
	if (check_add_overflow(iova, length - 1, &end))
		end = U64_MAX;

	nvmet_mdev_pause(ctrl, NULL);
	nvmet_mdev_dbbuf_unmap(ctrl, iova, end);
	nvmet_mdev_unmap_queues(ctrl, iova, end);
	nvmet_mdev_unpin_range(ctrl, iova, end);
	nvmet_mdev_resume(ctrl);
}

/**
 * nvmet_mdev_ctrl_stop() - stop the device for a migration
 * @ctrl: the controller (ctrl->lock held)
 *
 * As with bus mastering off, nobody fetches commands, completions wait on
 * their CQ's parked list and interrupts are held (irq.c); the pause drains
 * the commands moving data.  Then wait for every other command fetched,
 * but the Asynchronous Event Requests nvmet keeps until an event comes,
 * and turn the interrupts the CQs still moderate into held ones: what is
 * left is a state that no longer changes by itself (an event completing
 * an AER parks its completion).
 *
 * Return: 0, or -EINTR if a fatal signal ended the wait (then running).
 */
int nvmet_mdev_ctrl_stop(struct nvmet_mdev_ctrl *ctrl)
{
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvmet_mdev_cq *cq;
	int qid;

	lockdep_assert_held(&ctrl->lock);
	WRITE_ONCE(ctrl->stopped, true);
	/* stopped before the counts: pairs with nvmet_mdev_queue_response() */
	smp_mb();
	if (!ctrl->tctrl)
		return 0;

	/* What a stop costs: the commands it waits for. */
	nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_STOP_BUSY,
			    nvmet_mdev_busy(ctrl));
	nvmet_mdev_pause(ctrl, NULL);
	nvmet_mdev_resume(ctrl);
	if (wait_event_killable(dp->pause_wq, nvmet_mdev_quiet(ctrl))) {
		nvmet_mdev_ctrl_run(ctrl);
		return -EINTR;
	}

	for (qid = 0; qid <= NVMET_MDEV_MAX_IO_QUEUES; qid++) {
		cq = rcu_access_pointer(dp->cqs[qid]);
		if (cq)
			nvmet_mdev_cq_quiesce(cq);
	}
	return 0;
}

/**
 * nvmet_mdev_ctrl_run() - the device runs again
 * @ctrl: the controller (ctrl->lock held)
 *
 * The held interrupts go out and the queue threads post the parked
 * completions and fetch again, if bus mastering is on.
 */
void nvmet_mdev_ctrl_run(struct nvmet_mdev_ctrl *ctrl)
{
	lockdep_assert_held(&ctrl->lock);
	if (!READ_ONCE(ctrl->stopped))
		return;
	WRITE_ONCE(ctrl->stopped, false);
	nvmet_mdev_irq_unmasked(ctrl);
	if (!nvmet_mdev_bus_master(ctrl))
		return;
	nvmet_mdev_irq_flush_held(ctrl, true);
	nvmet_mdev_kick_all(ctrl);
}

/* ------------------------------------------------------------------ */
/* nvmet operations                                                     */

static u8 nvmet_mdev_get_mdts(const struct nvmet_ctrl *tctrl)
{
	struct nvmet_mdev_ctrl *ctrl = tctrl->drvdata;

	return ctrl->dp->mdts;
}

/* The queue size our CAP register offers (nvmet may lower it further). */
static u16 nvmet_mdev_get_max_queue_size(const struct nvmet_ctrl *tctrl)
{
	struct nvmet_mdev_ctrl *ctrl = tctrl->drvdata;

	return NVME_CAP_MQES(ctrl->regs.cap) + 1;
}

/*
 * nvmet keeps Arbitration (round robin only here: the weights are just
 * reported) and Interrupt Coalescing (read where completions are posted);
 * the interrupt vectors are ours.
 */
static u16 nvmet_mdev_set_feature(const struct nvmet_ctrl *tctrl, u8 feat,
				  void *data)
{
	struct nvmet_mdev_ctrl *ctrl = tctrl->drvdata;
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvmet_feat_irq_config *irqcfg;

	switch (feat) {
	case NVME_FEAT_ARBITRATION:
	case NVME_FEAT_IRQ_COALESCE:
		return NVME_SC_SUCCESS;
	case NVME_FEAT_IRQ_CONFIG:
		irqcfg = data;
		if (irqcfg->iv > dp->nr_io_queues)
			return NVME_SC_INVALID_FIELD | NVME_STATUS_DNR;
		if (irqcfg->cd)
			set_bit(irqcfg->iv, dp->vec_cd);
		else
			clear_bit(irqcfg->iv, dp->vec_cd);
		return NVME_SC_SUCCESS;
	default:
		return NVME_SC_INVALID_FIELD | NVME_STATUS_DNR;
	}
}

static u16 nvmet_mdev_get_feature(const struct nvmet_ctrl *tctrl, u8 feat,
				  void *data)
{
	struct nvmet_mdev_ctrl *ctrl = tctrl->drvdata;
	struct nvmet_mdev_dp *dp = ctrl->dp;
	struct nvmet_feat_irq_config *irqcfg;

	switch (feat) {
	case NVME_FEAT_IRQ_CONFIG:
		irqcfg = data;
		if (irqcfg->iv > dp->nr_io_queues)
			return NVME_SC_INVALID_FIELD | NVME_STATUS_DNR;
		irqcfg->cd = test_bit(irqcfg->iv, dp->vec_cd);
		return NVME_SC_SUCCESS;
	default:
		return NVME_SC_INVALID_FIELD | NVME_STATUS_DNR;
	}
}

/* Identify Controller VID/SSVID: those of our PCI function. */
static void nvmet_mdev_get_pci_vendor_ids(const struct nvmet_ctrl *tctrl,
					  u16 *vid, u16 *ssvid)
{
	*vid = NVMET_MDEV_PCI_VENDOR_ID;
	*ssvid = NVMET_MDEV_PCI_SUBVENDOR_ID;
}

const struct nvmet_fabrics_ops nvmet_mdev_fabrics_ops = {
	.owner			= THIS_MODULE,
	.type			= NVMET_TRANSPORT_MDEV,
	.msdbd			= 1,
	/* Guest pages go to the block layer as they are: no byte granularity. */
	.flags			= NVMF_SGLS_DWORD_ALIGNED,
	.queue_response		= nvmet_mdev_queue_response,
	.add_port		= nvmet_mdev_add_port,
	.remove_port		= nvmet_mdev_remove_port,
	.delete_ctrl		= nvmet_mdev_delete_ctrl,
	.get_mdts		= nvmet_mdev_get_mdts,
	.get_max_queue_size	= nvmet_mdev_get_max_queue_size,
	.create_sq		= nvmet_mdev_create_sq,
	.delete_sq		= nvmet_mdev_delete_sq,
	.create_cq		= nvmet_mdev_create_cq,
	.delete_cq		= nvmet_mdev_delete_cq,
	.set_feature		= nvmet_mdev_set_feature,
	.get_feature		= nvmet_mdev_get_feature,
	.set_dbbuf		= nvmet_mdev_set_dbbuf,
	.get_pci_vendor_ids	= nvmet_mdev_get_pci_vendor_ids,
};
