/*
 * fuzz_procfs.c: libFuzzer harness for the sampler's /proc readers.  The
 * first byte picks the file: stat and io through their parsers;
 * environ (CROFT_LABEL, checked against a plain reading), cmdline + maps
 * (framework detection against the built-in catalog) and /proc/devices
 * (gpudev_watch_init, gpudev_watch_refresh) as files of a fake /proc in the
 * scratch directory, read by the real readers.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "fuzzlib.h"
#include "host.h"
#include "wire.h"

#define FUZZ_PID    1
#define LABEL_VAR   "CROFT_LABEL="
#define MAPS_REPEAT 24 /* copies of the maps text at most: lines cross the reader's chunks */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_stat(const uint8_t *data, size_t size)
{
	char *buf = fuzz_strndup(data, size);
	struct proc_stat st;

	if (procfs_parse_stat(buf, size, &st) == 0 &&
		(st.comm < buf || st.comm + st.comm_len > buf + size))
		abort(); /* comm points into what was parsed */
	free(buf);
}

static void fuzz_io(const uint8_t *data, size_t size)
{
	char *buf = fuzz_strndup(data, size);
	uint64_t r, w;

	procfs_parse_io(buf, size, &r, &w);
	free(buf);
}

/* The value of the last whole CROFT_LABEL= entry of at most CTL_LABEL_MAX bytes. */
static const uint8_t *label_expected(const uint8_t *env, size_t size, size_t *ret_len)
{
	const uint8_t *found = NULL, *end = env + size;
	size_t vlen = strlen(LABEL_VAR);

	for (const uint8_t *e = env; e < end;) {
		const uint8_t *nul = memchr(e, '\0', (size_t)(end - e));
		size_t n = nul ? (size_t)(nul - e) : (size_t)(end - e);

		if (n >= vlen && n - vlen <= CTL_LABEL_MAX && memcmp(e, LABEL_VAR, vlen) == 0) {
			found = e + vlen;
			*ret_len = n - vlen;
		}
		e += n + 1;
	}
	return found;
}

static void fuzz_environ(const uint8_t *data, size_t size)
{
	size_t want_len = 0, len;
	const uint8_t *want = label_expected(data, size, &want_len);
	char *label = NULL;
	int r;

	fuzz_write("1/environ", data, size);
	r = procfs_label(fuzz_dir_fd(), FUZZ_PID, &label, &len);
	if ((r == 0) != (want != NULL))
		abort(); /* a label exactly when the environment has one */
	if (r == 0 && (len != want_len || memcmp(label, want, len) || label[len] != '\0'))
		abort();
	free(label);
}

/* [repeat][cmdline length, 2 bytes][cmdline][maps text] */
static void fuzz_framework(const uint8_t *data, size_t size)
{
	static struct catalog *cat;
	size_t cmd_len, repeat, maps_len, best, limit;
	uint8_t *maps;

	if (!cat && catalog_load_builtin(&cat) < 0)
		abort();
	if (size < 3)
		return;
	repeat = 1 + data[0] % MAPS_REPEAT;
	cmd_len = (size_t)(data[1] | data[2] << 8);
	data += 3;
	size -= 3;
	cmd_len = cmd_len < size ? cmd_len : size;
	maps_len = size - cmd_len;
	maps = malloc(maps_len * repeat + 1);
	if (!maps)
		abort();
	for (size_t i = 0; i < repeat; i++)
		memcpy(maps + i * maps_len, data + cmd_len, maps_len);
	fuzz_write("1/cmdline", data, cmd_len);
	fuzz_write("1/maps", maps, maps_len * repeat);
	free(maps);
	best = procfs_framework(fuzz_dir_fd(), FUZZ_PID, cat, SIZE_MAX);
	limit = repeat % (cat->entries_count + 1);
	if (best > cat->entries_count || procfs_framework(fuzz_dir_fd(), FUZZ_PID, cat, limit) !=
						 (best < limit ? best : limit))
		abort(); /* a limit only cuts the search short */
}

static void fuzz_devices(const uint8_t *data, size_t size)
{
	const char *path = fuzz_write("devices", data, size);
	struct gpudev_watch w;
	char err[256];
	bool changed;

	if (gpudev_watch_init(&w, "", path, err, sizeof(err)) < 0)
		return;
	if (w.set.rules_count > GPUDEV_RULES_MAX)
		abort();
	if (gpudev_watch_refresh(&w, &changed, err, sizeof(err)) == 0 && changed)
		abort(); /* the same text again */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	switch (data[0] % 5) {
	case 0:
		fuzz_stat(data + 1, size - 1);
		break;
	case 1:
		fuzz_io(data + 1, size - 1);
		break;
	case 2:
		fuzz_environ(data + 1, size - 1);
		break;
	case 3:
		fuzz_framework(data + 1, size - 1);
		break;
	default:
		fuzz_devices(data + 1, size - 1);
	}
	return 0;
}
