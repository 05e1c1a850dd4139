// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: the per-mdev tunables,
 * sysfs attributes of the mdev device that can only be written while no
 * VMM has it open.  A new value takes effect at the next open.  The ABI is
 * in Documentation/ABI/testing/sysfs-bus-mdev-devices-nvmet-mdev.
 */

#include <linux/ctype.h>
#include <linux/sysfs.h>

#include "priv.h"

static struct nvmet_mdev_ctrl *dev_to_ctrl(struct device *dev)
{
	return dev_get_drvdata(dev);
}

/**
 * struct nvmet_mdev_uint_attr - a numeric tunable
 * @dattr: its sysfs attribute
 * @offset: where it lives in struct nvmet_mdev_params (a u32)
 * @def: its value in a new mdev
 * @min: the smallest value a write may set
 * @max: the largest value a write may set
 */
struct nvmet_mdev_uint_attr {
	struct device_attribute	dattr;
	size_t			offset;
	u32			def;
	u32			min;
	u32			max;
};

static u32 *nvmet_mdev_uint(struct nvmet_mdev_params *p,
			    const struct nvmet_mdev_uint_attr *a)
{
	return (void *)p + a->offset;
}

static ssize_t nvmet_mdev_uint_show(struct device *dev,
				    struct device_attribute *dattr, char *buf)
{
	struct nvmet_mdev_uint_attr *a =
		container_of(dattr, struct nvmet_mdev_uint_attr, dattr);
	struct nvmet_mdev_ctrl *ctrl = dev_to_ctrl(dev);

	guard(mutex)(&ctrl->lock);
	return sysfs_emit(buf, "%u\n", *nvmet_mdev_uint(&ctrl->params, a));
}

static ssize_t nvmet_mdev_uint_store(struct device *dev,
				     struct device_attribute *dattr,
				     const char *buf, size_t count)
{
	struct nvmet_mdev_uint_attr *a =
		container_of(dattr, struct nvmet_mdev_uint_attr, dattr);
	struct nvmet_mdev_ctrl *ctrl = dev_to_ctrl(dev);
	u32 val;
	int ret;

	ret = kstrtou32(buf, 0, &val);
	if (ret)
		return ret;
	if (val < a->min || val > a->max)
		return -EINVAL;

	guard(mutex)(&ctrl->lock);
	if (ctrl->open)
		return -EBUSY;
	*nvmet_mdev_uint(&ctrl->params, a) = val;
	return count;
}

#define NVMET_MDEV_UINT_ATTR(_name, _def, _min, _max)			\
static struct nvmet_mdev_uint_attr nvmet_mdev_attr_##_name = {		\
	.dattr	= {							\
		.attr	= { .name = __stringify(_name), .mode = 0644 },	\
		.show	= nvmet_mdev_uint_show,				\
		.store	= nvmet_mdev_uint_store,			\
	},								\
	.offset	= offsetof(struct nvmet_mdev_params, _name),		\
	.def	= _def,							\
	.min	= _min,							\
	.max	= _max,							\
}

NVMET_MDEV_UINT_ATTR(nr_io_queues, NVMET_MDEV_DEF_IO_QUEUES, 1,
		     NVMET_MDEV_MAX_IO_QUEUES);
NVMET_MDEV_UINT_ATTR(max_queue_entries, NVMET_MDEV_DEF_QUEUE_ENTRIES,
		     NVMET_MDEV_MIN_QUEUE_ENTRIES, NVMET_MDEV_MAX_QUEUE_ENTRIES);
NVMET_MDEV_UINT_ATTR(mdts, NVMET_MDEV_DEF_MDTS, 1, NVMET_MDEV_MAX_MDTS);
NVMET_MDEV_UINT_ATTR(poll_idle_us, NVMET_MDEV_DEF_POLL_IDLE_US, 0,
		     USEC_PER_SEC);

/* nvmet_mdev_uint() accesses them as u32s. */
static_assert(sizeof_field(struct nvmet_mdev_params, nr_io_queues) == sizeof(u32));
static_assert(sizeof_field(struct nvmet_mdev_params, max_queue_entries) == sizeof(u32));
static_assert(sizeof_field(struct nvmet_mdev_params, mdts) == sizeof(u32));
static_assert(sizeof_field(struct nvmet_mdev_params, poll_idle_us) == sizeof(u32));

static const struct nvmet_mdev_uint_attr * const nvmet_mdev_uint_attrs[] = {
	&nvmet_mdev_attr_nr_io_queues,
	&nvmet_mdev_attr_max_queue_entries,
	&nvmet_mdev_attr_mdts,
	&nvmet_mdev_attr_poll_idle_us,
};

static const char * const nvmet_mdev_db_mmap_names[] = {
	[NVMET_MDEV_DB_MMAP_AUTO]	= "auto",
	[NVMET_MDEV_DB_MMAP_OFF]	= "off",
	[NVMET_MDEV_DB_MMAP_ON]		= "on",
};

static ssize_t doorbell_mmap_show(struct device *dev,
				  struct device_attribute *attr, char *buf)
{
	struct nvmet_mdev_ctrl *ctrl = dev_to_ctrl(dev);

	guard(mutex)(&ctrl->lock);
	return sysfs_emit(buf, "%s\n",
			  nvmet_mdev_db_mmap_names[ctrl->params.doorbell_mmap]);
}

static ssize_t doorbell_mmap_store(struct device *dev,
				   struct device_attribute *attr,
				   const char *buf, size_t count)
{
	struct nvmet_mdev_ctrl *ctrl = dev_to_ctrl(dev);
	int ret;

	ret = sysfs_match_string(nvmet_mdev_db_mmap_names, buf);
	if (ret < 0)
		return ret;

	guard(mutex)(&ctrl->lock);
	if (ctrl->open)
		return -EBUSY;
	ctrl->params.doorbell_mmap = ret;
	return count;
}
static DEVICE_ATTR_RW(doorbell_mmap);

static ssize_t shadow_doorbells_show(struct device *dev,
				     struct device_attribute *attr, char *buf)
{
	struct nvmet_mdev_ctrl *ctrl = dev_to_ctrl(dev);

	guard(mutex)(&ctrl->lock);
	return sysfs_emit(buf, "%d\n", ctrl->params.shadow_doorbells);
}

static ssize_t shadow_doorbells_store(struct device *dev,
				      struct device_attribute *attr,
				      const char *buf, size_t count)
{
	struct nvmet_mdev_ctrl *ctrl = dev_to_ctrl(dev);
	bool val;
	int ret;

	ret = kstrtobool(buf, &val);
	if (ret)
		return ret;

	guard(mutex)(&ctrl->lock);
	if (ctrl->open)
		return -EBUSY;
	ctrl->params.shadow_doorbells = val;
	return count;
}
static DEVICE_ATTR_RW(shadow_doorbells);

/* An NQN tunable (@nqn, NVMF_NQN_SIZE + 1 bytes): empty or printable. */
static ssize_t nvmet_mdev_nqn_store(struct nvmet_mdev_ctrl *ctrl,
				    const char *buf, size_t count, char *nqn)
{
	size_t len = strcspn(buf, "\n");
	size_t i;

	if (len >= NVMF_NQN_SIZE)
		return -EINVAL;
	for (i = 0; i < len; i++)
		if (!isgraph(buf[i]))
			return -EINVAL;

	guard(mutex)(&ctrl->lock);
	if (ctrl->open)
		return -EBUSY;
	memcpy(nqn, buf, len);
	nqn[len] = '\0';
	return count;
}

static ssize_t subsysnqn_show(struct device *dev,
			      struct device_attribute *attr, char *buf)
{
	struct nvmet_mdev_ctrl *ctrl = dev_to_ctrl(dev);

	guard(mutex)(&ctrl->lock);
	return sysfs_emit(buf, "%s\n", ctrl->params.subsysnqn);
}

static ssize_t subsysnqn_store(struct device *dev,
			       struct device_attribute *attr,
			       const char *buf, size_t count)
{
	/* Empty: the port's only subsystem. */
	return nvmet_mdev_nqn_store(dev_to_ctrl(dev), buf, count,
				    dev_to_ctrl(dev)->params.subsysnqn);
}
static DEVICE_ATTR_RW(subsysnqn);

/**
 * nvmet_mdev_host_identity() - the host NQN and host ID in use
 * @ctrl: the controller (ctrl->lock held, or probe)
 *
 * The hostnqn and hostid tunables, or for those not set, the ones the
 * mdev's UUID gives ("nqn.2014-08.org.nvmexpress:uuid:<uuid>", <uuid>).
 * A migration carries a guest between mdevs of the same host identity
 * only (state.c), which the administrator gives them: a VMM cannot
 * connect as another host, whose access and reservations are its own.
 */
void nvmet_mdev_host_identity(struct nvmet_mdev_ctrl *ctrl)
{
	char uuid[UUID_STRING_LEN + 1];

	snprintf(uuid, sizeof(uuid), "%pUl", &ctrl->mdev->uuid);
	if (ctrl->params.hostnqn[0])
		strscpy(ctrl->hostnqn, ctrl->params.hostnqn);
	else
		snprintf(ctrl->hostnqn, sizeof(ctrl->hostnqn),
			 "nqn.2014-08.org.nvmexpress:uuid:%s", uuid);
	if (!uuid_is_null(&ctrl->params.hostid))
		uuid_copy(&ctrl->hostid, &ctrl->params.hostid);
	else if (uuid_parse(uuid, &ctrl->hostid))
		uuid_copy(&ctrl->hostid, &uuid_null);	/* cannot happen */
}

static ssize_t hostnqn_show(struct device *dev, struct device_attribute *attr,
			    char *buf)
{
	struct nvmet_mdev_ctrl *ctrl = dev_to_ctrl(dev);

	guard(mutex)(&ctrl->lock);
	nvmet_mdev_host_identity(ctrl);
	return sysfs_emit(buf, "%s\n", ctrl->hostnqn);
}

static ssize_t hostnqn_store(struct device *dev, struct device_attribute *attr,
			     const char *buf, size_t count)
{
	/* Empty: the mdev's own. */
	return nvmet_mdev_nqn_store(dev_to_ctrl(dev), buf, count,
				    dev_to_ctrl(dev)->params.hostnqn);
}
static DEVICE_ATTR_RW(hostnqn);

static ssize_t hostid_show(struct device *dev, struct device_attribute *attr,
			   char *buf)
{
	struct nvmet_mdev_ctrl *ctrl = dev_to_ctrl(dev);

	guard(mutex)(&ctrl->lock);
	nvmet_mdev_host_identity(ctrl);
	return sysfs_emit(buf, "%pUb\n", &ctrl->hostid);
}

static ssize_t hostid_store(struct device *dev, struct device_attribute *attr,
			    const char *buf, size_t count)
{
	struct nvmet_mdev_ctrl *ctrl = dev_to_ctrl(dev);
	size_t len = strcspn(buf, "\n");
	char s[UUID_STRING_LEN + 1];
	uuid_t id = {};

	/* Empty: the mdev's own.  Otherwise a UUID. */
	if (len) {
		if (len != UUID_STRING_LEN)
			return -EINVAL;
		memcpy(s, buf, len);
		s[len] = '\0';
		if (uuid_parse(s, &id) || uuid_is_null(&id))
			return -EINVAL;
	}

	guard(mutex)(&ctrl->lock);
	if (ctrl->open)
		return -EBUSY;
	uuid_copy(&ctrl->params.hostid, &id);
	return count;
}
static DEVICE_ATTR_RW(hostid);

static struct attribute *nvmet_mdev_attrs[] = {
	&nvmet_mdev_attr_nr_io_queues.dattr.attr,
	&nvmet_mdev_attr_max_queue_entries.dattr.attr,
	&nvmet_mdev_attr_mdts.dattr.attr,
	&dev_attr_shadow_doorbells.attr,
	&dev_attr_doorbell_mmap.attr,
	&nvmet_mdev_attr_poll_idle_us.dattr.attr,
	&dev_attr_subsysnqn.attr,
	&dev_attr_hostnqn.attr,
	&dev_attr_hostid.attr,
	NULL
};

static const struct attribute_group nvmet_mdev_attr_group = {
	.attrs = nvmet_mdev_attrs,
};

const struct attribute_group *nvmet_mdev_attr_groups[] = {
	&nvmet_mdev_attr_group,
	NULL
};

/**
 * nvmet_mdev_params_init() - a new mdev's tunables: the defaults
 * @p: the tunables
 */
void nvmet_mdev_params_init(struct nvmet_mdev_params *p)
{
	unsigned int i;

	for (i = 0; i < ARRAY_SIZE(nvmet_mdev_uint_attrs); i++)
		*nvmet_mdev_uint(p, nvmet_mdev_uint_attrs[i]) =
			nvmet_mdev_uint_attrs[i]->def;
	p->shadow_doorbells = true;
	p->doorbell_mmap = NVMET_MDEV_DB_MMAP_AUTO;
	p->subsysnqn[0] = '\0';
	p->hostnqn[0] = '\0';
	uuid_copy(&p->hostid, &uuid_null);
}

/**
 * nvmet_mdev_params_describe() - the mdev type's description
 * @mtype: the type
 * @buf: the sysfs buffer
 *
 * Return: the length written.
 */
ssize_t nvmet_mdev_params_describe(struct mdev_type *mtype, char *buf)
{
	const struct nvmet_mdev_uint_attr *a;
	unsigned int i;
	int len;

	len = sysfs_emit(buf, "NVMe controller of an nvmet port\n");
	for (i = 0; i < ARRAY_SIZE(nvmet_mdev_uint_attrs); i++) {
		a = nvmet_mdev_uint_attrs[i];
		len += sysfs_emit_at(buf, len, "%s=%u (%u-%u)\n",
				     a->dattr.attr.name, a->def, a->min, a->max);
	}
	len += sysfs_emit_at(buf, len, "shadow_doorbells=1\n");
	len += sysfs_emit_at(buf, len, "doorbell_mmap=auto (auto, on, off)\n");
	return len;
}
