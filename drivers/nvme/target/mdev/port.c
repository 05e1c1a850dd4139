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

#include <linux/slab.h>

#include "priv.h"

static const struct class nvmet_mdev_class = {
	.name = "nvmet-mdev",
};

int nvmet_mdev_port_init(void)
{
	return class_register(&nvmet_mdev_class);
}

void nvmet_mdev_port_exit(void)
{
	class_unregister(&nvmet_mdev_class);
}

static void nvmet_mdev_port_release(struct device *dev)
{
	kfree(container_of(dev, struct nvmet_mdev_port, dev));
}

int nvmet_mdev_add_port(struct nvmet_port *nport)
{
	struct nvmet_mdev_port *port;
	int ret;

	port = kzalloc_obj(*port);
	if (!port)
		return -ENOMEM;
	port->nport = nport;
	INIT_LIST_HEAD(&port->entry);

	device_initialize(&port->dev);
	port->dev.class = &nvmet_mdev_class;
	port->dev.release = nvmet_mdev_port_release;
	ret = dev_set_name(&port->dev, "nvmet-mdev-port%u",
			   le16_to_cpu(nport->disc_addr.portid));
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

	nport->priv = port;
	return 0;

out_del:
	device_del(&port->dev);
out_put:
	put_device(&port->dev);
	return ret;
}

/*
 * Called with the nvmet configuration lock held.  Removing the parent
 * removes its mdevs, which blocks until their users closed them: each
 * user is asked to release its device through the vfio request eventfd.
 */
void nvmet_mdev_remove_port(struct nvmet_port *nport)
{
	struct nvmet_mdev_port *port = nport->priv;

	if (!port)
		return;
	/* New controllers would wait for the nvmet config lock held here. */
	WRITE_ONCE(port->dying, true);
	mdev_unregister_parent(&port->parent);
	nport->priv = NULL;
	device_unregister(&port->dev);
}

int nvmet_mdev_port_subsysnqn(struct nvmet_mdev_port *port, const char *want,
			      char *nqn)
{
	if (READ_ONCE(port->dying))
		return -ENODEV;
	return nvmet_port_subsys_nqn(port->nport, want, nqn);
}
