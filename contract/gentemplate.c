/*
 * gentemplate.c: the build-time generators' template read whole and their
 * output written around the generated part (gentemplate.h).  Build
 * machine, no privilege.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "gentemplate.h"

int gen_template_read(const char *path, char *text, size_t size, size_t *ret_len)
{
	FILE *in = fopen(path, "r");
	size_t len;
	int full;

	if (!in) {
		perror(path);
		return -1;
	}
	len = fread(text, 1, size - 1, in);
	/* a template cut at size would make an output that looks whole */
	full = len == size - 1 && fgetc(in) != EOF;
	if (ferror(in) || full) {
		fprintf(stderr, "%s: %s\n", path,
			full ? "larger than the generator reads" : strerror(errno));
		fclose(in);
		return -1;
	}
	fclose(in);
	text[len] = '\0';
	*ret_len = len;
	return 0;
}

/* A failed output goes, so that nothing reads a part of it as the whole, but
 * only a file the generator made: never a device or a pipe it was pointed at. */
static void drop_output(FILE *out, const char *path)
{
	struct stat st;
	bool regular = fstat(fileno(out), &st) == 0 && S_ISREG(st.st_mode);

	fclose(out);
	if (regular)
		remove(path);
}

int gen_write_spliced(
	const char *path, const char *text, size_t head_len, gen_put_fn *put, const char *tail)
{
	FILE *out = fopen(path, "w");

	if (!out) {
		perror(path);
		return -1;
	}
	fwrite(text, 1, head_len, out);
	if (put(out) < 0) { /* put said why */
		drop_output(out, path);
		return -1;
	}
	fputs(tail, out);
	if (fflush(out) || ferror(out)) {
		perror(path);
		drop_output(out, path);
		return -1;
	}
	if (fclose(out)) {
		perror(path);
		return -1;
	}
	return 0;
}
