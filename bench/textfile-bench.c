/*
 * textfile-bench.c: croft.prom's cost per poll, for bench-sampler.sh.
 * `textfile-bench N POLLS DIR`: N processes of tests/lib/synth_host.h's
 * host in N/40 containers (half of them in pods) on 8 GPUs, summed, settled and
 * written to DIR/croft.prom as the sampler does at each poll; beside it,
 * in the same run, the least a poll pays per process anyway: one pread of
 * a kept /proc/<pid>/stat fd (here our own).  Prints both in CPU µs per
 * poll (best of POLLS), their ratio and the file's series.  Benchmark
 * process, any user.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "output.h"
#include "synth_host.h"

static uint64_t cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* One poll's croft.prom: CPU ns. */
static uint64_t textfile_poll(struct textfile *tf, struct textfile_dir *dir, const char *path,
	const struct synth_host *host, size_t n, uint64_t poll)
{
	struct textfile_health h = { .unix_ms = poll * 2000,
		.polls = poll,
		.processes = n,
		.probe_attached = true,
		.writer_connected = true,
		.probe_state = "connected" };
	uint64_t t0 = cpu_ns();

	if (textfile_dir_open(dir, path) < 0)
		exit(1);
	textfile_begin(tf, poll);
	for (size_t i = 0; i < n; i++) {
		uint64_t bits[GPU_INDEX_MAX / 64] = { 0 };
		struct textfile_row r = synth_host_process(host, i, poll, bits);

		textfile_add(tf, &r);
	}
	textfile_settle(tf, 50);
	textfile_write(dir, tf, &h);
	return cpu_ns() - t0;
}

/* The series of the file written: its lines that are no comment. */
static size_t series_in(const char *dir)
{
	char path[4096], line[4096];
	size_t count = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, TEXTFILE_NAME);
	if (!(f = fopen(path, "r")))
		exit(1);
	while (fgets(line, sizeof(line), f))
		count += line[0] != '#';
	fclose(f);
	return count;
}

/* The reference: n preads of a kept /proc/<pid>/stat, as each poll reads each process's. */
static uint64_t stat_poll(int fd, size_t n)
{
	char buf[1024];
	uint64_t t0 = cpu_ns();

	for (size_t i = 0; i < n; i++)
		if (pread(fd, buf, sizeof(buf), 0) <= 0)
			exit(1);
	return cpu_ns() - t0;
}

int main(int argc, char **argv)
{
	size_t n, polls;
	struct synth_host host;
	uint64_t best_tf = UINT64_MAX, best_ref = UINT64_MAX;
	struct textfile *tf;
	struct textfile_dir dir = { .fd = -1 };
	int stat_fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);

	if (argc != 4 || stat_fd < 0) {
		fprintf(stderr, "usage: textfile-bench N POLLS DIR\n");
		return 2;
	}
	n = strtoul(argv[1], NULL, 10);
	polls = strtoul(argv[2], NULL, 10);
	if (synth_host_new(&host, n / 40 ? n / 40 : 1) < 0 || textfile_new(&tf))
		return 1;
	for (uint64_t poll = 1; poll <= polls; poll++) {
		uint64_t t = textfile_poll(tf, &dir, argv[3], &host, n, poll);
		uint64_t r = stat_poll(stat_fd, n);

		best_tf = t < best_tf ? t : best_tf;
		best_ref = r < best_ref ? r : best_ref;
	}
	printf("%zu processes, %zu containers: croft.prom %.1f us/poll (%zu series), reference "
	       "(one stat pread per process) %.1f us/poll, ratio %.3f\n",
		n, host.containers, (double)best_tf / 1e3, series_in(argv[3]),
		(double)best_ref / 1e3, (double)best_tf / (double)best_ref);
	textfile_free(tf);
	textfile_dir_close(&dir);
	synth_host_free(&host);
	return 0;
}
