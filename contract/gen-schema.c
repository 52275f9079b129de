/*
 * gen-schema.c: writes the JSON Schema of a row (croft-dataset.schema.json)
 * at build time from the row table (rowtable.h: names, types, objects, what
 * is never left out, and the first paragraph of each field's description,
 * as croft-dataset(5) gives it) and the values of its enumerated strings
 * (rowdef.c).  Build machine, no privilege.
 *
 * usage: gen-schema OUTPUT.json
 */
#include <ctype.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rowdoc.h"

/* scdoc to plain text: *bold* and _underline_ marks dropped, blanks folded. */
static void plain(const char *s, size_t len, char *out, size_t out_len)
{
	size_t n = 0;

	for (size_t i = 0; i < len && n + 1 < out_len; i++) {
		char c = s[i];
		bool mark_edge = i == 0 || i + 1 == len || !isalnum((unsigned char)s[i - 1]) ||
				 !isalnum((unsigned char)s[i + 1]);

		if (c == '*' || (c == '_' && mark_edge))
			continue;
		if (c == '\\' && i + 1 < len) {
			out[n++] = s[++i];
			continue;
		}
		if (c == '\n' || c == '\t')
			c = ' ';
		if (c == ' ' && (n == 0 || out[n - 1] == ' '))
			continue;
		out[n++] = c;
	}
	while (n && out[n - 1] == ' ')
		n--;
	out[n] = '\0';
}

/* The first paragraph of f's description (or of the field it is described with), plain. */
static json_t *description(enum row_field f)
{
	const char *doc = row_docs[row_doc_leader(f)];
	size_t len;
	char *text;
	json_t *d;

	if (!doc)
		return NULL;
	len = strcspn(doc, "\n");
	text = malloc(len + 1);
	if (!text)
		exit(1);
	plain(doc, len, text, len + 1);
	d = json_string(text);
	free(text);
	return d;
}

/* The values an enumerated string field takes, in the order rowdef.c names them. */
static json_t *enum_values(enum row_field f)
{
	json_t *values = json_array();

	switch (f) {
	case RF_WORKLOAD:
		for (int i = 0; i < WL_COUNT; i++)
			json_array_append_new(values, json_string(workload_name(i)));
		return values;
	case RF_GPU_ACTIVITY:
		for (int i = 0; i < GA_COUNT; i++)
			json_array_append_new(values, json_string(gpu_activity_name(i)));
		return values;
	case RF_GPU_ACTIVITY_SOURCE:
		for (int i = 0; i < GAS_COUNT; i++)
			json_array_append_new(values, json_string(gpu_activity_source_name(i)));
		return values;
	case RF_EXITED:
		for (int i = EXIT_LIVES + 1; i < EXIT_COUNT; i++)
			json_array_append_new(values, json_string(exit_kind_name(i)));
		return values;
	case RF_LABEL_SOURCE:
		for (int i = LABEL_NONE + 1; i < LABEL_SOURCE_COUNT; i++)
			json_array_append_new(values, json_string(label_source_name(i)));
		return values;
	default:
		json_decref(values);
		return NULL;
	}
}

static json_t *object_schema(enum row_field object);

/* Bounds a number's type does not give, by field id (arrays: their items'). */
static const struct {
	enum row_field field;
	long long minimum, maximum; /* -1: none */
} bounds[] = {
	{ RF_TGID, 1, -1 },
	{ RF_GPUS, 0, 255 },
	{ RF_GPUS_ALLOCATED, 0, 255 },
	{ RF_GPU_SM_PERCENT, 0, 100 },
	{ RF_CG_CPU_THROTTLED_FRACTION, 0, 1 },
	{ RF_EXIT_CODE, 0, 255 },
	{ RF_EXIT_SIGNAL, 1, 127 },
};

/* p (or its items) as a number with the field's own bounds. */
static void bound(enum row_field f, json_t *p)
{
	json_t *target = json_object_get(p, "items") ? json_object_get(p, "items") : p;

	for (size_t i = 0; i < sizeof(bounds) / sizeof(bounds[0]); i++) {
		if (bounds[i].field != f)
			continue;
		if (json_object_get(target, "$ref")) { /* a rate with bounds of its own */
			json_object_del(target, "$ref");
			json_object_set_new(target, "type", json_string("number"));
		}
		json_object_set_new(target, "minimum", json_integer(bounds[i].minimum));
		if (bounds[i].maximum >= 0)
			json_object_set_new(target, "maximum", json_integer(bounds[i].maximum));
	}
}

static json_t *field_schema(enum row_field f)
{
	json_t *p, *values, *d;

	switch (row_fields[f].type) {
	case RT_INT:
		p = json_pack("{s:s,s:i}", "type", "integer", "minimum", 0);
		break;
	case RT_FLOAT:
		p = json_pack("{s:s}", "$ref", "#/$defs/rate");
		break;
	case RT_STRING:
		values = enum_values(f);
		p = values ? json_pack("{s:o}", "enum", values)
			   : json_pack("{s:s}", "type", "string");
		break;
	case RT_OBJECT:
		p = object_schema(f);
		break;
	case RT_INT_ARRAY:
		p = json_pack("{s:s,s:{s:s,s:i},s:b}", "type", "array", "items", "type", "integer",
			"minimum", 0, "uniqueItems", 1);
		break;
	case RT_STRING_ARRAY:
		p = json_pack("{s:s,s:{s:s},s:b}", "type", "array", "items", "type", "string",
			"uniqueItems", 1);
		break;
	case RT_OBJECT_ARRAY:
		p = json_pack("{s:s,s:o}", "type", "array", "items", object_schema(f));
		break;
	default:
		fprintf(stderr, "gen-schema: %s: a type this generator does not know\n",
			row_fields[f].name);
		exit(1);
	}
	bound(f, p);
	d = description(f);
	if (!d && row_fields[f].type != RT_OBJECT) {
		fprintf(stderr, "gen-schema: %s has no description in contract/rowtable.h\n",
			row_fields[f].path);
		exit(1);
	}
	if (d)
		json_object_set_new(p, "description", d);
	return p;
}

/* An object's fields; those never left out required; a string's raw bytes in "<name>_b64". */
static json_t *object_schema(enum row_field object)
{
	const struct row_object *o = &row_objects[object];
	json_t *props = json_object(), *required = json_array(), *b64 = NULL;
	char pattern[512] = "^(";
	size_t strings = 0;

	for (unsigned i = 0; i < o->fields_count; i++) {
		enum row_field f = o->first_field + i;
		json_t *p = field_schema(f); /* props holds it */

		json_object_set_new(props, row_fields[f].name, p);
		if (row_fields[f].omit == RO_NEVER)
			json_array_append_new(required, json_string(row_fields[f].name));
		if (row_fields[f].type == RT_STRING && !json_object_get(p, "enum")) {
			strncat(pattern, strings++ ? "|" : "",
				sizeof(pattern) - strlen(pattern) - 1);
			strncat(pattern, row_fields[f].name, sizeof(pattern) - strlen(pattern) - 1);
		}
	}
	strncat(pattern, ")_b64$", sizeof(pattern) - strlen(pattern) - 1);
	if (strings && object != RF_SYSCALLS)
		b64 = json_pack("{s:{s:s,s:s,s:s}}", pattern, "type", "string", "contentEncoding",
			"base64", "description",
			"the raw bytes of the field before it, when they were not valid UTF-8");
	json_t *schema = json_pack(
		"{s:s,s:o,s:o}", "type", "object", "required", required, "properties", props);
	if (b64)
		json_object_set_new(schema, "patternProperties", b64);
	json_object_set_new(schema, "additionalProperties", json_false());
	return schema;
}

int main(int argc, char **argv)
{
	json_t *schema, *row;

	if (argc != 2) {
		fprintf(stderr, "usage: gen-schema OUTPUT.json\n");
		return 2;
	}
	row = object_schema(RF_ROOT);
	schema = json_pack("{s:s,s:s,s:s,s:s}", "$schema",
		"https://json-schema.org/draft/2020-12/schema", "$id",
		"https://croft.invalid/croft-dataset.schema.json", "title", "croft-dataset row",
		"description",
		"One line of croft-dataset.jsonl and of its .jsonl.zst segments: one process at "
		"one poll. Keys come in the order listed here, compact, one line. Figures the "
		"host cannot give are left out, never zero-filled. Floats carry at most 4 "
		"decimals and always a decimal point; integers are integers. Where a string "
		"was not valid UTF-8, the text holds U+FFFD and an extra <field>_b64 right "
		"after it holds the raw bytes in base64. Generated from croft's row table "
		"(contract/rowtable.h).");
	json_object_update(schema, row);
	json_object_set_new(schema, "$defs",
		json_pack("{s:{s:s,s:i}}", "rate", "type", "number", "minimum", 0));
	json_decref(row);
	if (json_dump_file(schema, argv[1], JSON_INDENT(2)) < 0) {
		perror(argv[1]);
		return 1;
	}
	json_decref(schema);
	return 0;
}
