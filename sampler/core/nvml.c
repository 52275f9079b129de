/*
 * nvml.c: NVIDIA's management library at run time: dlopen of
 * libnvidia-ml.so.1 (never linked, never a package dependency), each symbol
 * looked up on its own (one missing leaves its figure out), and one round
 * of questions per GPU: utilisation, memory, power, energy, its compute
 * processes and their utilisation samples.  Only read-only queries:
 * accounting mode and every other setting are left as they are.  Runs on
 * the NVML thread of croft-sampler (nvml_thread.c), croft user.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu.h"

/* NVML's ABI as NVIDIA documents it (nvml.h of the driver), written here. */
enum {
	NVML_SUCCESS = 0,
	NVML_ERROR_NOT_SUPPORTED = 3,
	NVML_ERROR_NOT_FOUND = 6,
	NVML_ERROR_INSUFFICIENT_SIZE = 7,
	NVML_ERROR_FUNCTION_NOT_FOUND = 13,
};
#define NVML_VALUE_NOT_AVAILABLE (~0ull) /* usedGpuMemory a process's memory is not known by */
#define NVML_MIG_ENABLED         1u

struct nvml_utilization { /* nvmlUtilization_t */
	unsigned int gpu, memory;
};
struct nvml_memory { /* nvmlMemory_t (v1) */
	unsigned long long total, free, used;
};
struct nvml_sample { /* nvmlProcessUtilizationSample_t */
	unsigned int pid;
	unsigned long long time_stamp_us;
	unsigned int sm, memory, encoder, decoder;
};
_Static_assert(sizeof(struct nvml_sample) == 32, "nvmlProcessUtilizationSample_t is 32 bytes");

/*
 * nvmlProcessInfo_t: v1 {pid, usedGpuMemory} 16 bytes; v2 adds
 * gpuInstanceId and computeInstanceId, 24 bytes; the _v3 call took v2's
 * layout, except in the R535 drivers that wrote a 32-byte one (with
 * usedGpuCcProtectedMemory) under the same name.  pid at 0, memory at 8.
 */
#define PROC_STRIDE_MAX 32
#define PROC_FILL       0xa5 /* the list buffer before a call: where it stops being this, NVML wrote */

typedef void *nvml_device;

struct nvml_lib {
	void *dl;
	int (*init)(void);
	int (*shutdown)(void);
	int (*count)(unsigned int *);
	int (*handle)(unsigned int, nvml_device *);
	int (*minor)(nvml_device, unsigned int *);
	int (*util)(nvml_device, struct nvml_utilization *);
	int (*memory)(nvml_device, struct nvml_memory *);
	int (*power)(nvml_device, unsigned int *);
	int (*energy)(nvml_device, unsigned long long *);
	int (*mig_mode)(nvml_device, unsigned int *, unsigned int *);
	int (*procs[3])(nvml_device, unsigned int *, void *); /* v1, v2, v3 */
	int (*proc_util)(nvml_device, struct nvml_sample *, unsigned int *, unsigned long long);
	bool procs_gone[3]; /* FUNCTION_NOT_FOUND: not asked again */
	unsigned char *list;
	size_t list_entries;
	struct nvml_sample *samples;
	uint64_t last_seen_us[NVML_GPUS_MAX];
};

/* Each symbol on its own: the first name the library has (newer ABI first). */
static const struct nvml_symbol {
	const char *names[2];
	size_t offset;
} nvml_symbols[] = {
#define SYM(field, a, b)                                                                           \
	{                                                                                          \
		{ a, b }, offsetof(struct nvml_lib, field)                                         \
	}
	SYM(init, "nvmlInit_v2", "nvmlInit"),
	SYM(shutdown, "nvmlShutdown", NULL),
	SYM(count, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount"),
	SYM(handle, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex"),
	SYM(minor, "nvmlDeviceGetMinorNumber", NULL),
	SYM(util, "nvmlDeviceGetUtilizationRates", NULL),
	SYM(memory, "nvmlDeviceGetMemoryInfo", NULL),
	SYM(power, "nvmlDeviceGetPowerUsage", NULL),
	SYM(energy, "nvmlDeviceGetTotalEnergyConsumption", NULL),
	SYM(mig_mode, "nvmlDeviceGetMigMode", NULL),
	SYM(procs[0], "nvmlDeviceGetComputeRunningProcesses", NULL),
	SYM(procs[1], "nvmlDeviceGetComputeRunningProcesses_v2", NULL),
	SYM(procs[2], "nvmlDeviceGetComputeRunningProcesses_v3", NULL),
	SYM(proc_util, "nvmlDeviceGetProcessUtilization", NULL),
#undef SYM
};

static const struct {
	int ret;
	const char *name;
} nvml_errors[] = {
	{ 0, "SUCCESS" },
	{ 1, "UNINITIALIZED" },
	{ 2, "INVALID_ARGUMENT" },
	{ 3, "NOT_SUPPORTED" },
	{ 4, "NO_PERMISSION" },
	{ 6, "NOT_FOUND" },
	{ 7, "INSUFFICIENT_SIZE" },
	{ 9, "DRIVER_NOT_LOADED" },
	{ 10, "TIMEOUT" },
	{ 12, "LIBRARY_NOT_FOUND" },
	{ 13, "FUNCTION_NOT_FOUND" },
	{ 15, "GPU_IS_LOST" },
	{ 18, "LIB_RM_VERSION_MISMATCH" },
	{ 999, "UNKNOWN" },
};

const char *nvml_error_name(int ret)
{
	for (size_t i = 0; i < sizeof(nvml_errors) / sizeof(nvml_errors[0]); i++)
		if (nvml_errors[i].ret == ret)
			return nvml_errors[i].name;
	return "error";
}

static void bind_symbols(struct nvml_lib *lib)
{
	for (size_t i = 0; i < sizeof(nvml_symbols) / sizeof(nvml_symbols[0]); i++) {
		const struct nvml_symbol *s = &nvml_symbols[i];
		void *sym = dlsym(lib->dl, s->names[0]);

		if (!sym && s->names[1])
			sym = dlsym(lib->dl, s->names[1]);
		/* a data pointer into a function pointer: POSIX's dlsym contract */
		memcpy((char *)lib + s->offset, &sym, sizeof(sym));
	}
}

struct nvml_lib *nvml_lib_open(char *problem, size_t problem_size)
{
	struct nvml_lib *lib = calloc(1, sizeof(*lib));
	int r;

	if (!lib) {
		snprintf(problem, problem_size, "out of memory");
		return NULL;
	}
	lib->dl = dlopen(NVML_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (!lib->dl) {
		snprintf(problem, problem_size, "%s not loaded: %s", NVML_LIBRARY, dlerror());
		free(lib);
		return NULL;
	}
	bind_symbols(lib);
	if (!lib->init || !lib->count || !lib->handle) {
		snprintf(problem, problem_size,
			"%s lacks nvmlInit, nvmlDeviceGetCount or "
			"nvmlDeviceGetHandleByIndex",
			NVML_LIBRARY);
		nvml_lib_close(lib);
		return NULL;
	}
	if ((r = lib->init()) != NVML_SUCCESS) {
		snprintf(problem, problem_size, "nvmlInit: %s (%d)", nvml_error_name(r), r);
		lib->shutdown = NULL; /* never started */
		nvml_lib_close(lib);
		return NULL;
	}
	lib->list_entries = 64;
	lib->list = malloc(lib->list_entries * PROC_STRIDE_MAX);
	lib->samples = calloc(NVML_SAMPLES_MAX, sizeof(*lib->samples));
	if (!lib->list || !lib->samples) {
		snprintf(problem, problem_size, "out of memory");
		nvml_lib_close(lib);
		return NULL;
	}
	return lib;
}

void nvml_lib_close(struct nvml_lib *lib)
{
	if (!lib)
		return;
	if (lib->shutdown)
		lib->shutdown();
	dlclose(lib->dl);
	free(lib->list);
	free(lib->samples);
	free(lib);
}

static int add_proc(struct nvml_result *res, const struct nvml_proc *p)
{
	if (res->procs_count == res->procs_cap) {
		size_t cap = res->procs_cap ? res->procs_cap * 2 : 64;
		struct nvml_proc *procs = realloc(res->procs, cap * sizeof(*procs));

		if (!procs)
			return -ENOMEM;
		res->procs = procs;
		res->procs_cap = cap;
	}
	res->procs[res->procs_count++] = *p;
	return 0;
}

/* The bytes of the list NVML wrote: up to the last one not PROC_FILL. */
static size_t list_extent(const struct nvml_lib *lib)
{
	size_t n = lib->list_entries * PROC_STRIDE_MAX;

	while (n && lib->list[n - 1] == PROC_FILL)
		n--;
	return n;
}

/* One call of the newest process-list function there is; its return. */
static int list_call(struct nvml_lib *lib, nvml_device dev, unsigned int *count, int *ret_version)
{
	for (int v = 2; v >= 0; v--) {
		int r;

		if (!lib->procs[v] || lib->procs_gone[v])
			continue;
		memset(lib->list, PROC_FILL, lib->list_entries * PROC_STRIDE_MAX);
		*count = (unsigned int)lib->list_entries;
		r = lib->procs[v](dev, count, lib->list);
		if (r == NVML_ERROR_FUNCTION_NOT_FOUND) {
			lib->procs_gone[v] = true;
			continue;
		}
		*ret_version = v + 1;
		return r;
	}
	return NVML_ERROR_FUNCTION_NOT_FOUND;
}

/* The entries' stride: the version's, and 32 where a _v3 call wrote past 24 a process. */
static size_t list_stride(const struct nvml_lib *lib, int version, unsigned int count)
{
	if (version == 1)
		return 16;
	if (version == 3 && count && list_extent(lib) > (size_t)count * 24)
		return 32;
	return 24;
}

/* The GPU's compute processes (pid, memory); the list grows once when NVML asks. */
static int read_procs(
	struct nvml_lib *lib, nvml_device dev, struct nvml_gpu *g, struct nvml_result *res)
{
	unsigned int count = 0;
	int version = 0, r = list_call(lib, dev, &count, &version);
	size_t stride;

	if (r == NVML_ERROR_INSUFFICIENT_SIZE && count > lib->list_entries &&
		count <= NVML_PROCS_MAX) {
		unsigned char *list = realloc(lib->list, ((size_t)count + 16) * PROC_STRIDE_MAX);

		if (!list)
			return -ENOMEM;
		lib->list = list;
		lib->list_entries = (size_t)count + 16;
		r = list_call(lib, dev, &count, &version);
	}
	if (r != NVML_SUCCESS)
		return r;
	stride = list_stride(lib, version, count);
	g->process_layout = stride == 16 ? 1 : stride == 24 ? 2 : 3; /* the struct, not the call */
	for (unsigned int i = 0; i < count && i < lib->list_entries; i++) {
		const unsigned char *e = lib->list + i * stride;
		unsigned int pid;
		unsigned long long used;
		struct nvml_proc p = { .minor = g->minor };

		memcpy(&pid, e, sizeof(pid));
		memcpy(&used, e + 8, sizeof(used));
		p.pid = (pid_t)pid;
		p.memory_known = used != NVML_VALUE_NOT_AVAILABLE;
		p.memory_bytes = p.memory_known ? used : 0;
		if (add_proc(res, &p))
			return -ENOMEM;
	}
	g->have |= NG_PROCS;
	return 0;
}

static struct nvml_proc *gpu_proc(struct nvml_result *res, size_t from, pid_t pid)
{
	for (size_t i = from; i < res->procs_count; i++)
		if (res->procs[i].pid == pid)
			return &res->procs[i];
	return NULL;
}

/*
 * The mean smUtil of each process's samples newer than the last round's
 * (NVML keeps a ring of them); a listed process without one was 0 %.  A
 * sample above 100 % is impossible: taken as 100, and counted.
 */
static void read_proc_util(struct nvml_lib *lib, nvml_device dev, struct nvml_gpu *g,
	struct nvml_result *res, size_t from)
{
	uint64_t *last_seen = &lib->last_seen_us[g->nvml_index];
	unsigned int count = NVML_SAMPLES_MAX;
	int r = lib->proc_util ? lib->proc_util(dev, lib->samples, &count, *last_seen)
			       : NVML_ERROR_FUNCTION_NOT_FOUND;
	uint64_t newest = *last_seen;

	g->proc_util_error = r == NVML_ERROR_NOT_FOUND ? 0 : r; /* NOT_FOUND: no sample since */
	if (r != NVML_SUCCESS && r != NVML_ERROR_NOT_FOUND)
		return;
	g->have |= NG_PROC_UTIL;
	for (size_t i = from; i < res->procs_count; i++)
		res->procs[i].sm_known = true; /* 0 % unless a sample says more */
	for (unsigned int i = 0; r == NVML_SUCCESS && i < count && i < NVML_SAMPLES_MAX; i++) {
		const struct nvml_sample *s = &lib->samples[i];
		struct nvml_proc *p = gpu_proc(res, from, (pid_t)s->pid);
		unsigned int sm = s->sm;

		if (s->time_stamp_us <= *last_seen) {
			res->samples_old++;
			continue;
		}
		if (s->time_stamp_us > newest)
			newest = s->time_stamp_us;
		if (sm > NVML_SM_MAX) {
			res->samples_clamped++;
			sm = NVML_SM_MAX;
		}
		if (!p) { /* a process with samples the compute list left out */
			struct nvml_proc np = { .pid = (pid_t)s->pid, .minor = g->minor };

			if (add_proc(res, &np))
				return;
			p = &res->procs[res->procs_count - 1];
			p->sm_known = true;
		}
		p->sm_percent += sm;
		p->sm_samples++;
	}
	for (size_t i = from; i < res->procs_count; i++)
		if (res->procs[i].sm_samples)
			res->procs[i].sm_percent /= res->procs[i].sm_samples;
	*last_seen = newest;
	g->last_seen_us = newest;
}

static void read_gpu(struct nvml_lib *lib, unsigned int index, struct nvml_result *res)
{
	struct nvml_gpu *g = &res->gpus[res->gpus_count++];
	struct nvml_utilization u;
	struct nvml_memory m;
	unsigned int minor, cur, pend;
	unsigned long long energy_mj;
	nvml_device dev;
	size_t from = res->procs_count;

	*g = (struct nvml_gpu){ .nvml_index = index, .minor = -1 };
	if (lib->handle(index, &dev) != NVML_SUCCESS)
		return;
	if (lib->minor && lib->minor(dev, &minor) == NVML_SUCCESS)
		g->minor = (int)minor;
	if (lib->mig_mode && lib->mig_mode(dev, &cur, &pend) == NVML_SUCCESS)
		g->mig = cur == NVML_MIG_ENABLED;
	if (lib->util && lib->util(dev, &u) == NVML_SUCCESS) {
		g->have |= NG_UTIL;
		g->sm_percent = u.gpu > NVML_SM_MAX ? NVML_SM_MAX : u.gpu;
		g->memory_percent = u.memory > NVML_SM_MAX ? NVML_SM_MAX : u.memory;
	}
	if (lib->memory && lib->memory(dev, &m) == NVML_SUCCESS) {
		g->have |= NG_MEMORY;
		g->memory_used_bytes = m.used;
	}
	if (lib->power && lib->power(dev, &g->power_mw) == NVML_SUCCESS)
		g->have |= NG_POWER;
	if (lib->energy && lib->energy(dev, &energy_mj) == NVML_SUCCESS) {
		g->have |= NG_ENERGY;
		g->energy_mj = energy_mj;
	}
	g->procs_error = read_procs(lib, dev, g, res);
	if (g->procs_error == 0) /* utilisation is only read of the processes listed */
		read_proc_util(lib, dev, g, res, from);
}

static int cmp_pid(const void *a, const void *b)
{
	const struct nvml_proc *x = a, *y = b;

	return (x->pid > y->pid) - (x->pid < y->pid);
}

void nvml_lib_read(struct nvml_lib *lib, struct nvml_result *res)
{
	unsigned int count = 0;
	int r;

	res->gpus_count = 0;
	res->procs_count = 0;
	res->loaded = true;
	res->problem[0] = '\0';
	if ((r = lib->count(&count)) != NVML_SUCCESS) {
		snprintf(res->problem, sizeof(res->problem), "nvmlDeviceGetCount: %s (%d)",
			nvml_error_name(r), r);
		return;
	}
	for (unsigned int i = 0; i < count && i < NVML_GPUS_MAX; i++)
		read_gpu(lib, i, res);
	qsort(res->procs, res->procs_count, sizeof(*res->procs), cmp_pid);
}

const struct nvml_proc *nvml_result_find(const struct nvml_result *res, pid_t pid, size_t *ret_n)
{
	const struct nvml_proc key = { .pid = pid };
	const struct nvml_proc *at =
		res->procs_count ? bsearch(&key, res->procs, res->procs_count, sizeof(key), cmp_pid)
				 : NULL;
	size_t n = 0;

	while (at && at > res->procs && at[-1].pid == pid) /* its first entry */
		at--;
	while (at && at + n < res->procs + res->procs_count && at[n].pid == pid)
		n++;
	*ret_n = n;
	return at;
}

const struct nvml_gpu *nvml_result_gpu(const struct nvml_result *res, int minor)
{
	for (size_t i = 0; i < res->gpus_count; i++)
		if (res->gpus[i].minor == minor && minor >= 0)
			return &res->gpus[i];
	return NULL;
}

void nvml_result_free(struct nvml_result *res)
{
	free(res->procs);
	res->procs = NULL;
	res->procs_count = res->procs_cap = 0;
}
