/*
 * gpu.h: the GPUs as a poll reads them: the device files a process holds,
 * the NVIDIA driver's names for them, its GPU state, what NVIDIA's
 * management library says (NVML, loaded at run time and asked on a thread
 * of its own) and the verdict on whether it used its GPU.  Part of what a
 * poll reads (host.h); library of croft-sampler, croft user.
 */
#ifndef CROFT_SAMPLER_GPU_H
#define CROFT_SAMPLER_GPU_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "gpudev.h"
#include "rowdef.h"

#define PROC_FDS_MAX 65536 /* fds looked at per fd scan */

/* ---- gpus.c: the GPUs a process holds open ---- */
#define GPU_INDEX_MAX        256 /* indices kept, 0..255 (NVIDIA minors end at 253) */
#define GPU_DEVICES_MAX      64  /* GPU devices sysfs names (render and accel nodes) */
#define GPU_DEVICE_NAME_MAX  64  /* bytes of a device name, "0000:41:00.0" */
#define GPU_NVIDIA_MAJORS    8
#define GPU_INDEX_CACHE      64 /* device numbers resolved through sysfs, per load */
#define GPU_INDEX_LOAD_POLLS 30 /* sysfs's GPU devices read again (hotplug) */
#define GPU_FDS_KEPT         32 /* GPU devices per process checked between full scans */

struct gpu_mask {
	uint64_t bits[GPU_INDEX_MAX / 64];
};

/* ---- nvdriver.c: NVIDIA's own files under /proc/driver ---- */
#define NV_GPUS_MAX   64           /* GPUs /proc/driver/nvidia/gpus lists */
#define NV_UUID_MAX   80           /* bytes of a "GPU UUID:" value */
#define NV_MIG_MAX    2048         /* compute instances mig-minors names (32 GPUs x 8 x 8) */
#define NV_DRIVER_MAX (256u << 10) /* bytes of one driver file read */
#define MIG_NAME_MAX  16           /* "<gpu>/<gi>/<ci>": "255/255/255" */

struct nv_gpu {
	char uuid[NV_UUID_MAX + 1]; /* "GPU-8f3a...", as the kubelet's checkpoint names it */
	int index;                  /* its Device Minor: /dev/nvidiaN, the rows' gpus */
};

/* A compute instance's access file: /dev/nvidia-caps/nvidia-cap<minor>. */
struct nv_mig {
	uint32_t minor;
	uint8_t gpu, gi, ci;
};

/* The GPUs' UUIDs (<driver>/nvidia/gpus/<pci>/information) and the MIG
 * capability minors (<driver>/nvidia-caps/mig-minors); none without them. */
struct nv_driver {
	struct nv_gpu gpus[NV_GPUS_MAX];
	size_t gpus_count;
	struct nv_mig mig[NV_MIG_MAX]; /* by minor */
	size_t mig_count;
};
void nv_driver_load(struct nv_driver *nv, const char *driver_dir);
/* "Device Minor:" and "GPU UUID:" of one information file; -EINVAL without both. */
int nv_parse_information(const char *text, struct nv_gpu *ret_gpu);
/* mig-minors' "gpu<G>/gi<I>/ci<C>/access <minor>" lines, sorted by minor. */
size_t nv_parse_mig_minors(const char *text, struct nv_mig *ret, size_t max);
/* The GPU a UUID names (a time-sliced replica's "::N" ignored), or -1. */
int nv_gpu_of_uuid(const struct nv_driver *nv, const char *uuid, size_t len);
/* The compute instance a capability minor opens, or NULL. */
const struct nv_mig *nv_mig_of_minor(const struct nv_driver *nv, uint32_t minor);

/* What names a GPU: loaded again every GPU_INDEX_LOAD_POLLS polls, when
 * /proc/devices changes and at reload. */
struct gpu_index {
	const char *sysfs;                         /* "/sys"; tests give a tree of their own */
	uint32_t nvidia_majors[GPU_NVIDIA_MAJORS]; /* /proc/devices: nvidia, nvidia-frontend... */
	size_t nvidia_count;
	uint32_t caps_major; /* /proc/devices: nvidia-caps (MIG access files); 0: none */
	struct nv_driver nv;
	char devices[GPU_DEVICES_MAX][GPU_DEVICE_NAME_MAX]; /* behind render/accel nodes, sorted */
	size_t devices_count;
	struct gpu_index_cached {
		dev_t rdev;
		int index;
	} cache[GPU_INDEX_CACHE];
	size_t cache_count;
	uint64_t next_load_gen; /* poll at which to load again; 0 = now */
};

/* Reads proc_devices ("/proc/devices"), sysfs ("/sys", kept: it must
 * outlive gi) and NVIDIA's driver_dir ("/proc/driver"); an unreadable
 * proc_devices leaves no NVIDIA major (-errno), the others are optional. */
int gpu_index_load(
	struct gpu_index *gi, const char *proc_devices, const char *sysfs, const char *driver_dir);
/* The GPU a device number names, or -1 (nvidiactl, uvm, kfd, /dev/full...). */
int gpu_index_of(struct gpu_index *gi, dev_t rdev);
void gpu_mask_set(struct gpu_mask *m, int index);
bool gpu_mask_has(const struct gpu_mask *m, int index);
/*
 * A process's GPU files at its last fd scan (allocated only while it holds
 * some), for cheap checks between full scans: one fd per GPU device held,
 * and how many fds were open (st_size of /proc/<pid>/fd: kernels 6.2+).
 */
struct gpu_fds {
	bool overflow; /* more devices than kept: every look scans */
	struct gpu_mask gpus;
	uint64_t fds_open; /* 0: the kernel does not say */
	size_t kept_count;
	int fd[GPU_FDS_KEPT];
	dev_t rdev[GPU_FDS_KEPT];
};

/* How far a full fd scan went when a slice ended in it. */
struct fd_scan {
	long pos;             /* telldir() of /proc/<pid>/fd; 0: from the start */
	size_t seen;          /* entries looked at, up to PROC_FDS_MAX */
	struct gpu_fds found; /* what it found so far */
};

/*
 * The GPU files of tgid.  full: every fd is read.  Otherwise the last scan
 * (*kept) is checked and read again only when it no longer stands: a kept
 * fd closed or on another device, or (6.2+) another number of fds open.
 * So a close is seen at once, a new open at once on 6.2+ and at the next
 * full scan before.  *kept is allocated and freed here.  A full scan (2 to
 * 5 us a fd: 65 536 fds take a third of a second) stops at until_ns
 * (CLOCK_MONOTONIC) with -EAGAIN, and goes on when called again with the
 * same *scan (zeroed to begin; zeroed again once done).
 */
int gpufd_look(int procfd, pid_t tgid, const struct gpudev_set *gpu, struct gpu_index *gi,
	bool full, struct fd_scan *scan, uint64_t until_ns, struct gpu_fds **kept, bool *ret_holds,
	struct gpu_mask *ret_gpus);
void gpu_fds_free(struct gpu_fds **kept);

/* ---- workload.c: the GPU state machine (enum workload_state: rowdef.h) ---- */
struct workload {
	enum workload_state state;
	bool holds_gpu_fd;            /* last fd scan found a GPU device file */
	bool held_before_ioctl;       /* holding GPU files before any ioctl was seen: no onset */
	bool gpus_known;              /* an fd scan named the GPUs: row field "gpus" */
	struct gpu_mask gpus;         /* the GPUs of the last fd scan */
	uint64_t first_ioctl_boot_ns; /* 0 = none seen */
};

struct workload_input {
	bool fd_scanned;       /* the fds were read this poll */
	bool holds_gpu_fd;     /* valid when fd_scanned */
	struct gpu_mask gpus;  /* valid when fd_scanned */
	bool at_sampler_start; /* this is the sampler's first look at the process */
	bool probe_valid;
	uint64_t gpu_ioctls; /* this poll */
	uint64_t last_gpu_ioctl_boot_ns;
	uint64_t prev_sample_boot_ns; /* start of this poll's interval for the process */
	uint64_t now_boot_ns;
};

void workload_update(
	struct workload *wl, const struct workload_input *in, uint64_t onset_window_ns);
/* Whether a row must say it: another state, or other GPUs held. */
bool workload_changed(const struct workload *before, const struct workload *after);
/* This poll's look at the fds, for settling. */
struct proc_look {
	bool scanned; /* the fds were read */
	bool holds_gpu_fd;
	struct gpu_mask gpus;
};

/* What NVML said of the process over its row's span; unknown without NVML. */
struct proc_nvml {
	bool memory_known, sm_known;
	uint64_t memory_bytes;
	double sm_percent;  /* 0-100, the mean over the span's polls NVML gave it for */
	double sm_weight_s; /* the seconds that mean stands for */
};

struct proc_gpu {
	struct workload wl;
	struct proc_nvml nvml;
	/* the verdict of this poll (gpu_activity, gpu_activity_source) */
	enum gpu_activity activity;
	enum gpu_activity_source activity_source;
	bool activity_open;  /* a poll of the row's span has been judged (verdict_fold) */
	struct gpu_fds *fds; /* the last fd scan's GPU files; NULL: none */
	bool at_sampler_start;
	bool fds_looked; /* its fds were read once: then at its idle slot */
	struct proc_look look;
};

/* ---- nvml.c, nvml_thread.c: NVIDIA's management library, loaded at run
 * time (dlopen of libnvidia-ml.so.1: no build or package dependency),
 * asked on a thread of its own, and what it said: per GPU and per process ---- */
#define NVML_LIBRARY     "libnvidia-ml.so.1"
#define NVML_GPUS_MAX    64    /* GPUs asked about */
#define NVML_PROCS_MAX   4096  /* processes per GPU read */
#define NVML_SAMPLES_MAX 8192  /* per-process utilisation samples per GPU read */
#define NVML_INTERVAL_MS 1000  /* asked at most once a second */
#define NVML_DEADLINE_MS 2000  /* a round not back by then is hung: its figures go stale */
#define NVML_RETRY_MS    60000 /* a library missing or refusing to start: tried again */
#define NVML_PROBLEM_MAX 256   /* bytes of why a figure is left out */
#define NVML_SM_MAX      100u  /* a utilisation above this is impossible: taken as 100 */

/* The per-GPU figures a round read (each NVML call on its own: one failing leaves one out). */
enum nvml_gpu_have {
	NG_UTIL = 1 << 0,      /* sm_percent, memory_percent (nvmlDeviceGetUtilizationRates) */
	NG_MEMORY = 1 << 1,    /* memory_used_bytes (nvmlDeviceGetMemoryInfo) */
	NG_POWER = 1 << 2,     /* power_mw (nvmlDeviceGetPowerUsage) */
	NG_ENERGY = 1 << 3,    /* energy_mj (nvmlDeviceGetTotalEnergyConsumption) */
	NG_PROCS = 1 << 4,     /* its compute processes were listed */
	NG_PROC_UTIL = 1 << 5, /* per-process utilisation was read (samples, or none: 0 %) */
};

struct nvml_gpu {
	uint32_t nvml_index;
	int minor; /* /dev/nvidiaN: the rows' gpus; -1: NVML does not say */
	unsigned have;
	bool mig; /* MIG mode on: per-process utilisation is not supported */
	uint32_t sm_percent, memory_percent;
	uint64_t memory_used_bytes;
	uint32_t power_mw;
	uint64_t energy_mj;      /* since the driver loaded */
	int procs_error;         /* of the process list: nvmlReturn_t, -errno; 0: read */
	int proc_util_error;     /* nvmlReturn_t of per-process utilisation, 0: read */
	uint32_t process_layout; /* the process-list struct: 1, 2, 3 (16, 24, 32 bytes); 0: none */
	uint64_t last_seen_us;   /* newest utilisation sample taken (NVML's clock) */
};

/* One process on one GPU. */
struct nvml_proc {
	pid_t pid;
	int minor; /* its GPU's, -1: unknown */
	bool memory_known, sm_known;
	uint64_t memory_bytes;
	double sm_percent; /* mean of the samples newer than the round before */
	uint32_t sm_samples;
};

/* What one round said. */
struct nvml_result {
	bool loaded;            /* the library is open and initialised */
	uint64_t taken_mono_ns; /* when the round ended (CLOCK_MONOTONIC) */
	size_t gpus_count;
	struct nvml_gpu gpus[NVML_GPUS_MAX];
	size_t procs_count, procs_cap;
	struct nvml_proc *procs;        /* sorted by pid */
	uint64_t samples_clamped;       /* smUtil above NVML_SM_MAX, taken as NVML_SM_MAX */
	uint64_t samples_old;           /* samples not newer than the round before: left out */
	char problem[NVML_PROBLEM_MAX]; /* why nothing is read; "" when loaded */
};

/* nvml.c: the library and its calls (run on the NVML thread only). */
struct nvml_lib;
/* dlopen and nvmlInit; NULL with why in problem (absent, refused). */
struct nvml_lib *nvml_lib_open(char *problem, size_t problem_size);
void nvml_lib_close(struct nvml_lib *lib);
/* One round: every GPU's figures and processes into *res (its procs kept). */
void nvml_lib_read(struct nvml_lib *lib, struct nvml_result *res);
/* Processes' entries by pid (procs sorted); NULL: none. */
const struct nvml_proc *nvml_result_find(const struct nvml_result *res, pid_t pid, size_t *ret_n);
const struct nvml_gpu *nvml_result_gpu(const struct nvml_result *res, int minor);
void nvml_result_free(struct nvml_result *res);
/* An nvmlReturn_t as NVML's documentation names it ("NOT_SUPPORTED"). */
const char *nvml_error_name(int ret);

/* nvml_thread.c: the rounds, off the poll loop.  The thread never touches
 * libevent; the loop watches nvml_fd and calls nvml_collect. */
struct nvml;
int nvml_new(struct nvml **ret);
/* The thread is left behind when a call hangs in it (it cannot be stopped). */
void nvml_free(struct nvml *n);
int nvml_fd(const struct nvml *n);
/* A round is asked for, unless one ran less than NVML_INTERVAL_MS ago or runs now. */
void nvml_kick(struct nvml *n);
/* The round that came back, if one did: it replaces *last (true). */
bool nvml_collect(struct nvml *n, struct nvml_result *last);
/* Whether a round has run longer than NVML_DEADLINE_MS (hung) at now. */
bool nvml_hung(struct nvml *n, uint64_t now_mono_ns);
/* Rounds done, and the ones that outlived the deadline. */
void nvml_counts(struct nvml *n, uint64_t *ret_rounds, uint64_t *ret_hangs);

/* ---- verdict.c: whether a GPU-state process used its GPU over a poll (busy,
 * idle or unknown) and on what evidence (NVML's per-process utilisation,
 * NVML's device utilisation where it is the GPU's only holder, or the
 * kernel's), and the verdict of a row's span from its polls'.  Pure
 * functions; the evidence is gathered in activity.c ---- */
/*
 * Below this many cores of CPU a process can be idle on kernel evidence
 * alone: a CUDA launch loop or a spinning synchronise keeps a thread on a
 * core (about 1.0), while a process holding a context and sleeping uses
 * well under 1 % (the driver's helper threads wake a few times a second).
 * What it waited on a run queue counts too: a spinner starved of CPU on a
 * crowded host still wants its core.
 */
#define VERDICT_IDLE_CPU_CORES 0.05

struct verdict_input {
	/* NVML's per-process SM utilisation of this process over the poll (0-100) */
	bool nvml_process_known;
	double nvml_process_sm;
	/* NVML's device SM utilisation where the process is its GPUs' only holder */
	bool nvml_device_known;
	double nvml_device_sm;
	/* the probe's: GPU ioctls; waits on GPU files and threads blocked on them */
	bool ioctls_known;
	uint64_t ioctls;
	bool waits_known;
	uint64_t waits;
	uint32_t blocked_threads;
	/* usage.cpu_cores over the poll, and usage.runqueue_s: the time it waited for a core */
	bool cpu_known;
	double cpu_cores;
	bool runqueue_known;
	double runqueue_s;
};

struct verdict {
	enum gpu_activity activity;
	enum gpu_activity_source source;
};

/*
 * NVML's figure for the process first (0 idle, above busy), then the
 * device's where it is the only holder, then the kernel's: busy on a GPU
 * ioctl, wait or blocked thread; idle only with all of them known and
 * none, and CPU (run, and waited for where known) below
 * VERDICT_IDLE_CPU_CORES; unknown otherwise.
 */
struct verdict gpu_verdict(const struct verdict_input *in);
/* A span's verdict after one more poll: busy if any poll was, else unknown
 * if any was, else idle; the source of the poll that decided. */
struct verdict verdict_fold(struct verdict span, bool span_open, struct verdict poll);

/* ---- activity.c: the evidence of each GPU-state process at a poll ---- */
struct nvml_result;
struct proc;
struct proc_table;

struct activity_env {
	const struct nvml_result *nvml; /* a round fresh enough for this poll; NULL: none */
	const char *system_holders;     /* croft.conf gpu_system_holders: not workloads */
	uint16_t holders[256];          /* workload processes holding each GPU index */
};
/* Who holds each GPU, from this poll's fd looks (and the last for the rest). */
void activity_count_holders(struct activity_env *env, const struct proc_table *table);
/* p's NVML figures and verdict at this poll, folded into its row's span; a
 * busy GPU makes the row due now. */
void activity_settle(struct proc *p, const struct activity_env *env);
/* p's row is written: the next span starts afresh. */
void activity_span_end(struct proc *p);

#endif
