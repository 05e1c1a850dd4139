// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: module glue.
 *
 * Documentation/nvme/mdev.rst describes how to use it.
 */

#include <linux/module.h>

#include "priv.h"

/* The module alias below spells out the transport index. */
static_assert(NVMET_TRANSPORT_MDEV == 256);

static int __init nvmet_mdev_init(void)
{
	int ret;

	ret = nvmet_mdev_port_init();
	if (ret)
		return ret;
	nvmet_mdev_debugfs_init();

	ret = nvmet_mdev_register_driver();
	if (ret)
		goto out_port_exit;

	ret = nvmet_register_transport(&nvmet_mdev_fabrics_ops);
	if (ret)
		goto out_unregister_driver;

	return 0;

out_unregister_driver:
	nvmet_mdev_unregister_driver();
out_port_exit:
	nvmet_mdev_debugfs_exit();
	nvmet_mdev_port_exit();
	return ret;
}

static void __exit nvmet_mdev_exit(void)
{
	/* Enabled ports hold a module reference: none is left here. */
	nvmet_unregister_transport(&nvmet_mdev_fabrics_ops);
	nvmet_mdev_unregister_driver();
	nvmet_mdev_debugfs_exit();
	nvmet_mdev_port_exit();
}

module_init(nvmet_mdev_init);
module_exit(nvmet_mdev_exit);

MODULE_DESCRIPTION("NVMe target vfio mediated device transport");
MODULE_LICENSE("GPL");
MODULE_ALIAS("nvmet-transport-256");
MODULE_IMPORT_NS("IOMMUFD");
