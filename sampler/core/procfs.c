/*
 * procfs.c: readers of /proc/<pid>/ files (stat, io, exe, cwd, environ,
 * cmdline, maps), each relative to an open /proc and bounded, and of a
 * process's CPU clock.  Runs in croft-sampler with CAP_SYS_PTRACE +
 * CAP_DAC_READ_SEARCH (maps, exe, cwd, io and environ of other users);
 * without them it reads what it may.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "catalog.h"
#include "host.h"
#include "wire.h"

#define LABEL_VAR     "CROFT_LABEL="
#define MAPS_CHUNK    (64u << 10)
#define MAPS_LINE_MAX (PROC_LINK_MAX + 256)

ssize_t procfs_pread(int fd, char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;

	while (len + 1 < size) {
		size_t want = size - 1 - len;

		n = pread(fd, buf + len, want, (off_t)len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		len += (size_t)n;
		/* /proc and cgroup files show whole records: a short read is the end
		 * (saves the second syscall that would return 0) */
		if ((size_t)n < want)
			break;
	}
	buf[len] = '\0';
	return (ssize_t)len;
}

ssize_t procfs_read_at(int dirfd, const char *path, char *buf, size_t size)
{
	int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC);
	ssize_t r;

	if (fd < 0)
		return -errno;
	r = procfs_pread(fd, buf, size);
	close(fd);
	return r;
}

/* Fields after "pid (comm) ": state is field 3. */
int procfs_parse_stat(const char *buf, size_t len, struct proc_stat *ret_stat)
{
	const char *open = memchr(buf, '(', len), *close = NULL, *p;
	unsigned long long f[29] = { 0 };
	int field = 3;

	for (const char *q = buf + len; q > buf; q--)
		if (q[-1] == ')') {
			close = q - 1;
			break;
		}
	if (!open || !close || close < open || close + 2 >= buf + len)
		return -EINVAL;
	p = close + 2;
	/* rsslim, startcode, endcode, startstack (25-28) may be missing: 0 where
	 * the reader may not ptrace the process (the sampler's CAP_SYS_PTRACE may) */
	while (field <= 28 && p < buf + len) {
		char *endp;

		if (field == 3) {
			p += 2; /* state letter and space */
			field++;
			continue;
		}
		f[field] = strtoull(p, &endp, 10);
		if (endp == p)
			break;
		p = endp + (*endp == ' ');
		field++;
	}
	if (field <= 24)
		return -EINVAL;
	ret_stat->comm = open + 1;
	ret_stat->comm_len = (size_t)(close - open - 1);
	ret_stat->flags = (unsigned)f[9];
	ret_stat->cpu_ticks = f[14] + f[15];
	ret_stat->threads = (uint32_t)f[20];
	ret_stat->start_ticks = f[22];
	ret_stat->vsize = f[23];
	ret_stat->rss_pages = f[24];
	ret_stat->image = (struct proc_image){ f[26], f[27], f[28] };
	return 0;
}

/*
 * The kernel's CPU-time clock of a whole process (clock_getcpuclockid(3)):
 * every thread's scheduler run time in ns, exited threads included, read in
 * one call.  utime+stime in /proc/<pid>/stat count whole clock ticks, and
 * /proc/<pid>/schedstat is the leader thread's alone.
 */
int procfs_cpu_ns(clockid_t clock, uint64_t *ret_ns)
{
	struct timespec ts;

	if (clock_gettime(clock, &ts) < 0)
		return -errno;
	*ret_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	return 0;
}

/*
 * The boot time as unix ms, for process.start_ms: btime of /proc/stat, the
 * kernel's own whole second, the same on every read until the wall clock
 * is stepped, so a process gets the same start_ms from every poll and from
 * a restarted sampler.  (CLOCK_REALTIME - CLOCK_BOOTTIME is that offset
 * too, but two clock reads are not one instant: their millisecond differs
 * from read to read.)  Without btime, that difference cut to the second.
 */
int procfs_boot_unix_ms(int procfd, uint64_t *ret_ms)
{
	char *buf = malloc(PROC_STAT_TEXT_MAX + 1);
	const char *line;
	ssize_t n;
	int r = -ENOENT;

	if (!buf)
		return -ENOMEM;
	n = procfs_read_at(procfd, "stat", buf, PROC_STAT_TEXT_MAX + 1);
	if (n > 0) {
		line = strstr(buf, "\nbtime ");
		if (line) {
			*ret_ms = strtoull(line + 7, NULL, 10) * 1000;
			r = 0;
		}
	}
	free(buf);
	if (r) {
		struct timespec real, boot;

		clock_gettime(CLOCK_REALTIME, &real);
		clock_gettime(CLOCK_BOOTTIME, &boot);
		*ret_ms = (uint64_t)(real.tv_sec - boot.tv_sec - (real.tv_nsec < boot.tv_nsec)) *
			  1000;
	}
	return r;
}

/*
 * The CPU clocks take pids of our own namespace; /proc may be another's
 * (a sampler in a child pid namespace reading the host's /proc).
 */
bool procfs_pidns_ours(int procfd)
{
	char link[32];
	ssize_t n = readlinkat(procfd, "self", link, sizeof(link) - 1);

	if (n <= 0)
		return false;
	link[n] = '\0';
	return strtol(link, NULL, 10) == (long)getpid();
}

int procfs_parse_keyed(const char *text, const char *key, uint64_t *ret_value)
{
	size_t klen = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		char *endp;
		unsigned long long v;

		if (strncmp(p, key, klen) || (p[klen] != ' ' && p[klen] != '\t'))
			continue;
		errno = 0;
		v = strtoull(p + klen + 1, &endp, 10);
		if (errno || endp == p + klen + 1)
			return -EINVAL;
		*ret_value = v;
		return 0;
	}
	return -ENOENT;
}

int procfs_parse_io(const char *buf, size_t len, uint64_t *ret_read, uint64_t *ret_write)
{
	uint64_t r, w;

	(void)len;
	if (procfs_parse_keyed(buf, "read_bytes:", &r) ||
		procfs_parse_keyed(buf, "write_bytes:", &w))
		return -EINVAL;
	*ret_read = r;
	*ret_write = w;
	return 0;
}

int procfs_parse_uid(const char *buf, size_t len, uint32_t *ret_uid)
{
	uint64_t uid;

	(void)len;
	/* "Uid:\treal\teffective\tsaved\tfs": the first is the real uid */
	if (procfs_parse_keyed(buf, "Uid:", &uid) || uid > UINT32_MAX)
		return -EINVAL;
	*ret_uid = (uint32_t)uid;
	return 0;
}

int procfs_uid(int procfd, pid_t tgid, uint32_t *ret_uid)
{
	char path[64], buf[PROC_STATUS_HEAD];
	ssize_t n;

	snprintf(path, sizeof(path), "%d/status", (int)tgid);
	n = procfs_read_at(procfd, path, buf, sizeof(buf));
	if (n < 0)
		return (int)n;
	return procfs_parse_uid(buf, (size_t)n, ret_uid);
}

int procfs_readlink(int procfd, pid_t tgid, const char *name, char **ret, size_t *ret_len)
{
	char path[64], *buf = malloc(PROC_LINK_MAX), *copy;
	ssize_t n;

	if (!buf)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%d/%s", (int)tgid, name);
	n = readlinkat(procfd, path, buf, PROC_LINK_MAX);
	if (n < 0 || n >= PROC_LINK_MAX) {
		free(buf);
		return n < 0 ? -errno : -ENAMETOOLONG;
	}
	copy = realloc(buf, (size_t)n + 1);
	copy = copy ? copy : buf;
	copy[n] = '\0';
	*ret = copy;
	*ret_len = (size_t)n;
	return 0;
}

/*
 * CROFT_LABEL from environ, streamed in chunks: only that variable is kept;
 * the rest of the environment is never stored or logged.
 */
struct label_scan {
	char entry[sizeof(LABEL_VAR) - 1 +
		   CTL_LABEL_MAX]; /* "CROFT_LABEL=" + CTL_LABEL_MAX bytes */
	size_t entry_len;
	bool entry_long; /* longer than entry[]: not ours or too long */
	char *found;
	size_t found_len;
};

static void label_entry_done(struct label_scan *ls)
{
	size_t vlen = strlen(LABEL_VAR);

	if (!ls->entry_long && ls->entry_len >= vlen && memcmp(ls->entry, LABEL_VAR, vlen) == 0) {
		free(ls->found);
		ls->found_len = ls->entry_len - vlen; /* no NUL: it ended the entry */
		ls->found = strndup(ls->entry + vlen, ls->found_len);
	}
	explicit_bzero(ls->entry, sizeof(ls->entry));
	ls->entry_len = 0;
	ls->entry_long = false;
}

static void label_feed(struct label_scan *ls, const char *buf, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (buf[i] == '\0') {
			label_entry_done(ls);
			continue;
		}
		if (ls->entry_len < sizeof(ls->entry))
			ls->entry[ls->entry_len++] = buf[i];
		else
			ls->entry_long = true;
	}
}

int procfs_label(int procfd, pid_t tgid, char **ret, size_t *ret_len)
{
	struct label_scan ls = { 0 };
	char path[64], *buf;
	size_t total = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%d/environ", (int)tgid);
	fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(MAPS_CHUNK);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (total < PROC_ENVIRON_MAX && (n = read(fd, buf, MAPS_CHUNK)) > 0) {
		label_feed(&ls, buf, (size_t)n);
		total += (size_t)n;
	}
	label_entry_done(&ls); /* a last entry without its NUL */
	explicit_bzero(buf, MAPS_CHUNK);
	free(buf);
	close(fd);
	if (!ls.found)
		return -ENOENT;
	*ret = ls.found;
	*ret_len = ls.found_len;
	return 0;
}

/* The file column of one maps line, or NULL for anonymous mappings. */
static const char *maps_path(char *line)
{
	char *p = line;

	for (int i = 0; i < 5; i++) {
		p = strchr(p, ' ');
		if (!p)
			return NULL;
		while (*p == ' ')
			p++;
	}
	return *p == '/' ? p : NULL;
}

static size_t match_maps(int fd, const struct catalog *cat, size_t best)
{
	char *buf = malloc(MAPS_CHUNK + MAPS_LINE_MAX + 1), prev[256] = "";
	size_t carry = 0;
	ssize_t n;

	if (!buf)
		return best;
	while (best > 0 && (n = read(fd, buf + carry, MAPS_CHUNK)) > 0) {
		size_t len = carry + (size_t)n, start = 0;

		for (char *nl; best > 0 && (nl = memchr(buf + start, '\n', len - start));
			start = (size_t)(nl - buf) + 1) {
			const char *path;

			*nl = '\0';
			path = maps_path(buf + start);
			/* consecutive mappings of one file: match it once */
			if (!path || strncmp(prev, path, sizeof(prev) - 1) == 0)
				continue;
			snprintf(prev, sizeof(prev), "%s", path);
			best = catalog_match_path(cat, path, best);
		}
		carry = len - start;
		if (carry > MAPS_LINE_MAX)
			carry = 0; /* an absurd line: skip it */
		memmove(buf, buf + start, carry);
	}
	free(buf);
	return best;
}

size_t procfs_framework(int procfd, pid_t tgid, const struct catalog *cat, size_t best)
{
	char path[64], *args;
	ssize_t n;
	int fd;

	if (best > cat->entries_count)
		best = cat->entries_count;
	if (best == 0)
		return 0; /* nothing comes before the first entry */
	args = malloc(PROC_CMDLINE_MAX);
	if (args) {
		snprintf(path, sizeof(path), "%d/cmdline", (int)tgid);
		n = procfs_read_at(procfd, path, args, PROC_CMDLINE_MAX);
		if (n > 0)
			best = catalog_match_cmdline(cat, args, (size_t)n, best);
		free(args);
	}
	snprintf(path, sizeof(path), "%d/maps", (int)tgid);
	fd = openat(procfd, path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		best = match_maps(fd, cat, best);
		close(fd);
	}
	return best;
}
