/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Just enough of the kernel's <linux/sizes.h> for the driver's model.h
 * (drivers/nvme/target/mdev/), which the client includes.
 */
#ifndef NVMET_MDEV_CLIENT_COMPAT_SIZES_H
#define NVMET_MDEV_CLIENT_COMPAT_SIZES_H

#define SZ_1K	0x00000400
#define SZ_2K	0x00000800
#define SZ_4K	0x00001000
#define SZ_8K	0x00002000
#define SZ_16K	0x00004000
#define SZ_32K	0x00008000
#define SZ_64K	0x00010000
#define SZ_1M	0x00100000

#endif
