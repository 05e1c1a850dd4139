// SPDX-License-Identifier: GPL-2.0
/*
 * Test utilities for the nvmet-mdev client.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

void rng_seed(struct rng *r, uint64_t seed)
{
	r->s = seed ? seed : 0x9e3779b97f4a7c15ull;
}

uint64_t rng_next(struct rng *r)
{
	uint64_t x = r->s;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	r->s = x;
	return x * 0x2545f4914f6cdd1dull;
}

uint64_t rng_below(struct rng *r, uint64_t n)
{
	return n ? rng_next(r) % n : 0;
}

void rng_fill(struct rng *r, void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len >= 8) {
		uint64_t v = rng_next(r);

		memcpy(p, &v, 8);
		p += 8;
		len -= 8;
	}
	if (len) {
		uint64_t v = rng_next(r);

		memcpy(p, &v, len);
	}
}

static uint64_t pattern_word(uint64_t tag, size_t off)
{
	uint64_t x = tag * 0x100000001b3ull ^ (off + 1) * 0x9e3779b97f4a7c15ull;

	return x ^ (x >> 29);
}

void pattern_fill(void *buf, size_t len, uint64_t tag)
{
	uint8_t *p = buf;
	size_t off;

	for (off = 0; off < len; off += 8) {
		uint64_t v = pattern_word(tag, off);

		memcpy(p + off, &v, len - off < 8 ? len - off : 8);
	}
}

long pattern_check(const void *buf, size_t len, uint64_t tag)
{
	const uint8_t *p = buf;
	size_t off;

	for (off = 0; off < len; off += 8) {
		uint64_t v = pattern_word(tag, off);
		size_t n = len - off < 8 ? len - off : 8;

		if (memcmp(p + off, &v, n))
			return (long)off;
	}
	return -1;
}

long mem_diff(const void *a, const void *b, size_t len)
{
	const uint8_t *x = a, *y = b;
	size_t i;

	for (i = 0; i < len; i++)
		if (x[i] != y[i])
			return (long)i;
	return -1;
}

bool mem_is_zero(const void *buf, size_t len)
{
	const uint8_t *p = buf;
	size_t i;

	for (i = 0; i < len; i++)
		if (p[i])
			return false;
	return true;
}

uint64_t env_u64(const char *name, uint64_t def)
{
	const char *s = getenv(name);
	char *end;
	uint64_t v;

	if (!s || !*s)
		return def;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return def;
	return v;
}

const char *env_str(const char *name)
{
	const char *s = getenv(name);

	return s && *s ? s : NULL;
}

int backing_read(const char *path, uint64_t off, void *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	int ret = 0;

	if (fd < 0)
		return -errno;
	/* Drop stale cached pages first: the device may have used direct I/O. */
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	n = pread(fd, buf, len, off);
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != len)
		ret = -EIO;
	close(fd);
	return ret;
}

int backing_write(const char *path, uint64_t off, const void *buf, size_t len)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	ssize_t n;
	int ret = 0;

	if (fd < 0)
		return -errno;
	n = pwrite(fd, buf, len, off);
	if (n < 0)
		ret = -errno;
	else if ((size_t)n != len)
		ret = -EIO;
	if (!ret && fsync(fd))
		ret = -errno;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	return ret;
}

int backing_sync(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
	close(fd);
	return 0;
}
