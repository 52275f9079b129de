/*
 * sampler-bench.c: helpers for bench-sampler.sh.  `spawn N [FDS PATH]`
 * forks N sleeping processes (each holding PATH and /dev/null up to FDS
 * fds) and holds them until stdin closes; `scale IDLE BUSY HELD PATH` forks
 * sleeping, busy (a few microseconds of CPU every 100 ms) and sleeping
 * processes holding PATH open, prints their pids by kind and holds them the
 * same way; `refloop ROUNDS` is the reference: open and read
 * /proc/<pid>/stat of every process, CPU time per process per pass;
 * `fdloop ROUNDS PID...` stats every fd of the pids (a full fd scan);
 * `status PATH` prints croft-sampler's status JSON; `asks CTL SECONDS` asks
 * for status every 50 ms and prints how long the answers took while a poll
 * ran and between polls.  Benchmark processes (spawn and refloop need no
 * privilege).
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "msg.h"

#define BUSY_PERIOD_NS 100000000 /* a busy child wakes every 100 ms ... */
#define BUSY_RUN_NS    20000     /* ... and runs 20 us: 0.02% of a core each */

enum kind { KIND_IDLE, KIND_BUSY, KIND_HELD };

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000 + (uint64_t)ts.tv_nsec;
}

/* A child's files: path once, then /dev/null up to fds open in all. */
static void hold_files(int fds, const char *path)
{
	struct rlimit rl;

	if (!path)
		return;
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)fds + 16) {
		rl.rlim_cur = rl.rlim_max < (rlim_t)fds + 16 ? rl.rlim_max : (rlim_t)fds + 16;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (open(path, O_RDONLY) < 0)
		_exit(1);
	for (int i = 4; i < fds; i++)
		if (open("/dev/null", O_RDONLY) < 0)
			_exit(1);
}

static void __attribute__((noreturn)) child(enum kind kind, int fds, const char *path)
{
	struct timespec period = { 0, BUSY_PERIOD_NS };

	hold_files(fds, path);
	while (kind != KIND_BUSY)
		pause();
	for (;;) {
		uint64_t until = mono_ns() + BUSY_RUN_NS;

		while (mono_ns() < until)
			;
		nanosleep(&period, NULL);
	}
}

/* Forks n children of a kind into pids; returns how many were forked. */
static int fork_children(pid_t *pids, int n, enum kind kind, int fds, const char *path)
{
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0)
			child(kind, fds, path);
		if (pids[i] < 0) {
			perror("fork");
			return i;
		}
	}
	return n;
}

static void print_pids(const pid_t *pids, int n)
{
	for (int i = 0; i < n; i++)
		printf(" %d", (int)pids[i]);
	printf("\n");
}

/* Holds the children until stdin closes, then kills and reaps them. */
static int hold(pid_t *pids, int n)
{
	char c;

	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	free(pids);
	return 0;
}

/* "ready N PID...". */
static int spawn(int n, int fds, const char *path)
{
	pid_t *pids = calloc((size_t)n, sizeof(*pids));

	if (!pids)
		return 1;
	n = fork_children(pids, n, KIND_IDLE, fds, path);
	printf("ready %d", n);
	print_pids(pids, n);
	return hold(pids, n);
}

/* One line per kind, "idle|busy|held PID...", then "ready N". */
static int scale(const int counts[3], const char *path)
{
	static const char *const names[] = { "idle", "busy", "held" };
	int total = counts[0] + counts[1] + counts[2], done = 0;
	pid_t *pids = calloc((size_t)total, sizeof(*pids));

	if (!pids)
		return 1;
	for (int k = 0; k < 3; k++) {
		int n = fork_children(
			pids + done, counts[k], (enum kind)k, 0, k == KIND_HELD ? path : NULL);

		printf("%s", names[k]);
		print_pids(pids + done, n);
		done += n;
	}
	printf("ready %d\n", done);
	return hold(pids, done);
}

static double cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One pass: list /proc, open and read each <pid>/stat; returns processes read. */
static long pass(int procfd)
{
	char path[64], buf[1024];
	struct dirent *de;
	long n = 0;
	int dfd = openat(procfd, ".", O_RDONLY | O_DIRECTORY);
	DIR *dir = fdopendir(dfd);

	while (dir && (de = readdir(dir))) {
		int fd;

		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if (snprintf(path, sizeof(path), "%.32s/stat", de->d_name) >= (int)sizeof(path))
			continue;
		fd = openat(procfd, path, O_RDONLY);
		if (fd < 0)
			continue;
		if (read(fd, buf, sizeof(buf)) > 0)
			n++;
		close(fd);
	}
	if (dir)
		closedir(dir);
	return n;
}

static int refloop(int rounds)
{
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY);
	double best = 1e9;
	long procs = 0;

	for (int r = 0; r < rounds; r++) {
		double t0 = cpu_s();

		procs = pass(procfd);
		if (procs > 0 && (cpu_s() - t0) / (double)procs < best)
			best = (cpu_s() - t0) / (double)procs;
	}
	printf("%.3f %ld\n", best * 1e6, procs);
	return 0;
}

/* The reference for GPU holders: every fd of each pid stat'ed, as a full fd
 * scan does; ms of CPU for the best pass over all of them. */
static int fdloop(int rounds, int count, char **pids)
{
	char path[64];
	double best = 1e9;

	for (int r = 0; r < rounds; r++) {
		double t0 = cpu_s();

		for (int i = 0; i < count; i++) {
			struct dirent *de;
			struct stat st;
			DIR *dir;

			snprintf(path, sizeof(path), "/proc/%.16s/fd", pids[i]);
			if (!(dir = opendir(path)))
				continue;
			while ((de = readdir(dir)))
				fstatat(dirfd(dir), de->d_name, &st, 0);
			closedir(dir);
		}
		if (cpu_s() - t0 < best)
			best = cpu_s() - t0;
	}
	printf("%.3f\n", best * 1e3);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* "count median p95 max" of n answer times in us, as ms. */
static void print_ms(uint64_t *us, size_t n)
{
	if (n)
		qsort(us, n, sizeof(*us), cmp_u64);
	printf(" %zu %.1f %.1f %.1f", n, n ? us[n / 2] / 1e3 : 0, n ? us[n * 95 / 100] / 1e3 : 0,
		n ? us[n - 1] / 1e3 : 0);
}

/*
 * Status asked every 50 ms for seconds: how long the answers took that
 * came while a poll ran ("poll_running":true) and, for reference, those
 * that came between polls: "ASKED UNANSWERED" then count, median, 95th
 * percentile and max in ms of each.
 */
static int asks(const char *path, int seconds)
{
	struct timespec gap = { 0, 50000000 };
	uint64_t end = mono_ns() + (uint64_t)seconds * 1000000000;
	size_t cap = (size_t)seconds * 20 + 1, n[2] = { 0, 0 }, asked = 0, unanswered = 0;
	uint64_t *us[2] = { calloc(cap, sizeof(uint64_t)), calloc(cap, sizeof(uint64_t)) };

	if (!us[0] || !us[1])
		return 1;
	while (mono_ns() < end && asked < cap) {
		uint64_t t0 = mono_ns();
		char *text = NULL;
		int st = 0, during;

		asked++;
		if (ctl_request(path, MT_CTL_STATUS, NULL, 0, 5000, &st, &text) || st) {
			unanswered++;
		} else {
			during = strstr(text, "\"poll_running\":true") != NULL;
			us[during][n[during]++] = (mono_ns() - t0) / 1000;
		}
		free(text);
		nanosleep(&gap, NULL);
	}
	printf("%zu %zu", asked, unanswered);
	print_ms(us[1], n[1]);
	print_ms(us[0], n[0]);
	printf("\n");
	free(us[0]);
	free(us[1]);
	return 0;
}

static int status(const char *path)
{
	char *text = NULL;
	int st = 0;

	if (ctl_request(path, MT_CTL_STATUS, NULL, 0, 5000, &st, &text) || st) {
		fprintf(stderr, "sampler-bench: no status from %s\n", path);
		return 1;
	}
	printf("%s\n", text);
	free(text);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "spawn"))
		return spawn(atoi(argv[2]), 0, NULL);
	if (argc == 5 && !strcmp(argv[1], "spawn"))
		return spawn(atoi(argv[2]), atoi(argv[3]), argv[4]);
	if (argc == 3 && !strcmp(argv[1], "refloop"))
		return refloop(atoi(argv[2]));
	if (argc >= 3 && !strcmp(argv[1], "fdloop"))
		return fdloop(atoi(argv[2]), argc - 3, argv + 3);
	if (argc == 6 && !strcmp(argv[1], "scale")) {
		int counts[3] = { atoi(argv[2]), atoi(argv[3]), atoi(argv[4]) };

		return scale(counts, argv[5]);
	}
	if (argc == 3 && !strcmp(argv[1], "status"))
		return status(argv[2]);
	if (argc == 4 && !strcmp(argv[1], "asks"))
		return asks(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: sampler-bench spawn N [FDS PATH] | scale IDLE BUSY HELD PATH |"
			" refloop ROUNDS | fdloop ROUNDS PID... | status CTL | asks CTL SECONDS\n");
	return 2;
}
