/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the NVMe target transports that are PCIe controllers seen
 * by a host (nvmet-pci-epf, nvmet-mdev): walking a command's data pointer,
 * and the queue ring arithmetic that the host's doorbell values feed.
 */
#ifndef _NVMET_PCI_COMMON_H
#define _NVMET_PCI_COMMON_H

#include <linux/nvme.h>
#include <linux/types.h>

/**
 * struct nvmet_pci_dptr - how a PCIe transport reaches host memory
 * @read: copy @len bytes of host memory at PCI address @addr into @buf (a
 *	PRP list or an SGL segment, at most a memory page); 0 or -errno
 * @add: append the host memory [@addr, @addr + @len) to the command's
 *	data buffer, in transfer order; 0 or -errno
 * @priv: the transport's, for @read and @add
 * @mps_shift: log2 of the memory page size (CC.MPS + 12)
 */
struct nvmet_pci_dptr {
	int	(*read)(void *priv, u64 addr, void *buf, size_t len);
	int	(*add)(void *priv, u64 addr, u64 len);
	void	*priv;
	u8	mps_shift;
};

/**
 * nvmet_pci_mdts_bytes() - the largest transfer a controller's MDTS allows
 * @mdts: Maximum Data Transfer Size: a power of two, in units of the
 *	minimum memory page size; 0 for no limit
 * @mps_shift: log2 of the minimum memory page size (CAP.MPSMIN + 12)
 */
static inline u64 nvmet_pci_mdts_bytes(u8 mdts, u8 mps_shift)
{
	return mdts ? 1ULL << (mdts + mps_shift) : U64_MAX;
}

unsigned int nvmet_pci_prp_count(u64 prp1, size_t len, u8 mps_shift);
u16 nvmet_pci_map_prps(const struct nvmet_pci_dptr *d, u64 prp1, u64 prp2,
		       size_t len);
u16 nvmet_pci_collect_sgl(const struct nvmet_pci_dptr *d,
			  const struct nvme_sgl_desc *sgl1, size_t len,
			  struct nvme_sgl_desc *descs, unsigned int max_descs,
			  unsigned int align, unsigned int *nr_descs);

/*
 * Queue rings.  Indexes are entries of a queue of @size entries (2 to
 * 65536); doorbell values are what the host wrote, not yet trusted.
 */

/**
 * nvmet_pci_ring_next() - the entry after @idx in a ring of @size entries
 * @idx: an entry of the ring
 * @size: the ring's number of entries
 */
static inline u16 nvmet_pci_ring_next(u16 idx, u32 size)
{
	return idx + 1 == size ? 0 : idx + 1;
}

/**
 * nvmet_pci_ring_count() - the entries from @from up to, not including, @to
 * @from: an entry of the ring
 * @to: an entry of the ring
 * @size: the ring's number of entries
 */
static inline u32 nvmet_pci_ring_count(u16 from, u16 to, u32 size)
{
	return to >= from ? to - from : size - from + to;
}

/**
 * nvmet_pci_sq_tail_valid() - whether an SQ Tail doorbell value is valid
 * @val: the value the host wrote
 * @size: the SQ's number of entries
 *
 * The tail names the entry the host fills next, an entry of the queue.
 */
static inline bool nvmet_pci_sq_tail_valid(u32 val, u32 size)
{
	return val < size;
}

/**
 * nvmet_pci_cq_head_valid() - whether a CQ Head doorbell value is valid
 * @val: the value the host wrote
 * @head: the CQ's head, as the host last wrote it validly
 * @tail: the entry the controller posts next
 * @size: the CQ's number of entries
 *
 * The host may free only entries the controller posted: from @head, @val
 * goes forward by at most the entries posted, up to @tail.
 */
static inline bool nvmet_pci_cq_head_valid(u32 val, u16 head, u16 tail,
					   u32 size)
{
	return val < size && nvmet_pci_ring_count(head, val, size) <=
			     nvmet_pci_ring_count(head, tail, size);
}

/**
 * nvmet_pci_cq_full() - whether a CQ has no free entry
 * @head: the CQ's head
 * @tail: the entry the controller posts next
 * @size: the CQ's number of entries
 *
 * One entry stays free: a full CQ's next entry after @tail is @head.
 */
static inline bool nvmet_pci_cq_full(u16 head, u16 tail, u32 size)
{
	return nvmet_pci_ring_next(tail, size) == head;
}

/**
 * nvmet_pci_ring_advance() - move an index past the entry it names
 * @idx: the index, of a ring of @size entries
 * @size: the ring's number of entries
 *
 * Return: true if @idx wrapped to entry 0, where a CQ's Phase Tag inverts.
 */
static inline bool nvmet_pci_ring_advance(u16 *idx, u32 size)
{
	*idx = nvmet_pci_ring_next(*idx, size);
	return !*idx;
}

/**
 * nvmet_pci_sq_eventidx() - an SQ EventIdx that makes the host ring later
 * @head: the SQ's head, with no entry queued beyond it
 * @n: the entries the host may queue before it rings, 1 to @size - 1
 * @size: the SQ's number of entries
 *
 * With shadow doorbells (Doorbell Buffer Config), the host rings the SQ
 * Tail doorbell only when its write moves the tail past the EventIdx (an
 * entry in [old tail, new tail), see nvme_dbbuf_need_event()).  This
 * EventIdx makes it ring on the write that queues the n-th entry after
 * @head, or any write that queues it with others; with @n = 1, on the
 * next write.
 *
 * Return: the EventIdx.
 */
static inline u16 nvmet_pci_sq_eventidx(u16 head, u32 n, u32 size)
{
	return (head + n - 1) % size;
}

#endif /* _NVMET_PCI_COMMON_H */
