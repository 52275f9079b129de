/*
 * nvml_standin.c: a stand-in libnvidia-ml.so.1 for croft's tests, written
 * from NVIDIA's published NVML ABI (function names, nvmlReturn_t values,
 * struct layouts) and driven by a scenario file (NVML_STANDIN_SCENARIO),
 * read again at each nvmlDeviceGetCount so a test can change it live:
 *
 *   init ERR                  nvmlInit returns ERR
 *   layout 1|2|3|3v2          process list: v1 (16-byte entries, only the
 *                             unversioned call), v2 (24), v3 as R535 wrote
 *                             it (32), or v3 as later drivers do (24)
 *   gpu I minor=N sm=P mem=P used=B power=MW energy=MJ mig=0|1
 *   proc I pid=PID mem=B|na sm=P|none    a compute process on GPU I and
 *                             its SM utilisation (none: no sample)
 *   fill I COUNT              COUNT more processes (pids from 4000000)
 *   old_samples               each process also gets a sample not newer
 *                             than lastSeenTimeStamp (smUtil 77)
 *   error FUNC ERR            FUNC returns ERR
 *   hang FUNC                 FUNC blocks while this line is in the file
 *   device PATH               opened at init, one ioctl on it per round:
 *                             NVML's own use of the GPU's files
 *
 * Built without the versioned symbols (STANDIN_OLD): an old driver's
 * library, whose missing symbols croft must go without.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#define API       __attribute__((visibility("default")))
#define GPUS_MAX  8
#define PROCS_MAX 512

/* nvmlReturn_t values NVIDIA documents */
enum { OK = 0, NOT_SUPPORTED = 3, NOT_FOUND = 6, INSUFFICIENT_SIZE = 7, FUNCTION_NOT_FOUND = 13 };

struct util_rates { /* nvmlUtilization_t */
	unsigned int gpu, memory;
};
struct memory_info { /* nvmlMemory_t */
	unsigned long long total, free, used;
};
struct proc_v1 { /* nvmlProcessInfo_v1_t */
	unsigned int pid;
	unsigned long long used_gpu_memory;
};
struct proc_v2 { /* nvmlProcessInfo_v2_t, and _v3's in most drivers */
	unsigned int pid;
	unsigned long long used_gpu_memory;
	unsigned int gpu_instance_id, compute_instance_id;
};
struct proc_v3_r535 { /* what R535's _v3 wrote */
	unsigned int pid;
	unsigned long long used_gpu_memory;
	unsigned int gpu_instance_id, compute_instance_id;
	unsigned long long used_gpu_cc_protected_memory;
};
struct util_sample { /* nvmlProcessUtilizationSample_t */
	unsigned int pid;
	unsigned long long time_stamp;
	unsigned int sm_util, mem_util, enc_util, dec_util;
};

struct sgpu {
	unsigned int minor, sm, mem, power, mig;
	unsigned long long used, energy;
};
struct sproc {
	unsigned int gpu, pid;
	long long mem; /* -1: not available */
	int sm;        /* -1: no sample */
};
static struct {
	int init_error;
	char layout[8];
	struct sgpu gpus[GPUS_MAX];
	unsigned int gpus_count;
	struct sproc procs[PROCS_MAX];
	unsigned int procs_count;
	int old_samples;
	char errors[16][64];
	int error_ret[16];
	unsigned int errors_count;
	char device[256];
} sc;
static int device_fd = -1;

static unsigned long long field(const char *line, const char *key, unsigned long long dflt)
{
	const char *p = strstr(line, key);

	return p ? strtoull(p + strlen(key), NULL, 10) : dflt;
}

static void parse_proc(const char *line)
{
	struct sproc *p = &sc.procs[sc.procs_count];
	const char *mem = strstr(line, "mem="), *sm = strstr(line, "sm=");

	if (sc.procs_count >= PROCS_MAX)
		return;
	p->gpu = (unsigned int)atoi(line + 5);
	p->pid = (unsigned int)field(line, "pid=", 0);
	p->mem = mem && strncmp(mem + 4, "na", 2) ? (long long)strtoull(mem + 4, NULL, 10) : -1;
	p->sm = sm && strncmp(sm + 3, "none", 4) ? atoi(sm + 3) : -1;
	sc.procs_count++;
}

static void parse_line(const char *line)
{
	char name[64];
	int ret;

	if (!strncmp(line, "init ", 5))
		sc.init_error = atoi(line + 5);
	else if (!strncmp(line, "layout ", 7))
		snprintf(sc.layout, sizeof(sc.layout), "%.*s", (int)strcspn(line + 7, " \n"),
			line + 7);
	else if (!strncmp(line, "gpu ", 4) && sc.gpus_count < GPUS_MAX) {
		struct sgpu *g = &sc.gpus[sc.gpus_count++];

		g->minor = (unsigned int)field(line, "minor=", 0);
		g->sm = (unsigned int)field(line, " sm=", 0);
		g->mem = (unsigned int)field(line, " mem=", 0);
		g->used = field(line, "used=", 0);
		g->power = (unsigned int)field(line, "power=", 0);
		g->energy = field(line, "energy=", 0);
		g->mig = (unsigned int)field(line, "mig=", 0);
	} else if (!strncmp(line, "proc ", 5))
		parse_proc(line);
	else if (!strncmp(line, "fill ", 5)) {
		unsigned int gpu = (unsigned int)atoi(line + 5);
		unsigned int n = (unsigned int)atoi(strchr(line + 5, ' ') + 1);

		for (unsigned int i = 0; i < n && sc.procs_count < PROCS_MAX; i++)
			sc.procs[sc.procs_count++] = (struct sproc){
				.gpu = gpu, .pid = 4000000 + i, .mem = 1 << 20, .sm = -1
			};
	} else if (!strncmp(line, "old_samples", 11))
		sc.old_samples = 1;
	else if (sscanf(line, "error %63s %d", name, &ret) == 2 && sc.errors_count < 16) {
		snprintf(sc.errors[sc.errors_count], 64, "%s", name);
		sc.error_ret[sc.errors_count++] = ret;
	} else if (!strncmp(line, "device ", 7))
		snprintf(sc.device, sizeof(sc.device), "%.*s", (int)strcspn(line + 7, "\n"),
			line + 7);
}

static void load(void)
{
	const char *path = getenv("NVML_STANDIN_SCENARIO");
	char line[512];
	FILE *f = path ? fopen(path, "r") : NULL;

	memset(&sc, 0, sizeof(sc));
	snprintf(sc.layout, sizeof(sc.layout), "3v2");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f))
		parse_line(line);
	fclose(f);
}

/* Whether the scenario file still says "hang FUNC". */
static int hangs(const char *func)
{
	const char *path = getenv("NVML_STANDIN_SCENARIO");
	char line[512], want[96];
	FILE *f = path ? fopen(path, "r") : NULL;
	int found = 0;

	snprintf(want, sizeof(want), "hang %s", func);
	while (f && !found && fgets(line, sizeof(line), f))
		found = !strncmp(line, want, strlen(want)) &&
			(line[strlen(want)] == '\n' || !line[strlen(want)]);
	if (f)
		fclose(f);
	return found;
}

/* A call's own error, after any hang the scenario asks of it. */
static int enter(const char *func)
{
	struct timespec tick = { 0, 50 * 1000000 };

	while (hangs(func))
		nanosleep(&tick, NULL);
	for (unsigned int i = 0; i < sc.errors_count; i++)
		if (!strcmp(sc.errors[i], func))
			return sc.error_ret[i];
	return OK;
}

static struct sgpu *gpu_of(void *dev)
{
	unsigned long i = (unsigned long)dev - 1;

	return i < sc.gpus_count ? &sc.gpus[i] : NULL;
}

static unsigned long long now_us(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (unsigned long long)tv.tv_sec * 1000000 + (unsigned long long)tv.tv_usec;
}

static int init(void)
{
	int r;

	load();
	if ((r = enter("nvmlInit")) != OK || sc.init_error)
		return r ? r : sc.init_error;
	if (sc.device[0] && device_fd < 0)
		device_fd = open(sc.device, O_RDONLY | O_CLOEXEC);
	return OK;
}

API int nvmlInit(void)
{
	return init();
}

API int nvmlShutdown(void)
{
	if (device_fd >= 0)
		close(device_fd);
	device_fd = -1;
	return OK;
}

static int count(unsigned int *n)
{
	int r;

	load();
	if ((r = enter("nvmlDeviceGetCount")) != OK)
		return r;
	if (device_fd >= 0) /* the driver's ioctl every NVML query makes */
		(void)ioctl(device_fd, 0x4e56, 0);
	*n = sc.gpus_count;
	return OK;
}

API int nvmlDeviceGetCount(unsigned int *n)
{
	return count(n);
}

static int handle(unsigned int index, void **dev)
{
	if (index >= sc.gpus_count)
		return 2; /* INVALID_ARGUMENT */
	*dev = (void *)(unsigned long)(index + 1);
	return OK;
}

API int nvmlDeviceGetHandleByIndex(unsigned int index, void **dev)
{
	return handle(index, dev);
}

API int nvmlDeviceGetMinorNumber(void *dev, unsigned int *minor)
{
	struct sgpu *g = gpu_of(dev);
	int r = enter("nvmlDeviceGetMinorNumber");

	if (r || !g)
		return r ? r : 2;
	*minor = g->minor;
	return OK;
}

API int nvmlDeviceGetMigMode(void *dev, unsigned int *current, unsigned int *pending)
{
	struct sgpu *g = gpu_of(dev);

	if (!g)
		return 2;
	*current = *pending = g->mig;
	return OK;
}

API int nvmlDeviceGetUtilizationRates(void *dev, struct util_rates *u)
{
	struct sgpu *g = gpu_of(dev);
	int r = enter("nvmlDeviceGetUtilizationRates");

	if (r || !g)
		return r ? r : 2;
	if (g->mig)
		return NOT_SUPPORTED;
	u->gpu = g->sm;
	u->memory = g->mem;
	return OK;
}

API int nvmlDeviceGetMemoryInfo(void *dev, struct memory_info *m)
{
	struct sgpu *g = gpu_of(dev);
	int r = enter("nvmlDeviceGetMemoryInfo");

	if (r || !g)
		return r ? r : 2;
	m->total = 141ull << 30;
	m->used = g->used;
	m->free = m->total - g->used;
	return OK;
}

API int nvmlDeviceGetPowerUsage(void *dev, unsigned int *mw)
{
	struct sgpu *g = gpu_of(dev);
	int r = enter("nvmlDeviceGetPowerUsage");

	if (r || !g)
		return r ? r : 2;
	*mw = g->power;
	return OK;
}

/* The process list in one layout: entries of size bytes, NVML's count contract. */
static int list(void *dev, unsigned int *n, void *out, int version, const char *func)
{
	unsigned int gpu = (unsigned int)((unsigned long)dev - 1), have = 0;
	size_t size = version == 1                              ? sizeof(struct proc_v1)
		      : version == 3 && !strcmp(sc.layout, "3") ? sizeof(struct proc_v3_r535)
								: sizeof(struct proc_v2);
	int r = enter(func);

	if (r)
		return r;
	for (unsigned int i = 0; i < sc.procs_count; i++)
		have += sc.procs[i].gpu == gpu;
	if (*n < have) {
		*n = have;
		return INSUFFICIENT_SIZE;
	}
	*n = 0;
	for (unsigned int i = 0; i < sc.procs_count; i++) {
		struct proc_v3_r535 e = { .pid = sc.procs[i].pid,
			.used_gpu_memory =
				sc.procs[i].mem < 0 ? ~0ull : (unsigned long long)sc.procs[i].mem,
			.gpu_instance_id = ~0u,
			.compute_instance_id = ~0u };

		if (sc.procs[i].gpu != gpu)
			continue;
		if (version == 1) {
			struct proc_v1 e1 = { e.pid, e.used_gpu_memory };

			memcpy((char *)out + *n * size, &e1, size);
		} else if (size == sizeof(struct proc_v2)) {
			struct proc_v2 e2 = { e.pid, e.used_gpu_memory, e.gpu_instance_id,
				e.compute_instance_id };

			memcpy((char *)out + *n * size, &e2, size);
		} else {
			memcpy((char *)out + *n * size, &e, size);
		}
		(*n)++;
	}
	return OK;
}

API int nvmlDeviceGetComputeRunningProcesses(void *dev, unsigned int *n, void *out)
{
	return list(dev, n, out, 1, "nvmlDeviceGetComputeRunningProcesses");
}

API int nvmlDeviceGetProcessUtilization(
	void *dev, struct util_sample *out, unsigned int *n, unsigned long long last_seen)
{
	unsigned int gpu = (unsigned int)((unsigned long)dev - 1), k = 0;
	struct sgpu *g = gpu_of(dev);
	unsigned long long now = now_us();
	int r = enter("nvmlDeviceGetProcessUtilization");

	if (r || !g)
		return r ? r : 2;
	if (g->mig)
		return NOT_SUPPORTED;
	for (unsigned int i = 0; i < sc.procs_count && k + 2 <= *n; i++) {
		if (sc.procs[i].gpu != gpu || sc.procs[i].sm < 0)
			continue;
		out[k++] = (struct util_sample){ .pid = sc.procs[i].pid,
			.time_stamp = now,
			.sm_util = (unsigned int)sc.procs[i].sm };
		if (sc.old_samples)
			out[k++] = (struct util_sample){
				.pid = sc.procs[i].pid, .time_stamp = last_seen, .sm_util = 77
			};
	}
	*n = k;
	return k ? OK : NOT_FOUND;
}

#ifndef STANDIN_OLD
API int nvmlInit_v2(void)
{
	return init();
}

API int nvmlDeviceGetCount_v2(unsigned int *n)
{
	return count(n);
}

API int nvmlDeviceGetHandleByIndex_v2(unsigned int index, void **dev)
{
	return handle(index, dev);
}

API int nvmlDeviceGetTotalEnergyConsumption(void *dev, unsigned long long *mj)
{
	struct sgpu *g = gpu_of(dev);
	int r = enter("nvmlDeviceGetTotalEnergyConsumption");

	if (r || !g)
		return r ? r : 2;
	*mj = g->energy;
	return OK;
}

API int nvmlDeviceGetComputeRunningProcesses_v2(void *dev, unsigned int *n, void *out)
{
	if (!strcmp(sc.layout, "1"))
		return FUNCTION_NOT_FOUND;
	return list(dev, n, out, 2, "nvmlDeviceGetComputeRunningProcesses_v2");
}

API int nvmlDeviceGetComputeRunningProcesses_v3(void *dev, unsigned int *n, void *out)
{
	if (!strcmp(sc.layout, "1") || !strcmp(sc.layout, "2"))
		return FUNCTION_NOT_FOUND;
	return list(dev, n, out, 3, "nvmlDeviceGetComputeRunningProcesses_v3");
}
#endif
