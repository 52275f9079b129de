/*
 * gen-man-fields.c: writes croft-dataset(5)'s scdoc source at build time
 * with its FIELDS section generated from the row table (rowtable.h): each
 * field in row order under a heading naming it (and the fields described
 * with it), its description wrapped below.  The page's own FIELDS section
 * holds only scdoc comments, so no prose lives in two places.  Build
 * machine, no privilege.
 *
 * usage: gen-man-fields PAGE.scd > OUTPUT.scd
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gentemplate.h"
#include "rowdoc.h"

#define WRAP_COLS 68 /* a description line's text, after its tab */
#define HEADING   "# FIELDS\n"

/* One paragraph (len bytes of text), wrapped at spaces, each line indented. */
static void put_paragraph(FILE *out, const char *text, size_t len)
{
	while (len) {
		size_t take = len;

		if (take > WRAP_COLS) {
			take = WRAP_COLS;
			while (take && text[take] != ' ')
				take--;
			if (!take) /* a word longer than a line: whole */
				take = strcspn(text, " ") < len ? strcspn(text, " ") : len;
		}
		fprintf(out, "\t%.*s\n", (int)take, text);
		text += take;
		len -= take;
		while (len && *text == ' ')
			text++, len--;
	}
}

/* A field's heading (with those described with it) and its description. */
static void put_field(FILE *out, enum row_field f)
{
	const struct row_object *o = &row_objects[row_fields[f].object];
	const char *doc = row_docs[f];

	fprintf(out, "*%s*", row_fields[f].path);
	unsigned end = o->first_field + o->fields_count;

	for (unsigned g = f + 1; g < end && row_doc_leader(g) == f; g++)
		fprintf(out, ", *%s*", row_fields[g].path);
	fputc('\n', out);
	for (;;) {
		size_t len = strcspn(doc, "\n");

		put_paragraph(out, doc, len);
		if (!doc[len])
			break;
		fputc('\n', out);
		doc += len + 1;
	}
	fputc('\n', out);
}

/* An object's fields in row order; an object's own fields where it stands. */
static void put_object(FILE *out, enum row_field object)
{
	const struct row_object *o = &row_objects[object];
	unsigned end = o->first_field + o->fields_count;

	for (unsigned f = o->first_field; f < end; f++) {
		if (row_fields[f].type == RT_OBJECT) {
			put_object(out, f);
			continue;
		}
		if (!row_docs[row_doc_leader(f)]) {
			fprintf(stderr, "gen-man-fields: %s has no description in rowtable.h\n",
				row_fields[f].path);
			exit(1);
		}
		if (row_doc_leader(f) != f)
			continue; /* in the heading before it */
		put_field(out, f);
		if (row_fields[f].type == RT_OBJECT_ARRAY)
			put_object(out, f);
	}
}

/* The page's own FIELDS section: up to the next heading, blank lines and
 * scdoc comments ("; ") only. */
static bool in_fields(const char *line)
{
	if (!strncmp(line, "# ", 2))
		return false;
	if (*line != '\n' && *line != ';') {
		fprintf(stderr, "gen-man-fields: FIELDS holds text; descriptions belong in "
				"contract/rowtable.h\n");
		exit(1);
	}
	return true;
}

/* The heading and the generated FIELDS. */
static int put_fields(FILE *out)
{
	fputs(HEADING "\n", out);
	put_object(out, RF_ROOT);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen-man-fields PAGE.scd > OUTPUT.scd\n");
		return 2;
	}
	return gen_splice(argv[1], HEADING, put_fields, in_fields);
}
