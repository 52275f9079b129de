/*
 * fuzz_config.c: libFuzzer harness for croft.conf parsing.  The first byte
 * picks the target: the whole file through config_load, or one value
 * through the duration / size parsers, or a gpu_devices spec.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzzlib.h"
#include "gpudev.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_file(const uint8_t *data, size_t size)
{
	const char *conf_path = fuzz_write("croft.conf", data, size);
	struct croft_config cfg;
	char *errors = NULL;
	int r;

	r = config_load(conf_path, CONFIG_MISSING_REFUSED, &cfg, &errors);
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
	text = fuzz_strndup(data + 1, size - 1);
	if (data[0] % 4 == 1) {
		config_parse_duration_ms(text, &v);
	} else if (data[0] % 4 == 2) {
		config_parse_size_bytes(text, &v);
	} else {
		struct gpudev_watch w;
		char err[256];

		if (gpudev_watch_init(&w, text, "/proc/devices", err, sizeof(err)) == 0 &&
			w.set.rules_count > GPUDEV_RULES_MAX)
			abort();
	}
	free(text);
	return 0;
}
