// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: PCI configuration
 * space emulation.
 *
 * The config space is a 4 KiB byte array with a per-byte mask of guest
 * writable bits and a per-byte mask of write-1-to-clear bits; everything
 * else is read-only.  BAR sizing falls out of the masks: the address bits
 * of a BAR are writable, the size and flag bits are not, so writing all
 * ones reads back the size mask.  A few registers have side effects that
 * are handled after the masked update: the power state (D3hot -> D0 is a
 * reset, No_Soft_Reset is 0), the PCI Express Initiate Function Level
 * Reset bit, and the command register's Bus Master Enable: while it is
 * clear the function neither touches the guest's memory nor sends MSI-X
 * messages (see nvmet_mdev_bus_master_changed()).  Memory Space Enable is
 * stored without effect on the device: the VMM maps the BARs into the
 * guest only while it is set, as for any vfio-pci device.
 *
 * Layout:
 *   0x00  type 0 header, BAR0 64-bit memory (controller), BAR4 32-bit
 *         memory (MSI-X table and PBA)
 *   0x40  power management capability
 *   0x50  MSI-X capability
 *   0x60  PCI Express capability (version 2, endpoint, FLR)
 *   0x100 extended config space: empty
 */

#include <linux/pci_regs.h>
#include <linux/unaligned.h>

#include "priv.h"

#define NVMET_MDEV_CAP_PM	0x40
#define NVMET_MDEV_CAP_MSIX	0x50
#define NVMET_MDEV_CAP_EXP	0x60

/* PMCSR PowerState values (PCI PM 1.2, 3.2.4): D1 and D2 are not supported. */
#define NVMET_MDEV_PM_D0	0
#define NVMET_MDEV_PM_D3HOT	3

static void cfg_set8(struct nvmet_mdev_pci *pci, u32 off, u8 val, u8 wmask)
{
	pci->cfg[off] = val;
	pci->wmask[off] = wmask;
}

static void cfg_set16(struct nvmet_mdev_pci *pci, u32 off, u16 val, u16 wmask)
{
	put_unaligned_le16(val, &pci->cfg[off]);
	put_unaligned_le16(wmask, &pci->wmask[off]);
}

static void cfg_set32(struct nvmet_mdev_pci *pci, u32 off, u32 val, u32 wmask)
{
	put_unaligned_le32(val, &pci->cfg[off]);
	put_unaligned_le32(wmask, &pci->wmask[off]);
}

static u16 cfg_get16(struct nvmet_mdev_pci *pci, u32 off)
{
	return get_unaligned_le16(&pci->cfg[off]);
}

static void nvmet_mdev_pci_init_header(struct nvmet_mdev_pci *pci)
{
	u32 bar0 = NVMET_MDEV_BAR0_SIZE, bar4 = NVMET_MDEV_MSIX_BAR_SIZE;

	cfg_set16(pci, PCI_VENDOR_ID, NVMET_MDEV_PCI_VENDOR_ID, 0);
	cfg_set16(pci, PCI_DEVICE_ID, NVMET_MDEV_PCI_DEVICE_ID, 0);
	cfg_set16(pci, PCI_COMMAND, 0, PCI_COMMAND_MEMORY | PCI_COMMAND_MASTER |
		  PCI_COMMAND_INTX_DISABLE);
	cfg_set16(pci, PCI_STATUS, PCI_STATUS_CAP_LIST, 0);
	cfg_set8(pci, PCI_REVISION_ID, NVMET_MDEV_PCI_REVISION, 0);
	cfg_set8(pci, PCI_CLASS_PROG, NVMET_MDEV_PCI_CLASS & 0xff, 0);
	cfg_set16(pci, PCI_CLASS_DEVICE, NVMET_MDEV_PCI_CLASS >> 8, 0);
	cfg_set8(pci, PCI_CACHE_LINE_SIZE, 0, 0xff);
	cfg_set8(pci, PCI_HEADER_TYPE, PCI_HEADER_TYPE_NORMAL, 0);

	/* BAR0/1: 64-bit non-prefetchable memory, the controller. */
	cfg_set32(pci, PCI_BASE_ADDRESS_0, PCI_BASE_ADDRESS_MEM_TYPE_64,
		  ~(bar0 - 1) & PCI_BASE_ADDRESS_MEM_MASK);
	cfg_set32(pci, PCI_BASE_ADDRESS_1, 0, 0xffffffff);
	/* BAR4: 32-bit non-prefetchable memory, MSI-X table and PBA. */
	cfg_set32(pci, PCI_BASE_ADDRESS_0 + 4 * NVMET_MDEV_MSIX_BAR,
		  PCI_BASE_ADDRESS_MEM_TYPE_32,
		  ~(bar4 - 1) & PCI_BASE_ADDRESS_MEM_MASK);

	cfg_set16(pci, PCI_SUBSYSTEM_VENDOR_ID, NVMET_MDEV_PCI_SUBVENDOR_ID, 0);
	cfg_set16(pci, PCI_SUBSYSTEM_ID, NVMET_MDEV_PCI_SUBDEVICE_ID, 0);
	cfg_set8(pci, PCI_CAPABILITY_LIST, NVMET_MDEV_CAP_PM, 0);
	cfg_set8(pci, PCI_INTERRUPT_LINE, 0, 0xff);
	cfg_set8(pci, PCI_INTERRUPT_PIN, 1, 0);		/* INTA# */
}

static void nvmet_mdev_pci_init_pm(struct nvmet_mdev_pci *pci)
{
	u32 pos = NVMET_MDEV_CAP_PM;

	cfg_set8(pci, pos + PCI_CAP_LIST_ID, PCI_CAP_ID_PM, 0);
	cfg_set8(pci, pos + PCI_CAP_LIST_NEXT, NVMET_MDEV_CAP_MSIX, 0);
	/* Version 3 (PCI PM 1.2), D0 and D3hot only, no PME. */
	cfg_set16(pci, pos + PCI_PM_PMC, FIELD_PREP(PCI_PM_CAP_VER_MASK, 3), 0);
	/* D0, No_Soft_Reset = 0: D3hot -> D0 resets the function. */
	cfg_set16(pci, pos + PCI_PM_CTRL, 0, PCI_PM_CTRL_STATE_MASK);
}

static void nvmet_mdev_pci_init_msix(struct nvmet_mdev_pci *pci,
				     u16 nr_vectors)
{
	u32 pos = NVMET_MDEV_CAP_MSIX;

	cfg_set8(pci, pos + PCI_CAP_LIST_ID, PCI_CAP_ID_MSIX, 0);
	cfg_set8(pci, pos + PCI_CAP_LIST_NEXT, NVMET_MDEV_CAP_EXP, 0);
	cfg_set16(pci, pos + PCI_MSIX_FLAGS, nr_vectors - 1,
		  PCI_MSIX_FLAGS_ENABLE | PCI_MSIX_FLAGS_MASKALL);
	cfg_set32(pci, pos + PCI_MSIX_TABLE, NVMET_MDEV_MSIX_BAR, 0);
	cfg_set32(pci, pos + PCI_MSIX_PBA,
		  NVMET_MDEV_PBA_OFFSET | NVMET_MDEV_MSIX_BAR, 0);
}

static void nvmet_mdev_pci_init_exp(struct nvmet_mdev_pci *pci)
{
	u32 pos = NVMET_MDEV_CAP_EXP;

	cfg_set8(pci, pos + PCI_CAP_LIST_ID, PCI_CAP_ID_EXP, 0);
	cfg_set8(pci, pos + PCI_CAP_LIST_NEXT, 0, 0);
	cfg_set16(pci, pos + PCI_EXP_FLAGS,
		  FIELD_PREP(PCI_EXP_FLAGS_VERS, 2) |
		  FIELD_PREP(PCI_EXP_FLAGS_TYPE, PCI_EXP_TYPE_ENDPOINT), 0);
	/* 128 byte max payload, role based error reporting, FLR. */
	cfg_set32(pci, pos + PCI_EXP_DEVCAP,
		  PCI_EXP_DEVCAP_RBER | PCI_EXP_DEVCAP_FLR, 0);
	/*
	 * Error reporting enables, relaxed ordering, payload and read request
	 * sizes, extended tags, no snoop: stored, without effect.  Initiate
	 * FLR is handled on write and reads as zero.
	 */
	cfg_set16(pci, pos + PCI_EXP_DEVCTL, PCI_EXP_DEVCTL_RELAX_EN |
		  PCI_EXP_DEVCTL_NOSNOOP_EN | PCI_EXP_DEVCTL_READRQ_512B,
		  PCI_EXP_DEVCTL_CERE | PCI_EXP_DEVCTL_NFERE |
		  PCI_EXP_DEVCTL_FERE | PCI_EXP_DEVCTL_URRE |
		  PCI_EXP_DEVCTL_RELAX_EN | PCI_EXP_DEVCTL_PAYLOAD |
		  PCI_EXP_DEVCTL_EXT_TAG | PCI_EXP_DEVCTL_NOSNOOP_EN |
		  PCI_EXP_DEVCTL_READRQ);
	cfg_set16(pci, pos + PCI_EXP_DEVSTA, 0, 0);
	/* An 8 GT/s x4 link, trained. */
	cfg_set32(pci, pos + PCI_EXP_LNKCAP, PCI_EXP_LNKCAP_SLS_8_0GB |
		  FIELD_PREP(PCI_EXP_LNKCAP_MLW, 4), 0);
	cfg_set16(pci, pos + PCI_EXP_LNKCTL, 0,
		  PCI_EXP_LNKCTL_ASPMC | PCI_EXP_LNKCTL_RCB |
		  PCI_EXP_LNKCTL_CCC | PCI_EXP_LNKCTL_ES);
	cfg_set16(pci, pos + PCI_EXP_LNKSTA, PCI_EXP_LNKSTA_CLS_8_0GB |
		  PCI_EXP_LNKSTA_NLW_X4, 0);
	cfg_set32(pci, pos + PCI_EXP_DEVCAP2, PCI_EXP_DEVCAP2_COMP_TMOUT_DIS, 0);
	cfg_set16(pci, pos + PCI_EXP_DEVCTL2, 0, PCI_EXP_DEVCTL2_COMP_TMOUT_DIS);
	cfg_set32(pci, pos + PCI_EXP_LNKCAP2, PCI_EXP_LNKCAP2_SLS_2_5GB |
		  PCI_EXP_LNKCAP2_SLS_5_0GB | PCI_EXP_LNKCAP2_SLS_8_0GB, 0);
	cfg_set16(pci, pos + PCI_EXP_LNKCTL2, PCI_EXP_LNKCTL2_TLS_8_0GT, 0);
}

/**
 * nvmet_mdev_pci_init() - reset the config space to its power-on state
 * @ctrl: the controller
 *
 * The MSI-X table size follows the nr_io_queues tunable, which can only
 * change while the device is not open, so the config space is built at
 * probe and rebuilt when the device is opened and on function resets.
 */
void nvmet_mdev_pci_init(struct nvmet_mdev_ctrl *ctrl)
{
	struct nvmet_mdev_pci *pci = &ctrl->pci;

	memset(pci, 0, sizeof(*pci));
	nvmet_mdev_pci_init_header(pci);
	nvmet_mdev_pci_init_pm(pci);
	nvmet_mdev_pci_init_msix(pci, ctrl->params.nr_io_queues + 1);
	nvmet_mdev_pci_init_exp(pci);
	/* Extended config space: a zero header ends the (empty) list. */
}

void nvmet_mdev_pci_read(struct nvmet_mdev_ctrl *ctrl, u32 off, void *buf,
			 u32 count)
{
	lockdep_assert_held(&ctrl->lock);
	if (WARN_ON_ONCE(off >= NVMET_MDEV_CFG_SIZE ||
			 count > NVMET_MDEV_CFG_SIZE - off)) {
		memset(buf, 0, count);
		return;
	}
	memcpy(buf, &ctrl->pci.cfg[off], count);
}

/* Whether the write [off, off + count) touches register byte @reg. */
static bool touches(u32 off, u32 count, u32 reg)
{
	return reg >= off && reg < off + count;
}

static void nvmet_mdev_pci_function_reset(struct nvmet_mdev_ctrl *ctrl)
{
	nvmet_mdev_ctrl_reset(ctrl);
	nvmet_mdev_pci_init(ctrl);
}

void nvmet_mdev_pci_write(struct nvmet_mdev_ctrl *ctrl, u32 off,
			  const void *buf, u32 count)
{
	struct nvmet_mdev_pci *pci = &ctrl->pci;
	u32 pmcsr = NVMET_MDEV_CAP_PM + PCI_PM_CTRL;
	u32 devctl = NVMET_MDEV_CAP_EXP + PCI_EXP_DEVCTL;
	u16 old_pm = cfg_get16(pci, pmcsr) & PCI_PM_CTRL_STATE_MASK;
	bool master = nvmet_mdev_bus_master(ctrl);
	const u8 *val = buf;
	bool flr = false;
	u16 new_pm;
	u32 i;

	lockdep_assert_held(&ctrl->lock);

	if (WARN_ON_ONCE(off >= NVMET_MDEV_CFG_SIZE ||
			 count > NVMET_MDEV_CFG_SIZE - off))
		return;

	/* Initiate Function Level Reset: bit 15 of Device Control. */
	if (touches(off, count, devctl + 1) &&
	    (val[devctl + 1 - off] & (PCI_EXP_DEVCTL_BCR_FLR >> 8)))
		flr = true;

	for (i = 0; i < count; i++) {
		u32 o = off + i;
		u8 wmask = pci->wmask[o];

		/* The data path reads PCI_COMMAND locklessly. */
		WRITE_ONCE(pci->cfg[o], (pci->cfg[o] & ~wmask) |
					(val[i] & wmask));
	}

	if (flr) {
		nvmet_mdev_pci_function_reset(ctrl);
		return;
	}

	if (nvmet_mdev_bus_master(ctrl) != master) {
		nvmet_mdev_bus_master_changed(ctrl);
		if (!master)
			nvmet_mdev_irq_flush_held(ctrl, true);
	}

	if (touches(off, count, PCI_COMMAND + 1) &&
	    !(cfg_get16(pci, PCI_COMMAND) & PCI_COMMAND_INTX_DISABLE))
		nvmet_mdev_irq_unmasked(ctrl);

	if (!touches(off, count, pmcsr))
		return;
	new_pm = cfg_get16(pci, pmcsr) & PCI_PM_CTRL_STATE_MASK;
	switch (new_pm) {
	case NVMET_MDEV_PM_D0:
		if (old_pm == NVMET_MDEV_PM_D3HOT)
			nvmet_mdev_pci_function_reset(ctrl);
		break;
	case NVMET_MDEV_PM_D3HOT:
		break;
	default:
		/* D1 or D2: the write is ignored. */
		pci->cfg[pmcsr] = (pci->cfg[pmcsr] & ~PCI_PM_CTRL_STATE_MASK) |
				  old_pm;
		break;
	}
}
