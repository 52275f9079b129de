/*
 * sampler-bench.c: helpers for bench-sampler.sh.  `spawn N [FDS PATH]`
 * forks N sleeping processes (each holding PATH and /dev/null up to FDS
 * fds) and holds them until stdin closes; `refloop ROUNDS`
 * is the reference: open and read /proc/<pid>/stat of every process, CPU
 * time per process per pass; `fdloop ROUNDS PID...` stats every fd of the
 * pids (a full fd scan); `status PATH` prints croft-sampler's status JSON.  Benchmark processes
 * (spawn and refloop need no privilege).
 */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
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

static int spawn(int n, int fds, const char *path)
{
	pid_t *pids = calloc((size_t)n, sizeof(*pids));
	char c;

	if (!pids)
		return 1;
	for (int i = 0; i < n; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			hold_files(fds, path);
			for (;;)
				pause();
		}
		if (pids[i] < 0) {
			perror("fork");
			n = i;
			break;
		}
	}
	printf("ready %d", n);
	for (int i = 0; i < n; i++)
		printf(" %d", (int)pids[i]);
	printf("\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	for (int i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	return 0;
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
	if (argc == 3 && !strcmp(argv[1], "status"))
		return status(argv[2]);
	fprintf(stderr, "usage: sampler-bench spawn N [FDS PATH] | refloop ROUNDS |"
			" fdloop ROUNDS PID... | status CTL\n");
	return 2;
}
