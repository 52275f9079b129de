/*
 * gpudev.h: the GPU device set, the one resolver the probe and the sampler
 * share.  A spec is a list of /proc/devices names, "MAJOR:MINOR" and
 * "MAJOR:*" entries (comma or space separated); an empty spec means the
 * default set: the nvidia*, kfd and accel majors and DRM render nodes.
 * Any process, any privilege.
 */
#ifndef CROFT_GPUDEV_H
#define CROFT_GPUDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define GPUDEV_RULES_MAX 64

struct gpudev_rule {
	uint32_t major;
	uint32_t minor_first;  /* inclusive */
	uint32_t minor_last;   /* inclusive */
};

struct gpudev_set {
	size_t rules_count;
	struct gpudev_rule rules[GPUDEV_RULES_MAX];
};

/*
 * Resolves spec against proc_devices (normally "/proc/devices").  A name
 * absent from the file is not an error (the driver is not loaded); a
 * malformed entry is: -EINVAL with a reason in err.
 */
int gpudev_resolve(const char *spec, const char *proc_devices, struct gpudev_set *ret_set,
	char *err, size_t err_len);
bool gpudev_match(const struct gpudev_set *set, dev_t rdev);

#endif
