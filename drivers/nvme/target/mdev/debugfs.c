// SPDX-License-Identifier: GPL-2.0
/*
 * NVMe target vfio mediated device (mdev) transport: event counters in
 * debugfs, /sys/kernel/debug/nvmet-mdev/<mdev uuid>/stats.
 *
 * The counters are per CPU (the data path bumps them from any context
 * without a shared cache line) and start from zero each time the device
 * is opened; they keep their values after it is closed, so that what the
 * guest made the device do can be read once the VMM has exited.
 */
#include <linux/debugfs.h>
#include <linux/percpu.h>
#include <linux/seq_file.h>

#include "priv.h"

static const char * const nvmet_mdev_stat_names[NVMET_MDEV_NR_STATS] = {
	[NVMET_MDEV_STAT_COMMANDS]		= "commands",
	[NVMET_MDEV_STAT_SHADOW_COMMANDS]	= "shadow_doorbell_commands",
	[NVMET_MDEV_STAT_TRAPPED_WRITES]	= "trapped_doorbell_writes",
	[NVMET_MDEV_STAT_TRAP_COMMANDS]		= "trap_fetched_commands",
	[NVMET_MDEV_STAT_IRQS]			= "interrupts",
	[NVMET_MDEV_STAT_ENABLES]		= "enables",
	[NVMET_MDEV_STAT_SHUTDOWNS]		= "shutdowns",
	[NVMET_MDEV_STAT_PROBES]		= "moderation_probes",
	[NVMET_MDEV_STAT_PROBES_FAILED]		= "moderation_probes_failed",
	[NVMET_MDEV_STAT_DEFERRED_TRAPS]	= "deferred_traps",
	[NVMET_MDEV_STAT_HOLD_TIMEOUTS]		= "moderation_timeouts",
	[NVMET_MDEV_STAT_DB_FAULTS]		= "doorbell_faults",
	[NVMET_MDEV_STAT_COMPLETIONS]		= "completions",
	[NVMET_MDEV_STAT_SLEEPS]		= "sleeps",
	[NVMET_MDEV_STAT_WAKEUPS]		= "wakeups",
	[NVMET_MDEV_STAT_PIN_HITS]		= "pin_cache_hits",
	[NVMET_MDEV_STAT_PIN_MISSES]		= "pin_cache_misses",
	[NVMET_MDEV_STAT_DIRTY_PAGES]		= "dirty_pages_reported",
	[NVMET_MDEV_STAT_STOP_BUSY]		= "stop_waited_commands",
};

static struct dentry *nvmet_mdev_debugfs_root;

static int nvmet_mdev_stats_show(struct seq_file *m, void *unused)
{
	struct nvmet_mdev_ctrl *ctrl = m->private;
	unsigned long sum;
	int i, cpu;

	for (i = 0; i < NVMET_MDEV_NR_STATS; i++) {
		sum = 0;
		for_each_possible_cpu(cpu)
			sum += READ_ONCE(per_cpu_ptr(ctrl->stats, cpu)->val[i]);
		seq_printf(m, "%s %lu\n", nvmet_mdev_stat_names[i], sum);
	}
	return 0;
}
DEFINE_SHOW_ATTRIBUTE(nvmet_mdev_stats);

/**
 * nvmet_mdev_stats_reset() - start the counters from zero
 * @ctrl: the controller, not open (its data path is stopped)
 */
void nvmet_mdev_stats_reset(struct nvmet_mdev_ctrl *ctrl)
{
	int cpu;

	for_each_possible_cpu(cpu)
		memset(per_cpu_ptr(ctrl->stats, cpu), 0,
		       sizeof(struct nvmet_mdev_stats));
}

/* At probe, once the mdev's name (its UUID) is final. */
void nvmet_mdev_debugfs_add(struct nvmet_mdev_ctrl *ctrl)
{
	ctrl->debugfs = debugfs_create_dir(dev_name(&ctrl->mdev->dev),
					   nvmet_mdev_debugfs_root);
	debugfs_create_file("stats", 0400, ctrl->debugfs, ctrl,
			    &nvmet_mdev_stats_fops);
}

/* At remove; waits for readers of the files. */
void nvmet_mdev_debugfs_remove(struct nvmet_mdev_ctrl *ctrl)
{
	debugfs_remove_recursive(ctrl->debugfs);
	ctrl->debugfs = NULL;
}

void nvmet_mdev_debugfs_init(void)
{
	nvmet_mdev_debugfs_root = debugfs_create_dir("nvmet-mdev", NULL);
}

void nvmet_mdev_debugfs_exit(void)
{
	debugfs_remove_recursive(nvmet_mdev_debugfs_root);
}
