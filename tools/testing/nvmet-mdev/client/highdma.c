// SPDX-License-Identifier: GPL-2.0
/*
 * highdma: direct I/O to and from buffer pages above 4 GiB of a guest's
 * physical memory.  Runs in a nested guest as root, on the mdev's
 * namespace.  Without a vIOMMU the guest's physical addresses are the
 * device's DMA addresses, so this has the device read and write guest
 * memory above 4 GiB for certain, whatever the guest's allocator does with
 * other buffers.
 *
 *   highdma DEV ID
 *	maps and locks 64 MiB, finds its pages' physical addresses in
 *	/proc/self/pagemap, writes 16 blocks of 4 KiB from pages above 4 GiB
 *	(block i stamped with ID and i) to blocks 0..15 of DEV with O_DIRECT,
 *	reads them back into other pages above 4 GiB and compares.  Exits 0
 *	on success, 1 on an I/O or data error, 3 if fewer than 32 of the
 *	buffer's pages are above 4 GiB.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* As in the kernel; this tool includes none of the client's headers. */
#ifndef BIT_ULL
#define BIT_ULL(nr)	(1ULL << (nr))
#endif

#define BLOCK		4096
#define BUF_SIZE	(64u << 20)
#define NR_BLOCKS	16
#define PFN_MASK	((1ull << 55) - 1)
#define PAGE_PRESENT	BIT_ULL(63)
#define FOUR_GIB	BIT_ULL(32)

static uint64_t phys_of(int pm, const void *va)
{
	uint64_t e;
	off_t off = (uintptr_t)va / BLOCK * sizeof(e);

	if (pread(pm, &e, sizeof(e), off) != sizeof(e) || !(e & PAGE_PRESENT))
		return 0;
	return (e & PFN_MASK) * BLOCK;
}

static void fill(uint8_t *p, uint64_t id, unsigned int blk)
{
	uint64_t x = id * 0x9e3779b97f4a7c15ull ^ (blk + 1);
	unsigned int i;

	for (i = 0; i < BLOCK; i += 8) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		memcpy(p + i, &x, 8);
	}
}

int main(int argc, char **argv)
{
	uint8_t *buf, *high[2 * NR_BLOCKS], want[BLOCK];
	unsigned int i, nr_high = 0, nr_pages = BUF_SIZE / BLOCK;
	uint64_t id, pa, first = 0;
	int fd, pm;

	if (argc != 3) {
		fprintf(stderr, "usage: highdma DEV ID\n");
		return 2;
	}
	id = strtoull(argv[2], NULL, 0);
	buf = mmap(NULL, BUF_SIZE, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	fd = open(argv[1], O_RDWR | O_DIRECT);
	pm = open("/proc/self/pagemap", O_RDONLY);
	if (buf == MAP_FAILED || fd < 0 || pm < 0 || mlock(buf, BUF_SIZE)) {
		perror("highdma: setup");
		return 1;
	}
	for (i = 0; i < nr_pages; i++) {
		buf[(size_t)i * BLOCK] = 1;	/* its own page, not the zero page */
		pa = phys_of(pm, buf + (size_t)i * BLOCK);
		if (pa < FOUR_GIB)
			continue;
		if (nr_high < 2 * NR_BLOCKS)
			high[nr_high] = buf + (size_t)i * BLOCK;
		if (!nr_high++)
			first = pa;
	}
	printf("highdma: %u of %u buffer pages above 4 GiB, the first at %#llx\n",
	       nr_high, nr_pages, (unsigned long long)first);
	if (nr_high < 2 * NR_BLOCKS)
		return 3;

	for (i = 0; i < NR_BLOCKS; i++) {
		fill(high[i], id, i);
		if (pwrite(fd, high[i], BLOCK, (off_t)i * BLOCK) != BLOCK) {
			fprintf(stderr, "highdma: write of block %u: %s\n", i,
				strerror(errno));
			return 1;
		}
	}
	for (i = 0; i < NR_BLOCKS; i++) {
		uint8_t *into = high[NR_BLOCKS + i];

		memset(into, 0, BLOCK);
		if (pread(fd, into, BLOCK, (off_t)i * BLOCK) != BLOCK) {
			fprintf(stderr, "highdma: read of block %u: %s\n", i,
				strerror(errno));
			return 1;
		}
		fill(want, id, i);
		if (memcmp(into, want, BLOCK)) {
			fprintf(stderr, "highdma: block %u read back wrong\n", i);
			return 1;
		}
	}
	/* Locked pages may still migrate: they must not have moved down. */
	for (i = 0; i < 2 * NR_BLOCKS; i++) {
		if (phys_of(pm, high[i]) < FOUR_GIB) {
			fprintf(stderr, "highdma: a page moved below 4 GiB\n");
			return 3;
		}
	}
	printf("highdma: %u blocks written from and read back into pages above 4 GiB\n",
	       NR_BLOCKS);
	return 0;
}
