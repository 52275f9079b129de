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
#define GPUDEV_SPEC_MAX  4096             /* bytes of a spec: config.h CONFIG_GPU_DEVICES_MAX */
#define GPUDEV_MINOR_MAX ((1u << 20) - 1) /* minor_last of a "MAJOR:*" rule */

struct gpudev_rule {
	uint32_t major;
	uint32_t minor_first; /* inclusive */
	uint32_t minor_last;  /* inclusive */
};

struct gpudev_set {
	size_t rules_count;
	struct gpudev_rule rules[GPUDEV_RULES_MAX];
};

bool gpudev_match(const struct gpudev_set *set, dev_t rdev);
/* "195:*, 226:128-255" ("none" for no rule), cut to len, for logs. */
void gpudev_set_format(const struct gpudev_set *set, char *buf, size_t len);

#define GPUDEV_FILE_MAX (64u << 10) /* bytes of /proc/devices read */
#define GPUDEV_NAME_MAX 64
/* The character-device section of a /proc/devices text, from line on. */
struct gpudev_chrdev {
	const char *line;
	bool in_char, seen_char;
};
/* Its next "MAJOR name" line; false at its end. */
bool gpudev_chrdev_next(
	struct gpudev_chrdev *it, unsigned *ret_major, char ret_name[GPUDEV_NAME_MAX]);

/*
 * A spec's set while croft runs: a driver that registers later (nvidia-uvm
 * on the first CUDA call, a driver container) joins it.  proc_devices is
 * read again at each refresh; when its text changed the spec is resolved
 * again.
 */
struct gpudev_watch {
	char spec[GPUDEV_SPEC_MAX];
	const char *proc_devices; /* kept: the caller's string */
	uint64_t text_hash;       /* of the text last resolved */
	bool read_failed;         /* the last read failed (reported once) */
	bool registered;          /* some rule's major is registered: GPU files can exist */
	struct gpudev_set set;
	/* names that match nothing and are no GPU driver's name: a typo, or a
	 * driver croft does not know that loads later ("a, b"; "" none) */
	char waiting[GPUDEV_SPEC_MAX];
	char waiting_told[GPUDEV_SPEC_MAX]; /* what gpudev_watch_waiting_news last returned */
};

/*
 * Resolves spec against proc_devices (normally "/proc/devices") now.  A
 * name absent from the file is not an error (the driver is not loaded); a
 * malformed entry is: -EINVAL with a reason in err.
 */
int gpudev_watch_init(struct gpudev_watch *ret_w, const char *spec, const char *proc_devices,
	char *err, size_t err_len);
/*
 * Reads proc_devices; when it changed, resolves the spec again.
 * ret_changed: the set (or registered) changed.  On an error (reported
 * once per failure, 0 after) the set stays as it was.
 */
int gpudev_watch_refresh(struct gpudev_watch *w, bool *ret_changed, char *err, size_t err_len);
/* w->waiting when it is not empty and differs from what the last call
 * returned (so the caller logs each new list once), else NULL. */
const char *gpudev_watch_waiting_news(struct gpudev_watch *w);
#define GPUDEV_WAITING_FMT                                                                         \
	"gpu_devices: %s: no GPU driver croft knows and not in /proc/devices; accepted, "          \
	"matching nothing until a driver registers under that name (a typo?)"

#endif
