/*
 * gpudev.c: turns a gpu_devices spec into (major, minor range) rules using
 * the character-device section of /proc/devices.  Shared by croft-probe
 * (which loads the rules into BPF) and croft-sampler (fd scan).  Any
 * privilege.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "fileio.h"
#include "gpudev.h"

#define GPUDEV_DEFAULT_SPEC "nvidia*, kfd, accel, 226:128-255"
#define GPUDEV_FILE_MAX     (64u << 10) /* bytes of /proc/devices we read */
#define GPUDEV_NAME_MAX     64
#define GPUDEV_MAJOR_MAX    4095u /* 12 bits, MAJOR() */
#define GPUDEV_MINOR_MAX    ((1u << 20) - 1)

static int gpudev_fail(char *err, size_t err_len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int gpudev_fail(char *err, size_t err_len, const char *fmt, ...)
{
	va_list ap;

	if (err && err_len) {
		va_start(ap, fmt);
		vsnprintf(err, err_len, fmt, ap);
		va_end(ap);
	}
	return -EINVAL;
}

static int gpudev_add(struct gpudev_set *set, uint32_t major, uint32_t first, uint32_t last)
{
	if (set->rules_count >= GPUDEV_RULES_MAX)
		return -E2BIG;
	set->rules[set->rules_count++] =
		(struct gpudev_rule){ .major = major, .minor_first = first, .minor_last = last };
	return 0;
}

static int parse_u32(const char *s, const char **ret_end, uint32_t max, uint32_t *ret)
{
	uint64_t v = 0;

	if (*s < '0' || *s > '9')
		return -EINVAL;
	for (; *s >= '0' && *s <= '9'; s++) {
		v = v * 10 + (uint64_t)(*s - '0');
		if (v > max)
			return -ERANGE;
	}
	*ret_end = s;
	*ret = (uint32_t)v;
	return 0;
}

/* "MAJOR:MINOR", "MAJOR:*" or "MAJOR:FIRST-LAST". */
static int gpudev_numeric(struct gpudev_set *set, const char *entry)
{
	uint32_t major, first = 0, last = GPUDEV_MINOR_MAX;
	const char *s;

	if (parse_u32(entry, &s, GPUDEV_MAJOR_MAX, &major) < 0 || *s++ != ':')
		return -EINVAL;
	if (!strcmp(s, "*"))
		return gpudev_add(set, major, first, last);
	if (parse_u32(s, &s, GPUDEV_MINOR_MAX, &first) < 0)
		return -EINVAL;
	last = first;
	if (*s == '-' && parse_u32(s + 1, &s, GPUDEV_MINOR_MAX, &last) < 0)
		return -EINVAL;
	if (*s || last < first)
		return -EINVAL;
	return gpudev_add(set, major, first, last);
}

static bool name_valid(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len >= GPUDEV_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = name[i];

		if (c == '*' && i == len - 1 && i > 0)
			continue; /* trailing wildcard: "nvidia*" */
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			    c == '-' || c == '_' || c == '.' || c == '/'))
			return false;
	}
	return true;
}

static bool name_matches(const char *pattern, const char *name)
{
	size_t len = strlen(pattern);

	if (pattern[len - 1] == '*')
		return !strncmp(pattern, name, len - 1);
	return !strcmp(pattern, name);
}

/* A name: every character-device major /proc/devices lists under it. */
static int gpudev_named(struct gpudev_set *set, const char *pattern, const char *devices)
{
	const char *line = devices;
	bool in_char = false;
	int r;

	while (line && *line) {
		const char *nl = strchr(line, '\n');
		char name[GPUDEV_NAME_MAX];
		unsigned major;

		if (!strncmp(line, "Character devices:", 18))
			in_char = true;
		else if (!strncmp(line, "Block devices:", 14))
			in_char = false;
		else if (in_char && sscanf(line, "%u %63s", &major, name) == 2 &&
			 major <= GPUDEV_MAJOR_MAX && name_matches(pattern, name)) {
			r = gpudev_add(set, major, 0, GPUDEV_MINOR_MAX);
			if (r < 0)
				return r;
		}
		line = nl ? nl + 1 : NULL;
	}
	return 0;
}

static int gpudev_entry(struct gpudev_set *set, const char *entry, const char *devices)
{
	if (entry[0] >= '0' && entry[0] <= '9')
		return gpudev_numeric(set, entry);
	if (!name_valid(entry))
		return -EINVAL;
	return gpudev_named(set, entry, devices);
}

int gpudev_resolve(const char *spec, const char *proc_devices, struct gpudev_set *ret_set,
	char *err, size_t err_len)
{
	struct gpudev_set set = { 0 };
	char copy[1024], *save = NULL, *entry, *devices;
	size_t devices_len;
	int r;

	if (!spec || !*spec)
		spec = GPUDEV_DEFAULT_SPEC;
	if (strlen(spec) >= sizeof(copy))
		return gpudev_fail(
			err, err_len, "gpu_devices: longer than %zu bytes", sizeof(copy) - 1);
	strcpy(copy, spec);
	r = file_read_bounded(proc_devices, GPUDEV_FILE_MAX, &devices, &devices_len);
	if (r < 0) {
		if (err && err_len)
			snprintf(err, err_len, "%s: %s", proc_devices, file_read_strerror(r));
		return r;
	}
	for (entry = strtok_r(copy, ", \t\n", &save); entry;
		entry = strtok_r(NULL, ", \t\n", &save)) {
		r = gpudev_entry(&set, entry, devices);
		if (r == -E2BIG) {
			r = gpudev_fail(
				err, err_len, "gpu_devices: more than %d rules", GPUDEV_RULES_MAX);
			goto out;
		}
		if (r < 0) {
			r = gpudev_fail(err, err_len,
				"gpu_devices: bad entry '%.64s' (expected a /proc/devices name, "
				"MAJOR:MINOR, MAJOR:FIRST-LAST or MAJOR:*)",
				entry);
			goto out;
		}
	}
	*ret_set = set;
out:
	free(devices);
	return r;
}

bool gpudev_match(const struct gpudev_set *set, dev_t rdev)
{
	uint32_t ma = major(rdev), mi = minor(rdev);

	for (size_t i = 0; i < set->rules_count; i++) {
		const struct gpudev_rule *rule = &set->rules[i];

		if (rule->major == ma && mi >= rule->minor_first && mi <= rule->minor_last)
			return true;
	}
	return false;
}
