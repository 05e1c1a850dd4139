// SPDX-License-Identifier: GPL-2.0
/*
 * vminit: the system calls the test VMs' init (init.sh) would otherwise
 * exec mount(8), mkdir(1), dmesg(1), sync(1) and busybox for.  In a nested
 * guest each exec of a dynamically linked program costs seconds (its
 * libraries come over two layers of 9p, its page faults and system calls
 * run TCG-emulated), and init made a dozen of them; this program is linked
 * statically and makes them all in one.
 *
 *   vminit mount TYPE SOURCE DIR DATA [TYPE SOURCE DIR DATA]...
 *	for each group: create DIR (and its parents) unless it exists, then
 *	mount(2) SOURCE of file system TYPE there with DATA ("" for none);
 *	EBUSY (say, the devtmpfs the kernel mounted on /dev itself) counts
 *	as mounted.  Every group is tried; the status is 1 if any failed.
 *   vminit poweroff [DMESG_FILE]
 *	write the kernel log to DMESG_FILE (as dmesg(1) prints it), sync(2)
 *	and power the machine off.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/klog.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <unistd.h>

#define SYSLOG_ACTION_READ_ALL		3
#define SYSLOG_ACTION_SIZE_BUFFER	10

static int mkdirs(const char *dir)
{
	char path[4096];
	char *p, c;

	if (!*dir || strlen(dir) >= sizeof(path)) {
		errno = *dir ? ENAMETOOLONG : ENOENT;
		return -1;
	}
	memcpy(path, dir, strlen(dir) + 1);
	for (p = path + 1; ; p++) {
		if (*p != '/' && *p)
			continue;
		c = *p;
		*p = '\0';
		if (mkdir(path, 0755) && errno != EEXIST)
			return -1;
		if (!c)
			return 0;
		*p = c;
	}
}

static int do_mount(int argc, char **argv)
{
	int i, rc = 0;

	if (argc % 4) {
		fprintf(stderr, "vminit mount: TYPE SOURCE DIR DATA groups\n");
		return 2;
	}
	for (i = 0; i < argc; i += 4) {
		const char *type = argv[i], *src = argv[i + 1];
		const char *dir = argv[i + 2], *data = argv[i + 3];

		if (mkdirs(dir) ||
		    (mount(src, dir, type, 0, *data ? data : NULL) &&
		     errno != EBUSY)) {
			fprintf(stderr, "vminit: mount -t %s %s %s: %s\n",
				type, src, dir, strerror(errno));
			rc = 1;
		}
	}
	return rc;
}

/* The kernel log as dmesg(1) prints it: each line without its "<N>". */
static void write_dmesg(const char *file)
{
	int size = klogctl(SYSLOG_ACTION_SIZE_BUFFER, NULL, 0);
	char *buf, *line, *end;
	FILE *f;
	int n;

	if (size <= 0)
		return;
	buf = malloc(size);
	f = fopen(file, "w");
	if (!buf || !f)
		goto out;
	n = klogctl(SYSLOG_ACTION_READ_ALL, buf, size);
	for (line = buf; n > 0 && line < buf + n; line = end + 1) {
		end = memchr(line, '\n', buf + n - line);
		if (!end)
			end = buf + n;
		if (*line == '<') {
			char *gt = memchr(line, '>', end - line);

			if (gt)
				line = gt + 1;
		}
		fwrite(line, 1, end - line, f);
		fputc('\n', f);
	}
out:
	if (f)
		fclose(f);
	free(buf);
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "mount"))
		return do_mount(argc - 2, argv + 2);
	if ((argc == 2 || argc == 3) && !strcmp(argv[1], "poweroff")) {
		if (argc == 3)
			write_dmesg(argv[2]);
		sync();
		reboot(RB_POWER_OFF);
		perror("vminit: reboot");
		return 1;
	}
	fprintf(stderr, "usage: vminit mount TYPE SOURCE DIR DATA...\n"
		"       vminit poweroff [DMESG_FILE]\n");
	return 2;
}
