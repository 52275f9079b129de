/*
 * log.c: the stderr logger of every croft process, after OpenBSD's log.c.
 * Under systemd (JOURNAL_STREAM names our stderr) each line carries a "<N>"
 * priority prefix and no time; on a terminal, UTC time and the program name.
 * Any process, any privilege.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "log.h"

#define LOG_LINE_MAX 4096 /* bytes of one formatted message */

static const char *log_name = "croft";
static bool log_verbose;
static bool log_journal;

/* JOURNAL_STREAM is "dev:ino" of the stream systemd gave us; it only counts
 * when stderr is still that stream (not redirected by a child's parent). */
static bool log_stderr_is_journal(void)
{
	const char *env = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!env || sscanf(env, "%llu:%llu", &dev, &ino) != 2)
		return false;
	if (fstat(STDERR_FILENO, &st) < 0)
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

void log_init(const char *name, bool verbose)
{
	int saved_errno = errno;

	if (name)
		log_name = name;
	log_verbose = verbose;
	log_journal = log_stderr_is_journal();
	errno = saved_errno;
}

static void log_prefix(int priority, char *buf, size_t len)
{
	struct timespec ts;
	struct tm tm;

	if (log_journal) {
		snprintf(buf, len, "<%d>", priority);
		return;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ ", &tm);
	strncat(buf, log_name, len - strlen(buf) - 1);
	strncat(buf, ": ", len - strlen(buf) - 1);
}

/* One message is one line: a newline or escape from a process name or a
 * path must not forge a second line (or a journal priority). */
static void log_sanitize(char *text)
{
	for (unsigned char *p = (unsigned char *)text; *p; p++)
		if (*p < 0x20 || *p == 0x7f)
			*p = '?';
}

static void log_write(const char *line, size_t len)
{
	while (len > 0) {
		ssize_t n = write(STDERR_FILENO, line, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		line += n;
		len -= (size_t)n;
	}
}

static void __attribute__((format(printf, 3, 0)))
log_vmsg(int priority, bool with_errno, const char *fmt, va_list ap)
{
	int saved_errno = errno;
	char prefix[128], msg[LOG_LINE_MAX], line[LOG_LINE_MAX + 256];
	int n;

	if (priority == LOG_DEBUG && !log_verbose) {
		errno = saved_errno;
		return;
	}
	log_prefix(priority, prefix, sizeof(prefix));
	vsnprintf(msg, sizeof(msg), fmt, ap);
	log_sanitize(msg);
	if (with_errno)
		n = snprintf(
			line, sizeof(line) - 1, "%s%s: %s", prefix, msg, strerror(saved_errno));
	else
		n = snprintf(line, sizeof(line) - 1, "%s%s", prefix, msg);
	if (n < 0)
		n = 0;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	/* One write(2) per line: lines of several processes sharing a pipe stay whole. */
	log_write(line, (size_t)n);
	errno = saved_errno;
}

/* then: what follows the line (fatal's exit), or nothing */
#define LOG_FN(fn, priority, with_errno, then)                                                     \
	void fn(const char *fmt, ...)                                                              \
	{                                                                                          \
		va_list ap;                                                                        \
		va_start(ap, fmt);                                                                 \
		log_vmsg(priority, with_errno, fmt, ap);                                           \
		va_end(ap);                                                                        \
		then;                                                                              \
	}

LOG_FN(log_warn, LOG_WARNING, true, )
LOG_FN(log_warnx, LOG_WARNING, false, )
LOG_FN(log_info, LOG_INFO, false, )
LOG_FN(log_notice, LOG_NOTICE, false, )
LOG_FN(log_debug, LOG_DEBUG, false, )
LOG_FN(fatal, LOG_CRIT, true, exit(1))
LOG_FN(fatalx, LOG_CRIT, false, exit(1))
