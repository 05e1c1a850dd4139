// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: interrupts.
 *
 * The device's user (QEMU) hands us one eventfd per MSI-X vector, or one
 * for INTx, with VFIO_DEVICE_SET_IRQS; raising an interrupt is signalling
 * the eventfd, which KVM can turn into a guest interrupt without a trip
 * through user space.  The MSI-X table itself is emulated by the user.
 *
 * The eventfd pointers are protected by a spinlock so that interrupts can
 * be raised from any context, including bio completion in hard interrupt
 * context; eventfd references are dropped outside of it.
 */

#include <linux/eventfd.h>
#include <linux/pci_regs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/vfio.h>

#include "priv.h"

void nvmet_mdev_irq_init(struct nvmet_mdev_ctrl *ctrl)
{
	spin_lock_init(&ctrl->irqs.lock);
	ctrl->irqs.mode = -1;
}

static u32 nvmet_mdev_nr_vectors(struct nvmet_mdev_ctrl *ctrl)
{
	return min_t(u32, ctrl->params.nr_io_queues + 1,
		     NVMET_MDEV_MAX_VECTORS);
}

u32 nvmet_mdev_irq_count(struct nvmet_mdev_ctrl *ctrl, u32 index)
{
	lockdep_assert_held(&ctrl->lock);
	switch (index) {
	case VFIO_PCI_INTX_IRQ_INDEX:
	case VFIO_PCI_ERR_IRQ_INDEX:
	case VFIO_PCI_REQ_IRQ_INDEX:
		return 1;
	case VFIO_PCI_MSIX_IRQ_INDEX:
		return nvmet_mdev_nr_vectors(ctrl);
	default:
		return 0;
	}
}

bool nvmet_mdev_irq_vector_valid(struct nvmet_mdev_ctrl *ctrl, u16 vector)
{
	return vector < nvmet_mdev_nr_vectors(ctrl);
}

/*
 * Signal INTx, emulating a level interrupt that masks itself until the
 * user unmasks it (VFIO_IRQ_SET_ACTION_UNMASK, or the resample eventfd
 * KVM signals on the guest's EOI).
 */
static void nvmet_mdev_intx_raise(struct nvmet_mdev_ctrl *ctrl)
{
	struct nvmet_mdev_irqs *irqs = &ctrl->irqs;
	u8 cmd_hi = READ_ONCE(ctrl->pci.cfg[PCI_COMMAND + 1]);
	/* INTMS bit 0 masks the single pin-based vector (NVMe over PCIe). */
	bool intms = READ_ONCE(ctrl->regs.intms) & 1;

	lockdep_assert_held(&irqs->lock);

	if (!irqs->intx)
		return;
	/* A device stopped for a migration raises it when it runs again. */
	if (irqs->intx_masked || intms || READ_ONCE(ctrl->stopped) ||
	    (cmd_hi & (PCI_COMMAND_INTX_DISABLE >> 8))) {
		irqs->intx_pending = true;
		return;
	}
	irqs->intx_masked = true;
	eventfd_signal(irqs->intx);
}

/*
 * The resample eventfd fired (the guest acknowledged INTx): unmask it,
 * raising it again if it was raised while masked.  Runs from the virqfd's
 * work item (no handler): the wake-up runs under the eventfd's lock, and
 * nvmet_mdev_irq_raise() signals eventfds under irqs->lock.
 */
static void nvmet_mdev_intx_resample_thread(void *opaque, void *unused)
{
	struct nvmet_mdev_ctrl *ctrl = opaque;
	struct nvmet_mdev_irqs *irqs = &ctrl->irqs;
	unsigned long flags;

	spin_lock_irqsave(&irqs->lock, flags);
	irqs->intx_masked = false;
	if (irqs->intx_pending && irqs->mode == VFIO_PCI_INTX_IRQ_INDEX) {
		irqs->intx_pending = false;
		nvmet_mdev_intx_raise(ctrl);
	}
	spin_unlock_irqrestore(&irqs->lock, flags);
}

/**
 * nvmet_mdev_irq_raise() - interrupt the guest
 * @ctrl: the controller
 * @vector: MSI-X vector; ignored when the guest uses INTx
 *
 * May be called from any context.
 */
void nvmet_mdev_irq_raise(struct nvmet_mdev_ctrl *ctrl, u16 vector)
{
	struct nvmet_mdev_irqs *irqs = &ctrl->irqs;
	unsigned long flags;

	spin_lock_irqsave(&irqs->lock, flags);
	switch (irqs->mode) {
	case VFIO_PCI_MSIX_IRQ_INDEX:
		if (vector >= NVMET_MDEV_MAX_VECTORS)
			break;
		/* An MSI-X message is a DMA write: none without bus mastering. */
		if (!nvmet_mdev_bus_master(ctrl)) {
			__set_bit(vector, irqs->msix_held);
			break;
		}
		if (irqs->msix[vector]) {
			eventfd_signal(irqs->msix[vector]);
			nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_IRQS, 1);
		}
		break;
	case VFIO_PCI_INTX_IRQ_INDEX:
		nvmet_mdev_intx_raise(ctrl);
		nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_IRQS, 1);
		break;
	default:
		break;
	}
	spin_unlock_irqrestore(&irqs->lock, flags);
}

/**
 * nvmet_mdev_irq_flush_held() - bus mastering is back, or the function reset
 * @ctrl: the controller
 * @send: send the MSI-X messages held while bus mastering was off (it is
 *	on again), or forget them (a function reset)
 *
 * Any context.
 */
void nvmet_mdev_irq_flush_held(struct nvmet_mdev_ctrl *ctrl, bool send)
{
	struct nvmet_mdev_irqs *irqs = &ctrl->irqs;
	unsigned long flags;
	unsigned int v;

	spin_lock_irqsave(&irqs->lock, flags);
	for_each_set_bit(v, irqs->msix_held, NVMET_MDEV_MAX_VECTORS) {
		__clear_bit(v, irqs->msix_held);
		if (send && irqs->mode == VFIO_PCI_MSIX_IRQ_INDEX &&
		    irqs->msix[v]) {
			eventfd_signal(irqs->msix[v]);
			nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_IRQS, 1);
		}
	}
	spin_unlock_irqrestore(&irqs->lock, flags);
}

/**
 * nvmet_mdev_irq_unmasked() - a pin-based interrupt mask was cleared
 * @ctrl: the controller
 *
 * For INTMC writes and INTx disable clears: raises INTx again if it was
 * raised while masked.  Any context.
 */
void nvmet_mdev_irq_unmasked(struct nvmet_mdev_ctrl *ctrl)
{
	struct nvmet_mdev_irqs *irqs = &ctrl->irqs;
	unsigned long flags;

	spin_lock_irqsave(&irqs->lock, flags);
	if (irqs->mode == VFIO_PCI_INTX_IRQ_INDEX && irqs->intx_pending &&
	    !irqs->intx_masked) {
		irqs->intx_pending = false;
		nvmet_mdev_intx_raise(ctrl);
	}
	spin_unlock_irqrestore(&irqs->lock, flags);
}

/**
 * nvmet_mdev_irq_get_held() - the interrupts a stopped device holds
 * @ctrl: the controller
 * @held: receives the MSI-X vectors held (NVMET_MDEV_MAX_VECTORS bits)
 *
 * Return: whether INTx is pending.
 */
bool nvmet_mdev_irq_get_held(struct nvmet_mdev_ctrl *ctrl, unsigned long *held)
{
	struct nvmet_mdev_irqs *irqs = &ctrl->irqs;
	unsigned long flags;
	bool intx;

	spin_lock_irqsave(&irqs->lock, flags);
	bitmap_copy(held, irqs->msix_held, NVMET_MDEV_MAX_VECTORS);
	intx = irqs->intx_pending;
	spin_unlock_irqrestore(&irqs->lock, flags);
	return intx;
}

/**
 * nvmet_mdev_irq_set_held() - the interrupts a migration carried
 * @ctrl: the controller, stopped
 * @held: the MSI-X vectors to raise when it runs
 * @intx: INTx to raise then
 */
void nvmet_mdev_irq_set_held(struct nvmet_mdev_ctrl *ctrl,
			     const unsigned long *held, bool intx)
{
	struct nvmet_mdev_irqs *irqs = &ctrl->irqs;
	unsigned long flags;

	spin_lock_irqsave(&irqs->lock, flags);
	bitmap_copy(irqs->msix_held, held, NVMET_MDEV_MAX_VECTORS);
	irqs->intx_pending = intx;
	spin_unlock_irqrestore(&irqs->lock, flags);
}

bool nvmet_mdev_irq_request(struct nvmet_mdev_ctrl *ctrl)
{
	struct nvmet_mdev_irqs *irqs = &ctrl->irqs;
	unsigned long flags;
	bool ret = false;

	spin_lock_irqsave(&irqs->lock, flags);
	if (irqs->req) {
		eventfd_signal(irqs->req);
		ret = true;
	}
	spin_unlock_irqrestore(&irqs->lock, flags);
	return ret;
}

/* The eventfd slots of VFIO IRQ index @index; *nr gets their number. */
static struct eventfd_ctx **nvmet_mdev_irq_slots(struct nvmet_mdev_ctrl *ctrl,
						 u32 index, u32 *nr)
{
	struct nvmet_mdev_irqs *irqs = &ctrl->irqs;

	*nr = 1;
	switch (index) {
	case VFIO_PCI_INTX_IRQ_INDEX:
		return &irqs->intx;
	case VFIO_PCI_MSIX_IRQ_INDEX:
		*nr = nvmet_mdev_nr_vectors(ctrl);
		return irqs->msix;
	case VFIO_PCI_ERR_IRQ_INDEX:
		return &irqs->err;
	case VFIO_PCI_REQ_IRQ_INDEX:
		return &irqs->req;
	default:
		*nr = 0;
		return NULL;
	}
}

/* Set slots [start, start + count) to the eventfds @fds (-1: none). */
static int nvmet_mdev_irq_set_eventfds(struct nvmet_mdev_ctrl *ctrl,
				       u32 index, u32 start, u32 count,
				       const s32 *fds)
{
	struct nvmet_mdev_irqs *irqs = &ctrl->irqs;
	struct eventfd_ctx **slots, **ctxs;
	unsigned long flags;
	u32 nr, i;
	int ret;

	slots = nvmet_mdev_irq_slots(ctrl, index, &nr);
	if (!slots || start >= nr || count > nr - start)
		return -EINVAL;
	if (!count)
		return 0;

	ctxs = kcalloc(count, sizeof(*ctxs), GFP_KERNEL);
	if (!ctxs)
		return -ENOMEM;

	for (i = 0; i < count; i++) {
		if (fds[i] < 0)
			continue;
		ctxs[i] = eventfd_ctx_fdget(fds[i]);
		if (IS_ERR(ctxs[i])) {
			ret = PTR_ERR(ctxs[i]);
			ctxs[i] = NULL;
			goto out_put;
		}
	}

	/* Swap them in; the old ones end up in ctxs[] and are put below. */
	spin_lock_irqsave(&irqs->lock, flags);
	for (i = 0; i < count; i++)
		swap(slots[start + i], ctxs[i]);
	if (index == VFIO_PCI_MSIX_IRQ_INDEX || index == VFIO_PCI_INTX_IRQ_INDEX)
		irqs->mode = index;
	if (index == VFIO_PCI_INTX_IRQ_INDEX) {
		irqs->intx_masked = false;
		irqs->intx_pending = false;
	}
	spin_unlock_irqrestore(&irqs->lock, flags);
	ret = 0;

out_put:
	for (i = 0; i < count; i++)
		if (ctxs[i])
			eventfd_ctx_put(ctxs[i]);
	kfree(ctxs);
	return ret;
}

/* Drop all eventfds of @index; leaves MSI-X/INTx mode if it was in it. */
static void nvmet_mdev_irq_disable(struct nvmet_mdev_ctrl *ctrl, u32 index)
{
	struct eventfd_ctx *old[NVMET_MDEV_MAX_VECTORS] = {};
	struct nvmet_mdev_irqs *irqs = &ctrl->irqs;
	struct eventfd_ctx **slots;
	unsigned long flags;
	u32 nr, i;

	slots = nvmet_mdev_irq_slots(ctrl, index, &nr);
	if (!slots)
		return;
	if (index == VFIO_PCI_MSIX_IRQ_INDEX)
		nr = NVMET_MDEV_MAX_VECTORS;

	spin_lock_irqsave(&irqs->lock, flags);
	for (i = 0; i < nr; i++)
		swap(slots[i], old[i]);
	if (irqs->mode == index)
		irqs->mode = -1;
	if (index == VFIO_PCI_INTX_IRQ_INDEX) {
		irqs->intx_masked = false;
		irqs->intx_pending = false;
	}
	if (index == VFIO_PCI_MSIX_IRQ_INDEX)
		bitmap_zero(irqs->msix_held, NVMET_MDEV_MAX_VECTORS);
	spin_unlock_irqrestore(&irqs->lock, flags);

	if (index == VFIO_PCI_INTX_IRQ_INDEX)
		vfio_virqfd_disable(&irqs->intx_unmask);
	for (i = 0; i < nr; i++)
		if (old[i])
			eventfd_ctx_put(old[i]);
}

void nvmet_mdev_irq_release_all(struct nvmet_mdev_ctrl *ctrl)
{
	lockdep_assert_held(&ctrl->lock);
	nvmet_mdev_irq_disable(ctrl, VFIO_PCI_MSIX_IRQ_INDEX);
	nvmet_mdev_irq_disable(ctrl, VFIO_PCI_INTX_IRQ_INDEX);
	nvmet_mdev_irq_disable(ctrl, VFIO_PCI_ERR_IRQ_INDEX);
	nvmet_mdev_irq_disable(ctrl, VFIO_PCI_REQ_IRQ_INDEX);
	ctrl->irqs.mode = -1;
}

/* Loopback triggers (DATA_NONE / DATA_BOOL): signal the selected slots. */
static void nvmet_mdev_irq_fire(struct nvmet_mdev_ctrl *ctrl, u32 index,
				u32 start, u32 count, const u8 *bools)
{
	struct nvmet_mdev_irqs *irqs = &ctrl->irqs;
	struct eventfd_ctx **slots;
	unsigned long flags;
	u32 nr, i;

	slots = nvmet_mdev_irq_slots(ctrl, index, &nr);
	if (!slots)
		return;

	spin_lock_irqsave(&irqs->lock, flags);
	for (i = 0; i < count && start + i < nr; i++) {
		if (bools && !bools[i])
			continue;
		if (index == VFIO_PCI_INTX_IRQ_INDEX)
			nvmet_mdev_intx_raise(ctrl);
		else if (slots[start + i])
			eventfd_signal(slots[start + i]);
	}
	spin_unlock_irqrestore(&irqs->lock, flags);
}

static int nvmet_mdev_intx_mask(struct nvmet_mdev_ctrl *ctrl, u32 action,
				u32 count, u32 data_type, const u8 *data)
{
	struct nvmet_mdev_irqs *irqs = &ctrl->irqs;
	unsigned long flags;
	s32 fd;

	if (data_type == VFIO_IRQ_SET_DATA_EVENTFD) {
		/* A resampling irqfd: KVM signals it on the guest's EOI. */
		if (action != VFIO_IRQ_SET_ACTION_UNMASK || count != 1)
			return -EINVAL;
		memcpy(&fd, data, sizeof(fd));
		if (fd >= 0)
			return vfio_virqfd_enable(ctrl, NULL,
						  nvmet_mdev_intx_resample_thread,
						  NULL, &irqs->intx_unmask, fd);
		vfio_virqfd_disable(&irqs->intx_unmask);
		return 0;
	}
	if (count != 1 || (data_type == VFIO_IRQ_SET_DATA_BOOL && !data[0]))
		return 0;

	spin_lock_irqsave(&irqs->lock, flags);
	if (action == VFIO_IRQ_SET_ACTION_MASK) {
		irqs->intx_masked = true;
	} else {
		irqs->intx_masked = false;
		if (irqs->intx_pending &&
		    irqs->mode == VFIO_PCI_INTX_IRQ_INDEX) {
			irqs->intx_pending = false;
			nvmet_mdev_intx_raise(ctrl);
		}
	}
	spin_unlock_irqrestore(&irqs->lock, flags);
	return 0;
}

static int nvmet_mdev_set_irqs_trigger(struct nvmet_mdev_ctrl *ctrl,
				       struct vfio_irq_set *hdr, void *data)
{
	u32 type = hdr->flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
	int mode = ctrl->irqs.mode;

	if (type == VFIO_IRQ_SET_DATA_NONE && !hdr->count) {
		nvmet_mdev_irq_disable(ctrl, hdr->index);
		return 0;
	}

	/* MSI-X and INTx are exclusive: the user disables one first. */
	if ((hdr->index == VFIO_PCI_MSIX_IRQ_INDEX ||
	     hdr->index == VFIO_PCI_INTX_IRQ_INDEX) &&
	    mode != -1 && mode != hdr->index)
		return -EINVAL;

	switch (type) {
	case VFIO_IRQ_SET_DATA_EVENTFD:
		return nvmet_mdev_irq_set_eventfds(ctrl, hdr->index, hdr->start,
						   hdr->count, data);
	case VFIO_IRQ_SET_DATA_BOOL:
		nvmet_mdev_irq_fire(ctrl, hdr->index, hdr->start, hdr->count,
				    data);
		return 0;
	default:
		nvmet_mdev_irq_fire(ctrl, hdr->index, hdr->start, hdr->count,
				    NULL);
		return 0;
	}
}

/**
 * nvmet_mdev_set_irqs() - VFIO_DEVICE_SET_IRQS
 * @ctrl: the controller, ctrl->lock held
 * @arg: user pointer to struct vfio_irq_set and its data
 *
 * Return: 0 or a negative errno.
 */
long nvmet_mdev_set_irqs(struct nvmet_mdev_ctrl *ctrl, unsigned long arg)
{
	unsigned long minsz = offsetofend(struct vfio_irq_set, count);
	struct vfio_irq_set hdr;
	size_t data_size = 0;
	void *data = NULL;
	u32 action, type;
	int ret;

	lockdep_assert_held(&ctrl->lock);

	if (copy_from_user(&hdr, (void __user *)arg, minsz))
		return -EFAULT;

	ret = vfio_set_irqs_validate_and_prepare(&hdr,
						 nvmet_mdev_irq_count(ctrl, hdr.index),
						 VFIO_PCI_NUM_IRQS, &data_size);
	if (ret)
		return ret;

	if (data_size) {
		data = memdup_user((void __user *)(arg + minsz), data_size);
		if (IS_ERR(data))
			return PTR_ERR(data);
	}

	action = hdr.flags & VFIO_IRQ_SET_ACTION_TYPE_MASK;
	type = hdr.flags & VFIO_IRQ_SET_DATA_TYPE_MASK;
	switch (action) {
	case VFIO_IRQ_SET_ACTION_TRIGGER:
		ret = nvmet_mdev_set_irqs_trigger(ctrl, &hdr, data);
		break;
	case VFIO_IRQ_SET_ACTION_MASK:
	case VFIO_IRQ_SET_ACTION_UNMASK:
		if (hdr.index == VFIO_PCI_INTX_IRQ_INDEX)
			ret = nvmet_mdev_intx_mask(ctrl, action, hdr.count,
						   type, data);
		else
			ret = -EINVAL;
		break;
	default:
		ret = -EINVAL;
		break;
	}

	kfree(data);
	return ret;
}
