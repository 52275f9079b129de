/*
 * croft-generator: a systemd generator, run by PID 1 as root at boot and at
 * each daemon-reload, before any unit starts.  Where croft.conf's data_dir
 * is not the writer's StateDirectory, it writes a drop-in that lets
 * croft-writer.service write there and wait for its mount: croft.conf stays
 * the one place the dataset's directory is set.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "usage.h"

#define PROGRAM "croft-generator"

#define DROPIN_DIR  "croft-writer.service.d"
#define DROPIN_NAME "croft-data-dir.conf"

/* Paths written into a unit file unquoted: no space, quote, backslash or
 * specifier (%) to escape, which keeps the drop-in obviously right. */
static int unit_path_ok(const char *path)
{
	if (path[0] != '/')
		return 0;
	return path[strspn(path, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
				 "0123456789/._-+@:,=")] == '\0';
}

/*
 * System directories: data_dir there, or directly below one (/var/lib,
 * /etc/x), would open far more than croft's files to the writer's
 * ProtectSystem=strict sandbox (data_dir = / opened everything).
 */
static const char *const system_dirs[] = { "/", "/etc", "/usr", "/boot", "/proc", "/sys", "/dev",
	"/run", "/var", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/root", "/home",
	NULL };

/* 1 when path is a system directory or directly below one; also for "." or
 * ".." components, which would hide where it points. */
static int system_path(const char *data_dir)
{
	char path[PATH_MAX];
	size_t len = strlen(data_dir);

	if (len >= sizeof(path))
		return 1;
	memcpy(path, data_dir, len + 1);
	while (len > 1 && path[len - 1] == '/')
		path[--len] = '\0'; /* "/var/lib/" is /var/lib */
	const char *last = strrchr(path, '/');
	size_t parent_len = last == path ? 1 : (size_t)(last - path);

	if (strstr(path, "/./") || strstr(path, "/../") || strstr(path, "//") ||
		!strcmp(last, "/.") || !strcmp(last, "/.."))
		return 1;
	for (size_t i = 0; system_dirs[i]; i++) {
		size_t dir_len = strlen(system_dirs[i]);
		if (!strcmp(path, system_dirs[i]) ||
			(parent_len == dir_len && !strncmp(path, system_dirs[i], dir_len)))
			return 1;
	}
	return 0;
}

static int write_dropin(const char *unit_dir, const char *conf, const char *data_dir)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/" DROPIN_DIR, unit_dir);
	if (mkdir(path, 0755) < 0 && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/" DROPIN_DIR "/" DROPIN_NAME, unit_dir);
	f = fopen(path, "we");
	if (!f)
		return -errno;
	fprintf(f,
		"# croft-generator: data_dir from %s\n"
		"[Unit]\nRequiresMountsFor=%s\n"
		"[Service]\nReadWritePaths=-%s\n",
		conf, data_dir, data_dir);
	if (fclose(f) != 0)
		return -EIO;
	return 0;
}

int main(int argc, char **argv)
{
	const char *conf = getenv(CONFIG_PATH_ENV) ? getenv(CONFIG_PATH_ENV) : CROFT_CONF_PATH;
	struct croft_config cfg;
	char *errors = NULL;
	int ret;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		printf("usage: croft-generator NORMAL_DIR [EARLY_DIR LATE_DIR]\n"
		       "A systemd generator: systemd runs it at boot and at each daemon-reload.\n"
		       "Where croft.conf sets data_dir elsewhere, it writes NORMAL_DIR/%s/, a\n"
		       "drop-in that lets croft-writer.service write there.\n",
			DROPIN_DIR);
		return 0;
	}
	/* systemd gives one or three absolute directories; nothing else is one */
	if (argc != 2 && argc != 4)
		return usage_error(PROGRAM,
			"expected NORMAL_DIR [EARLY_DIR LATE_DIR], got %d "
			"arguments",
			argc - 1);
	for (int i = 1; i < argc; i++)
		if (argv[i][0] != '/')
			return usage_error(PROGRAM, "'%s' is not an absolute directory", argv[i]);
	/* Errors in croft.conf: no drop-in; croft-writer refuses to start and says why. */
	if (config_load(conf, CONFIG_MISSING_DEFAULTS, &cfg, &errors) < 0) {
		fprintf(stderr,
			"croft-generator: %s is refused, croft-writer.service left as shipped:\n%s",
			conf, errors);
		free(errors);
		return 0;
	}
	if (!strcmp(cfg.data_dir, CROFT_DATA_DIR))
		return 0;
	if (!unit_path_ok(cfg.data_dir)) {
		fprintf(stderr,
			"croft-generator: %s: data_dir %s is not an absolute path of letters, "
			"digits and "
			"/._-+@:,=; croft-writer.service may not write there\n",
			conf, cfg.data_dir);
		return 0;
	}
	if (system_path(cfg.data_dir)) {
		fprintf(stderr,
			"croft-generator: %s: data_dir %s is a system directory or directly below "
			"one (/, /etc, /usr, /var, /run, /home...); croft-writer.service may not "
			"write there: give a directory of croft's own, such as /var/lib/croft\n",
			conf, cfg.data_dir);
		return 0;
	}
	ret = write_dropin(argv[1], conf, cfg.data_dir);
	if (ret < 0) {
		fprintf(stderr, "croft-generator: %s/" DROPIN_DIR ": %s\n", argv[1],
			strerror(-ret));
		return 1;
	}
	return 0;
}
