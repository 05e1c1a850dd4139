/* SPDX-License-Identifier: GPL-2.0 */
/*
 * NVMe target vfio mediated device (mdev) transport: the device model a
 * guest sees, and the driver's limits.  The device model is guest-visible
 * ABI; see Documentation/nvme/mdev.rst.  The test client in
 * tools/testing/nvmet-mdev/client includes this file too.
 */
#ifndef _NVMET_MDEV_MODEL_H
#define _NVMET_MDEV_MODEL_H

#include <linux/pci_ids.h>
#include <linux/sizes.h>

/* PCI identity: a Red Hat/Qumranet virtual device, NVMe I/O class. */
#define NVMET_MDEV_PCI_VENDOR_ID	PCI_VENDOR_ID_REDHAT
#define NVMET_MDEV_PCI_DEVICE_ID	0x0021		/* provisional, not QEMU's 0x0010 */
#define NVMET_MDEV_PCI_CLASS		0x010802	/* NVMe I/O controller */
#define NVMET_MDEV_PCI_REVISION		0x01
#define NVMET_MDEV_PCI_SUBVENDOR_ID	PCI_SUBVENDOR_ID_REDHAT_QUMRANET
#define NVMET_MDEV_PCI_SUBDEVICE_ID	PCI_SUBDEVICE_ID_QEMU

/* PCI configuration space: 4 KiB extended space. */
#define NVMET_MDEV_CFG_SIZE		4096

/*
 * BAR0 (64-bit memory): the controller register page, then from
 * NVME_REG_DBS one page of doorbells (CAP.DSTRD = 0, so 8 bytes per queue
 * pair) which user space may mmap, then reserved space up to the BAR size.
 */
#define NVMET_MDEV_BAR0_SIZE		SZ_16K
#define NVMET_MDEV_DB_SIZE		SZ_4K

/* BAR4 (32-bit memory): MSI-X table at 0, PBA at NVMET_MDEV_PBA_OFFSET. */
#define NVMET_MDEV_MSIX_BAR		4
#define NVMET_MDEV_MSIX_BAR_SIZE	SZ_8K
#define NVMET_MDEV_PBA_OFFSET		0x1000

/* Limits. */
#define NVMET_MDEV_MAX_INSTANCES	64	/* mdevs per nvmet port */
#define NVMET_MDEV_MAX_IO_QUEUES	64
#define NVMET_MDEV_MAX_VECTORS		(NVMET_MDEV_MAX_IO_QUEUES + 1)
#define NVMET_MDEV_MIN_QUEUE_ENTRIES	16
#define NVMET_MDEV_MAX_QUEUE_ENTRIES	4096
#define NVMET_MDEV_MAX_MDTS		10	/* 2^10 pages: 4 MiB */

/* Per-mdev defaults. */
#define NVMET_MDEV_DEF_IO_QUEUES	4
#define NVMET_MDEV_DEF_QUEUE_ENTRIES	1024
#define NVMET_MDEV_DEF_MDTS		8	/* 1 MiB */
#define NVMET_MDEV_DEF_POLL_IDLE_US	100

#endif /* _NVMET_MDEV_MODEL_H */
