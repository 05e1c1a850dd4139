// SPDX-License-Identifier: GPL-2.0
/*
 * Minimal VFIO user space access to one nvmet-mdev device.
 *
 * Two ways to get at the device:
 *  - container: /sys/bus/mdev/devices/<uuid>/iommu_group names the group,
 *    /dev/vfio/<group> is added to a /dev/vfio/vfio container with the
 *    type1 IOMMU backend, and VFIO_GROUP_GET_DEVICE_FD(<uuid>) opens it;
 *  - iommufd: /sys/bus/mdev/devices/<uuid>/vfio-dev/vfioN names the
 *    device cdev /dev/vfio/devices/vfioN, which is bound to /dev/iommu and
 *    attached to a freshly allocated IOAS.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/iommufd.h>
#include <linux/pci_regs.h>

#include "vfio.h"

bool vfio_quiet;

#define pr_err(fmt, ...) do {						\
	if (!vfio_quiet)						\
		fprintf(stderr, "vfio: " fmt "\n", ##__VA_ARGS__);	\
} while (0)

const char *vfio_env_uuid(void)
{
	return getenv("NVMET_MDEV_UUID");
}

int vfio_env_binding(enum vfio_binding *binding)
{
	const char *s = getenv("NVMET_MDEV_BINDING");

	if (!s || !*s || !strcmp(s, "container")) {
		*binding = VFIO_BINDING_CONTAINER;
		return 0;
	}
	if (!strcmp(s, "iommufd")) {
		*binding = VFIO_BINDING_IOMMUFD;
		return 0;
	}
	pr_err("NVMET_MDEV_BINDING=%s: want container or iommufd", s);
	return -EINVAL;
}

const char *vfio_binding_name(enum vfio_binding binding)
{
	return binding == VFIO_BINDING_IOMMUFD ? "iommufd" : "container";
}

static int open_container(struct vfio_dev *dev)
{
	char path[PATH_MAX], link[PATH_MAX];
	struct vfio_group_status status = { .argsz = sizeof(status) };
	unsigned long iommu_type;
	ssize_t n;
	int ret;

	snprintf(path, sizeof(path), "/sys/bus/mdev/devices/%s/iommu_group",
		 dev->uuid);
	n = readlink(path, link, sizeof(link) - 1);
	if (n < 0) {
		ret = -errno;
		pr_err("%s: %s", path, strerror(errno));
		return ret;
	}
	link[n] = 0;

	dev->container_fd = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
	if (dev->container_fd < 0) {
		ret = -errno;
		pr_err("/dev/vfio/vfio: %s", strerror(errno));
		return ret;
	}
	if (ioctl(dev->container_fd, VFIO_GET_API_VERSION) != VFIO_API_VERSION) {
		pr_err("unknown VFIO API version");
		return -EINVAL;
	}
	if (ioctl(dev->container_fd, VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) > 0) {
		iommu_type = VFIO_TYPE1v2_IOMMU;
	} else if (ioctl(dev->container_fd, VFIO_CHECK_EXTENSION, VFIO_TYPE1_IOMMU) > 0) {
		iommu_type = VFIO_TYPE1_IOMMU;
	} else {
		pr_err("no type1 IOMMU backend");
		return -ENODEV;
	}

	snprintf(path, sizeof(path), "/dev/vfio/%s", basename(link));
	dev->group_fd = open(path, O_RDWR | O_CLOEXEC);
	if (dev->group_fd < 0) {
		ret = -errno;
		pr_err("%s: %s", path, strerror(errno));
		return ret;
	}
	if (ioctl(dev->group_fd, VFIO_GROUP_GET_STATUS, &status)) {
		ret = -errno;
		pr_err("VFIO_GROUP_GET_STATUS: %s", strerror(errno));
		return ret;
	}
	if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE)) {
		pr_err("group %s is not viable", path);
		return -EBUSY;
	}
	if (ioctl(dev->group_fd, VFIO_GROUP_SET_CONTAINER, &dev->container_fd)) {
		ret = -errno;
		pr_err("VFIO_GROUP_SET_CONTAINER: %s", strerror(errno));
		return ret;
	}
	if (ioctl(dev->container_fd, VFIO_SET_IOMMU, iommu_type)) {
		ret = -errno;
		pr_err("VFIO_SET_IOMMU: %s", strerror(errno));
		return ret;
	}
	dev->device_fd = ioctl(dev->group_fd, VFIO_GROUP_GET_DEVICE_FD, dev->uuid);
	if (dev->device_fd < 0) {
		ret = -errno;
		pr_err("VFIO_GROUP_GET_DEVICE_FD(%s): %s", dev->uuid,
		       strerror(errno));
		return ret;
	}
	return 0;
}

static int find_cdev(const char *uuid, char *out, size_t len)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *dir;

	snprintf(path, sizeof(path), "/sys/bus/mdev/devices/%s/vfio-dev", uuid);
	dir = opendir(path);
	if (!dir) {
		int ret = -errno;

		pr_err("%s: %s", path, strerror(errno));
		return ret;
	}
	while ((de = readdir(dir))) {
		if (!strncmp(de->d_name, "vfio", 4)) {
			snprintf(out, len, "/dev/vfio/devices/%s", de->d_name);
			closedir(dir);
			return 0;
		}
	}
	closedir(dir);
	pr_err("%s: no vfioN entry", path);
	return -ENOENT;
}

static int open_iommufd(struct vfio_dev *dev)
{
	struct vfio_device_bind_iommufd bind = { .argsz = sizeof(bind) };
	struct vfio_device_attach_iommufd_pt attach = { .argsz = sizeof(attach) };
	struct iommu_ioas_alloc alloc = { .size = sizeof(alloc) };
	char path[PATH_MAX];
	int ret;

	ret = find_cdev(dev->uuid, path, sizeof(path));
	if (ret)
		return ret;
	dev->device_fd = open(path, O_RDWR | O_CLOEXEC);
	if (dev->device_fd < 0) {
		ret = -errno;
		pr_err("%s: %s", path, strerror(errno));
		return ret;
	}
	dev->iommufd = open("/dev/iommu", O_RDWR | O_CLOEXEC);
	if (dev->iommufd < 0) {
		ret = -errno;
		pr_err("/dev/iommu: %s", strerror(errno));
		return ret;
	}
	bind.iommufd = dev->iommufd;
	if (ioctl(dev->device_fd, VFIO_DEVICE_BIND_IOMMUFD, &bind)) {
		ret = -errno;
		pr_err("VFIO_DEVICE_BIND_IOMMUFD: %s", strerror(errno));
		return ret;
	}
	dev->devid = bind.out_devid;
	if (ioctl(dev->iommufd, IOMMU_IOAS_ALLOC, &alloc)) {
		ret = -errno;
		pr_err("IOMMU_IOAS_ALLOC: %s", strerror(errno));
		return ret;
	}
	dev->ioas_id = alloc.out_ioas_id;
	attach.pt_id = dev->ioas_id;
	if (ioctl(dev->device_fd, VFIO_DEVICE_ATTACH_IOMMUFD_PT, &attach)) {
		ret = -errno;
		pr_err("VFIO_DEVICE_ATTACH_IOMMUFD_PT: %s", strerror(errno));
		return ret;
	}
	return 0;
}

static void parse_sparse(struct vfio_region *r, struct vfio_region_info *info)
{
	struct vfio_info_cap_header *hdr;
	uint32_t off = info->cap_offset;

	if (!(info->flags & VFIO_REGION_INFO_FLAG_CAPS))
		return;
	while (off && off + sizeof(*hdr) <= info->argsz) {
		hdr = (void *)((char *)info + off);
		if (hdr->id == VFIO_REGION_INFO_CAP_SPARSE_MMAP) {
			struct vfio_region_info_cap_sparse_mmap *sp = (void *)hdr;
			uint32_t i;

			for (i = 0; i < sp->nr_areas && i < VFIO_MAX_SPARSE; i++) {
				r->sparse[i].offset = sp->areas[i].offset;
				r->sparse[i].size = sp->areas[i].size;
			}
			r->nr_sparse = i;
			return;
		}
		off = hdr->next;
	}
}

static int get_region_info(struct vfio_dev *dev, unsigned int index)
{
	struct vfio_region *r = &dev->regions[index];
	struct vfio_region_info *info;
	size_t sz = sizeof(*info);
	int ret = 0;

	info = calloc(1, sz);
	if (!info)
		return -ENOMEM;
	info->argsz = sz;
	info->index = index;
	if (ioctl(dev->device_fd, VFIO_DEVICE_GET_REGION_INFO, info)) {
		ret = -errno;
		goto out;
	}
	if (info->argsz > sz) {
		struct vfio_region_info *bigger;

		sz = info->argsz;
		bigger = realloc(info, sz);
		if (!bigger) {
			ret = -ENOMEM;
			goto out;
		}
		info = bigger;
		memset(info, 0, sz);
		info->argsz = sz;
		info->index = index;
		if (ioctl(dev->device_fd, VFIO_DEVICE_GET_REGION_INFO, info)) {
			ret = -errno;
			goto out;
		}
	}
	r->valid = true;
	r->flags = info->flags;
	r->size = info->size;
	r->offset = info->offset;
	r->nr_sparse = 0;
	parse_sparse(r, info);
	/* mmap flag without a sparse capability: the whole region. */
	if ((r->flags & VFIO_REGION_INFO_FLAG_MMAP) && !r->nr_sparse &&
	    !(r->flags & VFIO_REGION_INFO_FLAG_CAPS)) {
		r->sparse[0].offset = 0;
		r->sparse[0].size = r->size;
		r->nr_sparse = 1;
	}
out:
	free(info);
	return ret;
}

int vfio_open(struct vfio_dev *dev, const char *uuid, enum vfio_binding b)
{
	struct vfio_device_info info = { .argsz = sizeof(info) };
	unsigned int i;
	int ret;

	memset(dev, 0, sizeof(*dev));
	dev->container_fd = -1;
	dev->group_fd = -1;
	dev->iommufd = -1;
	dev->device_fd = -1;
	dev->binding = b;
	if (!uuid || !*uuid) {
		pr_err("no mdev UUID (set NVMET_MDEV_UUID)");
		return -EINVAL;
	}
	snprintf(dev->uuid, sizeof(dev->uuid), "%s", uuid);

	ret = b == VFIO_BINDING_IOMMUFD ? open_iommufd(dev) : open_container(dev);
	if (ret)
		goto err;

	if (ioctl(dev->device_fd, VFIO_DEVICE_GET_INFO, &info)) {
		ret = -errno;
		pr_err("VFIO_DEVICE_GET_INFO: %s", strerror(errno));
		goto err;
	}
	dev->device_flags = info.flags;
	dev->num_regions = info.num_regions;
	dev->num_irqs = info.num_irqs;
	if (!(info.flags & VFIO_DEVICE_FLAGS_PCI)) {
		pr_err("not a vfio-pci device (flags %#x)", info.flags);
		ret = -ENODEV;
		goto err;
	}
	for (i = 0; i < VFIO_MAX_REGIONS && i < info.num_regions; i++)
		get_region_info(dev, i);	/* absent regions stay invalid */
	if (!dev->regions[VFIO_PCI_CONFIG_REGION_INDEX].valid ||
	    !dev->regions[VFIO_PCI_BAR0_REGION_INDEX].valid) {
		pr_err("config space or BAR0 region missing");
		ret = -ENODEV;
		goto err;
	}
	return 0;
err:
	vfio_close(dev);
	return ret;
}

void vfio_close(struct vfio_dev *dev)
{
	if (dev->device_fd >= 0)
		close(dev->device_fd);
	if (dev->group_fd >= 0)
		close(dev->group_fd);
	if (dev->container_fd >= 0)
		close(dev->container_fd);
	if (dev->iommufd >= 0)
		close(dev->iommufd);
	dev->container_fd = -1;
	dev->group_fd = -1;
	dev->iommufd = -1;
	dev->device_fd = -1;
}

static struct vfio_region *region(struct vfio_dev *dev, unsigned int index)
{
	if (index >= VFIO_MAX_REGIONS || !dev->regions[index].valid)
		return NULL;
	return &dev->regions[index];
}

int vfio_region_read(struct vfio_dev *dev, unsigned int index, uint64_t off,
		     void *buf, size_t len)
{
	struct vfio_region *r = region(dev, index);
	ssize_t n;

	if (!r)
		return -EINVAL;
	n = pread(dev->device_fd, buf, len, r->offset + off);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

int vfio_region_write(struct vfio_dev *dev, unsigned int index, uint64_t off,
		      const void *buf, size_t len)
{
	struct vfio_region *r = region(dev, index);
	ssize_t n;

	if (!r)
		return -EINVAL;
	n = pwrite(dev->device_fd, buf, len, r->offset + off);
	if (n < 0)
		return -errno;
	return (size_t)n == len ? 0 : -EIO;
}

bool vfio_region_mmap_ok(struct vfio_dev *dev, unsigned int index,
			 uint64_t off, size_t len)
{
	struct vfio_region *r = region(dev, index);
	unsigned int i;

	if (!r || !(r->flags & VFIO_REGION_INFO_FLAG_MMAP))
		return false;
	for (i = 0; i < r->nr_sparse; i++)
		if (off >= r->sparse[i].offset &&
		    off + len <= r->sparse[i].offset + r->sparse[i].size)
			return true;
	return false;
}

void *vfio_region_mmap(struct vfio_dev *dev, unsigned int index, uint64_t off,
		       size_t len)
{
	struct vfio_region *r = region(dev, index);
	int prot = 0;
	void *p;

	if (!r || !vfio_region_mmap_ok(dev, index, off, len))
		return NULL;
	if (r->flags & VFIO_REGION_INFO_FLAG_READ)
		prot |= PROT_READ;
	if (r->flags & VFIO_REGION_INFO_FLAG_WRITE)
		prot |= PROT_WRITE;
	p = mmap(NULL, len, prot, MAP_SHARED, dev->device_fd, r->offset + off);
	return p == MAP_FAILED ? NULL : p;
}

uint8_t vfio_cfg_read8(struct vfio_dev *dev, uint32_t off)
{
	uint8_t v;

	if (vfio_region_read(dev, VFIO_PCI_CONFIG_REGION_INDEX, off, &v, 1))
		return 0xff;
	return v;
}

uint16_t vfio_cfg_read16(struct vfio_dev *dev, uint32_t off)
{
	uint16_t v;

	if (vfio_region_read(dev, VFIO_PCI_CONFIG_REGION_INDEX, off, &v, 2))
		return 0xffff;
	return v;	/* little-endian host assumed (x86-64) */
}

uint32_t vfio_cfg_read32(struct vfio_dev *dev, uint32_t off)
{
	uint32_t v;

	if (vfio_region_read(dev, VFIO_PCI_CONFIG_REGION_INDEX, off, &v, 4))
		return 0xffffffff;
	return v;
}

int vfio_cfg_write16(struct vfio_dev *dev, uint32_t off, uint16_t val)
{
	return vfio_region_write(dev, VFIO_PCI_CONFIG_REGION_INDEX, off, &val, 2);
}

int vfio_cfg_write32(struct vfio_dev *dev, uint32_t off, uint32_t val)
{
	return vfio_region_write(dev, VFIO_PCI_CONFIG_REGION_INDEX, off, &val, 4);
}

uint16_t vfio_cfg_find_cap(struct vfio_dev *dev, uint8_t id)
{
	uint8_t pos;
	int ttl = 48;

	if (!(vfio_cfg_read16(dev, PCI_STATUS) & PCI_STATUS_CAP_LIST))
		return 0;
	pos = vfio_cfg_read8(dev, PCI_CAPABILITY_LIST) & ~3;
	while (pos >= 0x40 && ttl--) {
		if (vfio_cfg_read8(dev, pos + PCI_CAP_LIST_ID) == id)
			return pos;
		pos = vfio_cfg_read8(dev, pos + PCI_CAP_LIST_NEXT) & ~3;
	}
	return 0;
}

int vfio_irq_count(struct vfio_dev *dev, unsigned int index, uint32_t *count,
		   uint32_t *flags)
{
	struct vfio_irq_info info = { .argsz = sizeof(info), .index = index };

	if (ioctl(dev->device_fd, VFIO_DEVICE_GET_IRQ_INFO, &info))
		return -errno;
	if (count)
		*count = info.count;
	if (flags)
		*flags = info.flags;
	return 0;
}

int vfio_irq_set_raw(struct vfio_dev *dev, uint32_t flags, unsigned int index,
		     uint32_t start, uint32_t count, const void *data,
		     size_t data_len)
{
	struct vfio_irq_set *set;
	size_t sz = sizeof(*set) + data_len;
	int ret = 0;

	set = calloc(1, sz);
	if (!set)
		return -ENOMEM;
	set->argsz = sz;
	set->flags = flags;
	set->index = index;
	set->start = start;
	set->count = count;
	if (data_len)
		memcpy(set->data, data, data_len);
	if (ioctl(dev->device_fd, VFIO_DEVICE_SET_IRQS, set))
		ret = -errno;
	free(set);
	return ret;
}

int vfio_irq_set_eventfds(struct vfio_dev *dev, unsigned int index,
			  uint32_t start, uint32_t n, const int *fds)
{
	return vfio_irq_set_raw(dev, VFIO_IRQ_SET_DATA_EVENTFD |
				VFIO_IRQ_SET_ACTION_TRIGGER, index, start, n,
				fds, n * sizeof(int32_t));
}

int vfio_irq_disable(struct vfio_dev *dev, unsigned int index)
{
	return vfio_irq_set_raw(dev, VFIO_IRQ_SET_DATA_NONE |
				VFIO_IRQ_SET_ACTION_TRIGGER, index, 0, 0,
				NULL, 0);
}

int vfio_reset(struct vfio_dev *dev)
{
	return ioctl(dev->device_fd, VFIO_DEVICE_RESET) ? -errno : 0;
}

static int iommufd_dma_map(struct vfio_dev *dev, void *vaddr, uint64_t iova,
			   uint64_t size)
{
	struct iommu_ioas_map map = {
		.size = sizeof(map),
		.flags = IOMMU_IOAS_MAP_FIXED_IOVA |
			 IOMMU_IOAS_MAP_READABLE |
			 IOMMU_IOAS_MAP_WRITEABLE,
		.ioas_id = dev->ioas_id,
		.user_va = (uintptr_t)vaddr,
		.length = size,
		.iova = iova,
	};

	return ioctl(dev->iommufd, IOMMU_IOAS_MAP, &map) ? -errno : 0;
}

static int type1_dma_map(struct vfio_dev *dev, void *vaddr, uint64_t iova,
			 uint64_t size)
{
	struct vfio_iommu_type1_dma_map map = {
		.argsz = sizeof(map),
		.flags = VFIO_DMA_MAP_FLAG_READ | VFIO_DMA_MAP_FLAG_WRITE,
		.vaddr = (uintptr_t)vaddr,
		.iova = iova,
		.size = size,
	};

	return ioctl(dev->container_fd, VFIO_IOMMU_MAP_DMA, &map) ?
		-errno : 0;
}

struct vfio_dev *vfio_dma_mirror;

static int __vfio_dma_map(struct vfio_dev *dev, void *vaddr, uint64_t iova,
			  uint64_t size)
{
	if (dev->binding == VFIO_BINDING_IOMMUFD)
		return iommufd_dma_map(dev, vaddr, iova, size);
	return type1_dma_map(dev, vaddr, iova, size);
}

int vfio_dma_map(struct vfio_dev *dev, void *vaddr, uint64_t iova,
		 uint64_t size)
{
	int ret = __vfio_dma_map(dev, vaddr, iova, size);

	if (ret || !vfio_dma_mirror || vfio_dma_mirror == dev)
		return ret;
	ret = __vfio_dma_map(vfio_dma_mirror, vaddr, iova, size);
	if (ret)
		vfio_dma_unmap(dev, iova, size);
	return ret;
}

static int iommufd_dma_unmap(struct vfio_dev *dev, uint64_t iova,
			     uint64_t size)
{
	struct iommu_ioas_unmap unmap = {
		.size = sizeof(unmap),
		.ioas_id = dev->ioas_id,
		.iova = iova,
		.length = size,
	};

	return ioctl(dev->iommufd, IOMMU_IOAS_UNMAP, &unmap) ? -errno : 0;
}

static int type1_dma_unmap(struct vfio_dev *dev, uint64_t iova, uint64_t size)
{
	struct vfio_iommu_type1_dma_unmap unmap = {
		.argsz = sizeof(unmap),
		.iova = iova,
		.size = size,
	};

	return ioctl(dev->container_fd, VFIO_IOMMU_UNMAP_DMA, &unmap) ?
		-errno : 0;
}

static int __vfio_dma_unmap(struct vfio_dev *dev, uint64_t iova,
			    uint64_t size)
{
	if (dev->binding == VFIO_BINDING_IOMMUFD)
		return iommufd_dma_unmap(dev, iova, size);
	return type1_dma_unmap(dev, iova, size);
}

int vfio_dma_unmap(struct vfio_dev *dev, uint64_t iova, uint64_t size)
{
	if (vfio_dma_mirror && vfio_dma_mirror != dev &&
	    vfio_dma_mirror->device_fd >= 0)
		__vfio_dma_unmap(vfio_dma_mirror, iova, size);
	return __vfio_dma_unmap(dev, iova, size);
}
