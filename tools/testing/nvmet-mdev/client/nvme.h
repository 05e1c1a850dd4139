/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A small user space NVMe driver on top of vfio.h: controller registers,
 * admin and I/O queues, command submission and completion, PRP and SGL
 * builders, MSI-X eventfds.  Written for tests: every step is explicit and
 * the raw structures stay reachable so tests can corrupt them on purpose.
 *
 * Status values returned by the command helpers are the CQE status field
 * shifted right by one (the phase bit dropped), i.e. the encoding the
 * kernel uses for NVME_SC_*: bits 7:0 SC, 10:8 SCT, 12:11 CRD, 13 More,
 * 14 DNR.  Negative values are -errno (-ETIMEDOUT: no completion).
 */
#ifndef NVMET_MDEV_CLIENT_NVME_H
#define NVMET_MDEV_CLIENT_NVME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "vfio.h"

/* Kernel idioms, for user space (unless a header included earlier has them). */
#ifndef BIT
#define BIT(nr)			(1UL << (nr))
#endif
#ifndef BIT_ULL
#define BIT_ULL(nr)		(1ULL << (nr))
#endif
#ifndef ARRAY_SIZE
#define ARRAY_SIZE(arr)		(sizeof(arr) / sizeof((arr)[0]))
#endif
#ifndef __packed
#define __packed		__attribute__((__packed__))
#endif

/*
 * READ_ONCE()/WRITE_ONCE(): one access of @x, of its width, that the
 * compiler neither drops, merges, tears nor moves across the other ones,
 * for memory that another party reads or writes behind its back: the
 * mmap'ed doorbell page of BAR0, the queue entries and the shadow
 * doorbell/EventIdx pages the device accesses, flags that other threads
 * poll.  Scalars only (1, 2, 4 or 8 bytes).  The client's only volatile
 * is here.
 */
#define __ACCESS_ONCE(x)	(*(volatile __typeof__(x) *)&(x))
#ifndef READ_ONCE
#define READ_ONCE(x)		__ACCESS_ONCE(x)
#endif
#ifndef WRITE_ONCE
#define WRITE_ONCE(x, val)	((void)(__ACCESS_ONCE(x) = (val)))
#endif

/* ---- Controller registers (NVMe base spec 2.x, section 3.1) ---- */
#define NVME_REG_CAP		0x00
#define NVME_REG_VS		0x08
#define NVME_REG_INTMS		0x0c
#define NVME_REG_INTMC		0x10
#define NVME_REG_CC		0x14
#define NVME_REG_CSTS		0x1c
#define NVME_REG_NSSR		0x20
#define NVME_REG_AQA		0x24
#define NVME_REG_ASQ		0x28
#define NVME_REG_ACQ		0x30
#define NVME_REG_CMBLOC		0x38
#define NVME_REG_CMBSZ		0x3c
#define NVME_REG_BPINFO		0x40
#define NVME_REG_CMBMSC		0x50
#define NVME_REG_PMRCAP		0xe00
#define NVME_REG_DBS		0x1000

#define NVME_CAP_MQES(cap)	((uint32_t)((cap) & 0xffff))
#define NVME_CAP_CQR(cap)	(((cap) >> 16) & 1)
#define NVME_CAP_AMS(cap)	(((cap) >> 17) & 3)
#define NVME_CAP_TO(cap)	(((cap) >> 24) & 0xff)
#define NVME_CAP_DSTRD(cap)	(((cap) >> 32) & 0xf)
#define NVME_CAP_NSSRS(cap)	(((cap) >> 36) & 1)
#define NVME_CAP_CSS(cap)	(((cap) >> 37) & 0xff)
#define NVME_CAP_BPS(cap)	(((cap) >> 45) & 1)
#define NVME_CAP_MPSMIN(cap)	(((cap) >> 48) & 0xf)
#define NVME_CAP_MPSMAX(cap)	(((cap) >> 52) & 0xf)
#define NVME_CAP_PMRS(cap)	(((cap) >> 56) & 1)
#define NVME_CAP_CMBS(cap)	(((cap) >> 57) & 1)

#define NVME_CAP_CSS_NVM	BIT(0)
#define NVME_CAP_CSS_CSI	BIT(6)
#define NVME_CAP_CSS_NONE	BIT(7)

#define NVME_CC_EN		BIT(0)
#define NVME_CC_CSS_SHIFT	4
#define NVME_CC_CSS_MASK	(7u << 4)
#define NVME_CC_CSS_NVM		(0u << 4)
#define NVME_CC_CSS_CSI		(6u << 4)
#define NVME_CC_CSS_ADMIN	(7u << 4)
#define NVME_CC_MPS_SHIFT	7
#define NVME_CC_MPS_MASK	(0xfu << 7)
#define NVME_CC_AMS_SHIFT	11
#define NVME_CC_AMS_MASK	(7u << 11)
#define NVME_CC_SHN_SHIFT	14
#define NVME_CC_SHN_MASK	(3u << 14)
#define NVME_CC_SHN_NORMAL	BIT(14)
#define NVME_CC_SHN_ABRUPT	(2u << 14)
#define NVME_CC_IOSQES_SHIFT	16
#define NVME_CC_IOSQES_MASK	(0xfu << 16)
#define NVME_CC_IOCQES_SHIFT	20
#define NVME_CC_IOCQES_MASK	(0xfu << 20)
#define NVME_CC_IOSQES		(6u << 16)	/* 64-byte SQEs */
#define NVME_CC_IOCQES		(4u << 20)	/* 16-byte CQEs */

#define NVME_CSTS_RDY		BIT(0)
#define NVME_CSTS_CFS		BIT(1)
#define NVME_CSTS_SHST_MASK	(3u << 2)
#define NVME_CSTS_SHST_NORMAL	(0u << 2)
#define NVME_CSTS_SHST_OCCUR	BIT(2)
#define NVME_CSTS_SHST_CMPLT	(2u << 2)
#define NVME_CSTS_NSSRO		BIT(4)
#define NVME_CSTS_PP		BIT(5)

/* ---- Commands ---- */
enum nvme_admin_opcode {
	nvme_admin_delete_sq		= 0x00,
	nvme_admin_create_sq		= 0x01,
	nvme_admin_get_log_page		= 0x02,
	nvme_admin_delete_cq		= 0x04,
	nvme_admin_create_cq		= 0x05,
	nvme_admin_identify		= 0x06,
	nvme_admin_abort		= 0x08,
	nvme_admin_set_features		= 0x09,
	nvme_admin_get_features		= 0x0a,
	nvme_admin_async_event		= 0x0c,
	nvme_admin_ns_mgmt		= 0x0d,
	nvme_admin_activate_fw		= 0x10,
	nvme_admin_download_fw		= 0x11,
	nvme_admin_dev_self_test	= 0x14,
	nvme_admin_ns_attach		= 0x15,
	nvme_admin_keep_alive		= 0x18,
	nvme_admin_directive_send	= 0x19,
	nvme_admin_directive_recv	= 0x1a,
	nvme_admin_virtual_mgmt		= 0x1c,
	nvme_admin_nvme_mi_send		= 0x1d,
	nvme_admin_nvme_mi_recv		= 0x1e,
	nvme_admin_dbbuf		= 0x7c,
	nvme_admin_format_nvm		= 0x80,
	nvme_admin_security_send	= 0x81,
	nvme_admin_security_recv	= 0x82,
	nvme_admin_sanitize_nvm		= 0x84,
	nvme_admin_get_lba_status	= 0x86,
};

enum nvme_io_opcode {
	nvme_cmd_flush		= 0x00,
	nvme_cmd_write		= 0x01,
	nvme_cmd_read		= 0x02,
	nvme_cmd_write_uncor	= 0x04,
	nvme_cmd_compare	= 0x05,
	nvme_cmd_write_zeroes	= 0x08,
	nvme_cmd_dsm		= 0x09,
	nvme_cmd_verify		= 0x0c,
	nvme_cmd_resv_register	= 0x0d,
	nvme_cmd_resv_report	= 0x0e,
	nvme_cmd_resv_acquire	= 0x11,
	nvme_cmd_resv_release	= 0x15,
	nvme_cmd_copy		= 0x19,
	nvme_cmd_zone_mgmt_send	= 0x79,
	nvme_cmd_zone_mgmt_recv	= 0x7a,
	nvme_cmd_zone_append	= 0x7d,
};

/* Identify CNS values. */
#define NVME_ID_CNS_NS			0x00
#define NVME_ID_CNS_CTRL		0x01
#define NVME_ID_CNS_NS_ACTIVE_LIST	0x02
#define NVME_ID_CNS_NS_DESC_LIST	0x03
#define NVME_ID_CNS_CS_NS		0x05
#define NVME_ID_CNS_CS_CTRL		0x06
#define NVME_ID_CNS_NS_ACTIVE_LIST_CS	0x07
#define NVME_ID_CNS_NS_CS_INDEP		0x08
#define NVME_ID_CNS_NS_PRESENT_LIST	0x10
#define NVME_ID_CNS_CTRL_LIST		0x13
#define NVME_ID_CNS_ENDGRP_LIST		0x19

#define NVME_CSI_NVM		0
#define NVME_CSI_ZNS		2

/* Log pages. */
#define NVME_LOG_SUPPORTED	0x00
#define NVME_LOG_ERROR		0x01
#define NVME_LOG_SMART		0x02
#define NVME_LOG_FW_SLOT	0x03
#define NVME_LOG_CHANGED_NS	0x04
#define NVME_LOG_CMD_EFFECTS	0x05
#define NVME_LOG_DEVICE_SELF_TEST 0x06
#define NVME_LOG_ANA		0x0c
#define NVME_LOG_FEATURES	0x12
#define NVME_LOG_RMI		0x16
#define NVME_LOG_DISC		0x70
#define NVME_LOG_RESERVATION	0x80

/* Features. */
#define NVME_FEAT_ARBITRATION	0x01
#define NVME_FEAT_POWER_MGMT	0x02
#define NVME_FEAT_LBA_RANGE	0x03
#define NVME_FEAT_TEMP_THRESH	0x04
#define NVME_FEAT_ERR_RECOVERY	0x05
#define NVME_FEAT_VOLATILE_WC	0x06
#define NVME_FEAT_NUM_QUEUES	0x07
#define NVME_FEAT_IRQ_COALESCE	0x08
#define NVME_FEAT_IRQ_CONFIG	0x09
#define NVME_FEAT_WRITE_ATOMIC	0x0a
#define NVME_FEAT_ASYNC_EVENT	0x0b
#define NVME_FEAT_AUTO_PST	0x0c
#define NVME_FEAT_HOST_MEM_BUF	0x0d
#define NVME_FEAT_TIMESTAMP	0x0e
#define NVME_FEAT_KATO		0x0f
#define NVME_FEAT_HOST_ID	0x81
#define NVME_FEAT_RESV_MASK	0x82
#define NVME_FEAT_RESV_PERSIST	0x83
#define NVME_FEAT_WRITE_PROTECT	0x84

/* Create I/O queue flags (CDW11). */
#define NVME_QUEUE_PHYS_CONTIG	BIT(0)
#define NVME_CQ_IRQ_ENABLED	BIT(1)
#define NVME_SQ_PRIO_URGENT	(0 << 1)
#define NVME_SQ_PRIO_HIGH	BIT(1)
#define NVME_SQ_PRIO_MEDIUM	(2 << 1)
#define NVME_SQ_PRIO_LOW	(3 << 1)

/* Command flags byte (CDW0 bits 15:8): PSDT in bits 7:6. */
#define NVME_CMD_FUSE_FIRST	BIT(0)
#define NVME_CMD_FUSE_SECOND	BIT(1)
#define NVME_CMD_PSDT_PRP	(0 << 6)
#define NVME_CMD_PSDT_SGL_MPTR_CONTIG BIT(6)
#define NVME_CMD_PSDT_SGL_MPTR_SGL (2 << 6)

/* Read/Write CDW12. */
#define NVME_RW_FUA		BIT(30)
#define NVME_RW_LR		BIT(31)

/* DSM attributes (CDW11). */
#define NVME_DSMGMT_IDR		BIT(0)
#define NVME_DSMGMT_IDW		BIT(1)
#define NVME_DSMGMT_AD		BIT(2)

/* SGL descriptor types (byte 15 bits 7:4) and subtypes (3:0). */
#define NVME_SGL_FMT_DATA_DESC		0x00
#define NVME_SGL_FMT_BIT_BUCKET_DESC	0x01
#define NVME_SGL_FMT_SEG_DESC		0x02
#define NVME_SGL_FMT_LAST_SEG_DESC	0x03
#define NVME_SGL_FMT_KEYED_DATA_DESC	0x04
#define NVME_SGL_FMT_TRANSPORT_DESC	0x05
#define NVME_SGL_FMT_ADDRESS		0x00
#define NVME_SGL_FMT_OFFSET		0x01

struct nvme_sgl_desc {
	uint64_t	addr;
	uint32_t	length;
	uint8_t		rsvd[3];
	uint8_t		type;		/* (type << 4) | subtype */
};

/* Submission queue entry, 64 bytes. */
struct nvme_sqe {
	uint8_t		opcode;
	uint8_t		flags;
	uint16_t	cid;
	uint32_t	nsid;
	uint32_t	cdw2;
	uint32_t	cdw3;
	uint64_t	mptr;
	union {
		struct {
			uint64_t prp1;
			uint64_t prp2;
		};
		struct nvme_sgl_desc sgl;
	};
	uint32_t	cdw10;
	uint32_t	cdw11;
	uint32_t	cdw12;
	uint32_t	cdw13;
	uint32_t	cdw14;
	uint32_t	cdw15;
};

/* Completion queue entry, 16 bytes. */
struct nvme_cqe {
	uint32_t	result;		/* DW0 */
	uint32_t	dw1;
	uint16_t	sq_head;
	uint16_t	sq_id;
	uint16_t	cid;
	uint16_t	status;		/* bit 0: phase tag */
};

/* Status values (CQE status >> 1), as in include/linux/nvme.h. */
#define NVME_SC_SUCCESS			0x000
#define NVME_SC_INVALID_OPCODE		0x001
#define NVME_SC_INVALID_FIELD		0x002
#define NVME_SC_CMDID_CONFLICT		0x003
#define NVME_SC_DATA_XFER_ERROR		0x004
#define NVME_SC_INTERNAL		0x006
#define NVME_SC_ABORT_REQ		0x007
#define NVME_SC_ABORT_QUEUE		0x008
#define NVME_SC_FUSED_FAIL		0x009
#define NVME_SC_FUSED_MISSING		0x00a
#define NVME_SC_INVALID_NS		0x00b
#define NVME_SC_INTERNAL_PATH_ERROR	0x300
#define NVME_SC_CMD_SEQ_ERROR		0x00c
#define NVME_SC_SGL_INVALID_LAST	0x00d
#define NVME_SC_SGL_INVALID_COUNT	0x00e
#define NVME_SC_SGL_INVALID_DATA	0x00f
#define NVME_SC_SGL_INVALID_METADATA	0x010
#define NVME_SC_SGL_INVALID_TYPE	0x011
#define NVME_SC_PRP_INVALID_OFFSET	0x013
#define NVME_SC_SGL_INVALID_OFFSET	0x016
#define NVME_SC_HOST_ID_INCONSIST	0x018
#define NVME_SC_KA_TIMEOUT_EXPIRED	0x019
#define NVME_SC_KA_TIMEOUT_INVALID	0x01a
#define NVME_SC_SGL_INVALID_GRANULARITY	0x01e
#define NVME_SC_NS_WRITE_PROTECTED	0x020
#define NVME_SC_INVALID_IO_CMD_SET	0x02c
#define NVME_SC_LBA_RANGE		0x080
#define NVME_SC_CAP_EXCEEDED		0x081
#define NVME_SC_NS_NOT_READY		0x082
#define NVME_SC_CQ_INVALID		0x100
#define NVME_SC_QID_INVALID		0x101
#define NVME_SC_QUEUE_SIZE		0x102
#define NVME_SC_ABORT_LIMIT		0x103
#define NVME_SC_ABORT_MISSING		0x104
#define NVME_SC_ASYNC_LIMIT		0x105
#define NVME_SC_INVALID_VECTOR		0x108
#define NVME_SC_INVALID_LOG_PAGE	0x109
#define NVME_SC_INVALID_FORMAT		0x10a
#define NVME_SC_INVALID_QUEUE		0x10c	/* Invalid Queue Deletion */
#define NVME_SC_FEATURE_NOT_SAVEABLE	0x10d
#define NVME_SC_FEATURE_NOT_CHANGEABLE	0x10e
#define NVME_SC_FEATURE_NOT_PER_NS	0x10f
#define NVME_SC_CMD_SIZE_LIM_EXCEEDED	0x183
#define NVME_SC_READ_ONLY		0x182

#define NVME_SC_MASK			0x7ff	/* SCT + SC */
#define NVME_STATUS_CRD			0x1800
#define NVME_STATUS_MORE		0x2000
#define NVME_STATUS_DNR			0x4000

/* Status code only (SCT/SC), for comparisons; negative errno passes. */
static inline int nvme_sc(int status)
{
	return status < 0 ? status : (status & NVME_SC_MASK);
}

/* Async event types (result DW0 bits 2:0) and error infos. */
#define NVME_AER_ERROR			0
#define NVME_AER_SMART			1
#define NVME_AER_NOTICE			2
#define NVME_AER_ERROR_INVALID_DB_REG	0x00
#define NVME_AER_ERROR_INVALID_DB_VALUE	0x01
#define NVME_AER_NOTICE_NS_CHANGED	0x00

/* ---- Identify structures (only the fields the tests use) ---- */
struct nvme_id_ctrl {
	uint16_t	vid;		/* 0 */
	uint16_t	ssvid;
	char		sn[20];
	char		mn[40];
	char		fr[8];
	uint8_t		rab;		/* 72 */
	uint8_t		ieee[3];
	uint8_t		cmic;
	uint8_t		mdts;		/* 77 */
	uint16_t	cntlid;
	uint32_t	ver;		/* 80 */
	uint32_t	rtd3r;
	uint32_t	rtd3e;
	uint32_t	oaes;		/* 92 */
	uint32_t	ctratt;		/* 96 */
	uint8_t		rsvd100[11];
	uint8_t		cntrltype;	/* 111 */
	uint8_t		fguid[16];
	uint16_t	crdt[3];	/* 128 */
	uint8_t		rsvd134[122];
	uint16_t	oacs;		/* 256 */
	uint8_t		acl;
	uint8_t		aerl;
	uint8_t		frmw;		/* 260 */
	uint8_t		lpa;
	uint8_t		elpe;
	uint8_t		npss;
	uint8_t		avscc;
	uint8_t		apsta;
	uint16_t	wctemp;
	uint16_t	cctemp;
	uint16_t	mtfa;
	uint32_t	hmpre;		/* 272 */
	uint32_t	hmmin;
	uint8_t		tnvmcap[16];
	uint8_t		unvmcap[16];
	uint32_t	rpmbs;		/* 312 */
	uint16_t	edstt;
	uint8_t		dsto;
	uint8_t		fwug;
	uint16_t	kas;		/* 320 */
	uint16_t	hctma;
	uint16_t	mntmt;
	uint16_t	mxtmt;
	uint32_t	sanicap;
	uint8_t		rsvd332[180];
	uint8_t		sqes;		/* 512 */
	uint8_t		cqes;
	uint16_t	maxcmd;
	uint32_t	nn;		/* 516 */
	uint16_t	oncs;		/* 520 */
	uint16_t	fuses;
	uint8_t		fna;
	uint8_t		vwc;		/* 525 */
	uint16_t	awun;
	uint16_t	awupf;
	uint8_t		nvscc;		/* 530 */
	uint8_t		nwpc;
	uint16_t	acwu;
	uint16_t	ocfs;
	uint32_t	sgls;		/* 536 */
	uint32_t	mnan;
	uint8_t		rsvd544[224];
	char		subnqn[256];	/* 768 */
	uint8_t		rsvd1024[768];
	uint32_t	ioccsz;		/* 1792 */
	uint32_t	iorcsz;
	uint16_t	icdoff;
	uint8_t		fcatt;
	uint8_t		msdbd;
	uint16_t	ofcs;
	uint8_t		rsvd1806[242];
	uint8_t		psd[32][32];	/* 2048 */
	uint8_t		vs[1024];
} __packed;

#define NVME_CTRL_OACS_DBBUF_SUPP	BIT(8)
#define NVME_CTRL_ONCS_COMPARE		BIT(0)
#define NVME_CTRL_ONCS_WRITE_UNCORRECTABLE BIT(1)
#define NVME_CTRL_ONCS_DSM		BIT(2)
#define NVME_CTRL_ONCS_WRITE_ZEROES	BIT(3)
#define NVME_CTRL_VWC_PRESENT		BIT(0)
#define NVME_CTRL_SGLS_SUPP_MASK	3	/* 0: none, 1: byte aligned, 2: dword */

struct nvme_lbaf {
	uint16_t	ms;
	uint8_t		ds;
	uint8_t		rp;
};

struct nvme_id_ns {
	uint64_t	nsze;		/* 0 */
	uint64_t	ncap;
	uint64_t	nuse;
	uint8_t		nsfeat;		/* 24 */
	uint8_t		nlbaf;
	uint8_t		flbas;
	uint8_t		mc;
	uint8_t		dpc;
	uint8_t		dps;
	uint8_t		nmic;
	uint8_t		rescap;
	uint8_t		fpi;
	uint8_t		dlfeat;
	uint16_t	nawun;
	uint16_t	nawupf;
	uint16_t	nacwu;
	uint16_t	nabsn;
	uint16_t	nabo;
	uint16_t	nabspf;
	uint16_t	noiob;
	uint8_t		nvmcap[16];
	uint16_t	npwg;		/* 64 */
	uint16_t	npwa;
	uint16_t	npdg;
	uint16_t	npda;
	uint16_t	nows;
	uint8_t		rsvd74[18];
	uint32_t	anagrpid;	/* 92 */
	uint8_t		rsvd96[3];
	uint8_t		nsattr;		/* 99 */
	uint16_t	nvmsetid;
	uint16_t	endgid;
	uint8_t		nguid[16];	/* 104 */
	uint8_t		eui64[8];	/* 120 */
	struct nvme_lbaf lbaf[64];	/* 128 */
	uint8_t		vs[3712];
} __packed;

/* ---- The driver ---- */

/* DMA-able memory: anonymous pages mapped at an IOVA we choose. */
struct nvme_dma {
	void		*va;
	uint64_t	iova;
	size_t		size;
};

struct nvme_queue {
	uint16_t	qid;
	uint16_t	depth;		/* entries */
	bool		live;		/* created on the device */
	struct nvme_dma	mem;
	/* SQ */
	uint16_t	tail;
	uint16_t	head;		/* as last reported in a CQE */
	struct nvme_queue *cq;
	/* CQ */
	uint8_t		phase;
	uint16_t	vector;
	bool		irq;
};

#define NVME_MAX_QUEUES		(1 + 64)	/* admin + NVMET_MDEV_MAX_IO_QUEUES */
#define NVME_MAX_VECTORS	65
#define NVME_PAGE_SIZE		4096u
#define NVME_PRP_POOL_PAGES	512

struct nvme_ctrl {
	struct vfio_dev	*dev;
	uint64_t	cap;
	uint32_t	vs;
	unsigned int	db_stride;	/* bytes between doorbells: 4 << DSTRD */
	unsigned int	timeout_ms;	/* CAP.TO */
	uint32_t	*db;		/* mmap'ed doorbell page or NULL; WRITE_ONCE() */
	void		*db_map;	/* the mapping, for munmap */
	size_t		db_map_len;
	uint64_t	next_iova;	/* IOVA allocator: bump, never reused */
	uint16_t	next_cid;

	struct nvme_queue sq[NVME_MAX_QUEUES];	/* sq[0]: admin SQ */
	struct nvme_queue cq[NVME_MAX_QUEUES];	/* cq[0]: admin CQ */

	/* MSI-X eventfds, -1 when not wired. */
	int		irq_fd[NVME_MAX_VECTORS];
	unsigned int	nr_vectors;		/* MSI-X count from VFIO */

	/* Filled by nvme_bringup(). */
	struct nvme_id_ctrl id;
	uint32_t	mdts_bytes;	/* 0: no limit */
	uint16_t	nr_io_queues;	/* granted by Set Features */
	uint32_t	nsid;		/* first active namespace */
	uint64_t	nsze;
	uint32_t	lba_shift;

	/* Shadow doorbells (Doorbell Buffer Config), used for I/O queues. */
	bool		dbbuf_on;
	struct nvme_dma	dbbuf_db;	/* shadow doorbell page (PRP1) */
	struct nvme_dma	dbbuf_ei;	/* EventIdx page (PRP2) */
	unsigned long	dbbuf_mmio;	/* doorbell updates written to BAR0 */
	unsigned long	dbbuf_skipped;	/* updates EventIdx let us skip */
	bool		dbbuf_force[2 * NVME_MAX_QUEUES]; /* next update to BAR0 */

	struct nvme_dma	scratch;	/* one page for identify etc. */
	struct nvme_dma	prp_pool;	/* PRP/SGL list pages */
	unsigned int	prp_next;
};

/* DMA memory. */
int nvme_dma_alloc(struct nvme_ctrl *ctrl, size_t size, struct nvme_dma *dma);
void nvme_dma_free(struct nvme_ctrl *ctrl, struct nvme_dma *dma);
/* Reserve an IOVA range that is never mapped (for hostile tests). */
uint64_t nvme_iova_hole(struct nvme_ctrl *ctrl, size_t size);

/* PCI_COMMAND memory decoding and bus mastering on (init and enable do). */
int nvme_pci_enable(struct nvme_ctrl *ctrl);
/* Attach to an opened vfio device / detach (does not close @dev). */
int nvme_ctrl_init(struct nvme_ctrl *ctrl, struct vfio_dev *dev);
void nvme_ctrl_fini(struct nvme_ctrl *ctrl);

/* Registers (BAR0 via the trapped region path). */
uint32_t nvme_read32(struct nvme_ctrl *ctrl, uint32_t off);
uint64_t nvme_read64(struct nvme_ctrl *ctrl, uint32_t off);
int nvme_write32(struct nvme_ctrl *ctrl, uint32_t off, uint32_t val);
int nvme_write64(struct nvme_ctrl *ctrl, uint32_t off, uint64_t val);

/* Doorbells: through the mmap'ed page when available, else pwrite. */
void nvme_ring_sq(struct nvme_ctrl *ctrl, uint16_t qid, uint32_t tail);
void nvme_ring_cq(struct nvme_ctrl *ctrl, uint16_t qid, uint32_t head);
uint32_t nvme_db_offset(struct nvme_ctrl *ctrl, uint16_t qid, bool cq);

/* Controller state. */
uint32_t nvme_cc_default(void);
/* Wait until CSTS.RDY == @rdy: 0, -EIO if CFS set, -ETIMEDOUT. */
int nvme_wait_ready(struct nvme_ctrl *ctrl, bool rdy);
int nvme_disable(struct nvme_ctrl *ctrl);
/* Program the admin queues (@depth entries) and set CC.EN with @cc. */
int nvme_enable_cc(struct nvme_ctrl *ctrl, uint16_t depth, uint32_t cc);
int nvme_enable(struct nvme_ctrl *ctrl, uint16_t depth);
int nvme_shutdown(struct nvme_ctrl *ctrl);
/* Forget every I/O queue (after a disable/reset). */
void nvme_forget_queues(struct nvme_ctrl *ctrl);

/* Submission and completion. */
/* Copy @sqe (its cid set here unless @keep_cid) into the SQ without ringing. */
uint16_t nvme_sq_push(struct nvme_ctrl *ctrl, uint16_t qid,
		      struct nvme_sqe *sqe, bool keep_cid);
void nvme_sq_ring(struct nvme_ctrl *ctrl, uint16_t qid);
uint16_t nvme_submit(struct nvme_ctrl *ctrl, uint16_t qid, struct nvme_sqe *sqe);
/* Next completion of CQ @cqid within @timeout_ms (updates the CQ head). */
int nvme_cq_poll(struct nvme_ctrl *ctrl, uint16_t cqid, struct nvme_cqe *cqe,
		 unsigned int timeout_ms);
/* Peek without consuming: true if a new CQE is present. */
bool nvme_cq_pending(struct nvme_ctrl *ctrl, uint16_t cqid);
/* Submit on SQ @qid and wait for that command: status or -errno. */
int nvme_exec(struct nvme_ctrl *ctrl, uint16_t qid, struct nvme_sqe *sqe,
	      struct nvme_cqe *cqe);
int nvme_exec_timeout(struct nvme_ctrl *ctrl, uint16_t qid,
		      struct nvme_sqe *sqe, struct nvme_cqe *cqe,
		      unsigned int timeout_ms);
static inline int nvme_admin(struct nvme_ctrl *ctrl, struct nvme_sqe *sqe,
			     struct nvme_cqe *cqe)
{
	return nvme_exec(ctrl, 0, sqe, cqe);
}

/* Admin helpers. @buf is a page of DMA memory (NULL: ctrl->scratch). */
int nvme_identify(struct nvme_ctrl *ctrl, uint8_t cns, uint32_t nsid,
		  uint8_t csi, struct nvme_dma *buf);
int nvme_get_log(struct nvme_ctrl *ctrl, uint8_t lid, uint32_t nsid,
		 uint32_t len, uint64_t offset, struct nvme_dma *buf);
int nvme_set_features(struct nvme_ctrl *ctrl, uint8_t fid, uint32_t dw11,
		      uint32_t *result);
int nvme_get_features(struct nvme_ctrl *ctrl, uint8_t fid, uint8_t sel,
		      uint32_t dw11, uint32_t *result);
/*
 * Doorbell Buffer Config with our own shadow/EventIdx pages; on success
 * I/O queue doorbells go through the shadow page and BAR0 is written only
 * when the EventIdx asks for it (as the Linux driver does).
 */
int nvme_dbbuf_config(struct nvme_ctrl *ctrl);
/* The Linux nvme_dbbuf_need_event() rule. */
static inline bool nvme_dbbuf_need_event(uint16_t event_idx, uint16_t new_idx,
					 uint16_t old)
{
	return (uint16_t)(new_idx - event_idx - 1) < (uint16_t)(new_idx - old);
}

/* Create I/O CQ/SQ with explicit fields (the queue memory comes from us). */
int nvme_create_cq_raw(struct nvme_ctrl *ctrl, uint16_t qid, uint16_t qsize0,
		       uint64_t prp1, uint16_t flags, uint16_t vector);
int nvme_create_sq_raw(struct nvme_ctrl *ctrl, uint16_t qid, uint16_t qsize0,
		       uint64_t prp1, uint16_t flags, uint16_t cqid);
int nvme_delete_queue(struct nvme_ctrl *ctrl, bool cq, uint16_t qid);
/* Allocate and create I/O CQ @cqid (irq on @vector if @irq). */
int nvme_create_cq(struct nvme_ctrl *ctrl, uint16_t cqid, uint16_t depth,
		   bool irq, uint16_t vector);
int nvme_create_sq(struct nvme_ctrl *ctrl, uint16_t sqid, uint16_t depth,
		   uint16_t cqid);
int nvme_delete_sq(struct nvme_ctrl *ctrl, uint16_t sqid);
int nvme_delete_cq(struct nvme_ctrl *ctrl, uint16_t cqid);

/*
 * Bring the controller up: disable, enable with an admin queue of
 * @aq_depth, Identify Controller, Set Number of Queues (@nr_io), create
 * @nr_io CQ/SQ pairs of @depth entries (CQ n on vector n when @irqs), find
 * the first active namespace.  0 or status/-errno.
 */
int nvme_bringup(struct nvme_ctrl *ctrl, uint16_t aq_depth, uint16_t nr_io,
		 uint16_t depth, bool irqs);

/*
 * PRPs for [@off, @off + @len) of @buf into @sqe.  List pages come from
 * the controller's pool; chained when more than one page of entries.
 */
int nvme_build_prps(struct nvme_ctrl *ctrl, const struct nvme_dma *buf,
		    size_t off, size_t len, struct nvme_sqe *sqe);
/*
 * SGL for [@off, @off + @len) of @buf into @sqe: a single data block
 * descriptor when @nr_desc <= 1, else @nr_desc data blocks in a last
 * segment list (split evenly, byte granular).
 */
int nvme_build_sgl(struct nvme_ctrl *ctrl, const struct nvme_dma *buf,
		   size_t off, size_t len, unsigned int nr_desc,
		   struct nvme_sqe *sqe);
/* One page from the PRP/SGL pool (va, iova). */
void *nvme_pool_page(struct nvme_ctrl *ctrl, uint64_t *iova);

/* I/O: read or write @nlb blocks at @slba on @qid, PRPs over @buf+@off. */
int nvme_rw(struct nvme_ctrl *ctrl, uint16_t qid, uint8_t opcode,
	    uint64_t slba, uint32_t nlb, const struct nvme_dma *buf,
	    size_t off);

/* MSI-X: wire vectors [0, @n) to fresh eventfds. */
int nvme_irq_setup(struct nvme_ctrl *ctrl, unsigned int n);
void nvme_irq_teardown(struct nvme_ctrl *ctrl);
/* Wait for vector @v: count of signals (>0), 0 on timeout, -errno. */
int nvme_irq_wait(struct nvme_ctrl *ctrl, unsigned int v,
		  unsigned int timeout_ms);
/* Consume pending signals of @v without waiting: count. */
int nvme_irq_drain(struct nvme_ctrl *ctrl, unsigned int v);

/* Misc. */
uint64_t nvme_now_ms(void);
const char *nvme_status_str(int status);

#endif /* NVMET_MDEV_CLIENT_NVME_H */
