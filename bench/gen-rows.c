/*
 * gen-rows.c: croft-gen-rows, a deterministic generator of realistic
 * croft-dataset rows (croft-dataset(5)) for benchmarks and tests: a GPU
 * host with a few hundred processes, containers, frameworks, GPU states,
 * syscall mixes, labels and idle processes: the host made up and polled
 * here, each row written by gen-row.c (the lower floor).  Unprivileged; writes stdout.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen-rows.h"
#include "usage.h"

#define PROGRAM       "croft-gen-rows"
#define PROCESSES_MAX 1000000
#define POLLS_MAX     (1 << 30)

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

static const char hex_digits[] = "0123456789abcdef";

/* A new pod: its UID (8-4-4-4-12 hex digits) and QoS class. */
static void make_pod(struct gen *g, struct container *c)
{
	static const char *const qos[] = { "guaranteed", "burstable", "burstable", "besteffort" };

	for (int i = 0; i < POD_UID_BYTES - 1; i++)
		c->pod_uid[i] = i == 8 || i == 13 || i == 18 || i == 23
					? '-'
					: hex_digits[rng_below(&g->id_rng, 16)];
	c->pod_uid[POD_UID_BYTES - 1] = '\0';
	c->pod_qos = qos[rng_below(&g->rng, sizeof(qos) / sizeof(qos[0]))];
}

/* The kubelet's systemd-driver layout: the UID's dashes as underscores,
 * guaranteed pods right under kubepods.slice. */
static void pod_cgroup(struct container *c)
{
	char uid[POD_UID_BYTES];

	for (int i = 0; i < POD_UID_BYTES; i++)
		uid[i] = c->pod_uid[i] == '-' ? '_' : c->pod_uid[i];
	if (!strcmp(c->pod_qos, "guaranteed"))
		snprintf(c->cgroup, sizeof(c->cgroup),
			"/kubepods.slice/kubepods-pod%s.slice/cri-containerd-%s.scope", uid, c->id);
	else
		snprintf(c->cgroup, sizeof(c->cgroup),
			"/kubepods.slice/kubepods-%s.slice/kubepods-%s-pod%s.slice/"
			"cri-containerd-%s.scope",
			c->pod_qos, c->pod_qos, uid, c->id);
}

/* What the kubelet allocated: the GPUs held, now and then one more never
 * opened; now and then one to a pod that opens none.  One GPU's pods may
 * be on a MIG instance of it. */
static void pod_gpus(struct gen *g, struct container *c)
{
	if (c->gpu) {
		c->gpus_allocated = ((1ull << c->gpu_count) - 1) << c->gpu_first;
		if (c->gpu_count < HOST_GPUS && rng_chance(&g->rng, 0.2))
			c->gpus_allocated |= 1ull << (c->gpu_first + c->gpu_count) % HOST_GPUS;
		if (c->gpu_count == 1 && rng_chance(&g->rng, 0.2))
			snprintf(c->mig, sizeof(c->mig), "%u/%u/0", c->gpu_first,
				1 + (unsigned)rng_below(&g->rng, 7));
	} else if (rng_chance(&g->rng, 0.15)) {
		c->gpus_allocated = 1ull << rng_below(&g->rng, HOST_GPUS);
	}
}

static void make_container(struct gen *g, struct container *c, size_t index)
{
	for (int i = 0; i < 64; i++)
		c->id[i] = hex_digits[rng_below(&g->id_rng, 16)];
	c->id[64] = '\0';
	if (rng_chance(&g->rng, 0.5)) {
		snprintf(c->cgroup, sizeof(c->cgroup), "/system.slice/docker-%s.scope", c->id);
	} else {
		/* a pod's second container now and then */
		if (index > 0 && c[-1].pod_uid[0] && rng_chance(&g->rng, 0.3)) {
			memcpy(c->pod_uid, c[-1].pod_uid, sizeof(c->pod_uid));
			c->pod_qos = c[-1].pod_qos;
		} else {
			make_pod(g, c);
		}
		pod_cgroup(c);
	}
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
	if (c->pod_uid[0])
		pod_gpus(g, c);
	c->memory_bytes = (1 + rng_below(&g->rng, 64)) << 28;
	c->oom_kills = rng_chance(&g->rng, 0.05) ? 1 : 0;
}

static void make_syscalls(struct gen *g, struct proc *p, unsigned n, double scale)
{
	p->nsyscalls = n;
	for (unsigned i = 0; i < n; i++) {
		p->syscalls[i].name = (uint8_t)rng_below(&g->rng, syscall_names_count);
		for (unsigned j = 0; j < i; j++)
			if (p->syscalls[j].name == p->syscalls[i].name)
				p->syscalls[i].name = (uint8_t)((p->syscalls[i].name + 1 + j) %
								syscall_names_count);
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
	if (rng_chance(&g->rng, 0.005)) /* bytes that are not UTF-8: an exe_b64 follows */
		p->exe = "/tmp/build\xff/a.out";
	make_syscalls(g, p, 1 + (unsigned)rng_below(&g->rng, 10), 0.2);
	if (!strcmp(t->comm, "nvidia-persiste")) {
		p->gpu = GPU_HELD_FROM_START;
		p->gpu_count = HOST_GPUS; /* the daemon holds every GPU open */
		p->since_last_ioctl_ms = rng_below(&g->rng, 90000000);
	}
}

static void make_proc(struct gen *g, struct proc *p, int polls, uint64_t start_ms)
{
	memset(p, 0, sizeof(*p));
	p->start_ms = start_ms;
	p->tgid = g->next_tgid;
	g->next_tgid += 1 + (uint32_t)rng_below(&g->rng, 40);
	p->io_mean = rng_chance(&g->rng, 0.3) ? 65536.0 * rng_unit(&g->rng) * 16 : 0.0;
	p->net_mean = rng_chance(&g->rng, 0.4) ? 4096.0 * rng_unit(&g->rng) * 8 : 0.0;
	if (rng_chance(&g->rng, 0.65))
		make_container_proc(g, p, polls);
	else
		make_host_proc(g, p);
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

		if (p->shortlived && rng_chance(&g->rng, 0.02)) {
			uint32_t old_tgid = p->tgid;
			bool reused = rng_chance(&g->rng, 0.1);

			if (p->last_row_ms) /* its last row, to its exit mid-poll */
				emit_exit_row(g, p, poll, unix_ms);

			make_proc(g, p, polls, unix_ms - rng_below(&g->rng, POLL_MS));
			if (reused) /* pid wrap: the same tgid, another process */
				p->tgid = old_tgid;
		}
		if (p->idle && (poll + (int)(p->tgid % IDLE_EVERY)) % IDLE_EVERY != 0)
			continue;
		emit_row(g, p, poll, unix_ms);
		if (max_bytes && g->bytes_written + g->out_len >= max_bytes)
			return false;
	}
	/* now and then a short-lived process's sibling lives between two polls */
	if (g->nprocs && rng_chance(&g->transient_rng, 0.25)) {
		size_t from = rng_below(&g->transient_rng, g->nprocs);

		for (size_t k = 0; k < g->nprocs; k++)
			if (g->procs[(from + k) % g->nprocs].shortlived) {
				emit_transient_row(
					g, &g->procs[(from + k) % g->nprocs], poll, unix_ms);
				break;
			}
	}
	/* and every unread_every-th poll, one like a process of the host's that
	 * no poll read is written vanished */
	if (g->unread_every && (uint32_t)poll % g->unread_every == g->unread_every - 1)
		emit_unread_row(g, &g->procs[rng_below(&g->unread_rng, g->nprocs)], unix_ms);
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
		   "                      [--start-ms T] [--host NAME] [--vanished-unread N]\n"
		   "Writes deterministic, realistic croft-dataset rows to stdout: one line per\n"
		   "process per 2 s poll (idle processes every 15th poll).  Defaults: 300\n"
		   "processes, 15 polls, seed 1, start 1792504800000 (2026-10-20T14:00:00Z),\n"
		   "host gen-host.  The same seed on two hosts makes identical nodes: the\n"
		   "same processes and tgids, their own container ids and pod UIDs.\n"
		   "--bytes stops after the line that reaches SIZE (k, M, G, KiB, MiB, GiB).\n"
		   "--vanished-unread N: every Nth poll also writes the vanished row of a\n"
		   "process no poll read, as the sampler writes it from the probe's exit record\n"
		   "alone (no workload, span_ms 0); the other rows stay the same.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "processes", required_argument, NULL, 'p' },
		{ "polls", required_argument, NULL, 'n' },
		{ "bytes", required_argument, NULL, 'b' },
		{ "seed", required_argument, NULL, 's' },
		{ "start-ms", required_argument, NULL, 't' },
		{ "host", required_argument, NULL, 'H' },
		{ "vanished-unread", required_argument, NULL, 'u' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct gen g = { .next_tgid = 1000, .host = "gen-host" };
	uint64_t seed = 1, start_ms = 1792504800000ull, max_bytes = 0;
	long processes = 300, polls = 15;
	bool polls_given = false;
	long long number;
	int horizon;
	int c;

	opterr = 0; /* said by usage_getopt */
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (usage_number(optarg, 1, PROCESSES_MAX, &number) < 0)
				return usage_error(PROGRAM, "--processes '%.64s': expected 1..%d",
					optarg, PROCESSES_MAX);
			processes = number;
			break;
		case 'n':
			if (usage_number(optarg, 1, POLLS_MAX, &number) < 0)
				return usage_error(PROGRAM, "--polls '%.64s': expected 1..%d",
					optarg, POLLS_MAX);
			polls = number;
			polls_given = true;
			break;
		case 'b':
			if (parse_size(optarg, &max_bytes) < 0 || !max_bytes)
				return usage_error(PROGRAM,
					"--bytes '%.64s': expected a size above 0 (k, M, G, KiB, "
					"MiB, GiB)",
					optarg);
			break;
		case 's':
			if (usage_number(optarg, 0, LLONG_MAX, &number) < 0)
				return usage_error(
					PROGRAM, "--seed '%.64s': expected a number", optarg);
			seed = (uint64_t)number;
			break;
		case 't':
			if (usage_number(optarg, 0, LLONG_MAX, &number) < 0)
				return usage_error(
					PROGRAM, "--start-ms '%.64s': expected unix ms", optarg);
			start_ms = (uint64_t)number;
			break;
		case 'H': /* written as it is: plain names only */
			if (!*optarg || optarg[strspn(optarg, "abcdefghijklmnopqrstuvwxyz"
							      "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
							      "0123456789.-_")]) {
				return usage_error(PROGRAM,
					"--host '%.64s': letters, digits, '.', '-' and '_' only",
					optarg);
			}
			g.host = optarg;
			break;
		case 'u':
			if (usage_number(optarg, 1, POLLS_MAX, &number) < 0)
				return usage_error(PROGRAM,
					"--vanished-unread '%.64s': expected 1..%d", optarg,
					POLLS_MAX);
			g.unread_every = (uint32_t)number;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			return usage_getopt(PROGRAM, argv, c);
		}
	}
	if (optind != argc)
		return usage_error(PROGRAM, "unexpected argument '%s'", argv[optind]);
	if (polls_given && max_bytes)
		return usage_error(PROGRAM, "give --polls or --bytes, not both");
	/* GPU onsets spread over the run, or over an hour when sized in bytes. */
	horizon = max_bytes || polls > 1800 ? 1800 : (int)polls;
	if (max_bytes)
		polls = 1L << 30;
	g.rng.s = seed;
	g.exit_rng.s = seed ^ 0x9e3779b97f4a7c15ull;
	g.transient_rng.s = seed ^ 0xbf58476d1ce4e5b9ull;
	g.unread_rng.s = seed ^ 0x94d049bb133111ebull;
	/* identical nodes (one seed, two hosts) run the same processes, but
	 * their runtimes name containers and pods each their own way */
	g.id_rng.s = seed;
	for (const char *c = g.host; *c; c++)
		g.id_rng.s = (g.id_rng.s ^ (unsigned char)*c) * 0x100000001b3ull;
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
	for (size_t i = 0; i < g.nprocs; i++) /* started up to 3 days before */
		make_proc(&g, &g.procs[i], horizon, start_ms - rng_below(&g.rng, 3 * 86400000ull));
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
