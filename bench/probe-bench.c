/*
 * probe-bench.c: the timed loops of bench-probe.sh, pinned to one CPU:
 * "getppid N" prints ns per getppid(); "pingpong N" bounces a byte N times
 * between two processes over pipes and prints ns per context switch;
 * "ioctl N PATH [HOLD_S]" prints ns per ioctl on PATH (a GPU's device file
 * in bench/gpu-host.sh) and how many it made, then holds the file HOLD_S
 * seconds, so that croft's rows count them; "poll N PATH" and "mmap N
 * PATH" the same for a poll of PATH (timeout 0) and an mmap + munmap of
 * it (bench-gpufile.sh).  Each
 * is timed in short chunks and the fastest chunk counts: on a shared host
 * other work only ever adds time, so the minimum is the undisturbed cost.
 * Runs as any user.
 */
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/*
 * Pinned, and real-time when allowed (root): on a shared host the other
 * work then cannot take the CPU mid-chunk (the kernel still keeps 5% of
 * each second for it, which the fastest-chunk rule skips).
 */
static void pin(int cpu)
{
	struct sched_param sp = { .sched_priority = 10 };
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(0, sizeof(set), &set);
	sched_setscheduler(0, SCHED_FIFO, &sp);
}

#define GETPPID_CHUNK  2000 /* calls per timed chunk (~0.2 ms undisturbed) */
#define PINGPONG_CHUNK 100  /* round trips per timed chunk */
#define IOCTL_CHUNK    1000 /* ioctls (polls, mmaps) per timed chunk */

static double getppid_ns(long n)
{
	double best = 1e18;

	for (long i = 0; i < n / 10; i++) /* warm up */
		syscall(SYS_getppid);
	for (long done = 0; done < n; done += GETPPID_CHUNK) {
		double t = now_ns();

		for (int i = 0; i < GETPPID_CHUNK; i++)
			syscall(SYS_getppid);
		t = (now_ns() - t) / GETPPID_CHUNK;
		if (t < best)
			best = t;
	}
	return best;
}

/*
 * ioctl number 0 (no driver's type: NVIDIA's returns EINVAL at its first
 * check), so the loop times the syscall, the probe's program and the
 * driver's refusal.
 */
static void call_ioctl(int fd)
{
	ioctl(fd, 0, NULL);
}

/* A poll that never waits: the syscall and the probe's look at the set. */
static void call_poll(int fd)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	poll(&p, 1, 0);
}

/* Two syscalls: only the mmap is looked at by the probe. */
static void call_mmap(int fd)
{
	void *m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0);

	if (m != MAP_FAILED)
		munmap(m, 4096);
}

/* ns per call of one of the above on fd; *ret_made counts every call, warm-up included. */
static double call_ns(long n, int fd, void (*call)(int fd), long *ret_made)
{
	double best = 1e18;
	long made = 0;

	for (long i = 0; i < n / 10; i++, made++) /* warm up */
		call(fd);
	for (long done = 0; done < n; done += IOCTL_CHUNK) {
		double t = now_ns();

		for (int i = 0; i < IOCTL_CHUNK; i++)
			call(fd);
		t = (now_ns() - t) / IOCTL_CHUNK;
		made += IOCTL_CHUNK;
		if (t < best)
			best = t;
	}
	*ret_made = made;
	return best;
}

static int fd_bench(long n, const char *path, void (*call)(int fd), double hold_s)
{
	struct timespec hold = { (time_t)hold_s, (long)((hold_s - (time_t)hold_s) * 1e9) };
	int fd = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	long made;
	double ns;

	if (fd < 0) {
		perror(path);
		return 1;
	}
	ns = call_ns(n, fd, call, &made);
	printf("%.1f %ld\n", ns, made);
	fflush(stdout);
	nanosleep(&hold, NULL);
	close(fd);
	return 0;
}

/* Both ends on one CPU: each round trip is two context switches. */
static double pingpong_ns(long n)
{
	int ab[2], ba[2];
	char c = 0;
	double t, best;
	pid_t pid;

	if (pipe(ab) < 0 || pipe(ba) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		n = (n + PINGPONG_CHUNK - 1) / PINGPONG_CHUNK * PINGPONG_CHUNK;
		for (long i = 0; i < n; i++)
			if (read(ab[0], &c, 1) != 1 || write(ba[1], &c, 1) != 1)
				_exit(1);
		_exit(0);
	}
	best = 1e18;
	for (long done = 0; done < n; done += PINGPONG_CHUNK) {
		t = now_ns();
		for (int i = 0; i < PINGPONG_CHUNK; i++)
			if (write(ab[1], &c, 1) != 1 || read(ba[0], &c, 1) != 1)
				return -1;
		t = (now_ns() - t) / (2.0 * PINGPONG_CHUNK);
		if (t < best)
			best = t;
	}
	waitpid(pid, NULL, 0);
	return best;
}

int main(int argc, char **argv)
{
	long n = argc > 2 ? atol(argv[2]) : 0;

	if (argc >= 4 && argc <= 5 && n > 0 && !strcmp(argv[1], "ioctl")) {
		pin(0);
		return fd_bench(n, argv[3], call_ioctl, argc == 5 ? atof(argv[4]) : 0);
	}
	if (argc == 4 && n > 0 && (!strcmp(argv[1], "poll") || !strcmp(argv[1], "mmap"))) {
		pin(0);
		return fd_bench(n, argv[3], !strcmp(argv[1], "poll") ? call_poll : call_mmap, 0);
	}
	if (argc != 3 || n <= 0) {
		fprintf(stderr, "usage: probe-bench getppid|pingpong N | ioctl N PATH [HOLD_S] | "
				"poll|mmap N PATH\n");
		return 2;
	}
	pin(0);
	if (!strcmp(argv[1], "getppid"))
		printf("%.1f\n", getppid_ns(n));
	else if (!strcmp(argv[1], "pingpong"))
		printf("%.1f\n", pingpong_ns(n));
	else
		return 2;
	return 0;
}
