/*
 * compress-bench.c: croft-compress-bench, runs croft-writer's compressor
 * (writer/compress.c, the code the compression thread runs) on one file in
 * the calling thread and prints its ratio and speed, for bench-writer.sh.
 * The file is consumed (replaced by FILE.zst), as a segment is.  With
 * --exec it runs a command instead (the zstd CLI) and reports the same
 * clocks for it: wall time and CPU time (user + system).  Any user.
 */
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "writer.h"

static double secs_between(const struct timespec *a, const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

static double rusage_secs(const struct rusage *ru)
{
	return (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) +
	       (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e6;
}

/* --exec CMD ARGS...: the command's wall and CPU seconds. */
static int run_exec(char **argv)
{
	struct timespec t0, t1;
	struct rusage ru;
	int status;
	pid_t pid;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid == 0) {
		execvp(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || wait4(pid, &status, 0, &ru) < 0) {
		perror("croft-compress-bench");
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	printf("seconds %.3f cpu_seconds %.3f\n", secs_between(&t0, &t1), rusage_secs(&ru));
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
	char dir_buf[4096], base_buf[4096];
	uint64_t in_bytes = 0, out_bytes = 0;
	struct timespec t0, t1;
	double secs;
	int dirfd, level, ret;

	struct rusage ru;

	if (argc > 2 && !strcmp(argv[1], "--exec"))
		return run_exec(argv + 2);
	if (argc != 3) {
		fprintf(stderr, "usage: croft-compress-bench FILE LEVEL | --exec CMD [ARG...]\n");
		return 2;
	}
	level = atoi(argv[2]);
	snprintf(dir_buf, sizeof(dir_buf), "%s", argv[1]);
	snprintf(base_buf, sizeof(base_buf), "%s", argv[1]);
	dirfd = open(dirname(dir_buf), O_RDONLY | O_DIRECTORY);
	if (dirfd < 0) {
		perror(argv[1]);
		return 1;
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	ret = compress_file(dirfd, basename(base_buf), level, NULL, &in_bytes, &out_bytes);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (ret < 0) {
		fprintf(stderr, "croft-compress-bench: %s: %s\n", argv[1], strerror(-ret));
		return 1;
	}
	secs = secs_between(&t0, &t1);
	getrusage(RUSAGE_SELF, &ru);
	printf("in %llu out %llu ratio %.2f seconds %.3f cpu_seconds %.3f\n",
		(unsigned long long)in_bytes, (unsigned long long)out_bytes,
		(double)in_bytes / (double)out_bytes, secs, rusage_secs(&ru));
	close(dirfd);
	return 0;
}
