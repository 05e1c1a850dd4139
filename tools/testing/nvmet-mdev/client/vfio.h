/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Minimal VFIO user space access to one nvmet-mdev device: open it by mdev
 * UUID through the legacy container/group interface or through iommufd,
 * access its regions, wire its interrupts to eventfds and map memory for
 * its DMA.
 */
#ifndef NVMET_MDEV_CLIENT_VFIO_H
#define NVMET_MDEV_CLIENT_VFIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/vfio.h>

enum vfio_binding {
	VFIO_BINDING_CONTAINER,		/* /dev/vfio/vfio + /dev/vfio/<group> */
	VFIO_BINDING_IOMMUFD,		/* /dev/iommu + /dev/vfio/devices/vfioN */
};

#define VFIO_MAX_REGIONS	(VFIO_PCI_NUM_REGIONS)
#define VFIO_MAX_SPARSE		4

struct vfio_region {
	bool		valid;
	uint32_t	flags;
	uint64_t	size;
	uint64_t	offset;		/* of the region in the device fd */
	unsigned int	nr_sparse;	/* mmap-able areas (sparse capability) */
	struct {
		uint64_t offset;	/* inside the region */
		uint64_t size;
	} sparse[VFIO_MAX_SPARSE];
};

struct vfio_dev {
	enum vfio_binding binding;
	char		uuid[64];
	int		container_fd;	/* container binding */
	int		group_fd;
	int		iommufd;	/* iommufd binding */
	uint32_t	ioas_id;
	uint32_t	devid;
	int		device_fd;
	uint32_t	num_regions;
	uint32_t	num_irqs;
	uint32_t	device_flags;
	struct vfio_region regions[VFIO_MAX_REGIONS];
};

/*
 * Environment: NVMET_MDEV_UUID (required), NVMET_MDEV_BINDING
 * ("container", the default, or "iommufd").
 */
const char *vfio_env_uuid(void);
int vfio_env_binding(enum vfio_binding *binding);
const char *vfio_binding_name(enum vfio_binding binding);

/* Set to silence the error messages (e.g. while retrying an open). */
extern bool vfio_quiet;

/* Open/close; returns 0 or -errno (and prints why on stderr). */
int vfio_open(struct vfio_dev *dev, const char *uuid, enum vfio_binding b);
void vfio_close(struct vfio_dev *dev);

/* Region access through pread/pwrite on the device fd: 0 or -errno. */
int vfio_region_read(struct vfio_dev *dev, unsigned int index, uint64_t off,
		     void *buf, size_t len);
int vfio_region_write(struct vfio_dev *dev, unsigned int index, uint64_t off,
		      const void *buf, size_t len);
/* Map @len bytes at @off of a region (must lie in a sparse area); NULL on error. */
void *vfio_region_mmap(struct vfio_dev *dev, unsigned int index, uint64_t off,
		       size_t len);
/* Whether [off, off+len) of the region is inside an mmap-able area. */
bool vfio_region_mmap_ok(struct vfio_dev *dev, unsigned int index,
			 uint64_t off, size_t len);

/* Config space helpers; on error they return all ones. */
uint8_t vfio_cfg_read8(struct vfio_dev *dev, uint32_t off);
uint16_t vfio_cfg_read16(struct vfio_dev *dev, uint32_t off);
uint32_t vfio_cfg_read32(struct vfio_dev *dev, uint32_t off);
int vfio_cfg_write16(struct vfio_dev *dev, uint32_t off, uint16_t val);
int vfio_cfg_write32(struct vfio_dev *dev, uint32_t off, uint32_t val);
/* Offset of a standard PCI capability; 0 if none. */
uint16_t vfio_cfg_find_cap(struct vfio_dev *dev, uint8_t id);

/* Interrupts. */
int vfio_irq_count(struct vfio_dev *dev, unsigned int index, uint32_t *count,
		   uint32_t *flags);
/* Set eventfds for vectors [start, start + n); fd -1 detaches one vector. */
int vfio_irq_set_eventfds(struct vfio_dev *dev, unsigned int index,
			  uint32_t start, uint32_t n, const int *fds);
/* Disable all vectors of an index (count 0, DATA_NONE). */
int vfio_irq_disable(struct vfio_dev *dev, unsigned int index);
/* Raw VFIO_DEVICE_SET_IRQS for hostile tests: returns 0 or -errno. */
int vfio_irq_set_raw(struct vfio_dev *dev, uint32_t flags, unsigned int index,
		     uint32_t start, uint32_t count, const void *data,
		     size_t data_len);

/* VFIO_DEVICE_RESET: 0 or -errno. */
int vfio_reset(struct vfio_dev *dev);

/*
 * DMA map/unmap of user memory at a caller-chosen IOVA: 0 or -errno.
 * With vfio_dma_mirror set, every mapping is made (and unmade) in that
 * device's address space too: the same "guest memory" for a second device
 * a migration moves the controller to.
 */
extern struct vfio_dev *vfio_dma_mirror;
int vfio_dma_map(struct vfio_dev *dev, void *vaddr, uint64_t iova,
		 uint64_t size);
int vfio_dma_unmap(struct vfio_dev *dev, uint64_t iova, uint64_t size);

#endif /* NVMET_MDEV_CLIENT_VFIO_H */
