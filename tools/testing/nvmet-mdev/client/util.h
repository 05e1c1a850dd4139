/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Test utilities: a seeded PRNG, data patterns, backing file access and
 * environment parsing.
 */
#ifndef NVMET_MDEV_CLIENT_UTIL_H
#define NVMET_MDEV_CLIENT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* xorshift64*: small, fast, reproducible across runs. */
struct rng {
	uint64_t s;
};

void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
/* Uniform in [0, n); n > 0. */
uint64_t rng_below(struct rng *r, uint64_t n);
void rng_fill(struct rng *r, void *buf, size_t len);

/*
 * A recognisable pattern: each 8-byte word holds @tag mixed with its byte
 * offset, so a misplaced block is told apart from a stale one.
 */
void pattern_fill(void *buf, size_t len, uint64_t tag);
/* Offset of the first mismatch with pattern_fill(tag), or -1. */
long pattern_check(const void *buf, size_t len, uint64_t tag);
/* Offset of the first difference of two buffers, or -1. */
long mem_diff(const void *a, const void *b, size_t len);
bool mem_is_zero(const void *buf, size_t len);

/* Environment. */
uint64_t env_u64(const char *name, uint64_t def);
const char *env_str(const char *name);	/* NULL if unset or empty */

/*
 * Backing file (NVMET_MDEV_BACKING): read/write at byte offsets; writes are
 * fsync'ed and the page cache dropped, so the device sees them whatever
 * its I/O mode.  0 or -errno.
 */
int backing_read(const char *path, uint64_t off, void *buf, size_t len);
int backing_write(const char *path, uint64_t off, const void *buf, size_t len);
/* Drop cached pages of the backing file after device writes. */
int backing_sync(const char *path);

#endif /* NVMET_MDEV_CLIENT_UTIL_H */
