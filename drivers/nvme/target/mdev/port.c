// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: ports.
 *
 * Every enabled nvmet port with addr_trtype "mdev" becomes an mdev parent
 * device, /sys/class/mdev_bus/nvmet-mdev-port<portid>, with one mdev type,
 * "nvmet-mdev-nvme".  Each mdev created from it is an NVMe controller of
 * that port.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/configfs.h>
#include <linux/slab.h>

#include "priv.h"

/* How long enabling a port waits for its previous incarnation to go. */
#define NVMET_MDEV_PORT_REMOVE_WAIT	(5 * HZ)

static const struct class nvmet_mdev_class = {
	.name = "nvmet-mdev",
};

/*
 * Ports whose parent is being torn down.  remove_port() runs under the
 * nvmet configuration lock, and removing an mdev parent waits until the
 * VMMs closed its mdevs, while a guest enabling a controller needs that
 * lock (nvmet_alloc_ctrl()): the teardown runs from a work item instead.
 */
static LIST_HEAD(nvmet_mdev_dying_ports);
static DEFINE_MUTEX(nvmet_mdev_ports_lock);
static struct workqueue_struct *nvmet_mdev_port_wq;

int nvmet_mdev_port_init(void)
{
	int ret;

	nvmet_mdev_port_wq = alloc_workqueue("nvmet-mdev-port", WQ_UNBOUND, 0);
	if (!nvmet_mdev_port_wq)
		return -ENOMEM;
	ret = class_register(&nvmet_mdev_class);
	if (ret)
		destroy_workqueue(nvmet_mdev_port_wq);
	return ret;
}

void nvmet_mdev_port_exit(void)
{
	destroy_workqueue(nvmet_mdev_port_wq);	/* flushes the teardowns */
	class_unregister(&nvmet_mdev_class);
}

static void nvmet_mdev_port_release(struct device *dev)
{
	kfree(container_of(dev, struct nvmet_mdev_port, dev));
}

static void nvmet_mdev_port_remove_work(struct work_struct *work)
{
	struct nvmet_mdev_port *port =
		container_of(work, struct nvmet_mdev_port, remove_work);

	/* Waits for the users of the mdevs to close them. */
	mdev_unregister_parent(&port->parent);
	config_item_put(&port->nport->group.cg_item);

	mutex_lock(&nvmet_mdev_ports_lock);
	list_del(&port->entry);
	mutex_unlock(&nvmet_mdev_ports_lock);
	complete_all(&port->removed);
	device_unregister(&port->dev);
}

/* Wait a little for an earlier port with the same id to be gone. */
static int nvmet_mdev_port_wait_removed(u16 portid)
{
	struct nvmet_mdev_port *old = NULL, *p;
	long left;

	mutex_lock(&nvmet_mdev_ports_lock);
	list_for_each_entry(p, &nvmet_mdev_dying_ports, entry) {
		if (p->portid == portid) {
			old = p;
			get_device(&old->dev);
			break;
		}
	}
	mutex_unlock(&nvmet_mdev_ports_lock);
	if (!old)
		return 0;

	left = wait_for_completion_timeout(&old->removed,
					   NVMET_MDEV_PORT_REMOVE_WAIT);
	put_device(&old->dev);
	if (!left) {
		pr_warn("port %u: mdevs of its previous enablement still open\n",
			portid);
		return -EBUSY;
	}
	return 0;
}

int nvmet_mdev_add_port(struct nvmet_port *nport)
{
	u16 portid = le16_to_cpu(nport->disc_addr.portid);
	struct nvmet_mdev_port *port;
	int ret;

	ret = nvmet_mdev_port_wait_removed(portid);
	if (ret)
		return ret;

	port = kzalloc_obj(*port);
	if (!port)
		return -ENOMEM;
	port->nport = nport;
	port->portid = portid;
	INIT_LIST_HEAD(&port->entry);
	INIT_WORK(&port->remove_work, nvmet_mdev_port_remove_work);
	init_completion(&port->removed);

	device_initialize(&port->dev);
	port->dev.class = &nvmet_mdev_class;
	port->dev.release = nvmet_mdev_port_release;
	ret = dev_set_name(&port->dev, "nvmet-mdev-port%u", portid);
	if (ret)
		goto out_put;
	ret = device_add(&port->dev);
	if (ret)
		goto out_put;

	port->type.sysfs_name = "nvme";
	port->type.pretty_name = "NVMe controller";
	port->types[0] = &port->type;
	ret = mdev_register_parent(&port->parent, &port->dev,
				   &nvmet_mdev_driver, port->types,
				   ARRAY_SIZE(port->types));
	if (ret)
		goto out_del;

	/* Keep the nvmet port around until the teardown is done with it. */
	config_item_get(&nport->group.cg_item);
	nport->priv = port;
	return 0;

out_del:
	device_del(&port->dev);
out_put:
	put_device(&port->dev);
	return ret;
}

/*
 * Called with the nvmet configuration lock held: mark the port dying so
 * that no new nvmet controller is made for it, and leave removing the
 * parent, which removes its mdevs and so waits until their users closed
 * them (each is asked to through the vfio request eventfd), to a work item.
 */
void nvmet_mdev_remove_port(struct nvmet_port *nport)
{
	struct nvmet_mdev_port *port = nport->priv;

	if (!port)
		return;
	WRITE_ONCE(port->dying, true);
	nport->priv = NULL;

	mutex_lock(&nvmet_mdev_ports_lock);
	list_add_tail(&port->entry, &nvmet_mdev_dying_ports);
	mutex_unlock(&nvmet_mdev_ports_lock);
	queue_work(nvmet_mdev_port_wq, &port->remove_work);
}

int nvmet_mdev_port_subsysnqn(struct nvmet_mdev_port *port, const char *want,
			      char *nqn)
{
	if (READ_ONCE(port->dying))
		return -ENODEV;
	return nvmet_port_subsys_nqn(port->nport, want, nqn);
}
