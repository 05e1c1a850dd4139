// SPDX-License-Identifier: GPL-2.0
/*
 * Helpers for the NVMe target transports that are PCIe controllers seen by
 * a host (nvmet-pci-epf, nvmet-mdev): walking a command's data pointer.
 *
 * The host writes the PRP lists and SGL segments, and the host may be
 * hostile (a virtual machine): every walk here is bounded by the transfer
 * length, list and segment memory is read once, and each violation of the
 * rules of the NVMe Base Specification's PCIe data pointers gets the status
 * the specification gives for it.
 */

#include <linux/bitfield.h>
#include <linux/export.h>
#include <linux/minmax.h>
#include "nvmet.h"
#include "pci-common.h"

/* PRP entries and SGL descriptors read from host memory at a time. */
#define NVMET_PCI_PRP_BATCH	64
#define NVMET_PCI_SGL_BATCH	16

/* An SGL descriptor's type (high nibble) and subtype (low nibble). */
#define NVMET_PCI_SGL_TYPE	GENMASK(7, 4)
#define NVMET_PCI_SGL_SUBTYPE	GENMASK(3, 0)

/**
 * nvmet_pci_prp_count() - the number of PRP entries a transfer takes
 * @prp1: the command's PRP Entry 1
 * @len: the transfer length, non-zero
 * @mps_shift: log2 of the memory page size
 *
 * Return: the data PRP entries of the transfer, PRP1's included: an upper
 * bound on the calls nvmet_pci_map_prps() makes to &nvmet_pci_dptr.add.
 */
unsigned int nvmet_pci_prp_count(u64 prp1, size_t len, u8 mps_shift)
{
	u64 mps = BIT_ULL(mps_shift);
	u64 rest = len - min_t(u64, len, mps - (prp1 & (mps - 1)));

	return 1 + ((rest + mps - 1) >> mps_shift);
}
EXPORT_SYMBOL_GPL(nvmet_pci_prp_count);

/* Contiguous PRP entries go to &nvmet_pci_dptr.add as one range. */
struct nvmet_pci_prp_run {
	u64	addr;
	u64	len;
};

static int nvmet_pci_prp_add(const struct nvmet_pci_dptr *d,
			     struct nvmet_pci_prp_run *run, u64 addr, u64 len)
{
	int ret;

	if (run->len && run->addr + run->len == addr) {
		run->len += len;
		return 0;
	}
	if (run->len) {
		ret = d->add(d->priv, run->addr, run->len);
		if (ret)
			return ret;
	}
	run->addr = addr;
	run->len = len;
	return 0;
}

/**
 * nvmet_pci_map_prps() - walk the PRPs of a command
 * @d: the transport's host memory access
 * @prp1: PRP Entry 1 of the command
 * @prp2: PRP Entry 2 of the command
 * @len: the transfer length, non-zero
 *
 * Checks the PRPs as the NVMe Base Specification has them for a memory page
 * size of 1 << @d->mps_shift: PRP1 has a dword aligned offset, every other
 * data entry and every chained list pointer is page aligned, and a PRP2 that
 * points to a list is quadword aligned.  The list is only read as far as the
 * transfer needs.  Each run of entries contiguous in host memory goes to
 * @d->add once.
 *
 * Return: NVME_SC_SUCCESS; NVME_SC_PRP_INVALID_OFFSET with DNR for an
 * entry or list pointer that breaks the alignment rules; Data Transfer Error
 * if @d->read or @d->add fails.  On failure the ranges already added stay
 * added.
 */
u16 nvmet_pci_map_prps(const struct nvmet_pci_dptr *d, u64 prp1, u64 prp2,
		       size_t len)
{
	u64 mps = BIT_ULL(d->mps_shift), page_mask = mps - 1;
	struct nvmet_pci_prp_run run = { };
	__le64 batch[NVMET_PCI_PRP_BATCH];
	unsigned int left, avail, n, i;
	u64 first, prp, chunk;
	int ret;

	if (!IS_ALIGNED(prp1, 4))
		return NVME_SC_PRP_INVALID_OFFSET | NVME_STATUS_DNR;

	first = min_t(u64, len, mps - (prp1 & page_mask));
	ret = nvmet_pci_prp_add(d, &run, prp1, first);
	if (ret)
		return NVME_SC_DATA_XFER_ERROR;
	len -= first;
	left = (len + mps - 1) >> d->mps_shift;

	if (left == 1) {
		/* PRP2 is the second data page. */
		if (prp2 & page_mask)
			return NVME_SC_PRP_INVALID_OFFSET | NVME_STATUS_DNR;
		ret = nvmet_pci_prp_add(d, &run, prp2, len);
		if (ret)
			return NVME_SC_DATA_XFER_ERROR;
		left = 0;
	} else if (left && !IS_ALIGNED(prp2, sizeof(__le64))) {
		/* PRP2 points to a PRP list. */
		return NVME_SC_PRP_INVALID_OFFSET | NVME_STATUS_DNR;
	}

	while (left) {
		avail = (mps - (prp2 & page_mask)) / sizeof(__le64);
		/* The last entry of a full list page chains to the next one. */
		n = left > avail ? avail - 1 : left;
		for (i = 0; i < n; i++) {
			if (!(i % NVMET_PCI_PRP_BATCH)) {
				chunk = min(n - i, NVMET_PCI_PRP_BATCH);
				if (d->read(d->priv, prp2 + i * sizeof(__le64),
					    batch, chunk * sizeof(__le64)))
					return NVME_SC_DATA_XFER_ERROR;
			}
			prp = le64_to_cpu(batch[i % NVMET_PCI_PRP_BATCH]);
			if (prp & page_mask)
				return NVME_SC_PRP_INVALID_OFFSET |
					NVME_STATUS_DNR;
			chunk = min_t(u64, len, mps);
			ret = nvmet_pci_prp_add(d, &run, prp, chunk);
			if (ret)
				return NVME_SC_DATA_XFER_ERROR;
			len -= chunk;
		}
		left -= n;
		if (!left)
			break;
		/* Follow the chain pointer to the next, page aligned, list. */
		if (d->read(d->priv, prp2 + (avail - 1) * sizeof(__le64),
			    batch, sizeof(__le64)))
			return NVME_SC_DATA_XFER_ERROR;
		prp2 = le64_to_cpu(batch[0]);
		if (prp2 & page_mask)
			return NVME_SC_PRP_INVALID_OFFSET | NVME_STATUS_DNR;
	}

	if (d->add(d->priv, run.addr, run.len))
		return NVME_SC_DATA_XFER_ERROR;
	return NVME_SC_SUCCESS;
}
EXPORT_SYMBOL_GPL(nvmet_pci_map_prps);

static bool nvmet_pci_sgl_is_address(const struct nvme_sgl_desc *desc)
{
	return FIELD_GET(NVMET_PCI_SGL_SUBTYPE, desc->type) ==
		NVME_SGL_FMT_ADDRESS;
}

/**
 * nvmet_pci_collect_sgl() - copy and check the SGL of a command
 * @d: the transport's host memory access (@d->read only)
 * @sgl1: SGL Entry 1 of the command
 * @len: the transfer length, non-zero
 * @descs: room for @max_descs Data Block descriptors
 * @max_descs: the most Data Block descriptors, and the most segments, the
 *	transport takes in one command
 * @align: the alignment the transport needs of each data block's address
 *	and length (a power of two; 4 if Identify Controller's SGLS says
 *	dword alignment and granularity, 1 for none)
 * @nr_descs: where the number of Data Block descriptors copied goes
 *
 * Takes Data Block, Segment and Last Segment descriptors of the Address
 * subtype: SGL1 is a Data Block or the first segment's descriptor; a
 * (Last) Segment descriptor only as a segment's last entry, a Last
 * Segment's segment holds only Data Blocks.  Each segment is read once, and
 * a list that chains to itself ends at @max_descs segments.  The data
 * blocks must add up to @len.
 *
 * Return: NVME_SC_SUCCESS with the data blocks in @descs; else, with DNR,
 * SGL Descriptor Type Invalid, SGL Last Segment Descriptor Invalid (a
 * segment chained where it may not be, or a malformed segment descriptor),
 * SGL Descriptor Count Invalid (over @max_descs), Data SGL Length Invalid
 * (the blocks do not add up to @len) or SGL Data Block Granularity Invalid
 * (@align); Data Transfer Error (no DNR) if @d->read fails.
 */
u16 nvmet_pci_collect_sgl(const struct nvmet_pci_dptr *d,
			  const struct nvme_sgl_desc *sgl1, size_t len,
			  struct nvme_sgl_desc *descs, unsigned int max_descs,
			  unsigned int align, unsigned int *nr_descs)
{
	struct nvme_sgl_desc batch[NVMET_PCI_SGL_BATCH];
	struct nvme_sgl_desc seg = *sgl1;
	unsigned int nd = 0, nsegs = 0, nseg, i, k = 0;
	u64 total = 0, gran = 0, addr;
	bool last = false;
	u32 dlen;
	u8 type;

	if (!nvmet_pci_sgl_is_address(&seg))
		return NVME_SC_SGL_INVALID_TYPE | NVME_STATUS_DNR;
	type = FIELD_GET(NVMET_PCI_SGL_TYPE, seg.type);
	if (type == NVME_SGL_FMT_DATA_DESC) {
		/* SGL1 is the only data block. */
		descs[nd++] = seg;
		goto check;
	}

	for (;;) {
		if (type != NVME_SGL_FMT_SEG_DESC &&
		    type != NVME_SGL_FMT_LAST_SEG_DESC)
			return NVME_SC_SGL_INVALID_TYPE | NVME_STATUS_DNR;
		if (last)	/* a Last Segment holds data blocks only */
			return NVME_SC_SGL_INVALID_LAST | NVME_STATUS_DNR;
		last = type == NVME_SGL_FMT_LAST_SEG_DESC;
		if (++nsegs > max_descs)	/* a list that loops */
			return NVME_SC_SGL_INVALID_COUNT | NVME_STATUS_DNR;

		dlen = le32_to_cpu(seg.length);
		addr = le64_to_cpu(seg.addr);
		if (!dlen || dlen % sizeof(seg) || !IS_ALIGNED(addr, 4))
			return NVME_SC_SGL_INVALID_LAST | NVME_STATUS_DNR;
		nseg = dlen / sizeof(seg);

		for (i = 0; i < nseg; i++) {
			k = i % NVMET_PCI_SGL_BATCH;
			if (!k && d->read(d->priv, addr + i * sizeof(seg), batch,
					  sizeof(seg) *
					  min(nseg - i, NVMET_PCI_SGL_BATCH)))
				return NVME_SC_DATA_XFER_ERROR;
			type = FIELD_GET(NVMET_PCI_SGL_TYPE, batch[k].type);
			if (type == NVME_SGL_FMT_DATA_DESC) {
				if (!nvmet_pci_sgl_is_address(&batch[k]))
					return NVME_SC_SGL_INVALID_TYPE |
						NVME_STATUS_DNR;
				if (nd >= max_descs)
					return NVME_SC_SGL_INVALID_COUNT |
						NVME_STATUS_DNR;
				descs[nd++] = batch[k];
				continue;
			}
			if (i != nseg - 1)
				return NVME_SC_SGL_INVALID_LAST |
					NVME_STATUS_DNR;
			break;
		}
		if (i == nseg) {
			if (!last)	/* a Segment chains to another one */
				return NVME_SC_SGL_INVALID_LAST |
					NVME_STATUS_DNR;
			break;
		}
		/* The segment's last entry is the next segment. */
		seg = batch[k];
		if (!nvmet_pci_sgl_is_address(&seg))
			return NVME_SC_SGL_INVALID_TYPE | NVME_STATUS_DNR;
	}

check:
	/* Lengths first: blocks that do not add up are Data SGL Length Invalid. */
	for (i = 0; i < nd; i++) {
		dlen = le32_to_cpu(descs[i].length);
		gran |= le64_to_cpu(descs[i].addr) | dlen;
		total += dlen;
		if (total > len)
			return NVME_SC_SGL_INVALID_DATA | NVME_STATUS_DNR;
	}
	if (total != len)
		return NVME_SC_SGL_INVALID_DATA | NVME_STATUS_DNR;
	if (!IS_ALIGNED(gran, align))
		return NVME_SC_SGL_INVALID_GRANULARITY | NVME_STATUS_DNR;

	*nr_descs = nd;
	return NVME_SC_SUCCESS;
}
EXPORT_SYMBOL_GPL(nvmet_pci_collect_sgl);
