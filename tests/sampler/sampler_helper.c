/*
 * sampler_helper.c: workloads for croft-sampler's integration tests: a busy
 * loop, a paced fsync writer, N threads, late dlopen, a renamed sleeper,
 * CPU bursts on demand after sleeping, device files opened and closed on
 * command.  Prints "ready" once set up, then runs until killed.  Test
 * process.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static void ready(void)
{
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *sleeper(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* Writes rate bytes per second in 256 KiB chunks, each followed by fsync. */
static int writer(const char *path, double rate)
{
	static char chunk[256 << 10];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	double start = now_s(), written = 0;

	if (fd < 0) {
		perror(path);
		return 1;
	}
	memset(chunk, 'x', sizeof(chunk));
	ready();
	for (;;) {
		double due = start + written / rate;
		double wait = due - now_s();

		if (wait > 0) {
			struct timespec ts = { (time_t)wait, (long)((wait - (time_t)wait) * 1e9) };

			nanosleep(&ts, NULL);
		}
		if (write(fd, chunk, sizeof(chunk)) != (ssize_t)sizeof(chunk) || fsync(fd)) {
			perror("write");
			return 1;
		}
		written += sizeof(chunk);
		if (written >= 256.0 * (1 << 20)) { /* keep the file small */
			if (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET))
				return 1;
		}
	}
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (time_t)s) * 1e9) };

	if (s > 0)
		nanosleep(&ts, NULL);
}

/* Loads each comma-separated library after delay seconds; an item "+S" waits S seconds more. */
static int late_dlopen(char *libs, double delay)
{
	ready();
	sleep_s(delay);
	for (char *lib = strtok(libs, ","); lib; lib = strtok(NULL, ","))
		if (lib[0] == '+')
			sleep_s(atof(lib + 1));
		else if (!dlopen(lib, RTLD_NOW)) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 1;
		}
	printf("loaded\n");
	fflush(stdout);
	for (;;)
		pause();
}

static void *burn(void *arg)
{
	double end = now_s() + *(const double *)arg;

	while (now_s() < end)
		;
	return NULL;
}

/*
 * Sleeps in read(2) until told, then burns CPU for the given time: "cpu" in this (only)
 * thread, "thread" in a new thread while this one waits in pthread_join.
 * Says "burned" after each.
 */
static int bursts(double seconds)
{
	char line[32];
	pthread_t t;

	ready();
	while (fgets(line, sizeof(line), stdin)) {
		if (!strcmp(line, "cpu\n"))
			burn(&seconds);
		else if (!strcmp(line, "thread\n")) {
			if (pthread_create(&t, NULL, burn, &seconds) || pthread_join(t, NULL))
				return 1;
		} else
			return 2;
		printf("burned\n");
		fflush(stdout);
	}
	return 0;
}

static void *spinner(void *arg)
{
	volatile unsigned long n = 0;

	(void)arg;
	for (;;)
		n++;
	return NULL;
}

/*
 * Files opened and closed on stdin's word: "open PATH", "path PATH"
 * (O_PATH: a node with no driver here, held as a GPU's would be), "close
 * PATH"; each answered "done".  busy: a thread spins meanwhile.
 */
static int files(bool busy)
{
	char line[4096 + 8], *path;
	struct held {
		char path[4096];
		int fd;
	} held[64];
	size_t count = 0;
	pthread_t t;

	if (busy && pthread_create(&t, NULL, spinner, NULL))
		return 1;
	ready();
	while (fgets(line, sizeof(line), stdin)) {
		line[strcspn(line, "\n")] = '\0';
		path = strchr(line, ' ');
		if (!path)
			return 2;
		*path++ = '\0';
		if (!strcmp(line, "close")) {
			for (size_t i = 0; i < count; i++)
				if (held[i].fd >= 0 && !strcmp(held[i].path, path)) {
					close(held[i].fd);
					held[i].fd = -1;
				}
		} else if (count < 64 && strlen(path) < sizeof(held[0].path)) {
			int fd = open(path, !strcmp(line, "path") ? O_PATH : O_RDONLY);

			if (fd < 0) {
				perror(path);
				return 1;
			}
			strcpy(held[count].path, path);
			held[count++].fd = fd;
		}
		printf("done\n");
		fflush(stdout);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	if (!strcmp(mode, "busy")) {
		if (argc > 2)
			prctl(PR_SET_NAME, argv[2]);
		ready();
		for (volatile unsigned long i = 0;; i++)
			;
	}
	if (!strcmp(mode, "write") && argc == 4)
		return writer(argv[2], atof(argv[3]));
	if (!strcmp(mode, "threads") && argc == 3) {
		int n = atoi(argv[2]);
		pthread_t t;

		for (int i = 1; i < n; i++)
			if (pthread_create(&t, NULL, sleeper, NULL))
				return 1;
		ready();
		sleeper(NULL);
	}
	if (!strcmp(mode, "dlopen") && argc >= 3)
		return late_dlopen(argv[2], argc > 3 ? atof(argv[3]) : 0);
	if (!strcmp(mode, "mem") && argc == 3) {
		size_t bytes = (size_t)atoi(argv[2]) << 20;
		char line[16];
		char *mem;

		ready();
		/* allocate only when told: after the test moved us into a cgroup */
		if (!fgets(line, sizeof(line), stdin) || !(mem = malloc(bytes)))
			return 1;
		memset(mem, 1, bytes);
		printf("touched\n");
		fflush(stdout);
		sleeper(NULL);
	}
	if (!strcmp(mode, "open") && argc == 4) {
		struct timespec ts = { atoi(argv[3]), 0 };

		ready();
		nanosleep(&ts, NULL);
		if (open(argv[2], O_RDONLY) < 0) {
			perror(argv[2]);
			return 1;
		}
		printf("opened\n");
		fflush(stdout);
		sleeper(NULL);
	}
	if (!strcmp(mode, "files") && argc == 3)
		return files(!strcmp(argv[2], "busy"));
	if (!strcmp(mode, "bursts") && argc == 3)
		return bursts(atof(argv[2]) / 1000);
	if (!strcmp(mode, "sleep")) {
		if (argc > 2)
			prctl(PR_SET_NAME, argv[2]);
		if (argc > 3 && chdir(argv[3])) {
			perror("chdir");
			return 1;
		}
		ready();
		sleeper(NULL);
	}
	fprintf(stderr,
		"usage: sampler_helper busy [NAME] | write FILE BYTES_PER_S | threads N |"
		" dlopen LIB[,LIB|,+S] [DELAY_S] | mem MIB | open FILE DELAY_S | files busy|idle |"
		" bursts MS |"
		" sleep [NAME [DIR]] [ARGS...]\n");
	return 2;
}
