// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: BAR0 registers.
 *
 * Register page accesses are trapped (vfio read/write) and serialised by
 * ctrl->lock.  Supported accesses are naturally aligned dwords, and
 * quadwords or either dword half of the 64-bit registers (CAP, ASQ, ACQ).
 * Other sizes and alignments read as zero and writes are ignored, as are
 * reserved and unimplemented registers (CMB, boot partitions, PMR, NSSR:
 * CAP.NSSRS = 0).
 *
 * The doorbell page (CAP.DSTRD = 0) is normally mapped into the guest;
 * writes that come through here are validated, stored and wake the queue
 * thread.  Reads return the last value stored.
 */

#include "datapath.h"

/* CC fields the host may change while CC.EN = 1 (besides EN itself). */
#define NVMET_MDEV_CC_LIVE	NVME_CC_SHN_MASK
/* Writable CC bits: EN, CSS, MPS, AMS, SHN, IOSQES, IOCQES. */
#define NVMET_MDEV_CC_MASK	(NVME_CC_ENABLE | NVME_CC_CSS_MASK | \
				 NVME_CC_MPS_MASK | NVME_CC_AMS_MASK | \
				 NVME_CC_SHN_MASK | NVME_CC_IOSQES_MASK | \
				 NVME_CC_IOCQES_MASK)

static u16 nvmet_mdev_mqes(struct nvmet_mdev_ctrl *ctrl)
{
	int port_max = ctrl->port->nport->max_queue_size;
	u32 n = ctrl->params.max_queue_entries;

	/* nvmet limits CAP.MQES to the port's max_queue_size. */
	if (port_max <= 0)
		port_max = NVMET_MAX_QUEUE_SIZE;
	n = min3(n, (u32)port_max, (u32)NVMET_MAX_QUEUE_SIZE);
	return max(n, 2U) - 1;
}

/**
 * nvmet_mdev_regs_reset() - controller registers to their reset values
 * @ctrl: the controller, disabled
 * @admin_queue: clear AQA, ASQ and ACQ too (power-on and function level
 *	reset); a controller reset (CC.EN cleared) keeps them
 */
void nvmet_mdev_regs_reset(struct nvmet_mdev_ctrl *ctrl, bool admin_queue)
{
	/* As nvmet builds the controller's, which checks the guest's queues. */
	ctrl->regs.cap = nvmet_cap(nvmet_mdev_mqes(ctrl), true);
	if (!ctrl->regs.vs)
		ctrl->regs.vs = NVMET_DEFAULT_VS;
	ctrl->regs.intms = 0;
	ctrl->regs.cc = 0;
	WRITE_ONCE(ctrl->regs.csts, 0);
	memset(ctrl->db, 0, NVMET_MDEV_DB_SIZE);
	if (admin_queue) {
		ctrl->regs.aqa = 0;
		ctrl->regs.asq = 0;
		ctrl->regs.acq = 0;
	}
}

/**
 * nvmet_mdev_regs_restore() - registers as a migration saved them
 * @ctrl: the controller, disabled, registers reset
 * @r: the values, each checked as a guest write would be
 *
 * CAP follows the tunables and is checked by the caller; VS is set when
 * the nvmet controller is created.
 *
 * Return: 0, or -EINVAL for a value no guest write can produce.
 */
int nvmet_mdev_regs_restore(struct nvmet_mdev_ctrl *ctrl,
			    const struct nvmet_mdev_regs *r)
{
	if ((r->cc & ~NVMET_MDEV_CC_MASK) ||
	    (r->csts & ~(NVME_CSTS_RDY | NVME_CSTS_CFS | NVME_CSTS_SHST_MASK)) ||
	    (r->aqa & ~(NVMET_MDEV_AQA_ASQS | NVMET_MDEV_AQA_ACQS)) ||
	    !IS_ALIGNED(r->asq | r->acq, NVMET_MDEV_MPS))
		return -EINVAL;
	ctrl->regs.intms = r->intms;
	ctrl->regs.cc = r->cc;
	WRITE_ONCE(ctrl->regs.csts, r->csts);
	ctrl->regs.aqa = r->aqa;
	ctrl->regs.asq = r->asq;
	ctrl->regs.acq = r->acq;
	return 0;
}

static u64 nvmet_mdev_reg_value(struct nvmet_mdev_ctrl *ctrl, u32 off)
{
	switch (off) {
	case NVME_REG_CAP:
		return ctrl->regs.cap;
	case NVME_REG_VS:
		return ctrl->regs.vs;
	case NVME_REG_INTMS:
	case NVME_REG_INTMC:
		return ctrl->regs.intms;
	case NVME_REG_CC:
		return ctrl->regs.cc;
	case NVME_REG_CSTS:
		return READ_ONCE(ctrl->regs.csts);
	case NVME_REG_AQA:
		return ctrl->regs.aqa;
	case NVME_REG_ASQ:
		return ctrl->regs.asq;
	case NVME_REG_ACQ:
		return ctrl->regs.acq;
	default:
		return 0;
	}
}

static bool nvmet_mdev_reg_is64(u32 off)
{
	return off == NVME_REG_CAP || off == NVME_REG_ASQ ||
		off == NVME_REG_ACQ;
}

/**
 * nvmet_mdev_regs_read() - read BAR0 below the reserved area
 * @ctrl: the controller (ctrl->lock held)
 * @off: offset in BAR0, below NVME_REG_DBS + NVMET_MDEV_DB_SIZE
 * @buf: receives @count bytes, little endian
 * @count: 1, 2, 4 or 8, @off aligned to it
 */
void nvmet_mdev_regs_read(struct nvmet_mdev_ctrl *ctrl, u32 off, void *buf,
			  u32 count)
{
	__le64 le;
	u64 val = 0;

	lockdep_assert_held(&ctrl->lock);

	if (off >= NVME_REG_DBS) {
		if (count == 4 && IS_ALIGNED(off, 4))
			val = le32_to_cpu(READ_ONCE(ctrl->db[(off -
					NVME_REG_DBS) / 4]));
	} else if (count == 8 && nvmet_mdev_reg_is64(off)) {
		val = nvmet_mdev_reg_value(ctrl, off);
	} else if (count == 4 && IS_ALIGNED(off, 4)) {
		if (nvmet_mdev_reg_is64(off & ~7))
			val = nvmet_mdev_reg_value(ctrl, off & ~7) >>
				(off & 4 ? 32 : 0);
		else
			val = nvmet_mdev_reg_value(ctrl, off);
		val &= U32_MAX;
	}

	le = cpu_to_le64(val);
	memcpy(buf, &le, count);
}

static void nvmet_mdev_write_cc(struct nvmet_mdev_ctrl *ctrl, u32 new)
{
	u32 old = ctrl->regs.cc;

	new &= NVMET_MDEV_CC_MASK;

	if (nvmet_cc_en(old) && nvmet_cc_en(new)) {
		/* Only the shutdown notification may change while enabled. */
		new = (old & ~NVMET_MDEV_CC_LIVE) | (new & NVMET_MDEV_CC_LIVE);
	}
	ctrl->regs.cc = new;

	if (!nvmet_cc_en(new) && nvmet_cc_en(old)) {
		/* Controller reset: everything but AQA, ASQ and ACQ. */
		nvmet_mdev_ctrl_disable(ctrl, false);
		nvmet_mdev_regs_reset(ctrl, false);
		ctrl->regs.cc = new;
		old = 0;
	}

	if (nvmet_cc_shn(new) && !nvmet_cc_shn(old)) {
		nvmet_mdev_ctrl_disable(ctrl, true);
		return;
	}
	if (!nvmet_cc_shn(new) && nvmet_cc_shn(old))
		nvmet_mdev_csts_set(ctrl, 0, NVME_CSTS_SHST_MASK);

	if (nvmet_cc_en(new) && !nvmet_cc_en(old)) {
		if (READ_ONCE(ctrl->regs.csts) & NVME_CSTS_SHST_MASK) {
			/* Shut down: must be reset before use. */
			nvmet_mdev_ctrl_fatal(ctrl);
			return;
		}
		nvmet_mdev_ctrl_enable(ctrl);
	}
}

/**
 * nvmet_mdev_regs_write() - write BAR0 below the reserved area
 * @ctrl: the controller (ctrl->lock held)
 * @off: offset in BAR0, below NVME_REG_DBS + NVMET_MDEV_DB_SIZE
 * @buf: @count bytes, little endian
 * @count: 1, 2, 4 or 8, @off aligned to it
 */
void nvmet_mdev_regs_write(struct nvmet_mdev_ctrl *ctrl, u32 off,
			   const void *buf, u32 count)
{
	__le64 le = 0;
	u64 val;

	lockdep_assert_held(&ctrl->lock);

	if (count != 4 && count != 8)
		return;
	memcpy(&le, buf, count);
	val = le64_to_cpu(le);

	if (off >= NVME_REG_DBS) {
		if (count == 4 && IS_ALIGNED(off, 4))
			nvmet_mdev_db_write(ctrl, off - NVME_REG_DBS,
					    val);
		return;
	}

	if (count == 8) {
		switch (off) {
		case NVME_REG_ASQ:
			ctrl->regs.asq = ALIGN_DOWN(val, NVMET_MDEV_MPS);
			break;
		case NVME_REG_ACQ:
			ctrl->regs.acq = ALIGN_DOWN(val, NVMET_MDEV_MPS);
			break;
		}
		return;
	}

	switch (off) {
	case NVME_REG_INTMS:
		WRITE_ONCE(ctrl->regs.intms, ctrl->regs.intms | val);
		break;
	case NVME_REG_INTMC:
		WRITE_ONCE(ctrl->regs.intms, ctrl->regs.intms & ~val);
		/* An INTx raised while masked fires now. */
		nvmet_mdev_irq_unmasked(ctrl);
		break;
	case NVME_REG_CC:
		nvmet_mdev_write_cc(ctrl, val);
		break;
	case NVME_REG_AQA:
		ctrl->regs.aqa = val & (NVMET_MDEV_AQA_ASQS | NVMET_MDEV_AQA_ACQS);
		break;
	case NVME_REG_ASQ:
		ctrl->regs.asq = (ctrl->regs.asq & ~(u64)U32_MAX) |
			ALIGN_DOWN(val, NVMET_MDEV_MPS);
		break;
	case NVME_REG_ASQ + 4:
		ctrl->regs.asq = (u32)ctrl->regs.asq | val << 32;
		break;
	case NVME_REG_ACQ:
		ctrl->regs.acq = (ctrl->regs.acq & ~(u64)U32_MAX) |
			ALIGN_DOWN(val, NVMET_MDEV_MPS);
		break;
	case NVME_REG_ACQ + 4:
		ctrl->regs.acq = (u32)ctrl->regs.acq | val << 32;
		break;
	default:
		/* CAP, VS, CSTS are read only; NSSR and the rest ignored. */
		break;
	}
}
