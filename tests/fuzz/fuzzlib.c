/*
 * fuzzlib.c: the scratch directory of a libFuzzer harness: files written
 * per input for the parsers that read by path or relative to a directory,
 * all removed at exit.  Fuzzer process only.
 */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzzlib.h"

static char dir_path[64];
static int dir_fd = -1;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	remove(path);
	return 0;
}

static void remove_dir(void)
{
	nftw(dir_path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

const char *fuzz_dir(void)
{
	if (dir_fd >= 0)
		return dir_path;
	/* tmpfs: a disk file system flushes a truncated and rewritten file on close */
	snprintf(dir_path, sizeof(dir_path), "/dev/shm/croft-fuzz.XXXXXX");
	if (!mkdtemp(dir_path)) {
		snprintf(dir_path, sizeof(dir_path), "/tmp/croft-fuzz.XXXXXX");
		if (!mkdtemp(dir_path))
			abort();
	}
	dir_fd = open(dir_path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir_fd < 0)
		abort();
	atexit(remove_dir);
	return dir_path;
}

int fuzz_dir_fd(void)
{
	fuzz_dir();
	return dir_fd;
}

/* mkdir -p of name's parent directories, relative to the scratch directory. */
static void make_parents(const char *name)
{
	char sub[256];

	for (const char *slash = strchr(name, '/'); slash; slash = strchr(slash + 1, '/')) {
		if ((size_t)(slash - name) >= sizeof(sub))
			abort();
		memcpy(sub, name, (size_t)(slash - name));
		sub[slash - name] = '\0';
		if (mkdirat(fuzz_dir_fd(), sub, 0700) < 0 && errno != EEXIST)
			abort();
	}
}

const char *fuzz_write(const char *name, const uint8_t *data, size_t size)
{
	static char path[512];
	int fd;

	make_parents(name);
	fd = openat(fuzz_dir_fd(), name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || (size && write(fd, data, size) != (ssize_t)size) || close(fd) < 0)
		abort();
	snprintf(path, sizeof(path), "%s/%s", fuzz_dir(), name);
	return path;
}

char *fuzz_strndup(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

char *fuzz_memdup(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1);

	if (!buf)
		abort();
	memcpy(buf, data, size);
	return buf;
}
