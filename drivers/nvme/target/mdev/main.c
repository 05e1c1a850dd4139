// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: module glue.
 */
#define pr_fmt(fmt) KBUILD_MODNAME ": " fmt

#include <linux/module.h>

static int __init nvmet_mdev_init(void)
{
	return 0;
}

static void __exit nvmet_mdev_exit(void)
{
}

module_init(nvmet_mdev_init);
module_exit(nvmet_mdev_exit);

MODULE_DESCRIPTION("NVMe target vfio mediated device transport");
MODULE_LICENSE("GPL");
