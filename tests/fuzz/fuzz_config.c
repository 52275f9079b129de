/*
 * fuzz_config.c: libFuzzer harness for croft.conf parsing.  The first byte
 * picks the target: the whole file through config_load, or one value
 * through the duration / size parsers, or a gpu_devices spec.
 * sources: common/config.c common/gpudev.c common/fileio.c
 * libs: -linih
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "gpudev.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char conf_path[64];
static int conf_fd = -1;

static void remove_conf(void)
{
	unlink(conf_path);
}

static void fuzz_file(const uint8_t *data, size_t size)
{
	struct croft_config cfg;
	char *errors = NULL;
	int r;

	if (conf_fd < 0) {
		snprintf(conf_path, sizeof(conf_path), "/tmp/croft-fuzz-conf.XXXXXX");
		conf_fd = mkstemp(conf_path);
		if (conf_fd < 0)
			abort();
		atexit(remove_conf);
	}
	if (ftruncate(conf_fd, 0) < 0 || pwrite(conf_fd, data, size, 0) != (ssize_t)size)
		abort();
	r = config_load(conf_path, &cfg, &errors);
	if ((r == 0) != (errors == NULL))
		abort(); /* errors text exactly when it failed */
	if (r == 0 && (cfg.zstd_level < 1 || cfg.zstd_level > 19 || cfg.poll_interval_ms < 100 ||
			      cfg.data_dir[0] == '\0' ||
			      memchr(cfg.data_dir, '\0', sizeof(cfg.data_dir)) == NULL))
		abort(); /* a loaded config is always within its ranges */
	if (errors && (strlen(errors) == 0 || errors[strlen(errors) - 1] != '\n'))
		abort();
	free(errors);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text;
	uint64_t v;

	if (size == 0)
		return 0;
	if (data[0] % 4 == 0) {
		fuzz_file(data + 1, size - 1);
		return 0;
	}
	text = malloc(size);
	if (!text)
		return 0;
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if (data[0] % 4 == 1) {
		config_parse_duration_ms(text, &v);
	} else if (data[0] % 4 == 2) {
		config_parse_size_bytes(text, &v);
	} else {
		struct gpudev_set set;
		char err[256];

		if (gpudev_resolve(text, "/proc/devices", &set, err, sizeof(err)) == 0 &&
			set.rules_count > GPUDEV_RULES_MAX)
			abort();
	}
	free(text);
	return 0;
}
