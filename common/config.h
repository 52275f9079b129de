/*
 * config.h: /etc/croft/croft.conf, one struct with every tunable and its
 * default.  INI with [sampler], [probe], [writer]; durations "2s", "1h",
 * "30d"; sizes "1GiB".  Every error is collected (file:line: key: reason)
 * so the user sees them all at once.  Any process, any privilege.
 */
#ifndef CROFT_CONFIG_H
#define CROFT_CONFIG_H

#include <limits.h>
#include <stdint.h>

#define CROFT_CONF_PATH     CROFT_SYSCONFDIR "/croft/croft.conf"
#define CROFT_DATA_DIR      "/var/lib/croft"
#define CROFT_RUNTIME_DIR   "/run/croft"
#define CROFT_USER          "croft"
#define CROFT_FALLBACK_USER "nobody"
#define CROFT_KUBELET_CHECKPOINT                                                                   \
	"/var/lib/kubelet/device-plugins/kubelet_internal_checkpoint" /* gpus_allocated */
#define CROFT_DRIVER_DIR "/proc/driver" /* NVIDIA's nvidia/gpus and nvidia-caps */
/* croft's own: tmpfiles.d links Debian's node_exporter directory's croft.prom
 * here, so croft need not write (nor replace) other collectors' files there */
#define CROFT_TEXTFILE_DIR "/var/lib/croft-textfile"

#define CONFIG_GPU_DEVICES_MAX                                                                     \
	4096                  /* bytes of the gpu_devices value (gpudev.h GPUDEV_SPEC_MAX)         \
			       */
#define CONFIG_NAMES_MAX 1024 /* bytes of a list of names (gpu_system_holders) */
#define CONFIG_NAME_MAX  63   /* bytes of one name in it */
#define CONFIG_HOST_MAX  255  /* bytes of host (a DNS name is at most 253) */

/*
 * The driver daemons and monitors that hold GPU files open all day: exe
 * basenames (or comm, which the kernel cuts at 15 bytes).  NVIDIA: the
 * persistence daemon, DCGM's host engine and exporter, the Kubernetes
 * device plugin and feature discovery, the NVSwitch fabric manager,
 * nvidia-smi; AMD: amd-smi, rocm-smi (Python scripts: matched by comm),
 * the RDC daemon, the metrics exporter and its GPU agent, the Kubernetes
 * device plugin.
 */
#define CONFIG_GPU_SYSTEM_HOLDERS                                                                  \
	"nvidia-persistenced, nv-hostengine, dcgm-exporter, nvidia-device-plugin, "                \
	"gpu-feature-discovery, nv-fabricmanager, nvidia-smi, amd-smi, rocm-smi, rdcd, "           \
	"amd-metrics-exporter, gpuagent, k8s-device-plugin"
#define CONFIG_ERRORS_MAX 64 /* errors reported per file */

/* [sampler] nvml: the places of the words of its range ("auto|off") */
enum config_nvml { CONFIG_NVML_AUTO = 0, CONFIG_NVML_OFF = 1 };

struct croft_config {
	/* [sampler] */
	uint64_t poll_interval_ms; /* default 2 s */
	uint32_t idle_every;       /* polls between rows of an idle process, default 15 */
	uint64_t onset_window_ms;  /* gpu-onset length, default 30 s */
	char frameworks[PATH_MAX]; /* catalog file; "" = built-in */
	uint64_t spool_size_bytes; /* unacked batches kept, default 256 MiB */
	char gpu_system_holders[CONFIG_NAMES_MAX]; /* croft stats: "system", not workloads */
	char kubelet_checkpoint[PATH_MAX];         /* device-plugin checkpoint; "" = none */
	char driver_dir[PATH_MAX];                 /* /proc/driver: GPU UUIDs, MIG minors */
	char host[CONFIG_HOST_MAX + 1];            /* rows' "host"; "" = the kernel's node name */
	char textfile_dir[PATH_MAX]; /* croft.prom for node_exporter; "" = none written */
	uint32_t textfile_top;       /* containers and pods with series of their own */
	uint32_t nvml;               /* enum config_nvml: NVML loaded at run time, or not at all */
	/* [probe] */
	char gpu_devices[CONFIG_GPU_DEVICES_MAX]; /* "" = default set (gpudev.h) */
	/* [writer] */
	char data_dir[PATH_MAX];       /* default /var/lib/croft */
	uint64_t rotate_interval_ms;   /* default 1 h, aligned on the UTC clock */
	uint64_t rotate_size_bytes;    /* default 1 GiB */
	uint64_t retention_age_ms;     /* default 30 d */
	uint64_t retention_size_bytes; /* default 10 GiB */
	int zstd_level;                /* 1..19 */
};

void config_defaults(struct croft_config *cfg);

/*
 * What a missing file means.  Only the default path at start means the
 * defaults; a file named by --config or CROFT_CONFIG, or one that went
 * missing while a daemon ran on it, is refused like a broken one: a
 * default retention would delete what the operator's limits keep.
 */
enum config_missing {
	CONFIG_MISSING_REFUSED,
	CONFIG_MISSING_DEFAULTS,
};
/* config_load: the file is missing, *ret_cfg holds the defaults */
#define CONFIG_DEFAULTS_TAKEN 1
#define CONFIG_PATH_ENV       "CROFT_CONFIG" /* names the file as --config does */

/*
 * Reads path over the defaults.  Returns 0, CONFIG_DEFAULTS_TAKEN (missing
 * and CONFIG_MISSING_DEFAULTS), or -EINVAL: then *ret_cfg is untouched and
 * *ret_errors a malloc'd text, one "file:line: key: reason" per line.
 */
int config_load(const char *path, enum config_missing missing, struct croft_config *ret_cfg,
	char **ret_errors);

/* The i-th key croft.conf takes and its section ("sampler"...); NULL past the last. */
const char *config_key_at(size_t i, const char **ret_section);

/* "2s", "500ms", "1h", "30d" -> ms; "1GiB", "512MiB", "100kB", "123" -> bytes. */
int config_parse_duration_ms(const char *text, uint64_t *ret_ms);
int config_parse_size_bytes(const char *text, uint64_t *ret_bytes);

#endif
