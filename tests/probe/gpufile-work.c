/*
 * gpufile-work.c: workloads on a stand-in GPU file for croft-probe's GPU
 * evidence tests: N waits on it by poll, ppoll, select, pselect6 or
 * epoll_wait (a pty master: its poll blocks until the timeout), a thread
 * blocked in one long poll, N mmaps of it (/dev/zero maps), or nothing at
 * all.  Says "ready" once the file is open, starts at a line on stdin
 * (the test may first wait for its rows), says "done N" with the calls it
 * made, then holds the file until stdin closes.  Runs as the test's user.
 */
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/select.h>
#include <time.h>
#include <unistd.h>

static int gpu_fd = -1;

/* Until a line (or the end) on stdin. */
static void wait_go(void)
{
	char c;

	while (read(0, &c, 1) > 0 && c != '\n')
		;
}

/* Until stdin closes: the test reads the counts while the file is held. */
static void hold(void)
{
	char c;

	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
}

static int wait_poll(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms);
}

static int wait_ppoll(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	return ppoll(&p, 1, &ts, NULL);
}

static int wait_select(int fd, int ms)
{
	struct timeval tv = { ms / 1000, (ms % 1000) * 1000 };
	fd_set in;

	FD_ZERO(&in);
	FD_SET(fd, &in);
	return select(fd + 1, &in, NULL, NULL, &tv);
}

static int wait_pselect(int fd, int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	fd_set in;

	FD_ZERO(&in);
	FD_SET(fd, &in);
	return pselect(fd + 1, &in, NULL, NULL, &ts, NULL);
}

/* An epoll set holding fd (made once): epoll_wait on it. */
static int wait_epoll(int fd, int ms)
{
	static int ep = -1;
	struct epoll_event ev = { .events = EPOLLIN };

	if (ep < 0) {
		ep = epoll_create1(EPOLL_CLOEXEC);
		if (ep < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev) < 0)
			return -1;
	}
	return epoll_wait(ep, &ev, 1, ms);
}

/* The same on a set holding only a pipe: the GPU file is open, not waited on. */
static int wait_epoll_pipe(int fd, int ms)
{
	static int pipe_fds[2] = { -1, -1 };

	(void)fd;
	if (pipe_fds[0] < 0 && pipe(pipe_fds) < 0)
		return -1;
	return wait_epoll(pipe_fds[0], ms);
}

static const struct {
	const char *name;
	int (*wait)(int fd, int ms);
} waits[] = {
	{ "poll", wait_poll },
	{ "ppoll", wait_ppoll },
	{ "select", wait_select },
	{ "pselect", wait_pselect },
	{ "epoll", wait_epoll },
	{ "epoll-pipe", wait_epoll_pipe },
};

static void *long_poll(void *arg)
{
	wait_poll(gpu_fd, *(int *)arg);
	return NULL;
}

/* One thread blocked in poll for ms while the main thread sleeps on a clock. */
static int do_block(int ms)
{
	pthread_t t;

	if (pthread_create(&t, NULL, long_poll, &ms) != 0)
		return 1;
	printf("blocking\n");
	fflush(stdout);
	pthread_join(t, NULL);
	printf("done 1\n");
	hold();
	return 0;
}

static int do_mmaps(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++) {
		void *p = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, gpu_fd, 0);

		if (p == MAP_FAILED) {
			perror("mmap");
			return 1;
		}
		munmap(p, 4096);
	}
	printf("done %lu\n", n);
	hold();
	return 0;
}

static int do_waits(int (*wait)(int fd, int ms), unsigned long n, int ms)
{
	for (unsigned long i = 0; i < n; i++)
		if (wait(gpu_fd, ms) < 0) {
			perror("wait");
			return 1;
		}
	printf("done %lu\n", n);
	hold();
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 2 ? argv[1] : "";

	if (argc > 2 && (gpu_fd = open(argv[2], O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
		perror(argv[2]);
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	wait_go();
	if (!strcmp(mode, "hold") && argc == 3) {
		printf("done 0\n");
		hold();
		return 0;
	}
	if (!strcmp(mode, "block") && argc == 4)
		return do_block(atoi(argv[3]));
	if (!strcmp(mode, "mmap") && argc == 4)
		return do_mmaps(strtoul(argv[3], NULL, 10));
	for (size_t i = 0; argc == 5 && i < sizeof(waits) / sizeof(waits[0]); i++)
		if (!strcmp(mode, waits[i].name))
			return do_waits(waits[i].wait, strtoul(argv[3], NULL, 10), atoi(argv[4]));
	fprintf(stderr, "usage: gpufile-work hold PATH | block PATH MS | mmap PATH N | "
			"{poll,ppoll,select,pselect,epoll,epoll-pipe} PATH N MS\n");
	return 2;
}
