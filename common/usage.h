/*
 * usage.h: command-line errors worded as Debian's tools word them: one line
 * naming the program with its subcommand ("croft run: ..."), then "Try
 * 'croft run --help' for more information.", exit status 2.  Any process.
 */
#ifndef CROFT_USAGE_H
#define CROFT_USAGE_H

#define USAGE_EXIT 2 /* the exit status of a usage error */

/* "PROGRAM: MESSAGE" and the Try line on stderr; returns USAGE_EXIT. */
int usage_error(const char *program, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * After getopt_long returned '?' or ':' with opterr = 0 and an optstring
 * starting with ':': says which option, as getopt would, then the Try line.
 * Returns USAGE_EXIT.
 */
int usage_getopt(const char *program, char *const *argv, int c);

/* A whole number in [min, max] from text, or -EINVAL (said by the caller). */
int usage_number(const char *text, long long min, long long max, long long *ret);

#endif
