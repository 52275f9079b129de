/*
 * test_config.c: croft.conf parsing: defaults, units, ranges, and bad input
 * (every error at once with its line, special files, huge or binary files).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config.h"
#include "testlib.h"

static char conf_path[64];

static const char *write_conf(const char *text)
{
	int fd;

	snprintf(conf_path, sizeof(conf_path), "/tmp/croft-test-conf.XXXXXX");
	fd = mkstemp(conf_path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return conf_path;
}

/* Loads text; returns the error text (NULL when it loaded). */
static char *load(const char *text, struct croft_config *cfg)
{
	char *errors = NULL;
	int r = config_load(write_conf(text), CONFIG_MISSING_REFUSED, cfg, &errors);

	unlink(conf_path);
	ck_assert_int_eq(r, errors ? -EINVAL : 0);
	return errors;
}

static void assert_has(const char *errors, const char *needle)
{
	ck_assert_msg(errors && strstr(errors, needle), "expected '%s' in:\n%s", needle,
		errors ? errors : "(no errors)");
}

START_TEST(test_defaults)
{
	struct croft_config cfg;
	char *errors = (char *)1;

	ck_assert_int_eq(
		config_load("/nonexistent/croft.conf", CONFIG_MISSING_DEFAULTS, &cfg, &errors),
		CONFIG_DEFAULTS_TAKEN);
	ck_assert_ptr_null(errors);
	ck_assert_uint_eq(cfg.poll_interval_ms, 2000);
	ck_assert_uint_eq(cfg.idle_every, 15);
	ck_assert_uint_eq(cfg.onset_window_ms, 30000);
	ck_assert_uint_eq(cfg.spool_size_bytes, 256ull << 20);
	ck_assert_str_eq(cfg.data_dir, "/var/lib/croft");
	ck_assert_str_eq(cfg.frameworks, "");
	ck_assert_str_eq(cfg.gpu_devices, "");
	ck_assert_ptr_nonnull(strstr(cfg.gpu_system_holders, "nvidia-persistenced"));
	ck_assert_uint_eq(cfg.rotate_interval_ms, 3600000);
	ck_assert_uint_eq(cfg.rotate_size_bytes, 1ull << 30);
	ck_assert_uint_eq(cfg.retention_age_ms, 30ull * 86400000);
	ck_assert_uint_eq(cfg.retention_size_bytes, 10ull << 30);
	ck_assert_int_eq(cfg.zstd_level, 12);
	ck_assert_str_eq(cfg.textfile_dir, "/var/lib/croft-textfile");
	ck_assert_uint_eq(cfg.textfile_top, 50);
}
END_TEST

/* croft.prom: empty turns it off; the top N is bounded. */
START_TEST(test_textfile)
{
	struct croft_config cfg;
	char *errors = load("[sampler]\ntextfile_dir =\ntextfile_top = 0\n", &cfg);

	ck_assert_ptr_null(errors);
	ck_assert_str_eq(cfg.textfile_dir, "");
	ck_assert_uint_eq(cfg.textfile_top, 0);
	errors = load("[sampler]\ntextfile_dir = /srv/prom\ntextfile_top = 501\n", &cfg);
	assert_has(errors, ":3: textfile_top: '501' is out of range 0..500");
	free(errors);
	errors = load("[writer]\ntextfile_dir = /srv/prom\n", &cfg);
	assert_has(errors, ":2: textfile_dir:"); /* the sampler writes it: [sampler] */
	free(errors);
}
END_TEST

START_TEST(test_nvml)
{
	struct croft_config cfg;
	char *errors = load("[sampler]\nnvml = off\n", &cfg);

	ck_assert_ptr_null(errors);
	ck_assert_uint_eq(cfg.nvml, CONFIG_NVML_OFF);
	errors = load("[sampler]\nnvml = auto\n", &cfg);
	ck_assert_ptr_null(errors);
	ck_assert_uint_eq(cfg.nvml, CONFIG_NVML_AUTO);
	errors = load("[sampler]\nnvml = of\n", &cfg);
	assert_has(errors, ":2: nvml: 'of' is not one of auto|off");
	free(errors);
	errors = load("[sampler]\nnvml = autooff\n", &cfg);
	assert_has(errors, "nvml: 'autooff' is not one of auto|off");
	free(errors);
}
END_TEST

START_TEST(test_full_file)
{
	struct croft_config cfg;
	char *errors = load("# croft.conf\n"
			    "[sampler]\n"
			    "poll_interval = 500ms\n"
			    "idle_every=4\n"
			    "onset_window = 1m30s ; inline comment\n"
			    "frameworks = /etc/croft/frameworks.json\n"
			    "spool_size = 64MiB\n"
			    "gpu_system_holders = nvidia-persistenced,my-agent_2.1 gpu+mon\n"
			    "\n"
			    "[probe]\n"
			    "gpu_devices = nvidia*, 226:128-255\n"
			    "[writer]\r\n"
			    "  data_dir = /srv/croft\n"
			    "rotate_interval = 15m\n"
			    "rotate_size = 100MB\n"
			    "retention_age = 7d\n"
			    "retention_size = 2TiB\n"
			    "zstd_level = 9\n",
		&cfg);

	ck_assert_ptr_null(errors);
	ck_assert_uint_eq(cfg.poll_interval_ms, 500);
	ck_assert_uint_eq(cfg.idle_every, 4);
	ck_assert_uint_eq(cfg.onset_window_ms, 90000);
	ck_assert_str_eq(cfg.frameworks, "/etc/croft/frameworks.json");
	ck_assert_uint_eq(cfg.spool_size_bytes, 64ull << 20);
	ck_assert_str_eq(cfg.gpu_system_holders, "nvidia-persistenced,my-agent_2.1 gpu+mon");
	ck_assert_str_eq(cfg.gpu_devices, "nvidia*, 226:128-255");
	ck_assert_str_eq(cfg.data_dir, "/srv/croft");
	ck_assert_uint_eq(cfg.rotate_interval_ms, 900000);
	ck_assert_uint_eq(cfg.rotate_size_bytes, 100000000);
	ck_assert_uint_eq(cfg.retention_age_ms, 7ull * 86400000);
	ck_assert_uint_eq(cfg.retention_size_bytes, 2ull << 40);
	ck_assert_int_eq(cfg.zstd_level, 9);
}
END_TEST

START_TEST(test_names)
{
	struct croft_config cfg;
	char *errors = load("[sampler]\ngpu_system_holders = /usr/bin/nvidia-smi\n", &cfg);

	assert_has(errors, ":2: gpu_system_holders: '/usr/bin/nvidia-smi': names hold");
	free(errors);
	errors = load("[sampler]\ngpu_system_holders = a, "
		      "b123456789012345678901234567890123456789012345678901234567890123\n",
		&cfg);
	assert_has(errors, "gpu_system_holders: a name longer than 63 bytes");
	free(errors);
	/* empty: no system holders */
	errors = load("[sampler]\ngpu_system_holders =\n", &cfg);
	ck_assert_ptr_null(errors);
	ck_assert_str_eq(cfg.gpu_system_holders, "");
	/* given again, the names add up: a list longer than a line */
	errors = load("[sampler]\ngpu_system_holders = a, b\ngpu_system_holders = c\n", &cfg);
	ck_assert_ptr_null(errors);
	ck_assert_str_eq(cfg.gpu_system_holders, "a, b, c");
	/* an empty one clears what came before */
	errors = load("[sampler]\ngpu_system_holders = a\ngpu_system_holders =\n"
		      "gpu_system_holders = x\n",
		&cfg);
	ck_assert_ptr_null(errors);
	ck_assert_str_eq(cfg.gpu_system_holders, "x");
	/* other keys still may not */
	errors = load("[sampler]\nidle_every = 3\nidle_every = 4\n", &cfg);
	assert_has(errors, ":3: idle_every: set twice (first at line 2)");
	free(errors);
}
END_TEST

/* The case: three different mistakes, all three reported with lines. */
START_TEST(test_all_errors_at_once)
{
	struct croft_config cfg;
	char *errors;

	memset(&cfg, 0x5a, sizeof(cfg));
	errors = load("[sampler]\n"
		      "poll_interval = 2 parsecs\n"
		      "polling = 3\n"
		      "[writer]\n"
		      "zstd_level = 3\n"
		      "[sampler]\n"
		      "idle_every = 2\n",
		&cfg);
	assert_has(errors, ":2: poll_interval: '2 parsecs' is not a duration");
	assert_has(errors, ":3: polling: unknown key in [sampler]");
	assert_has(errors, ":6: duplicate section [sampler] (first at line 1)");
	ck_assert_uint_eq(cfg.zstd_level, 0x5a5a5a5a); /* untouched on error */
	free(errors);
}
END_TEST

START_TEST(test_ranges)
{
	struct croft_config cfg;
	char *errors = load("[sampler]\npoll_interval = 50ms\nidle_every = 0\n"
			    "onset_window = 2d\nspool_size = 1KiB\n"
			    "[writer]\nrotate_interval = 31d\nrotate_size = 2TiB\n"
			    "retention_age = 11y\nretention_size = 2PiB\nzstd_level = 20\n"
			    "data_dir =\n",
		&cfg);

	assert_has(errors, ":2: poll_interval: '50ms' is out of range 100ms..1h");
	assert_has(errors, ":3: idle_every: '0' is out of range 1..100000");
	assert_has(errors, ":4: onset_window: '2d' is out of range");
	assert_has(errors, ":5: spool_size: '1KiB' is out of range 64KiB..64GiB");
	assert_has(errors, ":7: rotate_interval:");
	assert_has(errors, ":8: rotate_size:");
	assert_has(errors, ":9: retention_age:");
	assert_has(errors, ":10: retention_size:");
	assert_has(errors, ":11: zstd_level: '20' is out of range 1..19");
	assert_has(errors, ":12: data_dir: must not be empty");
	free(errors);
}
END_TEST

START_TEST(test_syntax_errors)
{
	struct croft_config cfg;
	char *errors = load("stray = 1\n[sampler\n[nonsense]\nfoo = bar\n[probe]\njust words\n"
			    "[writer]\nzstd_level = -3\nzstd_level = 3\nrotate_size = 12 parsecs\n"
			    "rotate_interval = 99999999999999999999999h\n",
		&cfg);

	assert_has(errors, ":1: stray: outside of a section");
	assert_has(errors, ":2: section header without ']'");
	assert_has(errors, ":3: unknown section [nonsense]");
	ck_assert_ptr_null(strstr(errors, "foo")); /* keys of an unknown section: reported once */
	assert_has(errors, ":6: expected 'key = value'");
	assert_has(errors, ":8: zstd_level: '-3' is not a whole number");
	assert_has(errors, ":9: zstd_level: set twice (first at line 8)");
	assert_has(errors, ":10: rotate_size: '12 parsecs' is not a size");
	assert_has(errors, ":11: rotate_interval:");
	free(errors);
}
END_TEST

START_TEST(test_special_files)
{
	struct croft_config cfg;
	char *errors = NULL;
	char fifo[] = "/tmp/croft-test-fifo.XXXXXX";
	int fd = mkstemp(fifo);

	ck_assert_int_eq(config_load("/dev/zero", CONFIG_MISSING_DEFAULTS, &cfg, &errors), -EINVAL);
	assert_has(errors, "/dev/zero: cannot read: not a regular file");
	free(errors);
	ck_assert_int_eq(
		symlink("/dev/zero", "/tmp/croft-test-zero.conf") == 0 || errno == EEXIST, 1);
	ck_assert_int_eq(
		config_load("/tmp/croft-test-zero.conf", CONFIG_MISSING_DEFAULTS, &cfg, &errors),
		-EINVAL);
	assert_has(errors, "not a regular file");
	free(errors);
	unlink("/tmp/croft-test-zero.conf");
	/* A FIFO with no writer must not hang the reader. */
	close(fd);
	unlink(fifo);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	ck_assert_int_eq(config_load(fifo, CONFIG_MISSING_DEFAULTS, &cfg, &errors), -EINVAL);
	free(errors);
	unlink(fifo);
	ck_assert_int_eq(config_load("/tmp", CONFIG_MISSING_DEFAULTS, &cfg, &errors), -EINVAL);
	free(errors);
}
END_TEST

START_TEST(test_huge_and_binary)
{
	struct croft_config cfg;
	char *big = malloc((2u << 20) + 1), *errors, line[9000];

	memset(big, '#', 2u << 20);
	big[2u << 20] = '\0';
	errors = load(big, &cfg);
	assert_has(errors, "larger than 1048576 bytes");
	free(errors);
	free(big);

	/* one line over the limit: refused, the lines after it still read */
	memset(line, 'a', sizeof(line) - 1);
	line[sizeof(line) - 1] = '\0';
	memcpy(line, "[writer]\ndata_dir=/", 19);
	memcpy(line + sizeof(line) - 20, "\nzstd_level = 99\n", 18);
	errors = load(line, &cfg);
	assert_has(errors, ":2: line longer than 8192 bytes");
	assert_has(errors, ":3: zstd_level: '99' is out of range 1..19");
	free(errors);

	errors = load("[writer]\ndata_dir = /srv/\xff\xfe\n[sampler]\nidle_every = 1\n", &cfg);
	assert_has(errors, ":2: not valid UTF-8");
	free(errors);
	errors = load("[writer]\ndata_dir = /srv/\xc3\xa9t\xc3\xa9\n", &cfg);
	ck_assert_ptr_null(errors);
	ck_assert_str_eq(cfg.data_dir, "/srv/\xc3\xa9t\xc3\xa9");
	errors = load("[writer]\ndata_dir = /srv/\x01x\n", &cfg);
	assert_has(errors, "control character");
	free(errors);
}
END_TEST

/*
 * A line as long as a path needs, whatever line buffer the system's libinih
 * has (Debian's: 200 bytes): a data_dir of PATH_MAX - 1 bytes, a gpu_devices
 * list of 3998 bytes, each on one line.
 */
START_TEST(test_long_lines)
{
	static char text[2 * PATH_MAX + 64], path[PATH_MAX], devices[4001];
	struct croft_config cfg;
	char *errors;

	path[0] = '/';
	memset(path + 1, 'p', sizeof(path) - 2);
	path[sizeof(path) - 1] = '\0';
	for (size_t i = 0; i + 5 < sizeof(devices); i += 5)
		memcpy(devices + i, "1:7, ", 5);
	devices[sizeof(devices) - 3] = '\0'; /* 3998 bytes, ending "1:7" */
	snprintf(text, sizeof(text), "[probe]\ngpu_devices = %s\n[writer]\ndata_dir = %s\n",
		devices, path);
	errors = load(text, &cfg);
	ck_assert_msg(!errors, "%s", errors);
	ck_assert_uint_eq(strlen(cfg.data_dir), PATH_MAX - 1);
	/* strcmp: Check's messages cannot carry strings this long */
	ck_assert(strcmp(cfg.data_dir, path) == 0);
	ck_assert(strcmp(cfg.gpu_devices, devices) == 0);
	/* one byte more than the field holds: refused by the key, not the line */
	snprintf(text, sizeof(text), "[writer]\ndata_dir = %sq\n", path);
	errors = load(text, &cfg);
	assert_has(errors, ":2: data_dir: longer than 4095 bytes");
	free(errors);
}
END_TEST

/* A key in a section it does not belong to says where it belongs. */
START_TEST(test_wrong_section)
{
	struct croft_config cfg;
	char *errors = load("[writer]\ntextfile_dir = /x\n[sampler]\nzstd_level = 3\n"
			    "[probe]\nnot_a_key = 1\n",
		&cfg);

	assert_has(errors, ":2: textfile_dir: belongs in [sampler], not [writer]");
	assert_has(errors, ":4: zstd_level: belongs in [writer], not [sampler]");
	assert_has(errors, ":6: not_a_key: unknown key in [probe]");
	free(errors);
}
END_TEST

/* The file systemd/ ships and croft.conf(5) name every key: the shipped one,
 * with each "#key = value" line taken in, in its section, is the defaults. */
static char *source_file(const char *relative)
{
	const char *root = getenv("CROFT_SOURCE_ROOT");
	char path[PATH_MAX], *text = NULL;
	size_t len = 0;
	FILE *f;

	ck_assert_msg(root, "CROFT_SOURCE_ROOT is not set (meson sets it)");
	snprintf(path, sizeof(path), "%s/%s", root, relative);
	f = fopen(path, "r");
	ck_assert_msg(f, "%s: cannot open", path);
	text = calloc(1, 1u << 16);
	len = fread(text, 1, (1u << 16) - 1, f);
	fclose(f);
	text[len] = '\0';
	return text;
}

START_TEST(test_shipped_file_names_every_key)
{
	char *shipped = source_file("systemd/croft.conf"),
	     *man = source_file("man/croft.conf.5.scd");
	char *taken = calloc(1, 1u << 16), *errors, want[128];
	struct croft_config cfg, defaults;
	const char *section, *name, *in;
	size_t n = 0;

	/* "#key = value" lines become "key = value"; other comments stay */
	for (const char *line = shipped; *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);

		if (line[0] == '#' && line[1] >= 'a' && line[1] <= 'z' && memchr(line, '=', len))
			line++, len--;
		memcpy(taken + n, line, len);
		n += len;
		line += len;
	}
	errors = load(taken, &cfg);
	ck_assert_msg(!errors, "the shipped croft.conf, uncommented: %s", errors);
	config_defaults(&defaults);
	ck_assert_msg(!memcmp(&cfg, &defaults, sizeof(cfg)),
		"a value the shipped croft.conf shows is not the default");
	for (size_t i = 0; (name = config_key_at(i, &section)); i++) {
		const char *next, *other_section;

		/* config.c finds a key by its name alone, then checks its section */
		for (size_t j = 0; j < i; j++)
			ck_assert_msg(strcmp(config_key_at(j, &other_section), name),
				"%s is a key of [%s] and of [%s]", name, other_section, section);

		snprintf(want, sizeof(want), "\n[%s]", section);
		in = strstr(shipped, want);
		ck_assert_msg(in, "systemd/croft.conf has no [%s]", section);
		next = strstr(in + 1, "\n[");
		snprintf(want, sizeof(want), "\n#%s =", name);
		in = strstr(in, want);
		ck_assert_msg(in && (!next || in < next),
			"systemd/croft.conf does not show %s in [%s]", name, section);
		snprintf(want, sizeof(want), "\n*%s* = ", name);
		ck_assert_msg(strstr(man, want), "croft.conf(5) does not describe %s", name);
	}
	/* the default system holders, each named in croft.conf(5) */
	char holders[] = CONFIG_GPU_SYSTEM_HOLDERS;
	for (char *save, *name = strtok_r(holders, ", ", &save); name;
		name = strtok_r(NULL, ", ", &save))
		ck_assert_msg(strstr(man, name), "croft.conf(5) does not name the holder %s", name);
	free(taken);
	free(shipped);
	free(man);
}
END_TEST

START_TEST(test_too_many_errors)
{
	struct croft_config cfg;
	char text[8192] = "[sampler]\n", *errors;
	int lines = 0;

	for (int i = 0; i < 200; i++)
		strcat(text, "x = 1\n");
	errors = load(text, &cfg);
	for (const char *p = errors; (p = strchr(p, '\n')); p++)
		lines++;
	ck_assert_int_eq(lines, CONFIG_ERRORS_MAX);
	assert_has(errors, "too many errors");
	free(errors);
}
END_TEST

START_TEST(test_units)
{
	uint64_t v;

	ck_assert_int_eq(config_parse_duration_ms("2s", &v), 0);
	ck_assert_uint_eq(v, 2000);
	ck_assert_int_eq(config_parse_duration_ms("1h", &v), 0);
	ck_assert_uint_eq(v, 3600000);
	ck_assert_int_eq(config_parse_duration_ms("30d", &v), 0);
	ck_assert_uint_eq(v, 30ull * 86400000);
	ck_assert_int_eq(config_parse_duration_ms(" 1h 30m ", &v), 0);
	ck_assert_uint_eq(v, 5400000);
	ck_assert_int_eq(config_parse_duration_ms("0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(config_parse_duration_ms("5", &v), -EINVAL);
	ck_assert_int_eq(config_parse_duration_ms("", &v), -EINVAL);
	ck_assert_int_eq(config_parse_duration_ms("s", &v), -EINVAL);
	ck_assert_int_eq(config_parse_duration_ms("-1s", &v), -EINVAL);
	ck_assert_int_eq(config_parse_duration_ms("1.5h", &v), -EINVAL);
	ck_assert_int_eq(config_parse_duration_ms("99999999999999999999s", &v), -ERANGE);
	ck_assert_int_eq(config_parse_duration_ms("9999999999999999y", &v), -ERANGE);

	ck_assert_int_eq(config_parse_size_bytes("1GiB", &v), 0);
	ck_assert_uint_eq(v, 1ull << 30);
	ck_assert_int_eq(config_parse_size_bytes("512MiB", &v), 0);
	ck_assert_uint_eq(v, 512ull << 20);
	ck_assert_int_eq(config_parse_size_bytes("100kB", &v), 0);
	ck_assert_uint_eq(v, 100000);
	ck_assert_int_eq(config_parse_size_bytes("123", &v), 0);
	ck_assert_uint_eq(v, 123);
	ck_assert_int_eq(config_parse_size_bytes("1 GiB", &v), 0);
	ck_assert_uint_eq(v, 1ull << 30);
	ck_assert_int_eq(config_parse_size_bytes("1GiBx", &v), -EINVAL);
	ck_assert_int_eq(config_parse_size_bytes("1 GiB 2", &v), -EINVAL);
	ck_assert_int_eq(config_parse_size_bytes("GiB", &v), -EINVAL);
	ck_assert_int_eq(config_parse_size_bytes("20000000PiB", &v), -ERANGE);
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("config");

	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_textfile);
	tcase_add_test(tc, test_nvml);
	tcase_add_test(tc, test_full_file);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_all_errors_at_once);
	tcase_add_test(tc, test_ranges);
	tcase_add_test(tc, test_syntax_errors);
	tcase_add_test(tc, test_special_files);
	tcase_add_test(tc, test_huge_and_binary);
	tcase_add_test(tc, test_long_lines);
	tcase_add_test(tc, test_wrong_section);
	tcase_add_test(tc, test_shipped_file_names_every_key);
	tcase_add_test(tc, test_too_many_errors);
	tcase_add_test(tc, test_units);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_run(config_suite());
}
