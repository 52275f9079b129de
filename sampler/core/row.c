/*
 * row.c: formats one finished row (one JSON line) per process per poll:
 * each field's value for the walk of the row's table (contract/rowdef.h,
 * which escapes the untrusted strings from /proc), and the row's figures
 * for croft.prom.  croft-sampler.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "catalog.h"
#include "rowdef.h"
#include "output.h"

void jbuf_reset(struct jbuf *b)
{
	b->len = 0;
	b->failed = false;
}

void jbuf_free(struct jbuf *b)
{
	free(b->data);
	*b = (struct jbuf){ 0 };
}

static bool jbuf_grow(struct jbuf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 4096;
	char *data;

	if (b->failed)
		return false;
	if (b->len + n <= b->cap)
		return true;
	while (cap < b->len + n)
		cap *= 2;
	data = realloc(b->data, cap);
	if (!data) {
		b->failed = true;
		return false;
	}
	b->data = data;
	b->cap = cap;
	return true;
}

void jbuf_put(struct jbuf *b, const char *s, size_t n)
{
	if (!jbuf_grow(b, n))
		return;
	memcpy(b->data + b->len, s, n);
	b->len += n;
}

/* One process's row at this poll, as row_write() asks for it. */
struct row_source {
	struct jbuf *b;
	const struct proc *p;
	const struct row_context *ctx;
	struct gpu_mask allocated; /* gpus_allocated, while the row is written */
	char mig[GPU_FDS_KEPT][MIG_NAME_MAX];
	const char *mig_sorted[GPU_FDS_KEPT];
};

static void sink_put(void *arg, const char *s, size_t n)
{
	jbuf_put(((struct row_source *)arg)->b, s, n);
}

static bool str_value(struct row_value *v, const char *s, size_t len)
{
	v->str = s;
	v->str_len = len;
	return s != NULL;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * The MIG compute instances whose capability files (nvidia-caps' major,
 * the minors mig-minors names) the last fd scan found, sorted, each once.
 */
static size_t mig_instances(struct row_source *src)
{
	const struct gpu_fds *k = src->p->gpu.fds;
	const struct gpu_index *gi = src->ctx->gpu_index;
	size_t n = 0, kept = 0;

	if (!k || !gi || !gi->caps_major)
		return 0;
	for (size_t i = 0; i < k->kept_count; i++) {
		const struct nv_mig *m = major(k->rdev[i]) == gi->caps_major
						 ? nv_mig_of_minor(&gi->nv, minor(k->rdev[i]))
						 : NULL;

		if (!m)
			continue;
		snprintf(src->mig[n], sizeof(src->mig[n]), "%u/%u/%u", m->gpu, m->gi, m->ci);
		src->mig_sorted[n] = src->mig[n];
		n++;
	}
	qsort(src->mig_sorted, n, sizeof(src->mig_sorted[0]), cmp_name);
	for (size_t i = 0; i < n; i++) /* a second fd on one instance's file: kept once */
		if (!kept || strcmp(src->mig_sorted[kept - 1], src->mig_sorted[i]))
			src->mig_sorted[kept++] = src->mig_sorted[i];
	return kept;
}

/* The pod's GPUs in the kubelet's checkpoint; false outside pods and where unknown. */
static bool allocated(struct row_source *src, struct row_value *v)
{
	const struct cgroup *cg = src->p->ident.cg;
	const struct row_context *ctx = src->ctx;

	if (!cg || !cg->pod.uid[0] || !ctx->kubelet || !ctx->gpu_index ||
		!kubelet_allocated(ctx->kubelet, &ctx->gpu_index->nv, cg->pod.uid, &src->allocated))
		return false;
	v->bits = src->allocated.bits;
	v->bits_count = GPU_INDEX_MAX;
	return true;
}

static bool name_value(struct row_value *v, const char *name)
{
	return str_value(v, name, name ? strlen(name) : 0);
}

/* croftctl's label for the container comes first: it names the run. */
static enum label_source label_source(const struct proc *p, const struct row_context *ctx)
{
	if (ctx->label)
		return LABEL_CROFTCTL;
	return p->ident.label ? LABEL_ENV : LABEL_NONE;
}

/* The GPU evidence and verdict beside the ioctls, while in a GPU state. */
static bool gpu_value(const struct proc *p, enum row_field f, struct row_value *v)
{
	const struct proc_probe_rates *pr = &p->counters.probe;
	const struct proc_nvml *nv = &p->gpu.nvml;

	if (p->gpu.wl.state == WL_NO_GPU)
		return false;
	switch (f) {
	case RF_GPU_WAIT_COUNT:
		v->u = pr->gpu_waits;
		return pr->gpu_evidence_valid;
	case RF_GPU_MMAP_COUNT:
		v->u = pr->gpu_mmaps;
		return pr->gpu_evidence_valid;
	case RF_GPU_BLOCKED_THREADS:
		v->u = pr->gpu_blocked_threads;
		return pr->gpu_evidence_valid;
	case RF_GPU_ACTIVITY:
		return name_value(v, gpu_activity_name(p->gpu.activity));
	case RF_GPU_ACTIVITY_SOURCE:
		return name_value(v, gpu_activity_source_name(p->gpu.activity_source));
	case RF_GPU_MEMORY_BYTES:
		v->u = nv->memory_bytes;
		return nv->memory_known;
	default: /* RF_GPU_SM_PERCENT */
		v->f = nv->sm_percent;
		return nv->sm_known;
	}
}

/* exit_ms, exit_code, exit_signal, exited: a last row's. */
static bool exit_value(const struct proc_exit *e, enum row_field f, struct row_value *v)
{
	switch (f) {
	case RF_EXIT_MS:
		v->u = e->unix_ms;
		return e->kind != EXIT_LIVES && e->unix_ms;
	case RF_EXIT_CODE:
		v->u = (uint64_t)e->code;
		return e->kind != EXIT_LIVES && e->code_known;
	case RF_EXIT_SIGNAL:
		v->u = (uint64_t)e->signal;
		return e->kind != EXIT_LIVES && e->signal_known;
	default: /* RF_EXITED */
		return name_value(v, exit_kind_name(e->kind));
	}
}

static bool top_value(struct row_source *src, enum row_field f, struct row_value *v)
{
	const struct proc *p = src->p;
	const struct row_context *ctx = src->ctx;
	uint64_t last_ns = p->counters.probe.last_gpu_ioctl_boot_ns;
	bool gpu = p->counters.probe.ioctl_valid && p->gpu.wl.state != WL_NO_GPU;

	switch (f) {
	case RF_UNIX_MS:
		v->u = ctx->unix_ms;
		return true;
	case RF_SPAN_MS: /* what the rates were taken over (proc_sample) */
		v->u = (uint64_t)llround(p->counters.span_s * 1000.0);
		return true;
	case RF_TGID:
		v->u = (uint64_t)p->tgid;
		return true;
	case RF_HOST:
		return name_value(v, ctx->host);
	case RF_WORKLOAD: /* unread: its GPU evidence went to the final that never came */
		return !p->exit.unread && name_value(v, workload_name(p->gpu.wl.state));
	case RF_IOCTL_COUNT:
		v->u = p->counters.probe.gpu_ioctls;
		return gpu;
	case RF_SINCE_LAST_GPU_IOCTL_MS:
		v->u = (ctx->now_boot_ns - last_ns) / 1000000;
		return gpu && last_ns && ctx->now_boot_ns >= last_ns;
	case RF_GPU_WAIT_COUNT:
	case RF_GPU_MMAP_COUNT:
	case RF_GPU_BLOCKED_THREADS:
	case RF_GPU_ACTIVITY:
	case RF_GPU_ACTIVITY_SOURCE:
	case RF_GPU_MEMORY_BYTES:
	case RF_GPU_SM_PERCENT:
		return gpu_value(p, f, v);
	case RF_GPUS: /* [] when the GPU files held name none (nvidiactl, kfd) */
		v->bits = p->gpu.wl.gpus.bits;
		v->bits_count = GPU_INDEX_MAX;
		return p->gpu.wl.state != WL_NO_GPU && p->gpu.wl.gpus_known;
	case RF_GPUS_ALLOCATED:
		return allocated(src, v);
	case RF_MIG: /* with gpus: while the process is in a GPU state */
		v->strs = src->mig_sorted;
		v->strs_count = p->gpu.wl.state != WL_NO_GPU ? mig_instances(src) : 0;
		return v->strs_count > 0;
	case RF_CGROUP_USAGE:
		return p->ident.cg && p->ident.cg->now.have;
	case RF_SYSCALLS:
		v->u = p->counters.probe.syscalls_count;
		return p->counters.probe.syscalls_valid;
	case RF_LABEL:
		if (ctx->label)
			return str_value(v, ctx->label, ctx->label_len);
		return str_value(v, p->ident.label, p->ident.label_len);
	case RF_LABEL_SOURCE:
		return name_value(v, label_source_name(label_source(p, ctx)));
	case RF_EXIT_MS:
	case RF_EXIT_CODE:
	case RF_EXIT_SIGNAL:
	case RF_EXITED:
		return exit_value(&p->exit, f, v);
	case RF_PROCESS:
	case RF_USAGE:
		return true;
	default:
		return false;
	}
}

static bool process_value(const struct row_source *src, enum row_field f, struct row_value *v)
{
	const struct proc *p = src->p;
	const struct cgroup *cg = p->ident.cg && p->ident.cg->path ? p->ident.cg : NULL;
	const struct catalog *cat = src->ctx->catalog;

	switch (f) {
	case RF_START_MS:
		v->u = src->ctx->boot_unix_ms + p->ident.start_boot_ns / 1000000;
		return true;
	case RF_UID:
		v->u = p->ident.uid;
		return p->ident.uid_known;
	case RF_COMM:
		return str_value(v, p->ident.comm ? p->ident.comm : "", p->ident.comm_len);
	case RF_EXE:
		return str_value(v, p->ident.exe, p->ident.exe_len);
	case RF_CGROUP:
		return cg && str_value(v, cg->path, cg->path_len);
	case RF_CONTAINER_ID:
		return cg && cg->container_id[0] && name_value(v, cg->container_id);
	case RF_POD_UID:
		return cg && cg->pod.uid[0] && name_value(v, cg->pod.uid);
	case RF_POD_QOS:
		return cg && cg->pod.uid[0] && name_value(v, pod_qos_name(cg->pod.qos));
	case RF_CWD:
		return str_value(v, p->ident.cwd, p->ident.cwd_len);
	case RF_FRAMEWORK:
		if (!cat || p->ident.framework >= cat->entries_count)
			return false;
		return name_value(v, cat->entries[p->ident.framework].name);
	default:
		return false;
	}
}

static bool usage_value(const struct proc *p, enum row_field f, struct row_value *v)
{
	const struct proc_probe_rates *pr = &p->counters.probe;

	switch (f) {
	case RF_CPU_CORES:
		v->f = p->counters.cpu_cores;
		return true;
	case RF_RSS_BYTES:
		v->u = p->counters.rss_bytes;
		return true;
	case RF_THREADS:
		v->u = p->counters.threads;
		return true;
	case RF_CTX_VOLUNTARY_S:
		v->f = pr->ctx_voluntary_s;
		return pr->sched_valid;
	case RF_CTX_INVOLUNTARY_S:
		v->f = pr->ctx_involuntary_s;
		return pr->sched_valid;
	case RF_READ_BYTES_S:
		v->f = p->counters.read_bytes_s;
		return p->counters.io_rates_valid;
	case RF_WRITE_BYTES_S:
		v->f = p->counters.write_bytes_s;
		return p->counters.io_rates_valid;
	case RF_NETWORK_RX_BYTES_S:
		v->f = pr->net_rx_bytes_s;
		return pr->net_valid;
	case RF_NETWORK_TX_BYTES_S:
		v->f = pr->net_tx_bytes_s;
		return pr->net_valid;
	case RF_RUNQUEUE_S:
		v->f = pr->runqueue_s;
		return pr->sched_valid;
	default:
		return false;
	}
}

static bool cgroup_value(const struct cgroup_figures *c, enum row_field f, struct row_value *v)
{
	switch (f) {
	case RF_CG_CPU_CORES:
		v->f = c->cpu_cores;
		return c->have & CGF_CPU;
	case RF_CG_CPU_THROTTLED_FRACTION:
		v->f = c->throttled_fraction;
		return c->have & CGF_THROTTLED;
	case RF_CG_MEMORY_BYTES:
		v->u = c->memory_bytes;
		return c->have & CGF_MEMORY;
	case RF_CG_OOM_KILLS:
		v->u = c->oom_kills;
		return c->have & CGF_OOM;
	case RF_CG_CPU_PRESSURE_AVG10:
		v->f = c->cpu_psi_avg10;
		return c->have & CGF_CPU_PSI;
	case RF_CG_MEMORY_PRESSURE_AVG10:
		v->f = c->memory_psi_avg10;
		return c->have & CGF_MEM_PSI;
	case RF_CG_IO_PRESSURE_AVG10:
		v->f = c->io_psi_avg10;
		return c->have & CGF_IO_PSI;
	default:
		return false;
	}
}

static bool syscall_value(const struct syscall_rate *sc, enum row_field f, struct row_value *v)
{
	if (f == RF_SYSCALL_NAME)
		return name_value(v, sc->name ? sc->name : "?");
	v->f = sc->rate_per_sec;
	return true;
}

static bool source_get(void *arg, enum row_field f, size_t index, struct row_value *v)
{
	struct row_source *src = arg;

	switch (row_fields[f].object) {
	case RF_PROCESS:
		return process_value(src, f, v);
	case RF_USAGE:
		return usage_value(src->p, f, v);
	case RF_CGROUP_USAGE:
		return cgroup_value(&src->p->ident.cg->now, f, v);
	case RF_SYSCALLS:
		return syscall_value(&src->p->counters.probe.syscalls[index], f, v);
	default:
		return top_value(src, f, v);
	}
}

void row_format(struct jbuf *b, const struct proc *p, const struct row_context *ctx)
{
	struct row_source src = { .b = b, .p = p, .ctx = ctx };
	const struct row_sink sink = { &src, sink_put, source_get };

	row_write(&sink);
}

static bool get(const struct row_source *src, enum row_field f, struct row_value *v)
{
	*v = (struct row_value){ 0 };
	return source_get((void *)src, f, 0, v);
}

/* The strings and arrays a row_value points to live in src: tf takes them here. */
void row_textfile(
	struct textfile *tf, const struct proc *p, const struct row_context *ctx, bool written)
{
	struct row_source src = { .p = p, .ctx = ctx };
	struct textfile_row r = { .row = written, .state = p->gpu.wl.state }, *ret = &r;
	struct row_value v;

	get(&src, RF_SPAN_MS, &v);
	ret->span_ms = v.u;
	if (get(&src, RF_MIG, &v)) {
		ret->migs = v.strs;
		ret->migs_count = v.strs_count;
	}
	if (get(&src, RF_GPUS, &v))
		ret->gpus = v.bits;
	if (get(&src, RF_GPU_ACTIVITY, &v)) /* the verdict as the row says it */
		ret->activity = p->gpu.activity;
	ret->exited = get(&src, RF_EXITED, &v);
	ret->uid_known = get(&src, RF_UID, &v);
	ret->uid = (uint32_t)v.u;
	ret->since_known = get(&src, RF_SINCE_LAST_GPU_IOCTL_MS, &v);
	ret->since_last_gpu_ioctl_ms = v.u;
	get(&src, RF_CPU_CORES, &v);
	ret->cpu_cores = round(v.f * 1e4) / 1e4; /* as the row says it */
	get(&src, RF_RSS_BYTES, &v);
	ret->rss_bytes = v.u;
	if (get(&src, RF_CONTAINER_ID, &v))
		ret->container_id = v.str; /* NUL-terminated: the cgroup's id */
	if (get(&src, RF_POD_UID, &v))
		ret->pod_uid = v.str; /* NUL-terminated: parsed from the cgroup path */
	if (get(&src, RF_FRAMEWORK, &v))
		ret->framework = v.str; /* the catalog's name */
	if (get(&src, RF_LABEL, &v)) {
		ret->label = v.str;
		ret->label_len = v.str_len;
	}
	textfile_add(tf, ret);
}
