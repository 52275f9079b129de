/*
 * test_rowdef.c: the row's table (contract/rowdef.h, rowtable.h) is well
 * formed, and the JSON Schema and croft-dataset(5)'s scdoc source (both
 * generated from it into the build directory) list exactly its fields with
 * its types (the type a description starts with is the table's), and
 * the schema requires exactly those never left out; croft-gen-rows writes
 * every field.  Test process, any user; the three files' paths are its
 * arguments.
 */
#include <errno.h>
#include <jansson.h>

#include "rowfields.h"
#include "rowdef.h"
#include "testlib.h"

#define PATH_MAX_BYTES 64
#define MAN_FIELDS_MAX 64

static const char *schema_path, *man_path, *generated_path;

/* "usage.cpu_cores", "syscalls[].name": how the man page names a field. */
static void field_path(enum row_field f, char *buf, size_t size)
{
	enum row_field object = row_fields[f].object;

	if (object == RF_ROOT)
		snprintf(buf, size, "%s", row_fields[f].name);
	else
		snprintf(buf, size, "%s%s.%s", row_fields[object].name,
			row_fields[object].type == RT_OBJECT_ARRAY ? "[]" : "", row_fields[f].name);
}

START_TEST(test_table_well_formed)
{
	for (int f = 0; f < RF_COUNT; f++) {
		const struct row_field_def *d = &row_fields[f];
		char key[PATH_MAX_BYTES];

		ck_assert_ptr_nonnull(d->name);
		snprintf(key, sizeof(key), ",\"%s\":", d->name);
		ck_assert_str_eq(d->key, key);
		ck_assert_uint_eq(d->key_len, strlen(key));
		field_path(f, key, sizeof(key));
		ck_assert_str_eq(d->path, key);
		/* its object lists it, and no other field of it has its name */
		const struct row_object *o = &row_objects[d->object];
		ck_assert_int_ge(f, o->first_field);
		ck_assert_int_lt(f, o->first_field + o->fields_count);
		for (int g = o->first_field; g < f; g++)
			ck_assert_str_ne(row_fields[g].name, d->name);
		/* an object has its run of fields, and only an object has one */
		if (d->type == RT_OBJECT || d->type == RT_OBJECT_ARRAY) {
			ck_assert_uint_gt(row_objects[f].fields_count, 0);
			for (int g = 0; g < row_objects[f].fields_count; g++)
				ck_assert_int_eq(
					row_fields[row_objects[f].first_field + g].object, f);
		} else
			ck_assert_uint_eq(row_objects[f].fields_count, 0);
	}
	for (int w = 0; w < WL_COUNT; w++) {
		enum workload_state parsed;
		const char *name = workload_name(w);

		ck_assert_int_eq(workload_parse(name, strlen(name), &parsed), 0);
		ck_assert_int_eq(parsed, w);
	}
	/* the readers parse what the sampler names */
	for (int k = LABEL_ENV; k < LABEL_SOURCE_COUNT; k++) {
		const char *name = label_source_name(k);

		ck_assert_int_eq(label_source_parse(name, strlen(name)), k);
	}
	for (int k = EXIT_PROBE; k < EXIT_COUNT; k++) {
		const char *name = exit_kind_name(k);

		ck_assert_int_eq(exit_kind_parse(name, strlen(name)), k);
	}
	for (int k = 0; k < GA_COUNT; k++) {
		const char *name = gpu_activity_name(k);

		ck_assert_int_eq(gpu_activity_parse(name, strlen(name)), k);
	}
}
END_TEST

/* A property's type as the table spells types; "$ref"s and enums resolved. */
static int schema_type(json_t *root, json_t *prop)
{
	json_t *ref = json_object_get(prop, "$ref");
	const char *type;

	if (json_is_string(ref)) {
		const char *name = json_string_value(ref);

		ck_assert_msg(!strncmp(name, "#/$defs/", 8), "unknown $ref %s", name);
		prop = json_object_get(json_object_get(root, "$defs"), name + 8);
		ck_assert_ptr_nonnull(prop);
	}
	if (json_is_array(json_object_get(prop, "enum")))
		return RT_STRING; /* checked to be the workload names below */
	type = json_string_value(json_object_get(prop, "type"));
	ck_assert_ptr_nonnull(type);
	if (!strcmp(type, "integer"))
		return RT_INT;
	if (!strcmp(type, "number"))
		return RT_FLOAT;
	if (!strcmp(type, "string"))
		return RT_STRING;
	if (!strcmp(type, "object"))
		return RT_OBJECT;
	ck_assert_str_eq(type, "array");
	type = json_string_value(json_object_get(json_object_get(prop, "items"), "type"));
	ck_assert_ptr_nonnull(type);
	if (!strcmp(type, "integer"))
		return RT_INT_ARRAY;
	return !strcmp(type, "string") ? RT_STRING_ARRAY : RT_OBJECT_ARRAY;
}

static bool schema_requires(json_t *schema, const char *name)
{
	size_t i;
	json_t *el;

	json_array_foreach(json_object_get(schema, "required"), i, el)
	{
		if (!strcmp(json_string_value(el), name))
			return true;
	}
	return false;
}

static void check_schema_object(json_t *root, json_t *schema, enum row_field object)
{
	const struct row_object *o = &row_objects[object];
	json_t *props = json_object_get(schema, "properties");
	const char *name = object == RF_ROOT ? "the row" : row_fields[object].name;

	ck_assert_msg(json_is_object(props), "no properties for %s", name);
	ck_assert_msg(json_object_size(props) == o->fields_count,
		"%s: the schema has %zu properties, the table %u fields", name,
		json_object_size(props), o->fields_count);
	for (int i = 0; i < o->fields_count; i++) {
		enum row_field f = o->first_field + i;
		const struct row_field_def *d = &row_fields[f];
		json_t *prop = json_object_get(props, d->name);

		ck_assert_msg(prop, "%s: %s not in the schema", name, d->name);
		ck_assert_msg(schema_type(root, prop) == (int)d->type,
			"%s: %s: the schema's type is not the table's", name, d->name);
		ck_assert_msg(schema_requires(schema, d->name) == (d->omit == RO_NEVER),
			"%s: %s: required in the schema iff never left out", name, d->name);
		if (d->type == RT_OBJECT)
			check_schema_object(root, prop, f);
		else if (d->type == RT_OBJECT_ARRAY)
			check_schema_object(root, json_object_get(prop, "items"), f);
	}
}

START_TEST(test_schema_lists_the_table)
{
	json_error_t err;
	json_t *root = json_load_file(schema_path, 0, &err);
	json_t *states;
	size_t i;
	json_t *el;

	ck_assert_msg(root, "%s: %s", schema_path, err.text);
	check_schema_object(root, root, RF_ROOT);
	states = json_object_get(
		json_object_get(json_object_get(root, "properties"), "workload"), "enum");
	ck_assert_uint_eq(json_array_size(states), WL_COUNT);
	json_array_foreach(states, i, el)
	{
		enum workload_state w;

		ck_assert_int_eq(
			workload_parse(json_string_value(el), json_string_length(el), &w), 0);
	}
	json_decref(root);
}
END_TEST

struct man_field {
	char path[PATH_MAX_BYTES];
	int type;
	const char *text; /* its description's first line */
	bool matched;
};

/* The type a description's first line starts with, or -1. */
static int man_type(const char *line)
{
	static const struct {
		const char *word;
		int type;
	} words[] = {
		{ "Integer", RT_INT },
		{ "Float", RT_FLOAT },
		{ "String", RT_STRING },
		{ "Array of integers", RT_INT_ARRAY },
		{ "Array of objects", RT_OBJECT_ARRAY },
		{ "Array of strings", RT_STRING_ARRAY },
	};

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (!strncmp(line, words[i].word, strlen(words[i].word)))
			return words[i].type;
	return -1;
}

/* The terms of FIELDS: "*a*, *b*" lines, each with the type of the line after. */
static size_t man_fields(char *text, struct man_field *out, size_t max)
{
	char *p = strstr(text, "\n# FIELDS\n"), *end;
	size_t n = 0;

	ck_assert_ptr_nonnull(p);
	end = strstr(p + 1, "\n# ");
	ck_assert_ptr_nonnull(end);
	*end = '\0';
	while ((p = strstr(p, "\n*"))) {
		char *line = p + 1, *desc = strchr(line, '\n');

		ck_assert_msg(desc && desc[1] == '\t', "a term without a description: %.40s", line);
		*desc = '\0';
		for (char *q = line; *q == '*'; q += strspn(q, ", ")) {
			char *close = strchr(q + 1, '*');

			ck_assert_ptr_nonnull(close);
			ck_assert_uint_lt(n, max);
			snprintf(out[n].path, sizeof(out[n].path), "%.*s", (int)(close - q - 1),
				q + 1);
			out[n].type = man_type(desc + 2);
			out[n].text = desc + 2;
			out[n].matched = false;
			n++;
			q = close + 1;
		}
		p = desc + 1;
	}
	return n;
}

START_TEST(test_man_page_lists_the_table)
{
	struct man_field man[MAN_FIELDS_MAX];
	char *text = NULL;
	size_t cap = 0, n;
	FILE *f = fopen(man_path, "r");

	ck_assert_msg(f, "%s", man_path);
	ck_assert_int_gt(getdelim(&text, &cap, '\0', f), 0);
	fclose(f);
	n = man_fields(text, man, MAN_FIELDS_MAX);
	for (int fi = 0; fi < RF_COUNT; fi++) {
		char path[PATH_MAX_BYTES];
		size_t i;

		if (row_fields[fi].type == RT_OBJECT)
			continue; /* named by its fields: usage.cpu_cores */
		field_path(fi, path, sizeof(path));
		for (i = 0; i < n && strcmp(man[i].path, path); i++)
			;
		ck_assert_msg(i < n, "%s: not in the man page's FIELDS", path);
		ck_assert_msg(!man[i].matched, "%s: twice in the man page", path);
		ck_assert_msg(man[i].type == (int)row_fields[fi].type,
			"%s: the man page's type is not the table's: %.30s", path, man[i].text);
		man[i].matched = true;
	}
	for (size_t i = 0; i < n; i++)
		ck_assert_msg(man[i].matched, "%s: in the man page, not in the table", man[i].path);
	free(text);
}
END_TEST

/*
 * croft-gen-rows' rows (a seed's, written by meson): every field of the
 * table in some row, those in every row in each.  A field gen-row.c
 * forgets (default: false) fails here.
 */
START_TEST(test_generated_rows_have_every_field)
{
	FILE *f = fopen(generated_path, "r");
	bool has[RF_COUNT] = { false };
	char *line = NULL;
	size_t cap = 0, rows = 0;

	ck_assert_msg(f, "%s: %s", generated_path, strerror(errno));
	while (getline(&line, &cap, f) > 0) {
		json_error_t err;
		json_t *row = json_loads(line, 0, &err);
		bool row_has[RF_COUNT] = { false };

		ck_assert_msg(row, "%s: line %zu: %s", generated_path, rows + 1, err.text);
		rowfields_in(row, row_has);
		rowfields_require(row_has, true, "a generated row");
		rowfields_in(row, has);
		json_decref(row);
		rows++;
	}
	ck_assert_uint_gt(rows, 0);
	rowfields_require(has, false, "croft-gen-rows' rows");
	free(line);
	fclose(f);
}
END_TEST

static Suite *rowdef_suite(void)
{
	Suite *s = suite_create("rowdef");
	TCase *tc = tcase_create("rowdef");

	tcase_add_test(tc, test_table_well_formed);
	tcase_add_test(tc, test_schema_lists_the_table);
	tcase_add_test(tc, test_man_page_lists_the_table);
	tcase_add_test(tc, test_generated_rows_have_every_field);
	suite_add_tcase(s, tc);
	return s;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: test_rowdef SCHEMA.json MAN.scd GENERATED.jsonl\n");
		return 2;
	}
	schema_path = argv[1];
	man_path = argv[2];
	generated_path = argv[3];
	return tl_run(rowdef_suite());
}
