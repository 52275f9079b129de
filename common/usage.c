/*
 * usage.c: command-line errors in one form for every croft program: the
 * program and subcommand, the option, the value and what is accepted, then
 * where the help is.  Any process, any privilege.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "usage.h"

static int usage_try(const char *program)
{
	fprintf(stderr, "Try '%s --help' for more information.\n", program);
	return USAGE_EXIT;
}

int usage_error(const char *program, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", program);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return usage_try(program);
}

int usage_getopt(const char *program, char *const *argv, int c)
{
	/* optind is past the offending word; a short option may be inside a cluster */
	const char *word = optind > 0 ? argv[optind - 1] : "";

	if (c == ':') {
		if (word[0] == '-' && word[1] == '-')
			return usage_error(program, "option '%s' requires an argument", word);
		return usage_error(program, "option requires an argument -- '%c'", optopt);
	}
	if (!(word[0] == '-' && word[1] == '-'))
		return usage_error(program, "invalid option -- '%c'", optopt);
	if (optopt) /* a known long option given "=VALUE" it does not take */
		return usage_error(
			program, "option '%.*s' takes no argument", (int)strcspn(word, "="), word);
	return usage_error(program, "unrecognized option '%s'", word);
}

int usage_number(const char *text, long long min, long long max, long long *ret)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(text, &end, 10);
	if (errno || end == text || *end || v < min || v > max)
		return -EINVAL;
	*ret = v;
	return 0;
}
