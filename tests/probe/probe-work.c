/*
 * probe-work.c: deterministic workloads for croft-probe's tests and
 * benchmark: exact syscall counts, ioctls on a device node, short sleeps
 * (in one thread or in threads that end one by one), pinned busy loops, a
 * paced loopback TCP stream; quiet ones (a little done each poll) that say
 * what they did.  Runs as the test's user.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

static void sleep_until(unsigned long long t)
{
	struct timespec ts = { (time_t)(t / 1000000000ull), (long)(t % 1000000000ull) };

	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

/* Until stdin closes: the test decides when this process ends. */
static void hold(void)
{
	char c;

	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
}

/* secs > 0: sleep; secs < 0: say "done" and hold. */
static void pause_s(double secs)
{
	if (secs > 0)
		sleep_until(now_ns() + (unsigned long long)(secs * 1e9));
	if (secs < 0) {
		printf("done\n");
		hold();
	}
}

/* n calls of syscall nr spread evenly over secs (100 slices), then exit. */
static int do_calls(long nr, unsigned long n, double secs)
{
	unsigned long long start = now_ns(), slice_ns = (unsigned long long)(secs * 1e7);
	unsigned long done = 0;

	for (int s = 1; s <= 100; s++) {
		unsigned long until = n * (unsigned long)s / 100;

		for (; done < until; done++)
			syscall(nr);
		if (slice_ns)
			sleep_until(start + (unsigned long long)s * slice_ns);
	}
	return 0;
}

/* n ioctls (TCGETS: any char device takes the call) on path, then holds it (pause_s). */
static int do_ioctls(const char *path, unsigned long n, double secs)
{
	struct termios t;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		perror(path);
		return 1;
	}
	for (unsigned long i = 0; i < n; i++)
		ioctl(fd, TCGETS, &t);
	pause_s(secs);
	return 0;
}

/*
 * Real-time priority 1 when allowed (root): the host's other work (other
 * cgroups, autogroups) then barely delays us, so two round-robin loops on
 * one CPU wait about half the time each and a sleeper wakes on time.
 */
static void realtime(int policy)
{
	struct sched_param sp = { .sched_priority = 1 };

	sched_setscheduler(0, policy, &sp);
}

/* per_s absolute-deadline sleeps a second for secs: one voluntary switch each. */
static int do_sleeps(unsigned long per_s, double secs)
{
	unsigned long long t = now_ns(), step = 1000000000ull / per_s;
	unsigned long long end = t + (unsigned long long)(secs * 1e9);

	realtime(SCHED_FIFO);
	while ((t += step) < end)
		sleep_until(t);
	return 0;
}

#define THREADS_MAX 64

struct sleeper {
	unsigned long per_s;
	double secs;
};

static void *sleeper_main(void *arg)
{
	const struct sleeper *s = arg;

	do_sleeps(s->per_s, s->secs);
	return NULL;
}

/* n threads of per_s sleeps a second, thread i for secs * (i + 1) / n: they end one by one. */
static int do_threads(int n, unsigned long per_s, double secs)
{
	struct sleeper s[THREADS_MAX];
	pthread_t tids[THREADS_MAX];

	if (n < 1 || n > THREADS_MAX)
		return 2;
	for (int i = 0; i < n; i++) {
		s[i] = (struct sleeper){ .per_s = per_s, .secs = secs * (i + 1) / n };
		if (pthread_create(&tids[i], NULL, sleeper_main, &s[i]) != 0)
			return 1;
	}
	for (int i = 0; i < n; i++)
		pthread_join(tids[i], NULL);
	return 0;
}

static unsigned long long cpu_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

/* Burns CPU_S seconds of its own CPU time at normal priority (spin is realtime, pinned). */
static int do_burn(double cpu_s)
{
	volatile unsigned long x = 0;

	while (cpu_ns() < (unsigned long long)(cpu_s * 1e9))
		for (int i = 0; i < 10000; i++)
			x++;
	return 0;
}

/* "done" with what this process did so far, then held until stdin closes. */
static void done_report(unsigned long long calls, unsigned long long bytes)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	printf("done calls=%llu bytes=%llu cpu_ns=%llu nvcsw=%ld\n", calls, bytes, cpu_ns(),
		ru.ru_nvcsw);
	hold();
}

/*
 * Quiet polls: after delay_ms, burst getppid() at once, then count steps
 * every_ms apart, each batch getppid() and burn_us of this process's own
 * CPU time (a poll then holds little CPU but something done).
 */
static int do_paced(unsigned long delay_ms, unsigned long burst, unsigned long batch,
	unsigned long every_ms, unsigned long count, unsigned long burn_us)
{
	unsigned long long start = now_ns() + delay_ms * 1000000ull, calls = 0;

	sleep_until(start);
	for (; calls < burst; calls++)
		syscall(SYS_getppid);
	for (unsigned long s = 1; s <= count; s++) {
		unsigned long long until = cpu_ns() + burn_us * 1000ull;

		for (unsigned long i = 0; i < batch; i++, calls++)
			syscall(SYS_getppid);
		while (cpu_ns() < until)
			;
		sleep_until(start + s * every_ms * 1000000ull);
	}
	done_report(calls, 0);
	return 0;
}

/* A busy loop pinned to cpu for secs. */
static int do_spin(int cpu, double secs)
{
	cpu_set_t set;
	unsigned long long end = now_ns() + (unsigned long long)(secs * 1e9);
	volatile unsigned long x = 0;

	realtime(SCHED_RR);
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set) < 0) {
		perror("sched_setaffinity");
		return 1;
	}
	while (now_ns() < end)
		for (int i = 0; i < 10000; i++)
			x++;
	return 0;
}

/* Sends bytes_per_s to 127.0.0.1:port for secs in 10 ms slices. */
static int do_send(int port, unsigned long bytes_per_s, double secs)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	static char buf[1 << 16];
	unsigned long long start = now_ns();
	unsigned long per_slice = bytes_per_s / 100, slices = (unsigned long)(secs * 100);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("connect");
		return 1;
	}
	for (unsigned long s = 1; s <= slices; s++) {
		for (unsigned long left = per_slice; left > 0;) {
			ssize_t n = send(fd, buf, left < sizeof(buf) ? left : sizeof(buf), 0);

			if (n <= 0)
				return 1;
			left -= (unsigned long)n;
		}
		sleep_until(start + s * 10000000ull);
	}
	close(fd);
	return 0;
}

/* count sends of bytes to 127.0.0.1:port every_ms apart; the connection held open after. */
static int do_send_paced(int port, unsigned long bytes, unsigned long every_ms, unsigned long count)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	static char buf[1 << 16];
	unsigned long long start = now_ns(), sent = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bytes > sizeof(buf) || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		perror("connect");
		return 1;
	}
	for (unsigned long s = 1; s <= count; s++) {
		sleep_until(start + s * every_ms * 1000000ull);
		if (send(fd, buf, bytes, 0) != (ssize_t)bytes)
			return 1;
		sent += bytes;
	}
	done_report(0, sent);
	close(fd);
	return 0;
}

/*
 * Accepts one connection on 127.0.0.1:port (0: a port free now, so that two
 * checkouts' tests on one machine never meet) and reads until it closes;
 * says "listening PORT" first.
 */
static int do_recv(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	socklen_t alen = sizeof(a);
	static char buf[1 << 16];
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0), c;

	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 1) < 0 ||
		getsockname(fd, (struct sockaddr *)&a, &alen) < 0) {
		perror("bind");
		return 1;
	}
	printf("listening %u\n", ntohs(a.sin_port));
	fflush(stdout);
	if ((c = accept(fd, NULL, NULL)) < 0)
		return 1;
	while (recv(c, buf, sizeof(buf), 0) > 0)
		;
	return 0;
}

/*
 * At exit: the kernel's own figures for this process (one thread), to check
 * the probe against: voluntary and involuntary switches, run-queue wait ns.
 */
static void report(void)
{
	struct rusage ru;
	unsigned long long run_ns = 0, wait_ns = 0;
	FILE *f = fopen("/proc/self/schedstat", "re");

	if (f) {
		if (fscanf(f, "%llu %llu", &run_ns, &wait_ns) != 2)
			wait_ns = 0;
		fclose(f);
	}
	getrusage(RUSAGE_SELF, &ru);
	if (getenv("PROBE_WORK_REPORT"))
		fprintf(stderr, "report nvcsw=%ld nivcsw=%ld run_ns=%llu wait_ns=%llu\n",
			ru.ru_nvcsw, ru.ru_nivcsw, run_ns, wait_ns);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";

	atexit(report);

	/* optional trailing DELAY: seconds asleep first, so the sampler sees us before */
	if (!strcmp(mode, "getppid") && argc >= 4 && argc <= 6) {
		pause_s(argc > 4 ? atof(argv[4]) : 0);
		do_calls(SYS_getppid, strtoul(argv[2], NULL, 10), atof(argv[3]));
		pause_s(argc > 5 ? atof(argv[5]) : 0); /* HOLD: alive after the calls */
		return 0;
	}
	if (!strcmp(mode, "ioctl") && (argc == 5 || argc == 6)) {
		pause_s(argc > 5 ? atof(argv[5]) : 0);
		return do_ioctls(argv[2], strtoul(argv[3], NULL, 10), atof(argv[4]));
	}
	if (!strcmp(mode, "sleeps") && argc == 4)
		return do_sleeps(strtoul(argv[2], NULL, 10), atof(argv[3]));
	if (!strcmp(mode, "threads") && argc == 5)
		return do_threads(atoi(argv[2]), strtoul(argv[3], NULL, 10), atof(argv[4]));
	if (!strcmp(mode, "burn") && argc == 3)
		return do_burn(atof(argv[2]));
	if (!strcmp(mode, "spin") && argc == 4)
		return do_spin(atoi(argv[2]), atof(argv[3]));
	if (!strcmp(mode, "send") && argc == 5)
		return do_send(atoi(argv[2]), strtoul(argv[3], NULL, 10), atof(argv[4]));
	if (!strcmp(mode, "paced") && argc == 8)
		return do_paced(strtoul(argv[2], NULL, 10), strtoul(argv[3], NULL, 10),
			strtoul(argv[4], NULL, 10), strtoul(argv[5], NULL, 10),
			strtoul(argv[6], NULL, 10), strtoul(argv[7], NULL, 10));
	if (!strcmp(mode, "sendpaced") && argc == 6)
		return do_send_paced(atoi(argv[2]), strtoul(argv[3], NULL, 10),
			strtoul(argv[4], NULL, 10), strtoul(argv[5], NULL, 10));
	if (!strcmp(mode, "recv") && argc == 3)
		return do_recv(atoi(argv[2]));
	fprintf(stderr, "usage: probe-work getppid N SECS [DELAY [HOLD]] | ioctl PATH N HOLD "
			"[DELAY] | sleeps PER_S SECS"
			" | threads N PER_S SECS"
			" | spin CPU SECS | burn CPU_S | send PORT BYTES_PER_S SECS | recv PORT"
			" | paced DELAY_MS BURST BATCH EVERY_MS COUNT BURN_US"
			" | sendpaced PORT BYTES EVERY_MS COUNT\n");
	return 2;
}
