/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Helpers for the NVMe target transports that are PCIe controllers seen
 * by a host (nvmet-pci-epf, nvmet-mdev): walking a command's data pointer.
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

unsigned int nvmet_pci_prp_count(u64 prp1, size_t len, u8 mps_shift);
u16 nvmet_pci_map_prps(const struct nvmet_pci_dptr *d, u64 prp1, u64 prp2,
		       size_t len);
u16 nvmet_pci_collect_sgl(const struct nvmet_pci_dptr *d,
			  const struct nvme_sgl_desc *sgl1, size_t len,
			  struct nvme_sgl_desc *descs, unsigned int max_descs,
			  unsigned int align, unsigned int *nr_descs);

#endif /* _NVMET_PCI_COMMON_H */
