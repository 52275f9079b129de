/*
 * crashshim.c: LD_PRELOAD shim for the writer's crash-point test.  Counts
 * the filesystem calls that change or open files (write, pwrite, fsync,
 * fdatasync, rename(at), unlink(at), ftruncate, open(at)) across all
 * threads and SIGKILLs the process at call CROFT_CRASH_AT (0: never).  The
 * running count and the name of the last call go to CROFT_CRASH_COUNT (a
 * file) so the test knows how many steps a run has.  While the file named
 * by CROFT_FAIL_FILE exists, every counted call that would change a file
 * fails with the errno number written in it (EROFS, ENOSPC... without a
 * remount, which the kernel refuses while the writer holds files open).
 * Test only.
 */
/* meson builds with _FILE_OFFSET_BITS=64, which renames open to open64 and
 * would define the *64 entry points twice: this shim wraps both by name. */
#undef _FILE_OFFSET_BITS
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

static atomic_ulong calls;
static unsigned long crash_at;
static int count_fd = -1;

__attribute__((constructor)) static void shim_init(void)
{
	const char *at = getenv("CROFT_CRASH_AT"), *file = getenv("CROFT_CRASH_COUNT");

	crash_at = at ? strtoul(at, NULL, 10) : 0;
	if (file)
		count_fd = (int)syscall(
			SYS_openat, AT_FDCWD, file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
}

/* The errno to fail with while CROFT_FAIL_FILE exists, else 0. */
static int injected(void)
{
	const char *path = getenv("CROFT_FAIL_FILE");
	char buf[16];
	long n;
	int fd;

	if (!path)
		return 0;
	fd = (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = syscall(SYS_read, fd, buf, sizeof(buf) - 1);
	syscall(SYS_close, fd);
	buf[n > 0 ? n : 0] = '\0';
	return atoi(buf) > 0 ? atoi(buf) : EROFS;
}

static bool regular(int fd)
{
	struct stat st;

	return syscall(SYS_fstat, fd, &st) == 0 && S_ISREG(st.st_mode);
}

/* A call on a regular file (or a path) while failing is injected: -1/errno. */
#define FAIL_IF(cond)                                                                              \
	do {                                                                                       \
		int e_ = (cond) ? injected() : 0;                                                  \
		if (e_) {                                                                          \
			errno = e_;                                                                \
			return -1;                                                                 \
		}                                                                                  \
	} while (0)

/* One step: record it (raw syscalls, so the shim does not count itself). */
static void step(const char *what)
{
	unsigned long n = atomic_fetch_add(&calls, 1) + 1;
	char buf[64];
	int len;

	if (count_fd >= 0) {
		len = snprintf(buf, sizeof(buf), "%lu %-10s\n", n, what);
		syscall(SYS_pwrite64, count_fd, buf, (size_t)len, (off_t)0);
	}
	if (crash_at && n == crash_at)
		syscall(SYS_kill, getpid(), SIGKILL);
}

/* dlsym's void * to a function pointer through memcpy (ISO C has no cast). */
#define NEXT(name)                                                                                 \
	static __typeof__(name) *next_##name;                                                      \
	if (!next_##name) {                                                                        \
		void *sym_ = dlsym(RTLD_NEXT, #name);                                              \
		memcpy(&next_##name, &sym_, sizeof(sym_));                                         \
	}

ssize_t write(int fd, const void *buf, size_t n)
{
	NEXT(write);
	if (fd > 2)
		step("write");
	FAIL_IF(fd > 2 && regular(fd));
	return next_write(fd, buf, n);
}

ssize_t pwrite(int fd, const void *buf, size_t n, off_t off)
{
	NEXT(pwrite);
	step("pwrite");
	FAIL_IF(regular(fd));
	return next_pwrite(fd, buf, n, off);
}

ssize_t pwrite64(int fd, const void *buf, size_t n, off_t off)
{
	NEXT(pwrite64);
	step("pwrite");
	FAIL_IF(regular(fd));
	return next_pwrite64(fd, buf, n, off);
}

int fsync(int fd)
{
	NEXT(fsync);
	step("fsync");
	FAIL_IF(regular(fd));
	return next_fsync(fd);
}

int fdatasync(int fd)
{
	NEXT(fdatasync);
	step("fdatasync");
	FAIL_IF(regular(fd));
	return next_fdatasync(fd);
}

int rename(const char *a, const char *b)
{
	NEXT(rename);
	step("rename");
	FAIL_IF(true);
	return next_rename(a, b);
}

int renameat(int da, const char *a, int db, const char *b)
{
	NEXT(renameat);
	step("renameat");
	FAIL_IF(true);
	return next_renameat(da, a, db, b);
}

int unlink(const char *p)
{
	NEXT(unlink);
	step("unlink");
	FAIL_IF(true);
	return next_unlink(p);
}

int unlinkat(int d, const char *p, int flags)
{
	NEXT(unlinkat);
	step("unlinkat");
	FAIL_IF(true);
	return next_unlinkat(d, p, flags);
}

int ftruncate(int fd, off_t len)
{
	NEXT(ftruncate);
	step("ftruncate");
	FAIL_IF(true);
	return next_ftruncate(fd, len);
}

int ftruncate64(int fd, off_t len)
{
	NEXT(ftruncate64);
	step("ftruncate");
	FAIL_IF(true);
	return next_ftruncate64(fd, len);
}

int openat(int d, const char *p, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	NEXT(openat);
	va_start(ap, flags);
	if (flags & (O_CREAT | O_TMPFILE))
		mode = va_arg(ap, mode_t);
	va_end(ap);
	step("openat");
	FAIL_IF(flags & (O_WRONLY | O_RDWR | O_CREAT));
	return next_openat(d, p, flags, mode);
}

int openat64(int d, const char *p, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	NEXT(openat64);
	va_start(ap, flags);
	if (flags & (O_CREAT | O_TMPFILE))
		mode = va_arg(ap, mode_t);
	va_end(ap);
	step("openat");
	FAIL_IF(flags & (O_WRONLY | O_RDWR | O_CREAT));
	return next_openat64(d, p, flags, mode);
}

int open(const char *p, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	NEXT(open);
	va_start(ap, flags);
	if (flags & (O_CREAT | O_TMPFILE))
		mode = va_arg(ap, mode_t);
	va_end(ap);
	step("open");
	FAIL_IF(flags & (O_WRONLY | O_RDWR | O_CREAT));
	return next_open(p, flags, mode);
}

int open64(const char *p, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	NEXT(open64);
	va_start(ap, flags);
	if (flags & (O_CREAT | O_TMPFILE))
		mode = va_arg(ap, mode_t);
	va_end(ap);
	step("open");
	FAIL_IF(flags & (O_WRONLY | O_RDWR | O_CREAT));
	return next_open64(p, flags, mode);
}
