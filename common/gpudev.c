/*
 * gpudev.c: turns a gpu_devices spec into (major, minor range) rules using
 * the character-device section of /proc/devices, and resolves it again
 * when that file changes.  Shared by croft-probe (which loads the rules
 * into BPF) and croft-sampler (fd scan).  Any privilege.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "config.h"
#include "fileio.h"
#include "fnv1a.h"
#include "gpudev.h"

_Static_assert(GPUDEV_SPEC_MAX >= CONFIG_GPU_DEVICES_MAX,
	"every gpu_devices value croft.conf takes is a spec");

#define GPUDEV_DEFAULT_SPEC "nvidia*, kfd, accel, 226:128-255"
#define GPUDEV_MAJOR_MAX    4095u /* 12 bits, MAJOR() */

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

bool gpudev_chrdev_next(
	struct gpudev_chrdev *it, unsigned *ret_major, char ret_name[GPUDEV_NAME_MAX])
{
	while (it->line && *it->line) {
		const char *line = it->line, *nl = strchr(line, '\n');

		it->line = nl ? nl + 1 : NULL;
		if (!strncmp(line, "Character devices:", 18))
			it->in_char = it->seen_char = true;
		else if (!strncmp(line, "Block devices:", 14))
			it->in_char = false;
		else if (it->in_char && sscanf(line, "%u %63s", ret_major, ret_name) == 2 &&
			 *ret_major <= GPUDEV_MAJOR_MAX)
			return true;
	}
	return false;
}

/*
 * Names GPU drivers register in /proc/devices, some only when first used:
 * NVIDIA's nvidia, nvidia-uvm (first CUDA call), nvidia-nvlink,
 * nvidia-caps, nvidia-nvswitch...; AMD's kfd; the accel subsystem (Linux
 * 6.2+: Habana, Intel NPU, ...); drm.  An absent one is a driver not
 * loaded yet; any other absent name may be a typo and is told.
 */
static const struct {
	const char *name;
	bool prefix; /* also every name that starts with it */
} gpu_driver_names[] = {
	{ "nvidia", true },
	{ "kfd", false },
	{ "accel", false },
	{ "drm", false },
};

static bool gpu_driver_name(const char *pattern)
{
	size_t len = strlen(pattern);

	if (pattern[len - 1] == '*')
		len--;
	for (size_t i = 0; i < sizeof(gpu_driver_names) / sizeof(gpu_driver_names[0]); i++) {
		size_t known = strlen(gpu_driver_names[i].name);

		if (len >= known && !strncmp(pattern, gpu_driver_names[i].name, known) &&
			(len == known || gpu_driver_names[i].prefix))
			return true;
	}
	return false;
}

/* A name: every character-device major /proc/devices lists under it. */
static int gpudev_named(
	struct gpudev_set *set, const char *pattern, const char *devices, bool *ret_found)
{
	struct gpudev_chrdev it = { .line = devices };
	char name[GPUDEV_NAME_MAX];
	unsigned major;
	int r;

	*ret_found = false;
	while (gpudev_chrdev_next(&it, &major, name)) {
		if (!name_matches(pattern, name))
			continue;
		*ret_found = true;
		if ((r = gpudev_add(set, major, 0, GPUDEV_MINOR_MAX)) < 0)
			return r;
	}
	return 0;
}

/* Appends an unknown name that matched nothing to waiting ("a, b"). */
static void waiting_add(char *waiting, size_t len, const char *name)
{
	size_t used = strlen(waiting);

	snprintf(waiting + used, len - used, "%s%s", used ? ", " : "", name);
}

static int gpudev_entry(struct gpudev_set *set, const char *entry, const char *devices,
	char *waiting, size_t waiting_len)
{
	bool found;
	int r;

	if (entry[0] >= '0' && entry[0] <= '9')
		return gpudev_numeric(set, entry);
	if (!name_valid(entry))
		return -EINVAL;
	r = gpudev_named(set, entry, devices, &found);
	if (r == 0 && !found && !gpu_driver_name(entry))
		waiting_add(waiting, waiting_len, entry);
	return r;
}

static int resolve_text(const char *spec, const char *devices, struct gpudev_set *ret_set,
	char ret_waiting[GPUDEV_SPEC_MAX], char *err, size_t err_len)
{
	struct gpudev_set set = { 0 };
	char copy[GPUDEV_SPEC_MAX], *save = NULL, *entry;
	char waiting[GPUDEV_SPEC_MAX] = "";
	int r;

	if (!spec || !*spec)
		spec = GPUDEV_DEFAULT_SPEC;
	if (strlen(spec) >= sizeof(copy))
		return gpudev_fail(
			err, err_len, "gpu_devices: longer than %zu bytes", sizeof(copy) - 1);
	strcpy(copy, spec);
	for (entry = strtok_r(copy, ", \t\n", &save); entry;
		entry = strtok_r(NULL, ", \t\n", &save)) {
		r = gpudev_entry(&set, entry, devices, waiting, sizeof(waiting));
		if (r == -E2BIG)
			return gpudev_fail(
				err, err_len, "gpu_devices: more than %d rules", GPUDEV_RULES_MAX);
		if (r < 0)
			return gpudev_fail(err, err_len,
				"gpu_devices: bad entry '%.64s' (expected a /proc/devices name, "
				"MAJOR:MINOR, MAJOR:FIRST-LAST or MAJOR:*)",
				entry);
	}
	*ret_set = set;
	memcpy(ret_waiting, waiting, sizeof(waiting));
	return 0;
}

static int read_devices(const char *proc_devices, char **ret_text, char *err, size_t err_len)
{
	size_t len;
	int r = file_read_bounded(proc_devices, GPUDEV_FILE_MAX, ret_text, &len);

	if (r < 0 && err && err_len)
		snprintf(err, err_len, "%s: %s", proc_devices, file_read_strerror(r));
	return r;
}

/*
 * Whether some rule's major is a registered character device: without one
 * no process can hold a GPU file.  A text without that section: unknown, so
 * yes while there are rules.
 */
static bool registered(const struct gpudev_set *set, const char *devices)
{
	struct gpudev_chrdev it = { .line = devices };
	char name[GPUDEV_NAME_MAX];
	unsigned major;

	while (gpudev_chrdev_next(&it, &major, name))
		for (size_t i = 0; i < set->rules_count; i++)
			if (set->rules[i].major == major)
				return true;
	return !it.seen_char && set->rules_count > 0;
}

/* Resolves w's spec against the text just read; the old set stays on error. */
static int watch_apply(
	struct gpudev_watch *w, const char *devices, bool *ret_changed, char *err, size_t err_len)
{
	struct gpudev_set set;
	bool now_registered;
	int r = resolve_text(w->spec, devices, &set, w->waiting, err, err_len);

	if (r < 0)
		return r;
	now_registered = registered(&set, devices);
	*ret_changed = set.rules_count != w->set.rules_count ||
		       memcmp(set.rules, w->set.rules, set.rules_count * sizeof(set.rules[0])) ||
		       now_registered != w->registered;
	w->set = set;
	w->registered = now_registered;
	return 0;
}

int gpudev_watch_init(struct gpudev_watch *ret_w, const char *spec, const char *proc_devices,
	char *err, size_t err_len)
{
	struct gpudev_watch w = { .proc_devices = proc_devices };
	bool changed;
	char *devices;
	int r;

	if (strlen(spec ? spec : "") >= sizeof(w.spec))
		return gpudev_fail(
			err, err_len, "gpu_devices: longer than %zu bytes", sizeof(w.spec) - 1);
	strcpy(w.spec, spec ? spec : "");
	if ((r = read_devices(proc_devices, &devices, err, err_len)) < 0)
		return r;
	w.text_hash = fnv1a(FNV1A_BASIS, devices, strlen(devices));
	r = watch_apply(&w, devices, &changed, err, err_len);
	free(devices);
	if (r == 0)
		*ret_w = w;
	return r;
}

int gpudev_watch_refresh(struct gpudev_watch *w, bool *ret_changed, char *err, size_t err_len)
{
	char *devices;
	uint64_t hash;
	int r = read_devices(w->proc_devices, &devices, err, err_len);

	*ret_changed = false;
	if (r < 0) {
		r = w->read_failed ? 0 : r; /* reported once */
		w->read_failed = true;
		return r;
	}
	w->read_failed = false;
	hash = fnv1a(FNV1A_BASIS, devices, strlen(devices));
	if (hash != w->text_hash) {
		w->text_hash = hash; /* a text the spec cannot resolve is reported once */
		r = watch_apply(w, devices, ret_changed, err, err_len);
	}
	free(devices);
	return r;
}

const char *gpudev_watch_waiting_news(struct gpudev_watch *w)
{
	if (!strcmp(w->waiting, w->waiting_told))
		return NULL;
	memcpy(w->waiting_told, w->waiting, sizeof(w->waiting_told));
	return w->waiting[0] ? w->waiting : NULL;
}

void gpudev_set_format(const struct gpudev_set *set, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < set->rules_count && used < len; i++) {
		const struct gpudev_rule *r = &set->rules[i];
		const char *sep = i ? ", " : "";
		int n;

		if (r->minor_first == 0 && r->minor_last == GPUDEV_MINOR_MAX)
			n = snprintf(buf + used, len - used, "%s%u:*", sep, r->major);
		else if (r->minor_first == r->minor_last)
			n = snprintf(
				buf + used, len - used, "%s%u:%u", sep, r->major, r->minor_first);
		else
			n = snprintf(buf + used, len - used, "%s%u:%u-%u", sep, r->major,
				r->minor_first, r->minor_last);
		used += n > 0 ? (size_t)n : 0;
	}
	if (!set->rules_count)
		snprintf(buf, len, "none");
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
