// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: guest memory.
 *
 * Guest pages are pinned with vfio_pin_pages() on first use and stay
 * pinned until the IOVA range is unmapped (dma_unmap), or the controller
 * is disabled or closed, so the I/O fast path only looks pages up.  The
 * cache is an xarray indexed by 2 MiB chunk of IOVA.  Each entry is a page
 * sized array of struct page pointers: a chunk is pinned with a single
 * vfio_pin_pages() call when the whole chunk is mapped (entry tagged 1),
 * else page by page.  Unpinning uses the same granularity as pinning, as
 * the iommufd backend requires.
 *
 * Only queue threads pin (see datapath.h): lookups and insertions there
 * need no lock, and entries are only removed while every queue thread is
 * paused or stopped.  A chunk enters the cache only once a page of it is
 * pinned, so the cache is bounded by the guest memory actually used.
 *
 * Queue rings and shadow doorbell buffers, which stay mapped into kernel
 * virtual space, hold pins of their own (nvmet_mdev_gmap()): dropping the
 * cache's pins of a chunk never leaves a kernel mapping without a pin.
 */

#include <linux/highmem.h>
#include <linux/iommu.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "datapath.h"

#define NVMET_MDEV_CHUNK_FULL	1

static_assert(NVMET_MDEV_CHUNK_PAGES <= VFIO_PIN_PAGES_MAX_ENTRIES);

/*
 * vfio_pin_pages(), and the operator's clue when it fails for want of
 * locked memory: vfio charges the pins to the VMM's RLIMIT_MEMLOCK (unless
 * it has CAP_IPC_LOCK), and an unprivileged VMM started with a limit below
 * the guest memory the device touches gets -ENOMEM.  The command then
 * fails (Data Transfer Error; a queue that cannot be mapped, CSTS.CFS).
 * Said once per open of the device.
 */
static int nvmet_mdev_vfio_pin(struct nvmet_mdev_ctrl *ctrl, u64 iova,
			       int npage, struct page **pages)
{
	int ret;

	ret = vfio_pin_pages(&ctrl->vdev, iova, npage,
			     IOMMU_READ | IOMMU_WRITE, pages);
	if (ret == -ENOMEM && !test_and_set_bit(0, &ctrl->dp->pin_warned))
		dev_warn(ctrl->vdev.dev,
			 "cannot pin guest memory: the VMM's locked memory limit (RLIMIT_MEMLOCK) is too low, or the host is out of memory; give the VMM a limit of its guest's memory size\n");
	return ret;
}

static inline u64 nvmet_mdev_chunk_iova(unsigned long idx)
{
	return (u64)idx << NVMET_MDEV_CHUNK_SHIFT;
}

/*
 * Pin a whole chunk with one call.  Returns its page array, or NULL if part
 * of the chunk is not mapped (or not writable): then pages are pinned one
 * by one.
 */
static struct page **nvmet_mdev_chunk_pin(struct nvmet_mdev_ctrl *ctrl,
					  unsigned long idx)
{
	struct page **pages;
	int ret;

	pages = kmalloc(PAGE_SIZE, GFP_KERNEL_ACCOUNT);
	if (!pages)
		return NULL;
	/* Near the locked memory limit, pages may still be pinned one by one. */
	ret = vfio_pin_pages(&ctrl->vdev, nvmet_mdev_chunk_iova(idx),
			     NVMET_MDEV_CHUNK_PAGES, IOMMU_READ | IOMMU_WRITE,
			     pages);
	if (ret == NVMET_MDEV_CHUNK_PAGES)
		return pages;
	if (ret > 0)	/* partial success should not happen; undo it */
		vfio_unpin_pages(&ctrl->vdev, nvmet_mdev_chunk_iova(idx), ret);
	kfree(pages);
	return NULL;
}

/*
 * Store a new chunk entry, or return the one another queue thread stored
 * first (then @entry is freed, its pins dropped by the caller).
 */
static void *nvmet_mdev_chunk_store(struct nvmet_mdev_ctrl *ctrl,
				    unsigned long idx, void *entry)
{
	void *old;

	old = xa_cmpxchg(&ctrl->dp->pins, idx, NULL, entry, GFP_KERNEL_ACCOUNT);
	if (!old)
		return entry;
	kfree(xa_untag_pointer(entry));
	return old;
}

/**
 * nvmet_mdev_pin_page() - get the pinned page holding a guest address
 * @ctrl: the controller
 * @iova: guest I/O virtual address
 * @page: the page, valid until the range is unmapped or the controller
 *	disabled
 *
 * Queue thread context only (may sleep, takes vfio locks).  A chunk enters
 * the cache only once something in it is pinned: addresses the guest has
 * not mapped cost nothing but the failed attempt, whatever their number.
 *
 * Return: 0 or a negative errno if @iova is not mapped for DMA.
 */
int nvmet_mdev_pin_page(struct nvmet_mdev_ctrl *ctrl, u64 iova,
			struct page **page)
{
	unsigned long idx = iova >> NVMET_MDEV_CHUNK_SHIFT;
	unsigned int i = (iova >> PAGE_SHIFT) & (NVMET_MDEV_CHUNK_PAGES - 1);
	u64 chunk = nvmet_mdev_chunk_iova(idx);
	struct page **pages, **new;
	bool missed = false;
	struct page *p;
	void *entry;
	int ret;

	if (unlikely(idx != iova >> NVMET_MDEV_CHUNK_SHIFT))
		return -EINVAL;	/* beyond unsigned long */

	entry = xa_load(&ctrl->dp->pins, idx);
	if (!entry) {
		/* A miss costs vfio calls: counted once, here or below. */
		nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_PIN_MISSES, 1);
		missed = true;
		new = nvmet_mdev_chunk_pin(ctrl, idx);
		if (new) {
			entry = xa_tag_pointer(new, NVMET_MDEV_CHUNK_FULL);
			entry = nvmet_mdev_chunk_store(ctrl, idx, entry);
			if (xa_is_err(entry) || xa_untag_pointer(entry) != new)
				vfio_unpin_pages(&ctrl->vdev, chunk,
						 NVMET_MDEV_CHUNK_PAGES);
			if (xa_is_err(entry))
				return xa_err(entry);
		}
	}
	if (entry) {
		pages = xa_untag_pointer(entry);
		p = READ_ONCE(pages[i]);
		if (likely(p)) {
			if (!missed)
				nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_PIN_HITS,
						    1);
			*page = p;
			return 0;
		}
		/* A full chunk has every page. */
		if (WARN_ON_ONCE(xa_pointer_tag(entry) ==
				 NVMET_MDEV_CHUNK_FULL))
			return -EFAULT;
	}

	if (!missed)
		nvmet_mdev_stat_add(ctrl, NVMET_MDEV_STAT_PIN_MISSES, 1);
	ret = nvmet_mdev_vfio_pin(ctrl, iova & PAGE_MASK, 1, &p);
	if (ret != 1)
		return ret < 0 ? ret : -EFAULT;

	if (!entry) {
		new = kzalloc(PAGE_SIZE, GFP_KERNEL_ACCOUNT);
		if (!new) {
			ret = -ENOMEM;
			goto unpin;
		}
		new[i] = p;
		entry = nvmet_mdev_chunk_store(ctrl, idx, new);
		if (xa_is_err(entry)) {
			ret = xa_err(entry);
			goto unpin;
		}
		if (entry == new) {
			*page = p;
			return 0;
		}
		/* Another thread stored the chunk first. */
		if (xa_pointer_tag(entry) == NVMET_MDEV_CHUNK_FULL) {
			ret = 0;
			goto unpin;
		}
	}

	pages = xa_untag_pointer(entry);
	if (cmpxchg(&pages[i], NULL, p)) {
		ret = 0;	/* another thread pinned it meanwhile */
		goto unpin;
	}
	*page = p;
	return 0;

unpin:
	vfio_unpin_pages(&ctrl->vdev, iova & PAGE_MASK, 1);
	if (ret)
		return ret;
	*page = READ_ONCE(((struct page **)xa_untag_pointer(entry))[i]);
	return 0;
}

static void nvmet_mdev_chunk_unpin(struct nvmet_mdev_ctrl *ctrl,
				   unsigned long idx, void *entry)
{
	struct page **pages = xa_untag_pointer(entry);
	u64 iova = nvmet_mdev_chunk_iova(idx);
	unsigned int i;

	if (xa_pointer_tag(entry) == NVMET_MDEV_CHUNK_FULL) {
		vfio_unpin_pages(&ctrl->vdev, iova, NVMET_MDEV_CHUNK_PAGES);
	} else {
		for (i = 0; i < NVMET_MDEV_CHUNK_PAGES; i++)
			if (pages[i])
				vfio_unpin_pages(&ctrl->vdev,
						 iova + ((u64)i << PAGE_SHIFT), 1);
	}
	kfree(pages);
}

/**
 * nvmet_mdev_unpin_range() - drop the pin cache's pins of a guest range
 * @ctrl: the controller, its queue threads paused
 * @first: the first IOVA of the range
 * @last: its last IOVA
 *
 * The cache is dropped by whole chunks, which may be more than the range:
 * it is refilled on demand.  The ring and shadow doorbell mappings hold
 * pins of their own (nvmet_mdev_gmap()), which this leaves alone.
 */
void nvmet_mdev_unpin_range(struct nvmet_mdev_ctrl *ctrl, u64 first, u64 last)
{
	unsigned long idx;
	void *entry;

	xa_for_each_range(&ctrl->dp->pins, idx, entry,
			  first >> NVMET_MDEV_CHUNK_SHIFT,
			  min_t(u64, last >> NVMET_MDEV_CHUNK_SHIFT, ULONG_MAX)) {
		xa_erase(&ctrl->dp->pins, idx);
		nvmet_mdev_chunk_unpin(ctrl, idx, entry);
		cond_resched();
	}
}

/**
 * nvmet_mdev_unpin_all() - drop every pin
 * @ctrl: the controller, with no queue thread running
 */
void nvmet_mdev_unpin_all(struct nvmet_mdev_ctrl *ctrl)
{
	nvmet_mdev_unpin_range(ctrl, 0, U64_MAX);
}

/**
 * nvmet_mdev_gmap() - map a guest buffer contiguous in IOVA space
 * @ctrl: the controller
 * @iova: start of the buffer
 * @len: its length, non-zero, at most VFIO_PIN_PAGES_MAX_ENTRIES pages
 * @map: filled in
 *
 * Pins the pages (queue thread context) and maps them contiguously into
 * kernel virtual space, for queue rings and shadow doorbell buffers.  The
 * pins are the mapping's own, not the pin cache's: they are dropped with
 * the mapping, when the guest unmaps any part of the buffer, and by
 * nothing else (the cache drops whole chunks when the guest unmaps a
 * neighbour).
 *
 * Return: 0 or a negative errno.
 */
int nvmet_mdev_gmap(struct nvmet_mdev_ctrl *ctrl, u64 iova, size_t len,
		    struct nvmet_mdev_gmap *map)
{
	u64 first = iova & PAGE_MASK, last;
	struct page **pages;
	unsigned int n;
	void *vbase;
	int ret;

	if (!len || check_add_overflow(iova, (u64)len - 1, &last))
		return -EINVAL;
	n = ((last - first) >> PAGE_SHIFT) + 1;
	if (n > VFIO_PIN_PAGES_MAX_ENTRIES)
		return -EINVAL;

	pages = kmalloc_array(n, sizeof(*pages), GFP_KERNEL);
	if (!pages)
		return -ENOMEM;

	ret = nvmet_mdev_vfio_pin(ctrl, first, n, pages);
	if (ret != n) {
		if (ret > 0)
			vfio_unpin_pages(&ctrl->vdev, first, ret);
		ret = ret < 0 ? ret : -EFAULT;
		goto out;
	}

	vbase = vmap(pages, n, VM_MAP, PAGE_KERNEL);
	if (!vbase) {
		vfio_unpin_pages(&ctrl->vdev, first, n);
		ret = -ENOMEM;
		goto out;
	}

	map->ctrl = ctrl;
	map->vbase = vbase;
	map->vaddr = vbase + offset_in_page(iova);
	map->iova = iova;
	map->last = last;
	ret = 0;
out:
	kfree(pages);
	return ret;
}

/**
 * nvmet_mdev_gunmap() - undo nvmet_mdev_gmap(), dropping its pins
 * @map: the mapping, may be unused (zeroed)
 *
 * Process context (vfio locks); the caller ensures nobody uses the
 * mapping any more (see nvmet_mdev_dbbuf_sync() for the readers that do
 * not run in queue threads).
 */
void nvmet_mdev_gunmap(struct nvmet_mdev_gmap *map)
{
	u64 first = map->iova & PAGE_MASK;

	if (map->vbase) {
		vunmap(map->vbase);
		vfio_unpin_pages(&map->ctrl->vdev, first,
				 ((map->last - first) >> PAGE_SHIFT) + 1);
	}
	memset(map, 0, sizeof(*map));
}

/**
 * nvmet_mdev_read_guest() - copy a small structure out of guest memory
 * @ctrl: the controller
 * @iova: guest address
 * @buf: destination
 * @len: length, may cross pages
 *
 * Queue thread context.  Used for PRP lists and SGL segments.
 *
 * Return: 0 or a negative errno if the range is not mapped.
 */
int nvmet_mdev_read_guest(struct nvmet_mdev_ctrl *ctrl, u64 iova, void *buf,
			  size_t len)
{
	struct page *page;
	size_t n;
	int ret;

	while (len) {
		ret = nvmet_mdev_pin_page(ctrl, iova, &page);
		if (ret)
			return ret;
		n = min_t(size_t, len, PAGE_SIZE - offset_in_page(iova));
		memcpy_from_page(buf, page, offset_in_page(iova), n);
		buf += n;
		iova += n;
		len -= n;
	}
	return 0;
}
