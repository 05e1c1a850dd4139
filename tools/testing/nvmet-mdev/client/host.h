/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the host kernel spends on a device, for budget checks around
 * hostile cases.  The client runs as root in the test host VM, so it reads
 * the host's /proc and /sys directly.
 *
 * Memory: KASAN keeps freed objects in its quarantine, where they still
 * count as active slab objects, so call host_shrink() before each snapshot
 * that is compared for memory.  It writes 1 to
 * /sys/kernel/slab/kmalloc-<size>/shrink (kmem_cache_shrink() empties that
 * cache's share of the quarantine and flushes its per-CPU slabs).  It does
 * not drop the page cache: that moves MemAvailable only, is slow over the
 * VM's 9p root, and the budgets are on slab memory.
 *
 * Kernel threads: every thread (of any process) whose comm starts with
 * "nvmet-mdev" followed by a digit, i.e. the queue threads
 * "nvmet-mdev<cntlid>/<qid>" (comm is cut at 15 characters); the port
 * workqueue "nvmet-mdev-port" is not one of them.  A thread that exits
 * between two looks takes its CPU time with it.
 */
#ifndef NVMET_MDEV_CLIENT_HOST_H
#define NVMET_MDEV_CLIENT_HOST_H

#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <sys/types.h>

struct host_snap {
	uint64_t mem_available_kb;	/* /proc/meminfo MemAvailable */
	uint64_t slab_unreclaim_kb;	/* /proc/meminfo SUnreclaim */
	/* sum over /proc/slabinfo kmalloc-* caches: active_objs * objsize / 1024 */
	uint64_t kmalloc_kb;
	uint64_t mdev_thread_cpu_ms;	/* utime+stime of the nvmet-mdev threads */
	uint64_t kmsg_seq;		/* kernel log records logged so far (newest seq + 1) */
	uint64_t vm_locked_kb;		/* this process's VmLck (/proc/self/status) */
	uint64_t vm_pinned_kb;		/* this process's VmPin */
};

/* Shrink every kmalloc-* slab cache (see above). */
void host_shrink(void);
/* Fill @s: 0 or -errno (the first file that could not be read). */
int host_snap(struct host_snap *s);
/*
 * Print "# host: <what>: delta D (budget B)" and return whether
 * D <= B.  host_check() prints the values as well.
 */
bool host_within(const char *what, int64_t delta, int64_t budget);
bool host_check(const char *what, uint64_t before, uint64_t after,
		int64_t budget);
/* CPU time (ms) used by the nvmet-mdev threads over the next @ms ms (sleeps). */
uint64_t host_mdev_cpu_over(unsigned int ms);
/* Their CPU time (ms) so far. */
uint64_t host_mdev_cpu_ms(void);
/* Thread ids of the nvmet-mdev threads, up to @max: their number (or -errno). */
int host_mdev_tids(pid_t *tids, int max);
/* Kernel log records logged so far (newest /dev/kmsg seq + 1). */
uint64_t host_kmsg_seq(void);
/* Number of kernel log records since @seq (a host_kmsg_seq() value). */
uint64_t host_kmsg_since(uint64_t seq);
/* Print up to @max of the records since @seq, as "# kmsg: ..." lines. */
void host_kmsg_print(uint64_t seq, unsigned int max);
/* A "Name:  N kB" field of /proc/self/status, in kB (0 if missing). */
uint64_t host_status_kb(const char *name);

/*
 * Open for reading the file of the mdev named by NVMET_MDEV_UUID at @fmt,
 * a path with one %s for the UUID; NULL if it cannot be opened.
 */
FILE *host_mdev_fopen(const char *fmt);
/*
 * An event counter of that mdev (its debugfs "stats" file), or -1 if
 * unreadable.
 */
long host_mdev_stat(const char *name);

/* Write @s to the file at @path (sysfs, cgroupfs); 0 or -errno. */
int host_write_file(const char *path, const char *s);

#endif /* NVMET_MDEV_CLIENT_HOST_H */
