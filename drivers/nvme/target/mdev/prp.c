// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: PRPs and SGLs.
 *
 * The data pointer of a command is translated into a scatterlist over the
 * pinned guest pages themselves (zero copy) which becomes req->sg.  The
 * walk and its checks are the nvmet core's PCI transport helpers
 * (pci-common.c), with a 4 KiB memory page size (CAP.MPSMIN = CAP.MPSMAX =
 * 0), at most NVMET_MDEV_MAX_SGL_DESCS data blocks and segments, and data
 * blocks dword aligned in address and length: the buffers go to the block
 * layer as they are.  PRP lists and SGL segments are read out of guest
 * memory once.  All of it runs in the SQ's thread.  Each scatterlist
 * entry's DMA address is the guest IOVA of its data, the emulated
 * device's bus address, for the dirty page log (dirty.c).
 */

#include "../pci-common.h"
#include "datapath.h"

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
	    b->sg->offset + b->sg->length == off &&
	    sg_dma_address(b->sg) + b->sg->length == iova) {
		b->sg->length += len;
		return 0;
	}

	if (WARN_ON_ONCE(b->nents >= b->iod->sgt.orig_nents))
		return -EINVAL;
	b->sg = b->sg ? sg_next(b->sg) : b->iod->sgt.sgl;
	sg_set_page(b->sg, page, len, off);
	sg_dma_address(b->sg) = iova;
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

static int nvmet_mdev_dptr_read(void *priv, u64 iova, void *buf, size_t len)
{
	struct nvmet_mdev_sgb *b = priv;

	return nvmet_mdev_read_guest(b->iod->sq->ctrl, iova, buf, len);
}

static int nvmet_mdev_dptr_add(void *priv, u64 iova, u64 len)
{
	return nvmet_mdev_sg_add_range(priv, iova, len);
}

#define NVMET_MDEV_DPTR(b) ((struct nvmet_pci_dptr) {	\
	.read		= nvmet_mdev_dptr_read,		\
	.add		= nvmet_mdev_dptr_add,		\
	.priv		= (b),				\
	.mps_shift	= ilog2(NVMET_MDEV_MPS),	\
})

static void nvmet_mdev_sg_done(struct nvmet_mdev_sgb *b)
{
	sg_mark_end(b->sg);
	b->iod->req.sg = b->iod->sgt.sgl;
	b->iod->req.sg_cnt = b->nents;
}

static u16 nvmet_mdev_map_prps(struct nvmet_mdev_iod *iod, size_t len)
{
	u64 prp1 = le64_to_cpu(iod->cmd.common.dptr.prp1);
	u64 prp2 = le64_to_cpu(iod->cmd.common.dptr.prp2);
	struct nvmet_mdev_sgb b = { .iod = iod };
	struct nvmet_pci_dptr d = NVMET_MDEV_DPTR(&b);
	u16 status;

	/* Host pages are at least 4 KiB: one sg entry per PRP at most. */
	if (nvmet_mdev_sg_alloc(iod, nvmet_pci_prp_count(prp1, len,
							 d.mps_shift)))
		return NVME_SC_INTERNAL;

	status = nvmet_pci_map_prps(&d, prp1, prp2, len);
	if (status)
		return status;
	nvmet_mdev_sg_done(&b);
	return NVME_SC_SUCCESS;
}

static u16 nvmet_mdev_map_sgls(struct nvmet_mdev_iod *iod, size_t len)
{
	struct nvme_sgl_desc *descs = iod->sq->sgl_descs;
	struct nvmet_mdev_sgb b = { .iod = iod };
	struct nvmet_pci_dptr d = NVMET_MDEV_DPTR(&b);
	unsigned int nd, nents = 0, i;
	u32 dlen;
	u16 status;

	/*
	 * Identify reports dword alignment and granularity (SGLS = 10b): the
	 * data blocks go to the block layer as they are.
	 */
	status = nvmet_pci_collect_sgl(&d, &iod->cmd.common.dptr.sgl, len,
				       descs, NVMET_MDEV_MAX_SGL_DESCS, 4, &nd);
	if (status)
		return status;

	for (i = 0; i < nd; i++) {
		dlen = le32_to_cpu(descs[i].length);
		if (dlen)
			nents += DIV_ROUND_UP(offset_in_page(le64_to_cpu(descs[i].addr)) +
					      (u64)dlen, PAGE_SIZE);
	}
	if (nvmet_mdev_sg_alloc(iod, nents))
		return NVME_SC_INTERNAL;

	for (i = 0; i < nd; i++)
		if (nvmet_mdev_sg_add_range(&b, le64_to_cpu(descs[i].addr),
					    le32_to_cpu(descs[i].length)))
			return NVME_SC_DATA_XFER_ERROR;

	nvmet_mdev_sg_done(&b);
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

/*
 * Log the data pages of a command the device may have written: all but
 * host to controller transfers (opcode bits 1:0 01b).
 */
static void nvmet_mdev_data_dirty(struct nvmet_mdev_iod *iod)
{
	struct nvmet_mdev_ctrl *ctrl = iod->sq->ctrl;
	struct scatterlist *sg;
	int i;

	if (likely(!rcu_access_pointer(ctrl->dirty)) ||
	    (iod->cmd.common.opcode & 3) == 1)
		return;
	for_each_sg(iod->req.sg, sg, iod->req.sg_cnt, i)
		nvmet_mdev_dirty_mark(ctrl, sg_dma_address(sg), sg->length);
}

/**
 * nvmet_mdev_unmap_data() - release the scatterlist of a command
 * @iod: the command; any context
 *
 * The pages themselves stay in the pin cache; those the device may have
 * written are logged dirty.
 */
void nvmet_mdev_unmap_data(struct nvmet_mdev_iod *iod)
{
	if (!iod->has_data)
		return;
	nvmet_mdev_data_dirty(iod);
	sg_free_table_chained(&iod->sgt, NVMET_MDEV_INLINE_SG);
	iod->has_data = false;
	iod->req.sg = NULL;
	iod->req.sg_cnt = 0;
	if (atomic_dec_and_test(&iod->sq->inflight) &&
	    wq_has_sleeper(&iod->sq->dp->pause_wq))
		wake_up_all(&iod->sq->dp->pause_wq);
}
