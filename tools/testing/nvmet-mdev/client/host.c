// SPDX-License-Identifier: GPL-2.0
/*
 * What the host kernel spends: slab memory, the nvmet-mdev threads' CPU
 * time, kernel log records and this process's pinned pages.  See host.h.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "host.h"

#define SLAB_DIR	"/sys/kernel/slab"
#define MDEV_COMM	"nvmet-mdev"

int host_write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

FILE *host_mdev_fopen(const char *fmt)
{
	const char *uuid = getenv("NVMET_MDEV_UUID");
	char path[256];

	snprintf(path, sizeof(path), fmt, uuid ? uuid : "");
	return fopen(path, "r");
}

long host_mdev_stat(const char *name)
{
	FILE *f = host_mdev_fopen("/sys/kernel/debug/nvmet-mdev/%s/stats");
	char key[64];
	long val, ret = -1;

	if (!f)
		return -1;
	while (fscanf(f, "%63s %ld", key, &val) == 2) {
		if (!strcmp(key, name)) {
			ret = val;
			break;
		}
	}
	fclose(f);
	return ret;
}

void host_shrink(void)
{
	char path[512];
	struct dirent *d;
	DIR *dir;

	dir = opendir(SLAB_DIR);
	if (!dir)
		return;
	while ((d = readdir(dir))) {
		/* Merged caches appear as symlinks to the real one. */
		if (d->d_type != DT_DIR || strncmp(d->d_name, "kmalloc-", 8))
			continue;
		snprintf(path, sizeof(path), SLAB_DIR "/%s/shrink", d->d_name);
		host_write_file(path, "1");
	}
	closedir(dir);
}

/* "Name:   N kB" lines (/proc/meminfo, /proc/self/status). */
static int field_kb(const char *path, const char *name, uint64_t *kb)
{
	size_t len = strlen(name);
	char line[256];
	int ret = -ENOENT;
	FILE *f;

	*kb = 0;
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (strncmp(line, name, len) || line[len] != ':')
			continue;
		*kb = strtoull(line + len + 1, NULL, 10);
		ret = 0;
		break;
	}
	fclose(f);
	return ret;
}

uint64_t host_status_kb(const char *name)
{
	uint64_t kb;

	field_kb("/proc/self/status", name, &kb);
	return kb;
}

static int kmalloc_kb(uint64_t *kb)
{
	unsigned long long active, num, objsize, bytes = 0;
	char line[512], name[128];
	FILE *f;

	*kb = 0;
	f = fopen("/proc/slabinfo", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%127s %llu %llu %llu", name, &active, &num,
			   &objsize) != 4)
			continue;	/* the two header lines */
		if (!strncmp(name, "kmalloc-", 8))
			bytes += active * objsize;
	}
	fclose(f);
	*kb = bytes / 1024;
	return 0;
}

/* ---- The nvmet-mdev threads ---- */

static bool is_mdev_comm(const char *comm)
{
	size_t len = strlen(MDEV_COMM);

	return !strncmp(comm, MDEV_COMM, len) && isdigit((unsigned char)comm[len]);
}

/*
 * /proc/<pid>/task/<tid>/stat: "tid (comm) state ..."; utime and stime
 * are fields 14 and 15.  Returns whether it is an nvmet-mdev thread.
 */
static bool read_thread(const char *path, uint64_t *ticks)
{
	char buf[1024], *comm, *end, *p;
	unsigned long long ut, st;
	ssize_t n;
	int fd, i;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	comm = strchr(buf, '(');
	end = strrchr(buf, ')');
	if (!comm || !end || end < comm)
		return false;
	*end = 0;
	if (!is_mdev_comm(comm + 1))
		return false;
	/* Fields from 3 (state) on; utime is the 12th of them. */
	p = end + 2;
	for (i = 3; i < 14 && p; i++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p || sscanf(p, "%llu %llu", &ut, &st) != 2)
		return false;
	*ticks = ut + st;
	return true;
}

struct mdev_thread {
	pid_t		tid;
	uint64_t	ticks;
};

/* Walk every thread of every process: up to @max of ours into @t. */
static int scan_threads(struct mdev_thread *t, int max)
{
	struct dirent *pd, *td;
	char path[600];
	DIR *proc, *task;
	int n = 0;

	proc = opendir("/proc");
	if (!proc)
		return -errno;
	while ((pd = readdir(proc))) {
		if (!isdigit((unsigned char)pd->d_name[0]))
			continue;
		snprintf(path, sizeof(path), "/proc/%s/task", pd->d_name);
		task = opendir(path);
		if (!task)
			continue;	/* exited meanwhile */
		while ((td = readdir(task))) {
			uint64_t ticks;

			if (!isdigit((unsigned char)td->d_name[0]))
				continue;
			snprintf(path, sizeof(path), "/proc/%s/task/%s/stat",
				 pd->d_name, td->d_name);
			if (!read_thread(path, &ticks))
				continue;
			if (n < max) {
				t[n].tid = atoi(td->d_name);
				t[n].ticks = ticks;
			}
			n++;
		}
		closedir(task);
	}
	closedir(proc);
	return n;
}

#define MAX_THREADS	1024

static uint64_t ticks_to_ms(uint64_t ticks)
{
	long hz = sysconf(_SC_CLK_TCK);

	return ticks * 1000 / (hz > 0 ? hz : 100);
}

uint64_t host_mdev_cpu_ms(void)
{
	static struct mdev_thread t[MAX_THREADS];
	uint64_t sum = 0;
	int i, n;

	n = scan_threads(t, MAX_THREADS);
	for (i = 0; i < n && i < MAX_THREADS; i++)
		sum += t[i].ticks;
	return ticks_to_ms(sum);
}

int host_mdev_tids(pid_t *tids, int max)
{
	static struct mdev_thread t[MAX_THREADS];
	int i, n;

	n = scan_threads(t, MAX_THREADS);
	for (i = 0; i < n && i < max && i < MAX_THREADS; i++)
		tids[i] = t[i].tid;
	return n;
}

uint64_t host_mdev_cpu_over(unsigned int ms)
{
	static struct mdev_thread a[MAX_THREADS], b[MAX_THREADS];
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	uint64_t sum = 0;
	int i, j, na, nb;

	na = scan_threads(a, MAX_THREADS);
	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
	nb = scan_threads(b, MAX_THREADS);
	if (na > MAX_THREADS)
		na = MAX_THREADS;
	if (nb > MAX_THREADS)
		nb = MAX_THREADS;
	/* Threads that exited meanwhile are lost; new ones count whole. */
	for (j = 0; j < nb; j++) {
		uint64_t before = 0;

		for (i = 0; i < na; i++)
			if (a[i].tid == b[j].tid) {
				before = a[i].ticks;
				break;
			}
		if (b[j].ticks > before)
			sum += b[j].ticks - before;
	}
	return ticks_to_ms(sum);
}

/* ---- Kernel log ---- */

/*
 * Read /dev/kmsg from its oldest record to its end: the seq after the
 * newest record.  With @print, print up to @max records from @from on.
 */
static uint64_t kmsg_walk(bool print, uint64_t from, unsigned int max)
{
	char buf[8192];
	uint64_t next = 0;
	int fd;

	fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0)
		return 0;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		unsigned long long seq;
		char *msg;

		if (n < 0) {
			if (errno == EPIPE)	/* overwritten under us */
				continue;
			break;			/* EAGAIN: the end */
		}
		if (n == 0)
			break;
		buf[n] = 0;
		/* "prio,seq,ts_usec,flags[,...];message\n" */
		if (sscanf(buf, "%*u,%llu,", &seq) != 1)
			continue;
		next = seq + 1;
		if (!print || seq < from || !max)
			continue;
		msg = strchr(buf, ';');
		msg = msg ? msg + 1 : buf;
		msg[strcspn(msg, "\n")] = 0;
		fprintf(stderr, "# kmsg: %s\n", msg);
		max--;
	}
	close(fd);
	return next;
}

uint64_t host_kmsg_seq(void)
{
	return kmsg_walk(false, 0, 0);
}

uint64_t host_kmsg_since(uint64_t seq)
{
	uint64_t now = host_kmsg_seq();

	return now > seq ? now - seq : 0;
}

void host_kmsg_print(uint64_t seq, unsigned int max)
{
	kmsg_walk(true, seq, max);
}

/* ---- Snapshots and budgets ---- */

int host_snap(struct host_snap *s)
{
	int ret;

	memset(s, 0, sizeof(*s));
	ret = field_kb("/proc/meminfo", "MemAvailable", &s->mem_available_kb);
	if (!ret)
		ret = field_kb("/proc/meminfo", "SUnreclaim",
			       &s->slab_unreclaim_kb);
	if (!ret)
		ret = kmalloc_kb(&s->kmalloc_kb);
	if (!ret)
		ret = field_kb("/proc/self/status", "VmLck", &s->vm_locked_kb);
	if (!ret)
		ret = field_kb("/proc/self/status", "VmPin", &s->vm_pinned_kb);
	s->mdev_thread_cpu_ms = host_mdev_cpu_ms();
	s->kmsg_seq = host_kmsg_seq();
	return ret;
}

bool host_within(const char *what, int64_t delta, int64_t budget)
{
	bool ok = delta <= budget;

	fprintf(stderr, "# host: %s: delta %" PRId64 " (budget %" PRId64 ")%s\n",
		what, delta, budget, ok ? "" : " OVER BUDGET");
	return ok;
}

bool host_check(const char *what, uint64_t before, uint64_t after,
		int64_t budget)
{
	int64_t delta = (int64_t)(after - before);
	bool ok = delta <= budget;

	fprintf(stderr, "# host: %s: before %" PRIu64 " after %" PRIu64
		" (delta %" PRId64 ", budget %" PRId64 ")%s\n",
		what, before, after, delta, budget, ok ? "" : " OVER BUDGET");
	return ok;
}
