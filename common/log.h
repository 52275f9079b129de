/*
 * log.h: the logger every croft process uses.  On a terminal: time, daemon
 * name, message.  Under systemd (JOURNAL_STREAM names our stderr): "<N>"
 * priority prefixes and no timestamps, journald adds its own.
 */
#ifndef CROFT_LOG_H
#define CROFT_LOG_H

#include <stdarg.h>
#include <stdbool.h>

/* name: the daemon or command ("croft-writer"); verbose: log_debug too. */
void log_init(const char *name, bool verbose);

/* log_warn appends strerror(errno); the others do not.  All keep errno. */
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warnx(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_info(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_notice(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Log at LOG_CRIT and exit(1); fatal appends strerror(errno). */
void fatal(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
void fatalx(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

#endif
