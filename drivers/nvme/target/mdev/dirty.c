// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: dirty page logging.
 *
 * During a live migration the VMM copies the guest's memory while the
 * guest runs and copies again what changed; it asks the device which pages
 * it wrote (VFIO_DEVICE_FEATURE_DMA_LOGGING_*, vfio_log_ops).  The device
 * writes guest memory in three places: the data of commands that transfer
 * to the host (on completion, nvmet_mdev_unmap_data()), completion queue
 * entries and shadow doorbell EventIdx values.  Each marks the pages it
 * wrote in a bitmap per IOVA range the VMM logs, after the write, so a
 * report never misses a write it raced with: the page is reported again
 * by the next one.  Pinned pages the device only reads are not reported,
 * so the copy of a busy guest converges.
 *
 * The bitmaps are read under RCU by the writers, from any context, and
 * created, read and cleared, and freed under dirty_lock by the log ops.
 */

#include <linux/interval_tree.h>
#include <linux/iova_bitmap.h>
#include <linux/rcupdate.h>
#include <linux/slab.h>

#include "priv.h"

/* Ranges logged at most; the core merges the VMM's into this many. */
#define NVMET_MDEV_DIRTY_RANGES		8

/*
 * Bits of all bitmaps at most (32 MiB of bitmap): beyond, the log's page
 * size grows, e.g. to 8 KiB for more than 1 TiB at 4 KiB.
 */
#define NVMET_MDEV_DIRTY_MAX_BITS	BIT_ULL(28)

struct nvmet_mdev_dirty_range {
	u64		start;
	u64		last;		/* inclusive */
	unsigned long	*bits;
};

/**
 * struct nvmet_mdev_dirty - the dirty page log of a controller
 * @rcu: freed after the writers that may see it
 * @shift: log2 of the page size of the log
 * @nr: number of ranges
 * @range: the IOVA ranges logged, each with a bit per page
 */
struct nvmet_mdev_dirty {
	struct rcu_head			rcu;
	unsigned int			shift;
	unsigned int			nr;
	struct nvmet_mdev_dirty_range	range[] __counted_by(nr);
};

static unsigned long nvmet_mdev_dirty_bits(const struct nvmet_mdev_dirty_range *r,
					   unsigned int shift)
{
	return ((r->last - r->start) >> shift) + 1;
}

static void nvmet_mdev_dirty_free(struct nvmet_mdev_dirty *d)
{
	unsigned int i;

	for (i = 0; i < d->nr; i++)
		kvfree(d->range[i].bits);
	kfree(d);
}

/**
 * __nvmet_mdev_dirty_mark() - log a write of the device to guest memory
 * @ctrl: the controller
 * @iova: first byte written
 * @len: bytes written, after the write
 *
 * Any context.  Writes outside the ranges logged are not recorded: the
 * VMM logs all of the guest's memory.
 */
void __nvmet_mdev_dirty_mark(struct nvmet_mdev_ctrl *ctrl, u64 iova, u64 len)
{
	const struct nvmet_mdev_dirty_range *r;
	struct nvmet_mdev_dirty *d;
	u64 first, last;
	unsigned long bit, end;
	unsigned int i;

	if (!len)
		return;
	last = iova + len - 1;
	if (last < iova)
		last = U64_MAX;

	rcu_read_lock();
	d = rcu_dereference(ctrl->dirty);
	for (i = 0; d && i < d->nr; i++) {
		r = &d->range[i];
		if (last < r->start || iova > r->last)
			continue;
		first = max(iova, r->start) - r->start;
		bit = first >> d->shift;
		end = (min(last, r->last) - r->start) >> d->shift;
		for (; bit <= end; bit++)
			if (!test_bit(bit, r->bits))
				set_bit(bit, r->bits);
	}
	rcu_read_unlock();
}

static int nvmet_mdev_log_start(struct vfio_device *vdev,
				struct rb_root_cached *ranges, u32 nnodes,
				u64 *page_size)
{
	struct nvmet_mdev_ctrl *ctrl = vdev_to_ctrl(vdev);
	struct interval_tree_node *node;
	struct nvmet_mdev_dirty *d;
	unsigned int shift, i = 0;
	u64 bits;
	int ret = 0;

	/* At most NVMET_MDEV_DIRTY_RANGES, merged over the smallest gaps. */
	vfio_combine_iova_ranges(ranges, nnodes, NVMET_MDEV_DIRTY_RANGES);

	/* The page size asked for, at least 4 KiB, larger if need be. */
	shift = *page_size ? ilog2(*page_size) : 0;
	shift = max_t(unsigned int, shift, PAGE_SHIFT);
	for (; shift < 63; shift++) {
		bits = 0;
		for (node = interval_tree_iter_first(ranges, 0, ULONG_MAX);
		     node; node = interval_tree_iter_next(node, 0, ULONG_MAX))
			bits += ((node->last - node->start) >> shift) + 1;
		if (bits <= NVMET_MDEV_DIRTY_MAX_BITS)
			break;
	}

	mutex_lock(&ctrl->dirty_lock);
	if (rcu_access_pointer(ctrl->dirty)) {
		ret = -EBUSY;
		goto out;
	}

	d = kzalloc(struct_size(d, range, NVMET_MDEV_DIRTY_RANGES),
		    GFP_KERNEL_ACCOUNT);
	if (!d) {
		ret = -ENOMEM;
		goto out;
	}
	d->shift = shift;
	d->nr = 0;
	for (node = interval_tree_iter_first(ranges, 0, ULONG_MAX); node;
	     node = interval_tree_iter_next(node, 0, ULONG_MAX)) {
		struct nvmet_mdev_dirty_range *r;

		if (WARN_ON_ONCE(i >= NVMET_MDEV_DIRTY_RANGES)) {
			ret = -EINVAL;
			break;
		}
		d->nr = i + 1;		/* __counted_by: before the access */
		r = &d->range[i++];
		r->start = node->start;
		r->last = node->last;
		r->bits = kvcalloc(BITS_TO_LONGS(nvmet_mdev_dirty_bits(r, shift)),
				   sizeof(unsigned long), GFP_KERNEL_ACCOUNT);
		if (!r->bits) {
			ret = -ENOMEM;
			break;
		}
	}
	if (ret) {
		nvmet_mdev_dirty_free(d);
		goto out;
	}

	*page_size = 1ULL << shift;
	rcu_assign_pointer(ctrl->dirty, d);
out:
	mutex_unlock(&ctrl->dirty_lock);
	return ret;
}

/**
 * nvmet_mdev_log_stop() - stop logging and free the log
 * @vdev: the device
 *
 * Also called at close.  Return: 0.
 */
int nvmet_mdev_log_stop(struct vfio_device *vdev)
{
	struct nvmet_mdev_ctrl *ctrl = vdev_to_ctrl(vdev);
	struct nvmet_mdev_dirty *d;

	mutex_lock(&ctrl->dirty_lock);
	d = rcu_replace_pointer(ctrl->dirty, NULL,
				lockdep_is_held(&ctrl->dirty_lock));
	mutex_unlock(&ctrl->dirty_lock);
	if (d) {
		synchronize_rcu();
		nvmet_mdev_dirty_free(d);
	}
	return 0;
}

static int nvmet_mdev_log_read_and_clear(struct vfio_device *vdev,
					 unsigned long iova, unsigned long length,
					 struct iova_bitmap *dirty)
{
	struct nvmet_mdev_ctrl *ctrl = vdev_to_ctrl(vdev);
	const struct nvmet_mdev_dirty_range *r;
	struct nvmet_mdev_dirty *d;
	u64 last = iova + length - 1;
	unsigned long bit, end, n = 0;
	unsigned int i;
	int ret = 0;

	if (!length || last < iova)
		return -EINVAL;

	mutex_lock(&ctrl->dirty_lock);
	d = rcu_dereference_protected(ctrl->dirty,
				      lockdep_is_held(&ctrl->dirty_lock));
	if (!d) {
		ret = -EINVAL;
		goto out;
	}
	for (i = 0; i < d->nr; i++) {
		r = &d->range[i];
		if (last < r->start || iova > r->last)
			continue;
		bit = (max_t(u64, iova, r->start) - r->start) >> d->shift;
		end = ((min(last, r->last) - r->start) >> d->shift) + 1;
		for (bit = find_next_bit(r->bits, end, bit); bit < end;
		     bit = find_next_bit(r->bits, end, bit + 1)) {
			u64 page = r->start + ((u64)bit << d->shift);
			u64 size = 1ULL << d->shift;

			/*
			 * A page of the log larger than the report's and
			 * partly outside it stays marked for the next one.
			 */
			if (page >= iova && page + size - 1 <= last ?
			    test_and_clear_bit(bit, r->bits) :
			    test_bit(bit, r->bits)) {
				iova_bitmap_set(dirty, page, size);
				n += size >> PAGE_SHIFT;
			}
		}
	}
	nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_DIRTY_PAGES, n);
out:
	mutex_unlock(&ctrl->dirty_lock);
	return ret;
}

const struct vfio_log_ops nvmet_mdev_log_ops = {
	.log_start		= nvmet_mdev_log_start,
	.log_stop		= nvmet_mdev_log_stop,
	.log_read_and_clear	= nvmet_mdev_log_read_and_clear,
};
