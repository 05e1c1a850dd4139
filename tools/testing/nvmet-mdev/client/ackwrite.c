// SPDX-License-Identifier: GPL-2.0
/*
 * ackwrite: which writes a guest was told are done, and whether they are
 * on the disk.  Runs in a nested guest (writing) and in the host VM
 * (checking the namespace's backing file).
 *
 *   ackwrite write DEV ACKFILE ID BLOCKS [FIRST]
 *	writes 4 KiB blocks FIRST, FIRST+1, ... FIRST+BLOCKS-1 of DEV
 *	(FIRST 0 unless given) in order, one at a time with O_DIRECT, each
 *	stamped with ID and its number; after each write returns (the device
 *	completed it), stores the number of completed blocks in ACKFILE (one
 *	pwrite of a fixed-size record at offset 0: on the run directory's 9p
 *	share it reaches the host VM before the call returns).  Then waits to
 *	be killed.
 *   ackwrite check FILE ID COUNT [FIRST]
 *	blocks FIRST to FIRST+COUNT-1 of FILE (a device, opened O_DIRECT, or
 *	a regular file) hold their stamps; prints the first bad block.
 *
 * A stamp is the whole block, derived from ID and the block number, so a
 * torn or misplaced write fails the check, not only a missing one.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BLOCK 4096

static void stamp(uint64_t *buf, uint64_t id, uint64_t blk)
{
	uint64_t x = id * 0x9e3779b97f4a7c15ull ^ (blk + 1);
	size_t i;

	buf[0] = 0x6b63612d7665646dull;		/* "mdev-ack" */
	buf[1] = id;
	buf[2] = blk;
	for (i = 3; i < BLOCK / 8; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		buf[i] = x;
	}
}

static int do_write(const char *dev, const char *ackfile,
		    unsigned long long id, unsigned long long blocks,
		    unsigned long long first)
{
	uint64_t *buf;
	char rec[32];
	unsigned long long b;
	int fd, afd;

	fd = open(dev, O_WRONLY | O_DIRECT);
	afd = open(ackfile, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0 || afd < 0 || posix_memalign((void **)&buf, BLOCK, BLOCK)) {
		perror("ackwrite: open");
		return 1;
	}
	for (b = first; b < first + blocks; b++) {
		stamp(buf, id, b);
		if (pwrite(fd, buf, BLOCK, b * BLOCK) != BLOCK) {
			fprintf(stderr, "ackwrite: write of block %llu: %s\n",
				b, strerror(errno));
			return 1;
		}
		snprintf(rec, sizeof(rec), "%20llu\n", b - first + 1);
		if (pwrite(afd, rec, 21, 0) != 21) {
			perror("ackwrite: ack file");
			return 1;
		}
	}
	printf("ackwrite: all %llu blocks written\n", blocks);
	fflush(stdout);
	for (;;)
		pause();
}

static int do_check(const char *file, unsigned long long id,
		    unsigned long long count, unsigned long long first)
{
	uint64_t *buf, *want;
	struct stat st;
	unsigned long long b;
	int fd;

	fd = open(file, O_RDONLY);
	if (fd >= 0 && !fstat(fd, &st) && S_ISBLK(st.st_mode)) {
		close(fd);
		fd = open(file, O_RDONLY | O_DIRECT);
	}
	if (fd < 0 || posix_memalign((void **)&buf, BLOCK, BLOCK) ||
	    posix_memalign((void **)&want, BLOCK, BLOCK)) {
		perror("ackwrite: open");
		return 1;
	}
	for (b = first; b < first + count; b++) {
		stamp(want, id, b);
		if (pread(fd, buf, BLOCK, b * BLOCK) != BLOCK) {
			fprintf(stderr, "ackwrite: read of block %llu: %s\n",
				b, strerror(errno));
			return 1;
		}
		if (memcmp(buf, want, BLOCK)) {
			fprintf(stderr,
				"ackwrite: block %llu of %llu from %llu does not hold its stamp (id %llu block %llu found)\n",
				b, count, first, (unsigned long long)buf[1],
				(unsigned long long)buf[2]);
			return 1;
		}
	}
	printf("ackwrite: %llu blocks hold their stamps\n", count);
	return 0;
}

int main(int argc, char **argv)
{
	if ((argc == 6 || argc == 7) && !strcmp(argv[1], "write"))
		return do_write(argv[2], argv[3], strtoull(argv[4], NULL, 0),
				strtoull(argv[5], NULL, 0),
				argc == 7 ? strtoull(argv[6], NULL, 0) : 0);
	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "check"))
		return do_check(argv[2], strtoull(argv[3], NULL, 0),
				strtoull(argv[4], NULL, 0),
				argc == 6 ? strtoull(argv[5], NULL, 0) : 0);
	fprintf(stderr, "usage: ackwrite write DEV ACKFILE ID BLOCKS [FIRST]\n"
		"       ackwrite check FILE ID COUNT [FIRST]\n");
	return 2;
}
