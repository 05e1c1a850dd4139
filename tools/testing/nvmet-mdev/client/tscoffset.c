// SPDX-License-Identifier: GPL-2.0
/*
 * tscoffset: how far this machine's TSC reads from its CLOCK_MONOTONIC.
 * Runs on the machine that runs the TCG host VMs, which see its TSC as
 * theirs (QEMU only keeps it from going backwards): a change of the offset
 * between two calls is a jump of the VMs' TSC (a snapshot restore or a
 * migration of the machine), and CPUs whose offsets differ make it jump
 * whenever QEMU's thread moves between them.
 *
 *   tscoffset        prints "HZ OFFSET SKEW": the TSC's rate, measured
 *                    over 200 ms; the TSC's time (ticks / HZ) minus
 *                    CLOCK_MONOTONIC on the first CPU, in seconds; the
 *                    largest difference of that offset between two CPUs
 *   tscoffset HZ     the same with the rate given (the one an earlier
 *                    call measured), so two offsets compare
 */
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <x86intrin.h>

/* One TSC reading and the monotonic time next to it, in ns. */
static void sample(uint64_t *tsc, int64_t *ns)
{
	struct timespec ts;

	*tsc = __rdtsc();
	clock_gettime(CLOCK_MONOTONIC, &ts);
	*ns = ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Offset of the TSC on @cpu, in seconds; 0 with *@ok clear if not run. */
static double cpu_offset(int cpu, double hz, int *ok)
{
	uint64_t tsc;
	cpu_set_t set;
	int64_t ns;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	*ok = !sched_setaffinity(0, sizeof(set), &set);
	if (!*ok)
		return 0;
	sample(&tsc, &ns);
	return (double)tsc / hz - (double)ns / 1e9;
}

int main(int argc, char **argv)
{
	struct timespec pause = { .tv_nsec = 200000000 };
	double hz, off, first = 0, lo = 0, hi = 0;
	int cpu, ok, seen = 0;
	uint64_t t0, t1;
	int64_t n0, n1;

	if (argc > 1) {
		hz = strtod(argv[1], NULL);
		if (hz <= 0) {
			fprintf(stderr, "tscoffset: bad rate %s\n", argv[1]);
			return 2;
		}
	} else {
		sample(&t0, &n0);
		nanosleep(&pause, NULL);
		sample(&t1, &n1);
		if (n1 <= n0 || t1 <= t0) {
			fprintf(stderr, "tscoffset: no rate measured\n");
			return 1;
		}
		hz = (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
	}
	for (cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		off = cpu_offset(cpu, hz, &ok);
		if (!ok)
			continue;
		if (!seen++) {
			first = off;
			lo = off;
			hi = off;
		}
		lo = off < lo ? off : lo;
		hi = off > hi ? off : hi;
	}
	if (!seen) {
		fprintf(stderr, "tscoffset: could not run on any CPU\n");
		return 1;
	}
	printf("%.0f %.3f %.3f\n", hz, first, hi - lo);
	return 0;
}
