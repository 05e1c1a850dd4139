// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: live migration, the
 * VFIO migration protocol (v2) with the STOP_COPY and P2P features.
 *
 * RUNNING and RUNNING_P2P are the same here (the device does no
 * peer-to-peer DMA).  STOP stops the controller (nvmet_mdev_ctrl_stop()):
 * no fetching, no DMA, interrupts held, every command but the AERs
 * complete.  STOP_COPY hands the user a file to read the device's state
 * from, a snapshot taken at the arc; RESUMING one to write a state into,
 * loaded (and checked) at RESUMING -> STOP.  While the device is not
 * running its BAR0 refuses writes; config space and interrupts keep
 * working, as the VMM restores them while RESUMING.
 *
 * The state: a header (magic, version, length, CRC32C over it all), the
 * device model's part (config space, interrupts held), then the
 * controller's (state.c).  The dirty pages of the guest's memory are the
 * log's (dirty.c).
 */

#include <linux/anon_inodes.h>
#include <linux/crc32.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/slab.h>
#include <linux/uaccess.h>

#include "priv.h"

#define NVMET_MDEV_MIG_MAGIC	0x4e564d4d	/* "NVMM" */
#define NVMET_MDEV_MIG_VERSION	1

struct nvmet_mdev_mig_hdr {
	__le32	magic;
	__le16	version;
	__le16	rsvd0;
	__le32	len;		/* of the whole state, this header included */
	__le32	crc;		/* CRC32C of the whole state, this field 0 */
	/* the device model */
	u8	cfg[NVMET_MDEV_CFG_SIZE];
	__le64	msix_held[DIV_ROUND_UP(NVMET_MDEV_MAX_VECTORS, 64)];
	u8	intx_pending;
	u8	rsvd1[7];
	/* then the controller's state */
} __packed;

/* The file the state moves through: a snapshot, or what was written. */
struct nvmet_mdev_mig_file {
	struct file	*filp;
	struct mutex	lock;		/* the fields below */
	void		*buf;
	size_t		len;
	bool		disabled;	/* its arc has been left */
};

struct nvmet_mdev_mig {
	enum vfio_device_mig_state state;
	struct nvmet_mdev_mig_file *saving;
	struct nvmet_mdev_mig_file *resuming;
};

/* ------------------------------------------------------------------ */
/* The files                                                           */

static int nvmet_mdev_mig_release(struct inode *inode, struct file *filp)
{
	struct nvmet_mdev_mig_file *migf = filp->private_data;

	kvfree(migf->buf);
	mutex_destroy(&migf->lock);
	kfree(migf);
	return 0;
}

static ssize_t nvmet_mdev_mig_read(struct file *filp, char __user *ubuf,
				   size_t count, loff_t *ppos)
{
	struct nvmet_mdev_mig_file *migf = filp->private_data;
	ssize_t ret;

	if (ppos)
		return -ESPIPE;
	mutex_lock(&migf->lock);
	if (migf->disabled) {
		ret = -ENODEV;
		goto out;
	}
	if (filp->f_pos >= migf->len) {
		ret = 0;
		goto out;
	}
	count = min_t(size_t, count, migf->len - filp->f_pos);
	if (copy_to_user(ubuf, migf->buf + filp->f_pos, count)) {
		ret = -EFAULT;
		goto out;
	}
	filp->f_pos += count;
	ret = count;
out:
	mutex_unlock(&migf->lock);
	return ret;
}

static size_t nvmet_mdev_mig_max_len(void)
{
	return sizeof(struct nvmet_mdev_mig_hdr) + nvmet_mdev_state_max_size();
}

static ssize_t nvmet_mdev_mig_write(struct file *filp, const char __user *ubuf,
				    size_t count, loff_t *ppos)
{
	struct nvmet_mdev_mig_file *migf = filp->private_data;
	size_t end;
	ssize_t ret;
	void *buf;

	if (ppos)
		return -ESPIPE;
	mutex_lock(&migf->lock);
	if (migf->disabled) {
		ret = -ENODEV;
		goto out;
	}
	if (check_add_overflow((size_t)filp->f_pos, count, &end) ||
	    end > nvmet_mdev_mig_max_len()) {
		ret = -EFBIG;
		goto out;
	}
	if (end > migf->len) {
		buf = kvrealloc(migf->buf, end, GFP_KERNEL_ACCOUNT);
		if (!buf) {
			ret = -ENOMEM;
			goto out;
		}
		migf->buf = buf;
	}
	/* What a failed copy left is not part of the state. */
	if (copy_from_user(migf->buf + filp->f_pos, ubuf, count)) {
		ret = -EFAULT;
		goto out;
	}
	migf->len = max(migf->len, end);
	filp->f_pos += count;
	ret = count;
out:
	mutex_unlock(&migf->lock);
	return ret;
}

static const struct file_operations nvmet_mdev_save_fops = {
	.owner		= THIS_MODULE,
	.read		= nvmet_mdev_mig_read,
	.release	= nvmet_mdev_mig_release,
};

static const struct file_operations nvmet_mdev_resume_fops = {
	.owner		= THIS_MODULE,
	.write		= nvmet_mdev_mig_write,
	.release	= nvmet_mdev_mig_release,
};

/* A new file; the device keeps this reference until the arc is left. */
static struct nvmet_mdev_mig_file *
nvmet_mdev_mig_file(const struct file_operations *fops, int flags, void *buf,
		    size_t len)
{
	struct nvmet_mdev_mig_file *migf;

	migf = kzalloc_obj(*migf, GFP_KERNEL_ACCOUNT);
	if (!migf)
		return ERR_PTR(-ENOMEM);
	migf->filp = anon_inode_getfile("nvmet_mdev_mig", fops, migf, flags);
	if (IS_ERR(migf->filp)) {
		struct file *filp = migf->filp;

		kfree(migf);
		return ERR_CAST(filp);
	}
	mutex_init(&migf->lock);
	migf->buf = buf;
	migf->len = len;
	stream_open(migf->filp->f_inode, migf->filp);
	return migf;
}

/* The arc is left: reads and writes fail from now on. */
static void nvmet_mdev_mig_file_disable(struct nvmet_mdev_mig_file **pmigf)
{
	struct nvmet_mdev_mig_file *migf = *pmigf;

	if (!migf)
		return;
	mutex_lock(&migf->lock);
	migf->disabled = true;
	kvfree(migf->buf);
	migf->buf = NULL;
	migf->len = 0;
	mutex_unlock(&migf->lock);
	fput(migf->filp);
	*pmigf = NULL;
}

static void nvmet_mdev_mig_disable_files(struct nvmet_mdev_mig *mig)
{
	nvmet_mdev_mig_file_disable(&mig->saving);
	nvmet_mdev_mig_file_disable(&mig->resuming);
}

/* ------------------------------------------------------------------ */
/* Saving and loading                                                  */

static u32 nvmet_mdev_mig_crc(const void *buf, size_t len)
{
	const struct nvmet_mdev_mig_hdr *hdr = buf;
	u32 zero = 0, crc;

	crc = crc32c(~0, buf, offsetof(struct nvmet_mdev_mig_hdr, crc));
	crc = crc32c(crc, &zero, sizeof(zero));
	return ~crc32c(crc, &hdr->cfg, len - offsetof(struct nvmet_mdev_mig_hdr,
						      cfg));
}

static struct file *nvmet_mdev_mig_save(struct nvmet_mdev_ctrl *ctrl)
{
	DECLARE_BITMAP(held, NVMET_MDEV_MAX_VECTORS);
	struct nvmet_mdev_mig_file *migf;
	struct nvmet_mdev_mig_hdr *hdr;
	size_t len;
	void *buf;
	int i;

	buf = nvmet_mdev_state_save(ctrl, sizeof(*hdr), &len);
	if (IS_ERR(buf))
		return ERR_CAST(buf);
	len += sizeof(*hdr);
	hdr = buf;
	hdr->magic = cpu_to_le32(NVMET_MDEV_MIG_MAGIC);
	hdr->version = cpu_to_le16(NVMET_MDEV_MIG_VERSION);
	hdr->len = cpu_to_le32(len);
	memcpy(hdr->cfg, ctrl->pci.cfg, sizeof(hdr->cfg));
	hdr->intx_pending = nvmet_mdev_irq_get_held(ctrl, held);
	for (i = 0; i < NVMET_MDEV_MAX_VECTORS; i++)
		if (test_bit(i, held))
			hdr->msix_held[i / 64] |= cpu_to_le64(BIT_ULL(i % 64));
	hdr->crc = cpu_to_le32(nvmet_mdev_mig_crc(buf, len));

	migf = nvmet_mdev_mig_file(&nvmet_mdev_save_fops, O_RDONLY, buf, len);
	if (IS_ERR(migf)) {
		kvfree(buf);
		return ERR_CAST(migf);
	}
	ctrl->mig->saving = migf;
	get_file(migf->filp);		/* the user's */
	return migf->filp;
}

/*
 * Config space: the bits the guest cannot write must be this mdev's own
 * (same device, same MSI-X table size); ctrl->pci holds the power-on state.
 */
static bool nvmet_mdev_mig_cfg_ok(struct nvmet_mdev_ctrl *ctrl, const u8 *cfg)
{
	int i;

	for (i = 0; i < NVMET_MDEV_CFG_SIZE; i++)
		if ((cfg[i] ^ ctrl->pci.cfg[i]) & ~ctrl->pci.wmask[i])
			return false;
	return true;
}

static int nvmet_mdev_mig_load(struct nvmet_mdev_ctrl *ctrl,
			       struct nvmet_mdev_mig_file *migf)
{
	const struct nvmet_mdev_mig_hdr *hdr = migf->buf;
	DECLARE_BITMAP(held, NVMET_MDEV_MAX_VECTORS);
	size_t len = migf->len;
	int i, ret;

	if (len < sizeof(*hdr) ||
	    le32_to_cpu(hdr->magic) != NVMET_MDEV_MIG_MAGIC ||
	    le32_to_cpu(hdr->len) != len) {
		dev_info_ratelimited(ctrl->vdev.dev,
				     "migration: not a device state\n");
		return -EINVAL;
	}
	if (le16_to_cpu(hdr->version) != NVMET_MDEV_MIG_VERSION) {
		dev_info_ratelimited(ctrl->vdev.dev,
				     "migration: state version %u, not %u\n",
				     le16_to_cpu(hdr->version),
				     NVMET_MDEV_MIG_VERSION);
		return -EINVAL;
	}
	if (le32_to_cpu(hdr->crc) != nvmet_mdev_mig_crc(hdr, len)) {
		dev_info_ratelimited(ctrl->vdev.dev,
				     "migration: the state is corrupt (CRC)\n");
		return -EINVAL;
	}

	nvmet_mdev_pci_init(ctrl);
	if (!nvmet_mdev_mig_cfg_ok(ctrl, hdr->cfg)) {
		dev_info_ratelimited(ctrl->vdev.dev,
				     "migration: the source's config space is not this mdev's\n");
		return -EINVAL;
	}
	bitmap_zero(held, NVMET_MDEV_MAX_VECTORS);
	for (i = 0; i < NVMET_MDEV_MAX_VECTORS; i++)
		if (le64_to_cpu(hdr->msix_held[i / 64]) & BIT_ULL(i % 64))
			__set_bit(i, held);
	if (hdr->intx_pending > 1 ||
	    (le64_to_cpu(hdr->msix_held[NVMET_MDEV_MAX_VECTORS / 64]) >>
	     (NVMET_MDEV_MAX_VECTORS % 64)))
		return -EINVAL;

	ret = nvmet_mdev_state_load(ctrl, hdr + 1, len - sizeof(*hdr));
	if (ret) {
		if (ret == -EINVAL)
			dev_info_ratelimited(ctrl->vdev.dev,
					     "migration: the controller's state is invalid\n");
		return ret;
	}
	/* Stopped: the data path does not look at it before it runs. */
	memcpy(ctrl->pci.cfg, hdr->cfg, NVMET_MDEV_CFG_SIZE);
	nvmet_mdev_irq_set_held(ctrl, held, hdr->intx_pending);
	return 0;
}

/* ------------------------------------------------------------------ */
/* The state machine                                                   */

static struct file *nvmet_mdev_mig_step(struct nvmet_mdev_ctrl *ctrl,
					enum vfio_device_mig_state next)
{
	struct nvmet_mdev_mig *mig = ctrl->mig;
	enum vfio_device_mig_state cur = mig->state;
	struct nvmet_mdev_mig_file *migf;
	int ret;

	if ((cur == VFIO_DEVICE_STATE_RUNNING &&
	     next == VFIO_DEVICE_STATE_RUNNING_P2P) ||
	    (cur == VFIO_DEVICE_STATE_RUNNING_P2P &&
	     next == VFIO_DEVICE_STATE_RUNNING))
		return NULL;	/* no peer-to-peer DMA to stop */

	if (cur == VFIO_DEVICE_STATE_RUNNING_P2P &&
	    next == VFIO_DEVICE_STATE_STOP) {
		ret = nvmet_mdev_ctrl_stop(ctrl);
		return ret ? ERR_PTR(ret) : NULL;
	}
	if (cur == VFIO_DEVICE_STATE_STOP &&
	    next == VFIO_DEVICE_STATE_RUNNING_P2P) {
		nvmet_mdev_ctrl_run(ctrl);
		return NULL;
	}
	if (cur == VFIO_DEVICE_STATE_STOP &&
	    next == VFIO_DEVICE_STATE_STOP_COPY)
		return nvmet_mdev_mig_save(ctrl);
	if (cur == VFIO_DEVICE_STATE_STOP_COPY &&
	    next == VFIO_DEVICE_STATE_STOP) {
		nvmet_mdev_mig_file_disable(&mig->saving);
		return NULL;
	}
	if (cur == VFIO_DEVICE_STATE_STOP &&
	    next == VFIO_DEVICE_STATE_RESUMING) {
		/* What the device was doing gives way to the state to come. */
		nvmet_mdev_ctrl_reset(ctrl);
		migf = nvmet_mdev_mig_file(&nvmet_mdev_resume_fops, O_WRONLY,
					   NULL, 0);
		if (IS_ERR(migf))
			return ERR_CAST(migf);
		mig->resuming = migf;
		get_file(migf->filp);
		return migf->filp;
	}
	if (cur == VFIO_DEVICE_STATE_RESUMING &&
	    next == VFIO_DEVICE_STATE_STOP) {
		mutex_lock(&mig->resuming->lock);
		ret = nvmet_mdev_mig_load(ctrl, mig->resuming);
		mutex_unlock(&mig->resuming->lock);
		nvmet_mdev_mig_file_disable(&mig->resuming);
		if (ret) {
			/* No state and no file: only a reset leaves ERROR. */
			mig->state = VFIO_DEVICE_STATE_ERROR;
			return ERR_PTR(ret);
		}
		return NULL;
	}

	/* vfio_mig_get_next_state() gives no other arc for our flags. */
	WARN_ON_ONCE(1);
	return ERR_PTR(-EINVAL);
}

static struct file *
nvmet_mdev_set_state(struct vfio_device *vdev,
		     enum vfio_device_mig_state new_state)
{
	struct nvmet_mdev_ctrl *ctrl = vdev_to_ctrl(vdev);
	enum vfio_device_mig_state next;
	struct file *res = NULL;
	int ret;

	mutex_lock(&ctrl->lock);
	while (ctrl->mig->state != new_state) {
		/* Only a reset leaves ERROR (the core WARNs on arcs from it). */
		if (ctrl->mig->state == VFIO_DEVICE_STATE_ERROR) {
			res = ERR_PTR(-EINVAL);
			break;
		}
		ret = vfio_mig_get_next_state(vdev, ctrl->mig->state,
					      new_state, &next);
		if (ret) {
			res = ERR_PTR(ret);
			break;
		}
		res = nvmet_mdev_mig_step(ctrl, next);
		if (IS_ERR(res))
			break;
		ctrl->mig->state = next;
		if (WARN_ON_ONCE(res && next != new_state)) {
			fput(res);
			res = ERR_PTR(-EINVAL);
			break;
		}
	}
	mutex_unlock(&ctrl->lock);
	return res;
}

static int nvmet_mdev_get_state(struct vfio_device *vdev,
				enum vfio_device_mig_state *state)
{
	struct nvmet_mdev_ctrl *ctrl = vdev_to_ctrl(vdev);

	mutex_lock(&ctrl->lock);
	*state = ctrl->mig->state;
	mutex_unlock(&ctrl->lock);
	return 0;
}

static int nvmet_mdev_get_data_size(struct vfio_device *vdev,
				    unsigned long *stop_copy_length)
{
	struct nvmet_mdev_ctrl *ctrl = vdev_to_ctrl(vdev);

	mutex_lock(&ctrl->lock);
	*stop_copy_length = sizeof(struct nvmet_mdev_mig_hdr) +
			    nvmet_mdev_state_size(ctrl);
	mutex_unlock(&ctrl->lock);
	return 0;
}

static const struct vfio_migration_ops nvmet_mdev_mig_ops = {
	.migration_set_state	= nvmet_mdev_set_state,
	.migration_get_state	= nvmet_mdev_get_state,
	.migration_get_data_size = nvmet_mdev_get_data_size,
};

/**
 * nvmet_mdev_mig_init() - offer migration (vfio_device_ops.init)
 * @ctrl: the controller
 *
 * Return: 0 or -ENOMEM.
 */
int nvmet_mdev_mig_init(struct nvmet_mdev_ctrl *ctrl)
{
	ctrl->mig = kzalloc_obj(*ctrl->mig);
	if (!ctrl->mig)
		return -ENOMEM;
	ctrl->mig->state = VFIO_DEVICE_STATE_RUNNING;
	ctrl->vdev.migration_flags = VFIO_MIGRATION_STOP_COPY |
				     VFIO_MIGRATION_P2P;
	ctrl->vdev.mig_ops = &nvmet_mdev_mig_ops;
	return 0;
}

void nvmet_mdev_mig_uninit(struct nvmet_mdev_ctrl *ctrl)
{
	kfree(ctrl->mig);
	ctrl->mig = NULL;
}

/**
 * nvmet_mdev_mig_reset() - back to RUNNING, the files ended
 * @ctrl: the controller (ctrl->lock held)
 *
 * At open and close, and for VFIO_DEVICE_RESET (which the caller follows
 * with the reset itself): interrupts held while stopped are dropped.
 */
void nvmet_mdev_mig_reset(struct nvmet_mdev_ctrl *ctrl)
{
	lockdep_assert_held(&ctrl->lock);
	nvmet_mdev_mig_disable_files(ctrl->mig);
	ctrl->mig->state = VFIO_DEVICE_STATE_RUNNING;
	WRITE_ONCE(ctrl->stopped, false);
}
