// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: the mdev driver and
 * the vfio device a user space VMM (QEMU's vfio-pci) drives.
 *
 * Regions follow the vfio-pci layout: config space, BAR0 (controller
 * registers, then the doorbell page, which may be mmapped), BAR4 (MSI-X
 * table and PBA, which the VMM emulates).  The region index lives in the
 * top bits of the file offset.
 */

#include <linux/mm.h>
#include <linux/module.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "priv.h"

/* ------------------------------------------------------------------ */
/* Region accesses                                                     */

/*
 * Config space, in pieces of up to 64 bytes.  The user copies happen
 * outside ctrl->lock: a user buffer that faults slowly must not hold up
 * the dma_unmap callbacks of the whole container.
 */
static int nvmet_mdev_cfg_rw(struct nvmet_mdev_ctrl *ctrl, char __user *ubuf,
			     size_t count, u64 off, bool write)
{
	u8 tmp[64];
	size_t done = 0;

	if (off >= NVMET_MDEV_CFG_SIZE || count > NVMET_MDEV_CFG_SIZE - off)
		return -EINVAL;

	while (done < count) {
		u32 n = min_t(size_t, count - done, sizeof(tmp));

		if (write) {
			if (copy_from_user(tmp, ubuf + done, n))
				return -EFAULT;
			mutex_lock(&ctrl->lock);
			nvmet_mdev_pci_write(ctrl, off + done, tmp, n);
			mutex_unlock(&ctrl->lock);
		} else {
			mutex_lock(&ctrl->lock);
			nvmet_mdev_pci_read(ctrl, off + done, tmp, n);
			mutex_unlock(&ctrl->lock);
			if (copy_to_user(ubuf + done, tmp, n))
				return -EFAULT;
		}
		done += n;
	}
	return 0;
}

/* BAR accesses: one naturally aligned 1, 2, 4 or 8 byte access. */
static bool nvmet_mdev_bar_access_ok(u64 off, size_t count, u32 size)
{
	if (count != 1 && count != 2 && count != 4 && count != 8)
		return false;
	return off < size && count <= size - off && IS_ALIGNED(off, count);
}

static int nvmet_mdev_bar0_rw(struct nvmet_mdev_ctrl *ctrl, char __user *ubuf,
			      size_t count, u64 off, bool write)
{
	u64 val = 0;

	if (!nvmet_mdev_bar_access_ok(off, count, NVMET_MDEV_BAR0_SIZE))
		return -EINVAL;

	/* Past the doorbell page: reserved, reads zero, writes ignored. */
	if (off >= NVME_REG_DBS + NVMET_MDEV_DB_SIZE) {
		if (!write && copy_to_user(ubuf, &val, count))
			return -EFAULT;
		return 0;
	}

	if (write && copy_from_user(&val, ubuf, count))
		return -EFAULT;

	mutex_lock(&ctrl->lock);
	/* Stopped for a migration: the state must not change. */
	if (write && ctrl->stopped) {
		mutex_unlock(&ctrl->lock);
		return -EBUSY;
	}
	if (write)
		nvmet_mdev_regs_write(ctrl, off, &val, count);
	else
		nvmet_mdev_regs_read(ctrl, off, &val, count);
	mutex_unlock(&ctrl->lock);
	if (write && off >= NVME_REG_DBS && count == 4)
		nvmet_mdev_db_written(ctrl, off - NVME_REG_DBS);

	if (!write && copy_to_user(ubuf, &val, count))
		return -EFAULT;
	return 0;
}

static int nvmet_mdev_bar4_rw(struct nvmet_mdev_ctrl *ctrl, char __user *ubuf,
			      size_t count, u64 off, bool write)
{
	u64 zero = 0;

	/* The VMM emulates the MSI-X table; ours reads zero. */
	if (!nvmet_mdev_bar_access_ok(off, count, NVMET_MDEV_MSIX_BAR_SIZE))
		return -EINVAL;
	if (!write && copy_to_user(ubuf, &zero, count))
		return -EFAULT;
	return 0;
}

static ssize_t nvmet_mdev_rw(struct vfio_device *vdev, char __user *ubuf,
			     size_t count, loff_t *ppos, bool write)
{
	struct nvmet_mdev_ctrl *ctrl = vdev_to_ctrl(vdev);
	u64 pos = *ppos, off = pos & NVMET_MDEV_REGION_MASK;
	int ret;

	switch (pos >> NVMET_MDEV_REGION_SHIFT) {
	case VFIO_PCI_CONFIG_REGION_INDEX:
		ret = nvmet_mdev_cfg_rw(ctrl, ubuf, count, off, write);
		break;
	case VFIO_PCI_BAR0_REGION_INDEX:
		ret = nvmet_mdev_bar0_rw(ctrl, ubuf, count, off, write);
		break;
	case VFIO_PCI_BAR0_REGION_INDEX + NVMET_MDEV_MSIX_BAR:
		ret = nvmet_mdev_bar4_rw(ctrl, ubuf, count, off, write);
		break;
	default:
		ret = -EINVAL;
		break;
	}

	return ret ? ret : count;
}

static ssize_t nvmet_mdev_read(struct vfio_device *vdev, char __user *ubuf,
			       size_t count, loff_t *ppos)
{
	return nvmet_mdev_rw(vdev, ubuf, count, ppos, false);
}

static ssize_t nvmet_mdev_write(struct vfio_device *vdev,
				const char __user *ubuf, size_t count,
				loff_t *ppos)
{
	/* The buffer is only read from; the helpers share one signature. */
	return nvmet_mdev_rw(vdev, (char __user *)ubuf, count, ppos, true);
}

/* ------------------------------------------------------------------ */
/* ioctls                                                              */

static int nvmet_mdev_get_region_info_caps(struct vfio_device *vdev,
					   struct vfio_region_info *info,
					   struct vfio_info_cap *caps)
{
	struct vfio_region_info_cap_sparse_mmap *sparse;
	size_t size;
	int ret;

	if (info->index >= VFIO_PCI_NUM_REGIONS)
		return -EINVAL;

	info->offset = NVMET_MDEV_REGION_OFFSET(info->index);
	info->flags = VFIO_REGION_INFO_FLAG_READ | VFIO_REGION_INFO_FLAG_WRITE;

	switch (info->index) {
	case VFIO_PCI_CONFIG_REGION_INDEX:
		info->size = NVMET_MDEV_CFG_SIZE;
		return 0;
	case VFIO_PCI_BAR0_REGION_INDEX + NVMET_MDEV_MSIX_BAR:
		info->size = NVMET_MDEV_MSIX_BAR_SIZE;
		return 0;
	case VFIO_PCI_BAR0_REGION_INDEX:
		info->size = NVMET_MDEV_BAR0_SIZE;
		break;
	default:
		info->size = 0;
		info->flags = 0;
		return 0;
	}

	if (!NVMET_MDEV_DB_MMAP || !vdev_to_ctrl(vdev)->db_mmap)
		return 0;

	/* Only the doorbell page of BAR0 can be mmapped. */
	size = struct_size(sparse, areas, 1);
	sparse = kzalloc(size, GFP_KERNEL);
	if (!sparse)
		return -ENOMEM;
	sparse->header.id = VFIO_REGION_INFO_CAP_SPARSE_MMAP;
	sparse->header.version = 1;
	sparse->nr_areas = 1;
	sparse->areas[0].offset = NVME_REG_DBS;
	sparse->areas[0].size = NVMET_MDEV_DB_SIZE;
	ret = vfio_info_add_capability(caps, &sparse->header, size);
	kfree(sparse);
	if (ret)
		return ret;

	info->flags |= VFIO_REGION_INFO_FLAG_MMAP;
	return 0;
}

static long nvmet_mdev_get_info(unsigned long arg)
{
	unsigned long minsz = offsetofend(struct vfio_device_info, num_irqs);
	struct vfio_device_info info;

	if (copy_from_user(&info, (void __user *)arg, minsz))
		return -EFAULT;
	if (info.argsz < minsz)
		return -EINVAL;

	info.flags = VFIO_DEVICE_FLAGS_PCI | VFIO_DEVICE_FLAGS_RESET;
	info.num_regions = VFIO_PCI_NUM_REGIONS;
	info.num_irqs = VFIO_PCI_NUM_IRQS;

	return copy_to_user((void __user *)arg, &info, minsz) ? -EFAULT : 0;
}

static long nvmet_mdev_get_irq_info(struct nvmet_mdev_ctrl *ctrl,
				    unsigned long arg)
{
	unsigned long minsz = offsetofend(struct vfio_irq_info, count);
	struct vfio_irq_info info;

	if (copy_from_user(&info, (void __user *)arg, minsz))
		return -EFAULT;
	if (info.argsz < minsz || info.index >= VFIO_PCI_NUM_IRQS)
		return -EINVAL;

	info.flags = VFIO_IRQ_INFO_EVENTFD;
	if (info.index == VFIO_PCI_INTX_IRQ_INDEX)
		info.flags |= VFIO_IRQ_INFO_MASKABLE | VFIO_IRQ_INFO_AUTOMASKED;
	else
		info.flags |= VFIO_IRQ_INFO_NORESIZE;
	mutex_lock(&ctrl->lock);
	info.count = nvmet_mdev_irq_count(ctrl, info.index);
	mutex_unlock(&ctrl->lock);

	return copy_to_user((void __user *)arg, &info, minsz) ? -EFAULT : 0;
}

static long nvmet_mdev_ioctl(struct vfio_device *vdev, unsigned int cmd,
			     unsigned long arg)
{
	struct nvmet_mdev_ctrl *ctrl = vdev_to_ctrl(vdev);
	long ret;

	switch (cmd) {
	case VFIO_DEVICE_GET_INFO:
		return nvmet_mdev_get_info(arg);
	case VFIO_DEVICE_GET_IRQ_INFO:
		return nvmet_mdev_get_irq_info(ctrl, arg);
	case VFIO_DEVICE_SET_IRQS:
		mutex_lock(&ctrl->lock);
		ret = nvmet_mdev_set_irqs(ctrl, arg);
		mutex_unlock(&ctrl->lock);
		return ret;
	case VFIO_DEVICE_RESET:
		mutex_lock(&ctrl->lock);
		/* Reset while still stopped: no DMA for what it fails. */
		nvmet_mdev_ctrl_reset(ctrl);
		nvmet_mdev_mig_reset(ctrl);
		mutex_unlock(&ctrl->lock);
		return 0;
	default:
		return -ENOTTY;
	}
}

/* ------------------------------------------------------------------ */
/* vfio_device_ops                                                     */

static int nvmet_mdev_init_dev(struct vfio_device *vdev)
{
	struct nvmet_mdev_ctrl *ctrl = vdev_to_ctrl(vdev);
	struct mdev_device *mdev = to_mdev_device(vdev->dev);
	int ret;

	ctrl->mdev = mdev;
	ctrl->port = container_of(mdev->type, struct nvmet_mdev_port, type);
	ctrl->stats = alloc_percpu(struct nvmet_mdev_stats);
	if (!ctrl->stats)
		return -ENOMEM;
	mutex_init(&ctrl->lock);
	mutex_init(&ctrl->dirty_lock);
	vdev->log_ops = &nvmet_mdev_log_ops;
	nvmet_mdev_irq_init(ctrl);

	nvmet_mdev_params_init(&ctrl->params);
	nvmet_mdev_host_identity(ctrl);
	nvmet_mdev_pci_init(ctrl);

	ret = nvmet_mdev_mig_init(ctrl);
	if (ret)
		goto out_destroy;
	ret = nvmet_mdev_ctrl_init(ctrl);
	if (ret)
		goto out_mig;
	return 0;

out_mig:
	nvmet_mdev_mig_uninit(ctrl);
out_destroy:
	mutex_destroy(&ctrl->dirty_lock);
	mutex_destroy(&ctrl->lock);
	free_percpu(ctrl->stats);
	return ret;
}

static void nvmet_mdev_release_dev(struct vfio_device *vdev)
{
	struct nvmet_mdev_ctrl *ctrl = vdev_to_ctrl(vdev);

	nvmet_mdev_ctrl_uninit(ctrl);
	nvmet_mdev_mig_uninit(ctrl);
	mutex_destroy(&ctrl->dirty_lock);
	mutex_destroy(&ctrl->lock);
	free_percpu(ctrl->stats);
}

static int nvmet_mdev_open_device(struct vfio_device *vdev)
{
	struct nvmet_mdev_ctrl *ctrl = vdev_to_ctrl(vdev);

	mutex_lock(&ctrl->lock);
	/* Tunables may have changed since probe: power up afresh. */
	nvmet_mdev_host_identity(ctrl);
	nvmet_mdev_mig_reset(ctrl);
	nvmet_mdev_pci_init(ctrl);
	nvmet_mdev_stats_reset(ctrl);
	switch (ctrl->params.doorbell_mmap) {
	case NVMET_MDEV_DB_MMAP_AUTO:
		/* Polling threads need a CPU the guest does not use. */
		ctrl->db_mmap = num_online_cpus() > 1 &&
				cpumask_weight(current->cpus_ptr) > 1;
		break;
	default:
		ctrl->db_mmap = ctrl->params.doorbell_mmap ==
				NVMET_MDEV_DB_MMAP_ON;
		break;
	}
	nvmet_mdev_ctrl_open(ctrl);
	ctrl->open = true;
	mutex_unlock(&ctrl->lock);
	return 0;
}

static void nvmet_mdev_close_device(struct vfio_device *vdev)
{
	struct nvmet_mdev_ctrl *ctrl = vdev_to_ctrl(vdev);

	mutex_lock(&ctrl->lock);
	/* Still stopped, if it was: no DMA for the commands it ends. */
	nvmet_mdev_ctrl_close(ctrl);
	nvmet_mdev_mig_reset(ctrl);
	nvmet_mdev_irq_release_all(ctrl);
	ctrl->open = false;
	mutex_unlock(&ctrl->lock);
	/* the data path has stopped: no more writes to log */
	nvmet_mdev_log_stop(vdev);
}

static void nvmet_mdev_request(struct vfio_device *vdev, unsigned int count)
{
	struct nvmet_mdev_ctrl *ctrl = vdev_to_ctrl(vdev);

	if (nvmet_mdev_irq_request(ctrl))
		return;
	if (!count)
		dev_notice(vdev->dev,
			   "No device request channel registered, blocked until released by user\n");
}

static void nvmet_mdev_vfio_dma_unmap(struct vfio_device *vdev, u64 iova,
				      u64 length)
{
	struct nvmet_mdev_ctrl *ctrl = vdev_to_ctrl(vdev);

	mutex_lock(&ctrl->lock);
	nvmet_mdev_dma_unmap(ctrl, iova, length);
	mutex_unlock(&ctrl->lock);
}

static const struct vfio_device_ops nvmet_mdev_dev_ops = {
	.name			= "vfio-nvmet-mdev",
	.init			= nvmet_mdev_init_dev,
	.release		= nvmet_mdev_release_dev,
	.open_device		= nvmet_mdev_open_device,
	.close_device		= nvmet_mdev_close_device,
	.read			= nvmet_mdev_read,
	.write			= nvmet_mdev_write,
	.ioctl			= nvmet_mdev_ioctl,
	.get_region_info_caps	= nvmet_mdev_get_region_info_caps,
	.mmap			= nvmet_mdev_mmap,
	.request		= nvmet_mdev_request,
	.dma_unmap		= nvmet_mdev_vfio_dma_unmap,
	.bind_iommufd		= vfio_iommufd_emulated_bind,
	.unbind_iommufd		= vfio_iommufd_emulated_unbind,
	.attach_ioas		= vfio_iommufd_emulated_attach_ioas,
	.detach_ioas		= vfio_iommufd_emulated_detach_ioas,
};

/* ------------------------------------------------------------------ */
/* The mdev driver                                                     */

static int nvmet_mdev_probe(struct mdev_device *mdev)
{
	struct nvmet_mdev_ctrl *ctrl;
	int ret;

	ctrl = vfio_alloc_device(nvmet_mdev_ctrl, vdev, &mdev->dev,
				 &nvmet_mdev_dev_ops);
	if (IS_ERR(ctrl))
		return PTR_ERR(ctrl);

	dev_set_drvdata(&mdev->dev, ctrl);
	ret = vfio_register_emulated_iommu_dev(&ctrl->vdev);
	if (ret) {
		dev_set_drvdata(&mdev->dev, NULL);
		vfio_put_device(&ctrl->vdev);
		return ret;
	}
	nvmet_mdev_debugfs_add(ctrl);
	return 0;
}

static void nvmet_mdev_remove(struct mdev_device *mdev)
{
	struct nvmet_mdev_ctrl *ctrl = dev_get_drvdata(&mdev->dev);

	/* Blocks until the user closed the device; see ->request. */
	vfio_unregister_group_dev(&ctrl->vdev);
	nvmet_mdev_debugfs_remove(ctrl);
	dev_set_drvdata(&mdev->dev, NULL);
	vfio_put_device(&ctrl->vdev);
}

struct mdev_driver nvmet_mdev_driver = {
	.device_api		= VFIO_DEVICE_API_PCI_STRING,
	.max_instances		= NVMET_MDEV_MAX_INSTANCES,
	.driver = {
		.name		= "nvmet-mdev",
		.owner		= THIS_MODULE,
		.mod_name	= KBUILD_MODNAME,
		.dev_groups	= nvmet_mdev_attr_groups,
	},
	.probe			= nvmet_mdev_probe,
	.remove			= nvmet_mdev_remove,
	.show_description	= nvmet_mdev_params_describe,
};

int nvmet_mdev_register_driver(void)
{
	return mdev_register_driver(&nvmet_mdev_driver);
}

void nvmet_mdev_unregister_driver(void)
{
	mdev_unregister_driver(&nvmet_mdev_driver);
}
