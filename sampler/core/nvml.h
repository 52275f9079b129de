/*
 * nvml.h: NVIDIA's management library, loaded at run time (dlopen of
 * libnvidia-ml.so.1: no build or package dependency), asked on a thread of
 * its own, and what it said: per GPU and per process.  croft-sampler,
 * croft user.
 */
#ifndef CROFT_NVML_H
#define CROFT_NVML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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
	uint64_t energy_mj;  /* since the driver loaded */
	int procs_error;     /* of the process list: nvmlReturn_t, -errno; 0: read */
	int proc_util_error; /* nvmlReturn_t of per-process utilisation, 0: read */
	uint32_t
		process_layout; /* 1, 2 or 3: the process-list struct (16, 24, 32 bytes); 0: none */
	uint64_t last_seen_us;  /* newest utilisation sample taken (NVML's clock) */
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

#endif
