/*
 * row.c: formats one finished row (one JSON line) per process per poll:
 * each field's value for the walk of the row's table (contract/rowdef.h).
 * Strings from /proc are untrusted: invalid UTF-8 becomes U+FFFD plus a
 * "<field>_b64" copy of the raw bytes, control bytes are escaped, so every
 * row is one valid line.  croft-sampler.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "catalog.h"
#include "rowdef.h"
#include "sampler.h"

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

static void put(struct jbuf *b, const char *s)
{
	jbuf_put(b, s, strlen(s));
}

void jbuf_u64(struct jbuf *b, uint64_t v)
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v);

	jbuf_put(b, tmp, (size_t)n);
}

void jbuf_double(struct jbuf *b, double v)
{
	char tmp[64];
	int n;

	if (!isfinite(v))
		v = 0.0;
	n = snprintf(tmp, sizeof(tmp), "%.4f", v);
	if (n <= 0 || (size_t)n >= sizeof(tmp)) {
		put(b, "0.0");
		return;
	}
	while (n > 2 && tmp[n - 1] == '0' && tmp[n - 2] != '.')
		n--;
	tmp[n] = '\0';
	if (strcmp(tmp, "-0.0") == 0) /* a rounded-away negative is zero */
		put(b, "0.0");
	else
		jbuf_put(b, tmp, (size_t)n);
}

size_t utf8_seq(const unsigned char *s, size_t left)
{
	uint32_t cp;
	size_t n;

	if (s[0] < 0x80)
		return 1;
	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		n = 2, cp = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		n = 3, cp = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		n = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (left < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
		(cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return n;
}

/* Writes text as a JSON string body; returns false when it was not UTF-8. */
static bool put_escaped(struct jbuf *b, const char *text, size_t len)
{
	const unsigned char *s = (const unsigned char *)text;
	bool valid = true;
	size_t i = 0;

	while (i < len) {
		size_t run = i, n;
		char esc[8];

		/* copy plain runs in one go: the common case */
		while (run < len && s[run] >= 0x20 && s[run] < 0x7f && s[run] != '"' &&
			s[run] != '\\')
			run++;
		jbuf_put(b, text + i, run - i);
		i = run;
		if (i >= len)
			break;
		if (s[i] >= 0x80) {
			n = utf8_seq(s + i, len - i);
			if (n) {
				jbuf_put(b, text + i, n);
				i += n;
			} else {
				put(b, "\\ufffd");
				valid = false;
				i++;
			}
			continue;
		}
		switch (s[i]) {
		case '\0': /* valid JSON as \u0000, but many readers refuse it */
			put(b, "\\ufffd");
			valid = false;
			break;
		case '"':
			put(b, "\\\"");
			break;
		case '\\':
			put(b, "\\\\");
			break;
		case '\n':
			put(b, "\\n");
			break;
		case '\r':
			put(b, "\\r");
			break;
		case '\t':
			put(b, "\\t");
			break;
		default:
			snprintf(esc, sizeof(esc), "\\u%04x", s[i]);
			put(b, esc);
		}
		i++;
	}
	return valid;
}

static void put_base64(struct jbuf *b, const unsigned char *s, size_t len)
{
	static const char tab[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

	for (size_t i = 0; i < len; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16;
		char out[4];

		if (i + 1 < len)
			v |= (uint32_t)s[i + 1] << 8;
		if (i + 2 < len)
			v |= s[i + 2];
		out[0] = tab[(v >> 18) & 63];
		out[1] = tab[(v >> 12) & 63];
		out[2] = i + 1 < len ? tab[(v >> 6) & 63] : '=';
		out[3] = i + 2 < len ? tab[v & 63] : '=';
		jbuf_put(b, out, 4);
	}
}

/* "text", and ,"key_b64":"..." after it when text is not valid UTF-8 and
 * key is not NULL (an array's entry has no place for one). */
static void string_value(struct jbuf *b, const char *key, const char *text, size_t len)
{
	put(b, "\"");
	if (!put_escaped(b, text, len) && key) {
		put(b, "\",\"");
		put(b, key);
		put(b, "_b64\":\"");
		put_base64(b, (const unsigned char *)text, len);
	}
	put(b, "\"");
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

static void sink_int(void *arg, uint64_t v)
{
	jbuf_u64(((struct row_source *)arg)->b, v);
}

static void sink_float(void *arg, double v)
{
	jbuf_double(((struct row_source *)arg)->b, v);
}

static void sink_string(void *arg, enum row_field f, const char *s, size_t len)
{
	const char *key = row_fields[f].type == RT_STRING ? row_fields[f].name : NULL;

	string_value(((struct row_source *)arg)->b, key, s, len);
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
	size_t n = 0;

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
	for (size_t i = 1; i < n;) /* a second fd on one instance's file: kept once */
		if (!strcmp(src->mig_sorted[i - 1], src->mig_sorted[i]))
			memmove(&src->mig_sorted[i], &src->mig_sorted[i + 1],
				(--n - i) * sizeof(src->mig_sorted[0]));
		else
			i++;
	return n;
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
		return ctx->host && str_value(v, ctx->host, strlen(ctx->host));
	case RF_WORKLOAD:
		return str_value(
			v, workload_name(p->gpu.wl.state), strlen(workload_name(p->gpu.wl.state)));
	case RF_IOCTL_COUNT:
		v->u = p->counters.probe.gpu_ioctls;
		return gpu;
	case RF_SINCE_LAST_GPU_IOCTL_MS:
		v->u = (ctx->now_boot_ns - last_ns) / 1000000;
		return gpu && last_ns && ctx->now_boot_ns >= last_ns;
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
	case RF_COMM:
		return str_value(v, p->ident.comm ? p->ident.comm : "", p->ident.comm_len);
	case RF_EXE:
		return str_value(v, p->ident.exe, p->ident.exe_len);
	case RF_CGROUP:
		return cg && str_value(v, cg->path, cg->path_len);
	case RF_CONTAINER_ID:
		return cg && cg->container_id[0] &&
		       str_value(v, cg->container_id, strlen(cg->container_id));
	case RF_POD_UID:
		return cg && cg->pod.uid[0] && str_value(v, cg->pod.uid, strlen(cg->pod.uid));
	case RF_POD_QOS:
		return cg && cg->pod.uid[0] &&
		       str_value(v, pod_qos_name(cg->pod.qos), strlen(pod_qos_name(cg->pod.qos)));
	case RF_CWD:
		return str_value(v, p->ident.cwd, p->ident.cwd_len);
	case RF_FRAMEWORK:
		if (!cat || p->ident.framework >= cat->entries_count)
			return false;
		return str_value(v, cat->entries[p->ident.framework].name,
			strlen(cat->entries[p->ident.framework].name));
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
	const char *name = sc->name ? sc->name : "?";

	if (f == RF_SYSCALL_NAME)
		return str_value(v, name, strlen(name));
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
	const struct row_sink sink = { &src, sink_put, sink_int, sink_float, sink_string,
		source_get };

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
	ret->ioctl_known = get(&src, RF_IOCTL_COUNT, &v);
	ret->ioctl_count = v.u;
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
