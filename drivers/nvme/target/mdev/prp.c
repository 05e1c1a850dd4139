// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: PRPs and SGLs.
 *
 * The data pointer of a command is translated into a scatterlist over the
 * pinned guest pages themselves (zero copy) which becomes req->sg.  PRP
 * and SGL lists are copied out of guest memory before they are parsed.
 * All of it runs in the SQ's thread.
 *
 * Rules enforced (NVMe base specification, PCIe transport):
 *  - memory page size is 4 KiB (CAP.MPSMIN = CAP.MPSMAX = 0);
 *  - PRP1 has a dword aligned offset, every other data PRP entry and every
 *    chained PRP list pointer is page aligned, the PRP2 list pointer is
 *    quadword aligned; the list is only as long as the transfer needs, so
 *    walking it always terminates;
 *  - SGL: Data Block, Segment and Last Segment descriptors with the
 *    Address subtype; a (Last) Segment descriptor only as the last entry
 *    of a segment, a Last Segment's segment holds only Data Blocks; at
 *    most NVMET_MDEV_MAX_SGL_DESCS data blocks; the described length must
 *    equal the transfer length.  Data blocks must be dword aligned in
 *    address and length: the buffers go to the block layer as they are.
 */

#include "datapath.h"

/* Descriptors read from a segment, and PRP entries from a list, at a time. */
#define SGL_BATCH		16
#define PRP_BATCH		32

/* An SGL descriptor's type (high nibble) and subtype (low nibble). */
#define SGL_DESC_TYPE		GENMASK(7, 4)
#define SGL_DESC_SUBTYPE	GENMASK(3, 0)

struct nvmet_mdev_sgb {
	struct nvmet_mdev_iod	*iod;
	struct scatterlist	*sg;		/* last entry used */
	int			nents;
};

/* Append guest [iova, iova + len) within one host page to the sg list. */
static int nvmet_mdev_sg_add(struct nvmet_mdev_sgb *b, u64 iova, u32 len)
{
	struct nvmet_mdev_ctrl *ctrl = b->iod->sq->ctrl;
	unsigned int off = offset_in_page(iova);
	struct page *page;
	int ret;

	ret = nvmet_mdev_pin_page(ctrl, iova, &page);
	if (ret)
		return ret;

	/* Merge with the previous entry if contiguous in the same page. */
	if (b->sg && sg_page(b->sg) == page &&
	    b->sg->offset + b->sg->length == off) {
		b->sg->length += len;
		return 0;
	}

	if (WARN_ON_ONCE(b->nents >= b->iod->sgt.orig_nents))
		return -EINVAL;
	b->sg = b->sg ? sg_next(b->sg) : b->iod->sgt.sgl;
	sg_set_page(b->sg, page, len, off);
	b->nents++;
	return 0;
}

/* Add a guest buffer of any length, split at host page boundaries. */
static int nvmet_mdev_sg_add_range(struct nvmet_mdev_sgb *b, u64 iova, u64 len)
{
	u32 n;
	int ret;

	while (len) {
		n = min_t(u64, len, PAGE_SIZE - offset_in_page(iova));
		ret = nvmet_mdev_sg_add(b, iova, n);
		if (ret)
			return ret;
		iova += n;
		len -= n;
	}
	return 0;
}

static int nvmet_mdev_sg_alloc(struct nvmet_mdev_iod *iod, unsigned int nents)
{
	int ret;

	iod->sgt.sgl = iod->sgl;	/* the first chunk, by convention */
	ret = sg_alloc_table_chained(&iod->sgt, nents, iod->sgl,
				     NVMET_MDEV_INLINE_SG);
	if (ret)
		return ret;
	iod->has_data = true;
	atomic_inc(&iod->sq->inflight);
	return 0;
}

static u16 nvmet_mdev_map_prps(struct nvmet_mdev_iod *iod, size_t len)
{
	struct nvmet_mdev_ctrl *ctrl = iod->sq->ctrl;
	u64 prp1 = le64_to_cpu(iod->cmd.common.dptr.prp1);
	u64 prp2 = le64_to_cpu(iod->cmd.common.dptr.prp2);
	struct nvmet_mdev_sgb b = { .iod = iod };
	__le64 batch[PRP_BATCH];
	unsigned int npages, left, avail, n, i;
	u32 first;
	u64 prp;

	if (!IS_ALIGNED(prp1, 4))
		return NVME_SC_PRP_INVALID_OFFSET | NVME_STATUS_DNR;

	first = min_t(size_t, len, NVMET_MDEV_MPS - prp1 % NVMET_MDEV_MPS);
	npages = 1 + DIV_ROUND_UP(len - first, NVMET_MDEV_MPS);

	/* Host pages are at least 4 KiB: one sg entry per PRP at most. */
	if (nvmet_mdev_sg_alloc(iod, npages))
		return NVME_SC_INTERNAL;

	if (nvmet_mdev_sg_add_range(&b, prp1, first))
		goto xfer_error;
	len -= first;
	left = npages - 1;
	if (!left)
		goto done;

	if (left == 1) {
		/* PRP2 is the second data page. */
		if (!IS_ALIGNED(prp2, NVMET_MDEV_MPS))
			return NVME_SC_PRP_INVALID_OFFSET | NVME_STATUS_DNR;
		if (nvmet_mdev_sg_add_range(&b, prp2, len))
			goto xfer_error;
		goto done;
	}

	/* PRP2 points to a PRP list. */
	if (!IS_ALIGNED(prp2, 8))
		return NVME_SC_PRP_INVALID_OFFSET | NVME_STATUS_DNR;
	while (left) {
		avail = (NVMET_MDEV_MPS - prp2 % NVMET_MDEV_MPS) /
			sizeof(__le64);
		/* The last entry of a full list page chains to the next one. */
		n = left > avail ? avail - 1 : left;
		for (i = 0; i < n; i++) {
			if (!(i % ARRAY_SIZE(batch)) &&
			    nvmet_mdev_read_guest(ctrl, prp2 + i * sizeof(__le64),
						  batch, min_t(size_t,
						  n - i, ARRAY_SIZE(batch)) *
						  sizeof(__le64)))
				goto xfer_error;
			prp = le64_to_cpu(batch[i % ARRAY_SIZE(batch)]);
			if (!IS_ALIGNED(prp, NVMET_MDEV_MPS))
				return NVME_SC_PRP_INVALID_OFFSET |
					NVME_STATUS_DNR;
			if (nvmet_mdev_sg_add_range(&b, prp,
						    min_t(size_t, len,
							  NVMET_MDEV_MPS)))
				goto xfer_error;
			len -= min_t(size_t, len, NVMET_MDEV_MPS);
		}
		left -= n;
		if (!left)
			break;
		/* Follow the chain pointer: a page aligned list page. */
		if (nvmet_mdev_read_guest(ctrl,
					  prp2 + (avail - 1) * sizeof(__le64),
					  batch, sizeof(__le64)))
			goto xfer_error;
		prp2 = le64_to_cpu(batch[0]);
		if (!IS_ALIGNED(prp2, NVMET_MDEV_MPS))
			return NVME_SC_PRP_INVALID_OFFSET | NVME_STATUS_DNR;
	}

done:
	sg_mark_end(b.sg);
	iod->req.sg = iod->sgt.sgl;
	iod->req.sg_cnt = b.nents;
	return NVME_SC_SUCCESS;

xfer_error:
	return NVME_SC_DATA_XFER_ERROR;
}

/*
 * Collect the data block descriptors of the command's SGL into
 * sq->sgl_descs (a private copy) and count the sg entries they need.
 */
static u16 nvmet_mdev_sgl_collect(struct nvmet_mdev_iod *iod, size_t len,
				  unsigned int *nr_descs, unsigned int *nents)
{
	struct nvmet_mdev_ctrl *ctrl = iod->sq->ctrl;
	struct nvme_sgl_desc *descs = iod->sq->sgl_descs;
	struct nvme_sgl_desc batch[SGL_BATCH];
	struct nvme_sgl_desc seg = iod->cmd.common.dptr.sgl;
	unsigned int nd = 0, ne = 0, nsegs = 0, nseg, i, k;
	bool last = false, in_segment = false;
	u64 total = 0, gran = 0, addr;
	u32 dlen;
	u8 type;

	for (;;) {
		type = FIELD_GET(SGL_DESC_TYPE, seg.type);
		if (FIELD_GET(SGL_DESC_SUBTYPE, seg.type) != NVME_SGL_FMT_ADDRESS)
			return NVME_SC_SGL_INVALID_TYPE | NVME_STATUS_DNR;

		if (type == NVME_SGL_FMT_DATA_DESC && !in_segment) {
			/* SGL1 is the only data block. */
			descs[0] = seg;
			nd = 1;
			goto check;
		}
		if (type != NVME_SGL_FMT_SEG_DESC &&
		    type != NVME_SGL_FMT_LAST_SEG_DESC)
			return NVME_SC_SGL_INVALID_TYPE | NVME_STATUS_DNR;
		if (last)	/* a Last Segment must hold data blocks only */
			return NVME_SC_SGL_INVALID_LAST | NVME_STATUS_DNR;
		last = type == NVME_SGL_FMT_LAST_SEG_DESC;
		if (++nsegs > NVMET_MDEV_MAX_SGL_DESCS)	/* no loops */
			return NVME_SC_SGL_INVALID_COUNT | NVME_STATUS_DNR;

		dlen = le32_to_cpu(seg.length);
		addr = le64_to_cpu(seg.addr);
		if (!dlen || dlen % sizeof(seg) || (addr & 3))
			return NVME_SC_SGL_INVALID_LAST | NVME_STATUS_DNR;
		nseg = dlen / sizeof(seg);
		in_segment = true;

		for (i = 0; i < nseg; i++) {
			k = i % SGL_BATCH;
			if (!k && nvmet_mdev_read_guest(ctrl,
							addr + i * sizeof(seg),
							batch, sizeof(seg) *
							min(nseg - i, SGL_BATCH)))
				return NVME_SC_DATA_XFER_ERROR;
			type = FIELD_GET(SGL_DESC_TYPE, batch[k].type);
			if (type == NVME_SGL_FMT_DATA_DESC) {
				if (FIELD_GET(SGL_DESC_SUBTYPE, batch[k].type) !=
				    NVME_SGL_FMT_ADDRESS)
					return NVME_SC_SGL_INVALID_TYPE |
						NVME_STATUS_DNR;
				if (nd >= NVMET_MDEV_MAX_SGL_DESCS)
					return NVME_SC_SGL_INVALID_COUNT |
						NVME_STATUS_DNR;
				descs[nd++] = batch[k];
				continue;
			}
			if (i != nseg - 1)
				return NVME_SC_SGL_INVALID_LAST |
					NVME_STATUS_DNR;
			seg = batch[k];	/* next segment */
			goto next;
		}
		if (!last)	/* a Segment must chain to another one */
			return NVME_SC_SGL_INVALID_LAST | NVME_STATUS_DNR;
		break;
next:
		;
	}

check:
	/* Lengths first: a list that does not add up is Data SGL Length Invalid. */
	for (i = 0; i < nd; i++) {
		addr = le64_to_cpu(descs[i].addr);
		dlen = le32_to_cpu(descs[i].length);
		gran |= addr | dlen;
		total += dlen;
		if (total > len)
			return NVME_SC_SGL_INVALID_DATA | NVME_STATUS_DNR;
		if (dlen)
			ne += DIV_ROUND_UP(offset_in_page(addr) + (u64)dlen,
					   PAGE_SIZE);
	}
	if (total != len)
		return NVME_SC_SGL_INVALID_DATA | NVME_STATUS_DNR;
	/* Identify reports dword alignment and granularity (SGLS = 10b). */
	if (!IS_ALIGNED(gran, 4))
		return NVME_SC_SGL_INVALID_GRANULARITY | NVME_STATUS_DNR;

	*nr_descs = nd;
	*nents = ne;
	return NVME_SC_SUCCESS;
}

static u16 nvmet_mdev_map_sgls(struct nvmet_mdev_iod *iod, size_t len)
{
	struct nvme_sgl_desc *descs = iod->sq->sgl_descs;
	struct nvmet_mdev_sgb b = { .iod = iod };
	unsigned int nd, nents, i;
	u16 status;

	status = nvmet_mdev_sgl_collect(iod, len, &nd, &nents);
	if (status)
		return status;

	if (nvmet_mdev_sg_alloc(iod, nents))
		return NVME_SC_INTERNAL;

	for (i = 0; i < nd; i++)
		if (nvmet_mdev_sg_add_range(&b, le64_to_cpu(descs[i].addr),
					    le32_to_cpu(descs[i].length)))
			return NVME_SC_DATA_XFER_ERROR;

	sg_mark_end(b.sg);
	iod->req.sg = iod->sgt.sgl;
	iod->req.sg_cnt = b.nents;
	return NVME_SC_SUCCESS;
}

/**
 * nvmet_mdev_map_data() - map the data buffer of a command
 * @iod: the command, after a successful nvmet_req_init()
 * @len: the transfer length, nvmet_req_transfer_len(), non-zero
 *
 * Return: an NVMe status; on success req->sg, req->sg_cnt and
 * req->transfer_len describe the guest buffer.  On failure the caller
 * completes the command, nvmet_mdev_unmap_data() releases what was built.
 */
u16 nvmet_mdev_map_data(struct nvmet_mdev_iod *iod, size_t len)
{
	struct nvmet_mdev_sq *sq = iod->sq;
	u8 psdt = iod->cmd.common.flags & NVME_CMD_SGL_ALL;
	u16 status;

	if (len > sq->dp->max_xfer) {
		iod->req.error_loc = offsetof(struct nvme_common_command, dptr);
		return NVME_SC_INVALID_FIELD | NVME_STATUS_DNR;
	}

	if (!psdt)
		status = nvmet_mdev_map_prps(iod, len);
	else if (psdt != NVME_CMD_SGL_ALL && sq->qid)
		status = nvmet_mdev_map_sgls(iod, len);
	else
		status = NVME_SC_INVALID_FIELD | NVME_STATUS_DNR;

	if (status) {
		iod->req.error_loc = offsetof(struct nvme_common_command, dptr);
		return status;
	}
	iod->req.transfer_len = len;
	return NVME_SC_SUCCESS;
}

/**
 * nvmet_mdev_unmap_data() - release the scatterlist of a command
 * @iod: the command; any context
 *
 * The pages themselves stay in the pin cache.
 */
void nvmet_mdev_unmap_data(struct nvmet_mdev_iod *iod)
{
	if (!iod->has_data)
		return;
	sg_free_table_chained(&iod->sgt, NVMET_MDEV_INLINE_SG);
	iod->has_data = false;
	iod->req.sg = NULL;
	iod->req.sg_cnt = 0;
	if (atomic_dec_and_test(&iod->sq->inflight) &&
	    wq_has_sleeper(&iod->sq->dp->pause_wq))
		wake_up_all(&iod->sq->dp->pause_wq);
}
