/*
 * test_catalog.c: the framework catalog: the built-in one (13 entries in
 * the seed's order), validation messages, matching and priority.
 * Test process, any user.
 */
#include <errno.h>
#include <jansson.h>

#include "catalog.h"
#include "testlib.h"

static const char *const seed_order[] = { "sglang", "vllm", "ollama", "ray", "spark",
	"transformers", "pytorch", "tensorflow", "jax", "onnxruntime", "xgboost", "scikit-learn",
	"pandas" };

static size_t index_of(const struct catalog *cat, const char *name)
{
	for (size_t i = 0; i < cat->entries_count; i++)
		if (!strcmp(cat->entries[i].name, name))
			return i;
	return cat->entries_count;
}

START_TEST(builtin_order)
{
	struct catalog *cat;

	ck_assert_int_eq(catalog_load_builtin(&cat), 0);
	ck_assert_uint_eq(cat->entries_count, 13);
	for (size_t i = 0; i < 13; i++)
		ck_assert_str_eq(cat->entries[i].name, seed_order[i]);
	ck_assert_str_eq(cat->entries[6].libraries.items[0], "libtorch_cpu.so");
	ck_assert_str_eq(cat->entries[4].cmdline.items[1], "pyspark");
	catalog_free(cat);
}
END_TEST

static void expect_refused(const char *text, const char *needle)
{
	struct catalog *cat = NULL;
	char err[CATALOG_ERR_MAX] = "";

	ck_assert_int_eq(
		catalog_parse(text, strlen(text), "/etc/x.json", &cat, err, sizeof(err)), -EINVAL);
	ck_assert_ptr_null(cat);
	ck_assert_msg(strstr(err, needle), "error \"%s\" lacks \"%s\"", err, needle);
	ck_assert_msg(strstr(err, "/etc/x.json"), "error \"%s\" names no file", err);
}

/* A broken file's error quotes none of it: the file may be one the reader
 * of the error (croftctl, status) may not read. */
static void expect_unquoted(const char *text)
{
	struct catalog *cat = NULL;
	char err[CATALOG_ERR_MAX] = "";

	ck_assert_int_eq(
		catalog_parse(text, strlen(text), "/etc/x.json", &cat, err, sizeof(err)), -EINVAL);
	ck_assert_msg(!strstr(err, "secret"), "error \"%s\" quotes the file", err);
}

START_TEST(refusals)
{
	expect_refused(
		"[{\"name\":\"a\",\"cmdline\":[\"x\"]},{\"name\":\"a\",\"cmdline\":[\"y\"]}]",
		"entry 2 (\"a\"): duplicate name");
	expect_refused("[{\"name\":\"a\"}]", "entry 1 (\"a\"): no pattern");
	expect_refused("[{\"name\":\"a\",\"libraries\":[]}]", "no pattern");
	expect_refused("[{\"name\":\"\",\"cmdline\":[\"x\"]}]", "entry 1: missing or empty");
	expect_refused("[{\"name\":\"a\",\"cmdline\":[\"x\"]},", "broken JSON");
	expect_unquoted("topsecret\n"); /* the security review's 12 */
	expect_refused("[{\"name\":\"a\",\"library\":[\"x\"]}]", "unknown key \"library\"");
	expect_refused("[{\"name\":\"a\",\"cmdline\":[\"\"]}]", "non-empty string");
	expect_refused("[{\"name\":\"a\",\"cmdline\":\"x\"}]", "array of strings");
	expect_refused("{}", "not an array");
	expect_refused("[]", "not an array");
}
END_TEST

START_TEST(matching)
{
	struct catalog *cat;
	size_t none;

	ck_assert_int_eq(catalog_load_builtin(&cat), 0);
	none = cat->entries_count;
	ck_assert_uint_eq(catalog_match_path(cat, "/opt/x/lib/libtorch_cpu.so", none),
		index_of(cat, "pytorch"));
	/* libraries match the start of the name only */
	ck_assert_uint_eq(catalog_match_path(cat, "/opt/x/lib/mylibtorch_cpu.so", none), none);
	ck_assert_uint_eq(catalog_match_path(cat, "/venv/site-packages/vllm/_C.so", none),
		index_of(cat, "vllm"));
	ck_assert_uint_eq(
		catalog_match_path(cat, "/venv/vllm/libtorch_cpu.so", none), index_of(cat, "vllm"));
	/* limit: only entries before it are looked at */
	ck_assert_uint_eq(catalog_match_path(cat, "/venv/x/libtorch_cpu.so", 3), 3);
	ck_assert_uint_eq(
		catalog_match_path(cat, "/usr/bin/ollama", none), index_of(cat, "ollama"));
	{
		const char args[] = "python3\0-m\0pyspark.shell";

		ck_assert_uint_eq(catalog_match_cmdline(cat, args, sizeof(args), none),
			index_of(cat, "spark"));
	}
	{
		const char args[] = "java\0-cp\0x.jar\0org.apache.spark.deploy.SparkSubmit";

		ck_assert_uint_eq(catalog_match_cmdline(cat, args, sizeof(args) - 1, none),
			index_of(cat, "spark"));
	}
	{
		const char args[] = "py\0spark"; /* split across arguments: no match */

		ck_assert_uint_eq(catalog_match_cmdline(cat, args, sizeof(args), none), none);
	}
	catalog_free(cat);
}
END_TEST

START_TEST(file_load)
{
	char path[] = "/tmp/croft-catalog-XXXXXX";
	int fd = mkstemp(path);
	const char text[] = "[{\"name\":\"mine\",\"directories\":[\"/mine/\"]}]";
	struct catalog *cat;
	char err[CATALOG_ERR_MAX];

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, sizeof(text) - 1), (ssize_t)sizeof(text) - 1);
	close(fd);
	ck_assert_int_eq(catalog_load(path, &cat, err, sizeof(err)), 0);
	ck_assert_uint_eq(cat->entries_count, 1);
	ck_assert_str_eq(cat->source, path);
	catalog_free(cat);
	unlink(path);
	ck_assert_int_eq(catalog_load(path, &cat, err, sizeof(err)), -ENOENT);
	ck_assert_msg(strstr(err, path), "%s", err);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("catalog");
	TCase *tc = tcase_create("catalog");

	tcase_add_test(tc, builtin_order);
	tcase_add_test(tc, refusals);
	tcase_add_test(tc, matching);
	tcase_add_test(tc, file_load);
	suite_add_tcase(s, tc);
	return tl_run(s);
}
