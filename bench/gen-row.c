/*
 * gen-row.c: croft-gen-rows' output: one row of a process at a poll, its
 * fields' values drawn for row_write() (contract/rowdef.h), the syscall
 * names rows carry, and the output buffer.  Unprivileged; writes stdout.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gen-rows.h"

void out_flush(struct gen *g)
{
	if (g->out_len && fwrite(g->out, 1, g->out_len, stdout) != g->out_len) {
		perror("croft-gen-rows: stdout");
		exit(1);
	}
	g->bytes_written += g->out_len;
	g->out_len = 0;
}

const char *const syscall_names[] = {
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
const size_t syscall_names_count = sizeof(syscall_names) / sizeof(syscall_names[0]);

static void out_mem(struct gen *g, const char *s, size_t len)
{
	if (g->out_len + len > OUT_BUF_BYTES)
		out_flush(g);
	memcpy(g->out + g->out_len, s, len);
	g->out_len += len;
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

/*
 * The GPU evidence and verdict, drawn from what the row already holds (no
 * draw of their own, so the rest of a seed's rows stay what they were): an
 * idle holder is idle, by NVML where its container's GPUs have it (even
 * first GPU), else by the kernel; a busy one is busy, and one that made no
 * ioctl while not idle is unknown.
 */
static bool gpu_value(const struct gen_row *r, enum row_field f, struct row_value *v)
{
	bool nvml = r->p->gpu_first % 2 == 0;
	enum gpu_activity a = r->idle_now ? GA_IDLE : r->ioctls ? GA_BUSY : GA_UNKNOWN;

	if (!r->gpu)
		return false;
	switch (f) {
	case RF_GPU_WAIT_COUNT:
		v->u = r->ioctls / 16;
		return true;
	case RF_GPU_MMAP_COUNT:
		v->u = r->ioctls % 3;
		return true;
	case RF_GPU_BLOCKED_THREADS:
		v->u = r->idle_now ? 0 : r->ioctls % 2;
		return true;
	case RF_GPU_ACTIVITY:
		return str_value(v, gpu_activity_name(a));
	case RF_GPU_ACTIVITY_SOURCE:
		return str_value(v, gpu_activity_source_name(a == GA_UNKNOWN ? GAS_NONE
							     : nvml          ? GAS_NVML_PROCESS
									     : GAS_KERNEL));
	case RF_GPU_MEMORY_BYTES:
		v->u = (uint64_t)r->p->gpu_count << 33;
		return nvml;
	default: /* RF_GPU_SM_PERCENT */
		v->f = r->idle_now ? 0.0 : fmin(100.0, 40.0 + 60.0 * r->p->cpu_mean);
		return nvml;
	}
}

/* A last row's exit: most exit 0, some 1, a few are killed (no code then). */
static bool exit_value(const struct gen_row *r, enum row_field f, struct row_value *v)
{
	const struct proc *p = r->p;
	bool killed = p->tgid % 3 == 0;

	if (!p->exit_ms)
		return false;
	switch (f) {
	case RF_EXIT_MS:
		v->u = p->exit_ms;
		return true;
	case RF_EXIT_CODE:
		v->u = p->tgid % 5 == 0;
		return !killed;
	case RF_EXIT_SIGNAL:
		v->u = 9;
		return killed;
	default: /* RF_EXITED */
		return str_value(v, exit_kind_name(p->exit_kind ? p->exit_kind : EXIT_PROBE));
	}
}

static bool top_value(struct gen *g, struct gen_row *r, enum row_field f, struct row_value *v)
{
	switch (f) {
	case RF_UNIX_MS:
		v->u = r->unix_ms;
		return true;
	case RF_SPAN_MS:
		v->u = r->span_ms;
		return true;
	case RF_TGID:
		v->u = r->p->tgid;
		return true;
	case RF_HOST:
		return str_value(v, g->host);
	case RF_WORKLOAD:
		return str_value(v, gen_workload(g, r));
	case RF_IOCTL_COUNT:
		v->u = r->ioctls;
		return r->gpu;
	case RF_SINCE_LAST_GPU_IOCTL_MS:
		v->u = r->p->since_last_ioctl_ms;
		return r->gpu;
	case RF_GPU_WAIT_COUNT:
	case RF_GPU_MMAP_COUNT:
	case RF_GPU_BLOCKED_THREADS:
	case RF_GPU_ACTIVITY:
	case RF_GPU_ACTIVITY_SOURCE:
	case RF_GPU_MEMORY_BYTES:
	case RF_GPU_SM_PERCENT:
		return gpu_value(r, f, v);
	case RF_GPUS:
		v->bits = &r->gpu_bits;
		v->bits_count = 64;
		return r->gpu;
	case RF_GPUS_ALLOCATED: /* what the kubelet gave the pod, held or not */
		if (!r->c || !r->c->pod_uid[0])
			return false;
		v->bits = &r->c->gpus_allocated;
		v->bits_count = 64;
		return true;
	case RF_MIG:
		if (!r->gpu || !r->c || !r->c->mig[0])
			return false;
		r->mig = r->c->mig;
		v->strs = &r->mig;
		v->strs_count = 1;
		return true;
	case RF_USAGE:
		gen_rss(g, r);
		return true;
	case RF_SYSCALLS:
		v->u = gen_syscalls(g, r);
		return true;
	case RF_LABEL:
		return r->c && r->c->label[0] && str_value(v, r->c->label);
	case RF_LABEL_SOURCE: /* the pods' labels by croftctl, the others' by CROFT_LABEL */
		return r->c && r->c->label[0] &&
		       str_value(
			       v, label_source_name(r->c->pod_uid[0] ? LABEL_CROFTCTL : LABEL_ENV));
	case RF_EXIT_MS:
	case RF_EXIT_CODE:
	case RF_EXIT_SIGNAL:
	case RF_EXITED:
		return exit_value(r, f, v);
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
	case RF_START_MS:
		v->u = p->start_ms;
		return true;
	case RF_UID: /* containers' as root, the host's users' by tgid */
		v->u = r->c ? 0 : 1000 + p->tgid % 7;
		return true;
	case RF_COMM:
		return str_value(v, p->comm);
	case RF_EXE:
		return str_value(v, p->exe);
	case RF_CGROUP:
		return str_value(v, r->c ? r->c->cgroup : p->host_cgroup);
	case RF_CONTAINER_ID:
		return str_value(v, r->c ? r->c->id : NULL);
	case RF_POD_UID:
		return r->c && r->c->pod_uid[0] && str_value(v, r->c->pod_uid);
	case RF_POD_QOS:
		return r->c && r->c->pod_uid[0] && str_value(v, r->c->pod_qos);
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

static bool field_value(struct gen *g, enum row_field f, size_t index, struct row_value *v)
{
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

/* Floats as croft-gen-rows has always written them: at 1e-4, halves away
 * from zero, negatives at 0, so a seed's rows stay what they were. */
static bool gen_get(void *arg, enum row_field f, size_t index, struct row_value *v)
{
	bool has = field_value(arg, f, index, v);

	if (has && row_fields[f].type == RT_FLOAT)
		v->f = round(fmax(v->f, 0.0) * 1e4) / 1e4;
	return has;
}

void emit_row(struct gen *g, struct proc *p, int poll, uint64_t unix_ms)
{
	const struct row_sink sink = { g, sink_put, gen_get };
	struct gen_row *r = &g->row;

	r->p = p;
	r->c = p->container >= 0 ? &g->containers[p->container] : NULL;
	r->poll = poll;
	r->idle_now = p->idle;
	/* since its previous row (a first: one poll), by a boot clock a few ms
	 * off the polls' wall clock, as the sampler's is */
	r->span_ms =
		(p->last_row_ms ? (p->exit_ms ? p->exit_ms : unix_ms) - p->last_row_ms : POLL_MS) -
		4 + rng_below(&g->rng, 9);
	r->elapsed_s = (double)r->span_ms / 1000.0;
	r->unix_ms = unix_ms;
	p->last_row_ms = unix_ms;
	row_write(&sink);
}

/* Drawn from exit_rng, so that the rows of a seed without them stay as they were. */
void emit_exit_row(struct gen *g, struct proc *p, int poll, uint64_t unix_ms)
{
	struct rng rows_rng = g->rng;

	g->rng = g->exit_rng;
	p->exit_ms = unix_ms - 1 - p->tgid % (POLL_MS / 2); /* after its previous poll */
	emit_row(g, p, poll, unix_ms);
	p->exit_ms = 0;
	g->exit_rng = g->rng;
	g->rng = rows_rng;
}

#define TRANSIENT_TGID_FIRST 3000000u /* above the live processes' tgids */

/*
 * A process born and gone between two polls (exited between_polls): one
 * row, its span its life, in like's place (host or container, comm, exe),
 * never on a GPU.  Drawn from transient_rng, its tgid from a range of its own:
 * the rest of a seed's rows stay what they were.
 */
void emit_transient_row(struct gen *g, const struct proc *like, int poll, uint64_t unix_ms)
{
	struct rng rows_rng = g->rng;
	struct proc p = *like;

	g->rng = g->transient_rng;
	p.tgid = TRANSIENT_TGID_FIRST + g->transients++;
	p.start_ms = unix_ms - POLL_MS + 10 + rng_below(&g->rng, POLL_MS / 2);
	p.exit_ms = p.start_ms + 60 + rng_below(&g->rng, POLL_MS / 4);
	p.exit_kind = EXIT_BETWEEN_POLLS;
	p.last_row_ms = p.start_ms; /* its row covers its whole life */
	p.idle = false;
	p.gpu = GPU_NONE;
	emit_row(g, &p, poll, unix_ms);
	g->transient_rng = g->rng;
	g->rng = rows_rng;
}

#define UNREAD_TGID_FIRST 3500000u /* above the transients' */
#define UNREAD_WAIT_MS    10000    /* the sampler waits this long for a final (EXIT_WAIT_MS) */

/*
 * What the sampler writes of a process no poll read, from the probe's exit
 * record alone when its final never came (sampler/core/exits.c, row.c): its
 * comm and start, no workload (its GPU evidence went with the final), no
 * span, zero usage, exited vanished.
 */
static bool unread_get(void *arg, enum row_field f, size_t index, struct row_value *v)
{
	struct gen *g = arg;
	struct gen_row *r = &g->row;

	(void)index;
	switch (f) {
	case RF_UNIX_MS:
	case RF_TGID:
	case RF_HOST:
	case RF_SPAN_MS: /* 0: the row was never polled */
		return top_value(g, r, f, v);
	case RF_START_MS:
		v->u = r->p->start_ms;
		return true;
	case RF_COMM:
		return str_value(v, r->p->comm);
	case RF_EXITED:
		return str_value(v, exit_kind_name(EXIT_VANISHED));
	case RF_RSS_BYTES:
	case RF_THREADS:
		v->u = 0;
		return true;
	case RF_CPU_CORES:
		v->f = 0.0;
		return true;
	case RF_PROCESS:
	case RF_USAGE:
		return true;
	default:
		return false;
	}
}

/*
 * Its tgid from a range of its own and its draw from unread_rng: the other
 * rows of a seed stay what they are without --vanished-unread.  Born
 * between two polls, it was written after the sampler's wait.
 */
void emit_unread_row(struct gen *g, const struct proc *like, uint64_t unix_ms)
{
	const struct row_sink sink = { g, sink_put, unread_get };
	uint64_t before = UNREAD_WAIT_MS + POLL_MS - rng_below(&g->unread_rng, POLL_MS / 2);
	struct proc p = { .comm = like->comm };

	p.tgid = UNREAD_TGID_FIRST + g->unreads++;
	p.start_ms = unix_ms > before ? unix_ms - before : 0;
	g->row = (struct gen_row){ .p = &p, .unix_ms = unix_ms };
	row_write(&sink);
}
