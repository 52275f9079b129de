/*
 * gentemplate.c: the build-time generators' template copied around the
 * generated part (gentemplate.h).  Build machine, no privilege.
 */
#include <stdlib.h>
#include <string.h>

#include "gentemplate.h"

int gen_splice(const char *path, const char *marker, gen_put_fn *put, gen_stretch_fn *in_stretch)
{
	FILE *in = fopen(path, "r");
	enum { BEFORE, STRETCH, AFTER } at = BEFORE;
	char *line = NULL;
	size_t cap = 0;
	int r = 0;

	if (!in) {
		perror(path);
		return 1;
	}
	while (r == 0 && getline(&line, &cap, in) >= 0) {
		if (at == BEFORE && !strcmp(line, marker)) {
			at = STRETCH;
			r = put(stdout);
		} else if (at != STRETCH || !in_stretch || !in_stretch(line)) {
			at = at == BEFORE ? BEFORE : AFTER;
			fputs(line, stdout);
		}
	}
	if (r == 0 && ferror(in)) {
		perror(path);
		r = -1;
	} else if (r == 0 && at == BEFORE) {
		fprintf(stderr, "%s: no line %s", path, marker);
		r = -1;
	} else if (r == 0 && (fflush(stdout) || ferror(stdout))) {
		perror("stdout");
		r = -1;
	}
	free(line);
	fclose(in);
	return r < 0;
}
