/*
 * gen-rows.c: croft-gen-rows, a deterministic generator of realistic
 * croft-dataset rows (croft-dataset(5)) for benchmarks and tests: a GPU
 * host with a few hundred processes, containers, frameworks, GPU states,
 * syscall mixes, labels and idle processes.  Unprivileged; writes stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rowdef.h"

#define POLL_MS        2000 /* unix_ms step per poll */
#define IDLE_EVERY     15   /* polls between rows of an idle process */
#define ONSET_POLLS    15   /* 30 s onset window at 2 s polls */
#define SYSCALLS_MAX   20   /* entries in one process's mix */
#define CONTAINERS_MAX 64
#define HOST_GPUS      8 /* /dev/nvidia0..7: containers get 1, 2, 4 or all 8 of them */
#define OUT_BUF_BYTES  (1u << 20)

struct rng {
	uint64_t s;
};

/* splitmix64: tiny, fast and identical on every platform. */
static uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) / 9007199254740992.0;
}

static uint64_t rng_below(struct rng *r, uint64_t n)
{
	return n ? rng_next(r) % n : 0;
}

static bool rng_chance(struct rng *r, double p)
{
	return rng_unit(r) < p;
}

enum gpu_kind { GPU_NONE, GPU_LATER, GPU_HELD_FROM_START };

struct container {
	char id[65];
	char cgroup[256];
	char label[64];        /* "" = none */
	const char *framework; /* main framework of its workload, NULL = none */
	bool gpu;
	uint8_t gpu_first, gpu_count; /* the GPUs its processes hold */
	uint64_t memory_bytes;
	double cpu_cores; /* mean of this poll */
	uint32_t oom_kills;
};

struct syscall_mix {
	uint8_t name;     /* index into syscall_names */
	double base_rate; /* calls per second */
};

struct proc {
	uint32_t tgid;
	int container; /* -1: host process */
	const char *comm, *exe, *cwd, *framework;
	char host_cgroup[96];
	bool idle;       /* written once every IDLE_EVERY polls */
	bool bad_exe;    /* exe not valid UTF-8: exe_b64 follows */
	bool shortlived; /* replaced now and then by a new tgid */
	enum gpu_kind gpu;
	uint8_t gpu_first, gpu_count; /* "gpus" */
	int gpu_start_poll; /* first GPU ioctl (GPU_LATER) */
	uint64_t since_last_ioctl_ms;
	uint64_t rss_bytes;
	uint32_t threads;
	double cpu_mean;          /* cores when active */
	double io_mean, net_mean; /* bytes per second when active */
	unsigned nsyscalls;
	struct syscall_mix syscalls[SYSCALLS_MAX];
};

static const char *const syscall_names[] = {
	"futex",
	"read",
	"write",
	"epoll_wait",
	"ioctl",
	"mmap",
	"munmap",
	"openat",
	"close",
	"recvmsg",
	"sendmsg",
	"poll",
	"clock_nanosleep",
	"getpid",
	"sched_yield",
	"brk",
	"fstat",
	"lseek",
	"pread64",
	"pwrite64",
	"madvise",
	"rt_sigprocmask",
	"nanosleep",
	"accept4",
	"recvfrom",
	"sendto",
	"select",
	"statx",
	"getdents64",
	"mprotect",
	"epoll_ctl",
	"newfstatat",
	"clone3",
	"wait4",
	"rt_sigaction",
};
#define NSYSCALL_NAMES (sizeof(syscall_names) / sizeof(syscall_names[0]))

/* The built-in catalog's names, in catalog order. */
static const char *const frameworks[] = {
	"sglang",
	"vllm",
	"ollama",
	"ray",
	"spark",
	"transformers",
	"pytorch",
	"tensorflow",
	"jax",
	"onnxruntime",
	"xgboost",
	"scikit-learn",
	"pandas",
};
#define NFRAMEWORKS (sizeof(frameworks) / sizeof(frameworks[0]))
/* Relative frequency of each framework among containers. */
static const unsigned framework_weight[NFRAMEWORKS] = {
	2,
	4,
	2,
	3,
	1,
	5,
	8,
	2,
	2,
	1,
	1,
	1,
	1,
};

struct host_template {
	const char *comm, *exe, *cgroup;
	bool idle;
};

static const struct host_template host_templates[] = {
	{ "systemd", "/usr/lib/systemd/systemd", "/init.scope", true },
	{ "systemd-journal", "/usr/lib/systemd/systemd-journald",
		"/system.slice/systemd-journald.service", false },
	{ "systemd-udevd", "/usr/lib/systemd/systemd-udevd", "/system.slice/systemd-udevd.service",
		true },
	{ "systemd-logind", "/usr/lib/systemd/systemd-logind",
		"/system.slice/systemd-logind.service", true },
	{ "sshd", "/usr/sbin/sshd", "/system.slice/ssh.service", true },
	{ "cron", "/usr/sbin/cron", "/system.slice/cron.service", true },
	{ "rsyslogd", "/usr/sbin/rsyslogd", "/system.slice/rsyslog.service", true },
	{ "dbus-daemon", "/usr/bin/dbus-daemon", "/system.slice/dbus.service", true },
	{ "containerd", "/usr/bin/containerd", "/system.slice/containerd.service", false },
	{ "dockerd", "/usr/bin/dockerd", "/system.slice/docker.service", false },
	{ "kubelet", "/usr/bin/kubelet", "/system.slice/kubelet.service", false },
	{ "containerd-shim", "/usr/bin/containerd-shim-runc-v2", "/system.slice/containerd.service",
		true },
	{ "node_exporter", "/usr/local/bin/node_exporter", "/system.slice/node_exporter.service",
		false },
	{ "nvidia-persiste", "/usr/bin/nvidia-persistenced",
		"/system.slice/nvidia-persistenced.service", true },
	{ "bash", "/usr/bin/bash", "/user.slice/user-1000.slice/session-4.scope", true },
	{ "tmux: server", "/usr/bin/tmux",
		"/user.slice/user-1000.slice/user@1000.service/app.slice/tmux.scope", true },
	{ "python3", "/usr/bin/python3.11", "/user.slice/user-1001.slice/session-9.scope", false },
	{ "agetty", "/usr/sbin/agetty", "/system.slice/system-getty.slice/getty@tty1.service",
		true },
	{ "chronyd", "/usr/sbin/chronyd", "/system.slice/chrony.service", true },
	{ "croft-sampler", "/usr/libexec/croft/croft-sampler",
		"/system.slice/croft-sampler.service", false },
};
#define NHOST_TEMPLATES (sizeof(host_templates) / sizeof(host_templates[0]))

static const char *const container_cwds[] = {
	"/workspace",
	"/app",
	"/opt/train",
	"/home/jovyan/work",
	"/srv/model",
	"/",
};

static const char *const helper_comms[][2] = {
	{ "tini", "/usr/bin/tini" },
	{ "bash", "/bin/bash" },
	{ "sh", "/bin/sh" },
	{ "pt_data_worker", "/usr/local/bin/python3.12" },
	{ "tensorboard", "/usr/local/bin/python3.12" },
	{ "sleep", "/usr/bin/sleep" },
};
#define NHELPERS (sizeof(helper_comms) / sizeof(helper_comms[0]))

struct rate_entry {
	unsigned name;
	double rate;
};

/* The row being written, as row_write() asks for its fields. */
struct gen_row {
	struct proc *p;
	const struct container *c; /* NULL: a host process */
	int poll;
	bool idle_now;
	double elapsed_s;
	uint64_t unix_ms;
	bool gpu;          /* in a GPU state this poll */
	uint64_t ioctls;   /* this poll */
	uint64_t gpu_bits; /* "gpus": HOST_GPUS fit one word */
	unsigned nrates;
	struct rate_entry rates[SYSCALLS_MAX];
};

struct gen {
	struct rng rng;
	uint32_t next_tgid;
	size_t ncontainers, nprocs;
	struct container containers[CONTAINERS_MAX];
	struct proc *procs;
	char *out;
	size_t out_len;
	uint64_t bytes_written;
	struct gen_row row;
};

static void out_flush(struct gen *g)
{
	if (g->out_len && fwrite(g->out, 1, g->out_len, stdout) != g->out_len) {
		perror("croft-gen-rows: stdout");
		exit(1);
	}
	g->bytes_written += g->out_len;
	g->out_len = 0;
}

static void out_mem(struct gen *g, const char *s, size_t len)
{
	if (g->out_len + len > OUT_BUF_BYTES)
		out_flush(g);
	memcpy(g->out + g->out_len, s, len);
	g->out_len += len;
}

static void out_str(struct gen *g, const char *s)
{
	out_mem(g, s, strlen(s));
}

static void out_u64(struct gen *g, uint64_t v)
{
	char buf[24];
	size_t i = sizeof(buf);

	do {
		buf[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	out_mem(g, buf + i, sizeof(buf) - i);
}

/* The row format's floats: at most 4 decimals, zeros trimmed, always a '.'. */
static void out_f4(struct gen *g, double v)
{
	uint64_t scaled = (uint64_t)llround((v < 0 ? 0 : v) * 10000.0);
	unsigned rest = (unsigned)(scaled % 10000);
	char frac[4] = { (char)('0' + rest / 1000), (char)('0' + rest / 100 % 10),
		(char)('0' + rest / 10 % 10), (char)('0' + rest % 10) };
	int n = 4;

	out_u64(g, scaled / 10000);
	while (n > 1 && frac[n - 1] == '0')
		n--;
	out_mem(g, ".", 1);
	out_mem(g, frac, (size_t)n);
}

static const char *pick_framework(struct rng *r)
{
	unsigned total = 0, pick;

	for (size_t i = 0; i < NFRAMEWORKS; i++)
		total += framework_weight[i];
	pick = (unsigned)rng_below(r, total);
	for (size_t i = 0; i < NFRAMEWORKS; i++) {
		if (pick < framework_weight[i])
			return frameworks[i];
		pick -= framework_weight[i];
	}
	return frameworks[0];
}

static void make_container(struct gen *g, struct container *c, size_t index)
{
	static const char hex[] = "0123456789abcdef";

	for (int i = 0; i < 64; i++)
		c->id[i] = hex[rng_below(&g->rng, 16)];
	c->id[64] = '\0';
	if (rng_chance(&g->rng, 0.5))
		snprintf(c->cgroup, sizeof(c->cgroup), "/system.slice/docker-%s.scope", c->id);
	else
		snprintf(c->cgroup, sizeof(c->cgroup),
			"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod%08" PRIx64
			"_%04x_%04x.slice/cri-containerd-%s.scope",
			rng_next(&g->rng) & 0xffffffffu, (unsigned)rng_below(&g->rng, 65536),
			(unsigned)rng_below(&g->rng, 65536), c->id);
	c->label[0] = '\0';
	if (rng_chance(&g->rng, 0.25))
		snprintf(c->label, sizeof(c->label), "exp-%zu/lr=%de-4/seed=%u", index + 100,
			(int)rng_below(&g->rng, 9) + 1, (unsigned)rng_below(&g->rng, 5));
	c->framework = rng_chance(&g->rng, 0.85) ? pick_framework(&g->rng) : NULL;
	c->gpu = c->framework && strcmp(c->framework, "pandas") && strcmp(c->framework, "spark") &&
		 rng_chance(&g->rng, 0.8);
	if (c->gpu) {
		static const uint8_t counts[] = { 1, 1, 2, 4, HOST_GPUS };

		c->gpu_count = counts[rng_below(&g->rng, sizeof(counts))];
		c->gpu_first =
			(uint8_t)(rng_below(&g->rng, HOST_GPUS / c->gpu_count) * c->gpu_count);
	}
	c->memory_bytes = (1 + rng_below(&g->rng, 64)) << 28;
	c->oom_kills = rng_chance(&g->rng, 0.05) ? 1 : 0;
}

static void make_syscalls(struct gen *g, struct proc *p, unsigned n, double scale)
{
	p->nsyscalls = n;
	for (unsigned i = 0; i < n; i++) {
		p->syscalls[i].name = (uint8_t)rng_below(&g->rng, NSYSCALL_NAMES);
		for (unsigned j = 0; j < i; j++)
			if (p->syscalls[j].name == p->syscalls[i].name)
				p->syscalls[i].name =
					(uint8_t)((p->syscalls[i].name + 1 + j) % NSYSCALL_NAMES);
		p->syscalls[i].base_rate = scale * pow(10.0, 3.0 * rng_unit(&g->rng)) / (i + 1);
	}
}

static void make_gpu(struct gen *g, struct proc *p, int polls)
{
	p->gpu = GPU_NONE;
	if (rng_chance(&g->rng, 0.4)) {
		p->gpu = GPU_HELD_FROM_START;
		p->since_last_ioctl_ms = rng_below(&g->rng, 40000000);
	} else {
		p->gpu = GPU_LATER;
		p->gpu_start_poll = (int)rng_below(&g->rng, (uint64_t)polls + 30);
		p->since_last_ioctl_ms = 0;
	}
}

static void make_container_proc(struct gen *g, struct proc *p, int polls)
{
	struct container *c;
	bool main_proc;

	p->container = (int)rng_below(&g->rng, g->ncontainers);
	c = &g->containers[p->container];
	main_proc = rng_chance(&g->rng, 0.45);
	p->cwd = container_cwds[rng_below(
		&g->rng, sizeof(container_cwds) / sizeof(container_cwds[0]))];
	if (main_proc) {
		p->comm = c->framework && !strcmp(c->framework, "ollama") ? "ollama" : "python";
		p->exe = !strcmp(p->comm, "ollama") ? "/usr/bin/ollama"
						    : "/usr/local/bin/python3.12";
		p->framework = c->framework;
		p->idle = rng_chance(&g->rng, 0.15);
		p->rss_bytes = (256 + rng_below(&g->rng, 8192)) << 20;
		p->threads = 8 + (uint32_t)rng_below(&g->rng, 120);
		p->cpu_mean = 0.2 + 6.0 * rng_unit(&g->rng);
		make_syscalls(g, p, 6 + (unsigned)rng_below(&g->rng, SYSCALLS_MAX - 5), 1.0);
		if (c->gpu) {
			make_gpu(g, p, polls);
			p->gpu_first = c->gpu_first;
			p->gpu_count = c->gpu_count;
		}
	} else {
		size_t h = rng_below(&g->rng, NHELPERS);

		p->comm = helper_comms[h][0];
		p->exe = helper_comms[h][1];
		p->framework = h == 3 ? c->framework : NULL;
		p->idle = h != 3 && rng_chance(&g->rng, 0.7);
		p->shortlived = h == 5;
		p->rss_bytes = (1 + rng_below(&g->rng, 600)) << 20;
		p->threads = 1 + (uint32_t)rng_below(&g->rng, 8);
		p->cpu_mean = 0.01 + 0.8 * rng_unit(&g->rng);
		make_syscalls(g, p, 1 + (unsigned)rng_below(&g->rng, 8), 0.3);
	}
}

static void make_host_proc(struct gen *g, struct proc *p)
{
	const struct host_template *t = &host_templates[rng_below(&g->rng, NHOST_TEMPLATES)];

	p->container = -1;
	p->comm = t->comm;
	p->exe = t->exe;
	p->cwd = rng_chance(&g->rng, 0.8) ? "/" : "/home/alice/proj-llm";
	snprintf(p->host_cgroup, sizeof(p->host_cgroup), "%s", t->cgroup);
	p->idle = t->idle || rng_chance(&g->rng, 0.3);
	p->shortlived = !strcmp(t->comm, "bash") || !strcmp(t->comm, "python3");
	p->rss_bytes = (4 + rng_below(&g->rng, 200)) << 20;
	p->threads = 1 + (uint32_t)rng_below(&g->rng, 30);
	p->cpu_mean = 0.005 + 0.3 * rng_unit(&g->rng);
	p->bad_exe = rng_chance(&g->rng, 0.005);
	make_syscalls(g, p, 1 + (unsigned)rng_below(&g->rng, 10), 0.2);
	if (!strcmp(t->comm, "nvidia-persiste")) {
		p->gpu = GPU_HELD_FROM_START;
		p->gpu_count = HOST_GPUS; /* the daemon holds every GPU open */
		p->since_last_ioctl_ms = rng_below(&g->rng, 90000000);
	}
}

static void make_proc(struct gen *g, struct proc *p, int polls)
{
	memset(p, 0, sizeof(*p));
	p->tgid = g->next_tgid;
	g->next_tgid += 1 + (uint32_t)rng_below(&g->rng, 40);
	p->io_mean = rng_chance(&g->rng, 0.3) ? 65536.0 * rng_unit(&g->rng) * 16 : 0.0;
	p->net_mean = rng_chance(&g->rng, 0.4) ? 4096.0 * rng_unit(&g->rng) * 8 : 0.0;
	if (rng_chance(&g->rng, 0.65))
		make_container_proc(g, p, polls);
	else
		make_host_proc(g, p);
}

/* A count over the process's own elapsed time (2 s give or take a little). */
static double rate(struct rng *r, double mean, double elapsed_s)
{
	double count = floor(mean * 2.0 * (0.3 + 1.4 * rng_unit(r)));

	return count / elapsed_s;
}

static void sink_put(void *arg, const char *s, size_t n)
{
	out_mem(arg, s, n);
}

static void sink_int(void *arg, uint64_t v)
{
	out_u64(arg, v);
}

static void sink_float(void *arg, double v)
{
	out_f4(arg, v);
}

/* The generator's strings are plain ASCII, but for the one exe that stands
 * for bytes that are not UTF-8: written as the sampler writes it. */
static void sink_string(void *arg, enum row_field f, const char *s, size_t len)
{
	struct gen *g = arg;

	out_mem(g, "\"", 1);
	if (f == RF_EXE && g->row.p->bad_exe) {
		out_str(g, "/tmp/build\\ufffd/a.out\",\"");
		out_str(g, row_fields[f].name);
		out_str(g, "_b64\":\"L3RtcC9idWlsZP8vYS5vdXQ=");
	} else {
		out_mem(g, s, len);
	}
	out_mem(g, "\"", 1);
}

static bool str_value(struct row_value *v, const char *s)
{
	v->str = s;
	v->str_len = s ? strlen(s) : 0;
	return s != NULL;
}

/* The workload state and this poll's GPU ioctls. */
static const char *gen_workload(struct gen *g, struct gen_row *r)
{
	struct proc *p = r->p;
	bool onset;

	r->gpu = !(p->gpu == GPU_NONE || (p->gpu == GPU_LATER && r->poll < p->gpu_start_poll));
	if (!r->gpu)
		return workload_name(WL_NO_GPU);
	onset = p->gpu == GPU_LATER && r->poll < p->gpu_start_poll + ONSET_POLLS;
	r->ioctls = 0;
	if (!r->idle_now)
		r->ioctls = onset ? 200 + rng_below(&g->rng, 4000) : rng_below(&g->rng, 60000);
	if (p->gpu == GPU_LATER && r->poll == p->gpu_start_poll && !r->ioctls)
		r->ioctls = 1 + rng_below(&g->rng, 50);
	if (r->ioctls)
		p->since_last_ioctl_ms = rng_below(&g->rng, POLL_MS);
	else
		p->since_last_ioctl_ms += POLL_MS;
	r->gpu_bits = ((1ull << p->gpu_count) - 1) << p->gpu_first;
	return workload_name(onset ? WL_GPU_ONSET : WL_GPU_HELD);
}

static int cmp_rate_desc(const void *a, const void *b)
{
	const struct rate_entry *x = a, *y = b;

	return x->rate < y->rate ? 1 : x->rate > y->rate ? -1 : (int)x->name - (int)y->name;
}

/* This poll's syscall rates, highest first; those at zero left out. */
static unsigned gen_syscalls(struct gen *g, struct gen_row *r)
{
	const struct proc *p = r->p;

	r->nrates = 0;
	for (unsigned i = 0; i < p->nsyscalls; i++) {
		double mean = p->syscalls[i].base_rate * (r->idle_now ? 0.01 : 1.0);
		double rt = rate(&g->rng, mean, r->elapsed_s);

		if (rt > 0) {
			r->rates[r->nrates].name = p->syscalls[i].name;
			r->rates[r->nrates++].rate = rt;
		}
	}
	qsort(r->rates, r->nrates, sizeof(r->rates[0]), cmp_rate_desc);
	return r->nrates;
}

/* A walk of -128 KiB..+124 KiB that never takes RSS below 1 MiB (an
 * unsigned wrap made rows no JSON reader accepts). */
static void gen_rss(struct gen *g, struct gen_row *r)
{
	struct proc *p = r->p;
	uint64_t next;

	if (r->idle_now || !rng_chance(&g->rng, 0.3))
		return;
	next = p->rss_bytes + rng_below(&g->rng, 64) * 4096 - 32 * 4096;
	if (next >= (1u << 20) && next < p->rss_bytes + (1u << 20))
		p->rss_bytes = next;
}

static bool top_value(struct gen *g, struct gen_row *r, enum row_field f, struct row_value *v)
{
	switch (f) {
	case RF_UNIX_MS:
		v->u = r->unix_ms;
		return true;
	case RF_TGID:
		v->u = r->p->tgid;
		return true;
	case RF_WORKLOAD:
		return str_value(v, gen_workload(g, r));
	case RF_IOCTL_COUNT:
		v->u = r->ioctls;
		return r->gpu;
	case RF_SINCE_LAST_GPU_IOCTL_MS:
		v->u = r->p->since_last_ioctl_ms;
		return r->gpu;
	case RF_GPUS:
		v->bits = &r->gpu_bits;
		v->bits_count = 64;
		return r->gpu;
	case RF_USAGE:
		gen_rss(g, r);
		return true;
	case RF_SYSCALLS:
		v->u = gen_syscalls(g, r);
		return true;
	case RF_LABEL:
		return r->c && r->c->label[0] && str_value(v, r->c->label);
	case RF_PROCESS:
	case RF_CGROUP_USAGE:
		return true;
	default:
		return false;
	}
}

static bool process_value(const struct gen_row *r, enum row_field f, struct row_value *v)
{
	const struct proc *p = r->p;

	switch (f) {
	case RF_COMM:
		return str_value(v, p->comm);
	case RF_EXE:
		return str_value(v, p->exe);
	case RF_CGROUP:
		return str_value(v, r->c ? r->c->cgroup : p->host_cgroup);
	case RF_CONTAINER_ID:
		return str_value(v, r->c ? r->c->id : NULL);
	case RF_CWD:
		return str_value(v, p->cwd);
	case RF_FRAMEWORK:
		return str_value(v, p->framework);
	default:
		return false;
	}
}

/* A rate drawn over the row's time; idle processes at a fraction of it. */
static double usage_rate(struct gen *g, const struct gen_row *r, enum row_field f)
{
	const struct proc *p = r->p;
	struct rng *rg = &g->rng;
	bool idle = r->idle_now;
	double el = r->elapsed_s;

	switch (f) {
	case RF_CPU_CORES:
		return idle ? 0.0 : rate(rg, p->cpu_mean * 50, el) / 100.0;
	case RF_CTX_VOLUNTARY_S:
		return idle ? rate(rg, 0.5, el) : rate(rg, 40 * p->threads, el);
	case RF_CTX_INVOLUNTARY_S:
		return idle ? 0.0 : rate(rg, 2 * p->cpu_mean, el);
	case RF_READ_BYTES_S:
		return idle || !p->io_mean ? 0.0 : 4096 * rate(rg, p->io_mean / 4096, el);
	case RF_WRITE_BYTES_S:
		return idle || !p->io_mean ? 0.0 : 4096 * rate(rg, p->io_mean / 8192, el);
	case RF_NETWORK_RX_BYTES_S:
		return p->net_mean ? rate(rg, p->net_mean * (idle ? 0.02 : 1), el) : 0.0;
	case RF_NETWORK_TX_BYTES_S:
		return p->net_mean ? rate(rg, p->net_mean * (idle ? 0.01 : 0.5), el) : 0.0;
	case RF_RUNQUEUE_S:
		return idle ? 0.0 : p->cpu_mean * 0.01 * rng_unit(rg);
	default: /* a figure not made up here: left out */
		return NAN;
	}
}

static bool usage_value(
	struct gen *g, const struct gen_row *r, enum row_field f, struct row_value *v)
{
	if (f == RF_RSS_BYTES || f == RF_THREADS) {
		v->u = f == RF_RSS_BYTES ? r->p->rss_bytes : r->p->threads;
		return true;
	}
	v->f = usage_rate(g, r, f);
	return !isnan(v->f);
}

static bool cgroup_value(const struct gen_row *r, enum row_field f, struct row_value *v)
{
	const struct container *c = r->c;
	double cpu = c ? c->cpu_cores : r->p->cpu_mean * 0.3;

	switch (f) {
	case RF_CG_CPU_CORES:
		v->f = cpu;
		break;
	case RF_CG_CPU_THROTTLED_FRACTION:
		v->f = c && cpu > 4.0 ? 0.125 : 0.0;
		break;
	case RF_CG_MEMORY_BYTES:
		v->u = c ? c->memory_bytes : r->p->rss_bytes + (1u << 20);
		break;
	case RF_CG_OOM_KILLS:
		v->u = c ? c->oom_kills : 0;
		break;
	case RF_CG_CPU_PRESSURE_AVG10:
		v->f = c && cpu > 4.0 ? 1.37 : 0.0;
		break;
	case RF_CG_MEMORY_PRESSURE_AVG10:
		v->f = 0.0;
		break;
	case RF_CG_IO_PRESSURE_AVG10:
		v->f = c && c->oom_kills ? 0.21 : 0.0;
		break;
	default:
		return false;
	}
	return true;
}

static bool gen_get(void *arg, enum row_field f, size_t index, struct row_value *v)
{
	struct gen *g = arg;
	struct gen_row *r = &g->row;

	switch (row_fields[f].object) {
	case RF_PROCESS:
		return process_value(r, f, v);
	case RF_USAGE:
		return usage_value(g, r, f, v);
	case RF_CGROUP_USAGE:
		return cgroup_value(r, f, v);
	case RF_SYSCALLS:
		if (f == RF_SYSCALL_NAME)
			return str_value(v, syscall_names[r->rates[index].name]);
		v->f = r->rates[index].rate;
		return true;
	default:
		return top_value(g, r, f, v);
	}
}

static void emit_row(struct gen *g, struct proc *p, int poll, uint64_t unix_ms)
{
	const struct row_sink sink = { g, sink_put, sink_int, sink_float, sink_string, gen_get };
	struct gen_row *r = &g->row;

	r->p = p;
	r->c = p->container >= 0 ? &g->containers[p->container] : NULL;
	r->poll = poll;
	r->idle_now = p->idle;
	r->elapsed_s = 2.0 + (double)(int)(rng_below(&g->rng, 9) - 4) / 1000.0;
	r->unix_ms = unix_ms;
	row_write(&sink);
}

static void poll_containers(struct gen *g)
{
	for (size_t i = 0; i < g->ncontainers; i++) {
		struct container *c = &g->containers[i];

		c->cpu_cores = floor((c->gpu ? 3.0 : 0.4) * 1e6 * rng_unit(&g->rng)) / 1e6 * 2;
		if (rng_chance(&g->rng, 0.2))
			c->memory_bytes += rng_below(&g->rng, 1u << 20) * 4096 / 256;
	}
}

/* One poll; returns false once the byte budget is spent. */
static bool emit_poll(struct gen *g, int poll, uint64_t unix_ms, int polls, uint64_t max_bytes)
{
	poll_containers(g);
	for (size_t i = 0; i < g->nprocs; i++) {
		struct proc *p = &g->procs[i];

		if (p->shortlived && rng_chance(&g->rng, 0.02))
			make_proc(g, p, polls);
		if (p->idle && (poll + (int)(p->tgid % IDLE_EVERY)) % IDLE_EVERY != 0)
			continue;
		emit_row(g, p, poll, unix_ms);
		if (max_bytes && g->bytes_written + g->out_len >= max_bytes)
			return false;
	}
	return true;
}

static int parse_size(const char *text, uint64_t *ret)
{
	static const struct {
		const char *suffix;
		uint64_t mult;
	} units[] = {
		{ "", 1 },
		{ "k", 1000 },
		{ "kB", 1000 },
		{ "KiB", 1024 },
		{ "M", 1000000 },
		{ "MB", 1000000 },
		{ "MiB", 1u << 20 },
		{ "G", 1000000000 },
		{ "GB", 1000000000 },
		{ "GiB", 1u << 30 },
	};
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(text, &end, 10);
	if (errno || end == text)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].suffix)) {
			*ret = v * units[i].mult;
			return 0;
		}
	return -EINVAL;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: croft-gen-rows [--processes N] [--polls N | --bytes SIZE] [--seed S]\n"
		   "                      [--start-ms T]\n"
		   "Writes deterministic, realistic croft-dataset rows to stdout: one line per\n"
		   "process per 2 s poll (idle processes every 15th poll).  Defaults: 300\n"
		   "processes, 15 polls, seed 1, start 1792504800000 (2026-10-20T14:00:00Z).\n"
		   "--bytes stops after the line that reaches SIZE (k, M, G, KiB, MiB, GiB).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "processes", required_argument, NULL, 'p' },
		{ "polls", required_argument, NULL, 'n' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, 's' },
		{ "start-ms", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct gen g = { .next_tgid = 1000 };
	uint64_t seed = 1, start_ms = 1792504800000ull, max_bytes = 0;
	long processes = 300, polls = 15;
	bool polls_given = false;
	int horizon;
	int c;

	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			processes = strtol(optarg, NULL, 10);
			break;
		case 'n':
			polls = strtol(optarg, NULL, 10);
			polls_given = true;
			break;
		case 'b':
			if (parse_size(optarg, &max_bytes) < 0 || !max_bytes) {
				fprintf(stderr, "croft-gen-rows: bad size '%s'\n", optarg);
				return 2;
			}
			break;
		case 's':
			seed = strtoull(optarg, NULL, 0);
			break;
		case 't':
			start_ms = strtoull(optarg, NULL, 10);
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc || processes < 1 || processes > 1000000 || polls < 1 ||
		(polls_given && max_bytes)) {
		usage(stderr);
		return 2;
	}
	/* GPU onsets spread over the run, or over an hour when sized in bytes. */
	horizon = max_bytes || polls > 1800 ? 1800 : (int)polls;
	if (max_bytes)
		polls = 1L << 30;
	g.rng.s = seed;
	g.nprocs = (size_t)processes;
	g.ncontainers = (size_t)(processes / 8 < 2                ? 2
				 : processes / 8 > CONTAINERS_MAX ? CONTAINERS_MAX
								  : processes / 8);
	g.procs = calloc(g.nprocs, sizeof(*g.procs));
	g.out = malloc(OUT_BUF_BYTES);
	if (!g.procs || !g.out) {
		perror("croft-gen-rows");
		return 1;
	}
	for (size_t i = 0; i < g.ncontainers; i++)
		make_container(&g, &g.containers[i], i);
	for (size_t i = 0; i < g.nprocs; i++)
		make_proc(&g, &g.procs[i], horizon);
	for (long poll = 0; poll < polls; poll++)
		if (!emit_poll(
			    &g, (int)poll, start_ms + (uint64_t)poll * POLL_MS, horizon, max_bytes))
			break;
	out_flush(&g);
	if (fflush(stdout) != 0) {
		perror("croft-gen-rows: stdout");
		return 1;
	}
	free(g.procs);
	free(g.out);
	return 0;
}
