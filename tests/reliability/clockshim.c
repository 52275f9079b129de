/*
 * clockshim.c: LD_PRELOAD shim that moves a process's wall clock without
 * touching the host's: CLOCK_REALTIME(_COARSE), time() and gettimeofday()
 * are offset by the signed milliseconds written in the file named by
 * CROFT_CLOCK_OFFSET_FILE, re-read every 20 ms of monotonic time, so a
 * test jumps the clock of a running daemon by rewriting that file.
 * Monotonic and boot clocks pass through untouched.  Test only.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static atomic_llong offset_ms;
static atomic_llong next_read_ns;

static long long mono_ns(void)
{
	struct timespec ts;

	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Raw syscalls only: the daemons' seccomp allows them and nothing recurses. */
static long long offset_now(void)
{
	const char *path = getenv("CROFT_CLOCK_OFFSET_FILE");
	long long now = mono_ns();
	char buf[32];
	int fd;
	long n;

	if (!path || now < atomic_load(&next_read_ns))
		return atomic_load(&offset_ms);
	atomic_store(&next_read_ns, now + 20000000LL);
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return atomic_load(&offset_ms);
	n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	syscall(SYS_close, fd);
	if (n > 0) {
		buf[n] = '\0';
		atomic_store(&offset_ms, strtoll(buf, NULL, 10));
	}
	return atomic_load(&offset_ms);
}

static void shift(struct timespec *ts, long long ms)
{
	long long ns = (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec + ms * 1000000LL;

	ts->tv_sec = (time_t)(ns / 1000000000LL);
	ts->tv_nsec = (long)(ns % 1000000000LL);
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	int r = (int)syscall(SYS_clock_gettime, id, ts);

	if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
		shift(ts, offset_now());
	return r;
}

int gettimeofday(struct timeval *tv, void *tz)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_REALTIME, &ts))
		return -1;
	/* glibc declares tv nonnull */
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}

time_t time(time_t *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
