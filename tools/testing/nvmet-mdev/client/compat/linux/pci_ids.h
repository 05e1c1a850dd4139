/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The entries of the kernel's <linux/pci_ids.h> that the driver's model.h
 * (drivers/nvme/target/mdev/) uses, for the client, which includes it.
 */
#ifndef NVMET_MDEV_CLIENT_COMPAT_PCI_IDS_H
#define NVMET_MDEV_CLIENT_COMPAT_PCI_IDS_H

#define PCI_SUBVENDOR_ID_REDHAT_QUMRANET	0x1af4
#define PCI_SUBDEVICE_ID_QEMU			0x1100
#define PCI_VENDOR_ID_REDHAT			0x1b36

#endif
