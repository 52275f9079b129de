/*
 * row.c: formats one finished row (one JSON line) per process per poll,
 * keys in the README's order.  Strings from /proc are untrusted: invalid
 * UTF-8 becomes U+FFFD plus a "<field>_b64" copy of the raw bytes, control
 * bytes are escaped, so every row is one valid line.  croft-sampler.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
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

/* Length of the valid UTF-8 sequence at s (1..4), or 0 when invalid. */
static size_t utf8_seq(const unsigned char *s, size_t left)
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
		while (run < len && s[run] >= 0x20 && s[run] < 0x7f && s[run] != '"' && s[run] != '\\')
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
		case '"': put(b, "\\\""); break;
		case '\\': put(b, "\\\\"); break;
		case '\n': put(b, "\\n"); break;
		case '\r': put(b, "\\r"); break;
		case '\t': put(b, "\\t"); break;
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

void jbuf_string_field(struct jbuf *b, const char *key, const char *text, size_t len)
{
	put(b, "\"");
	put(b, key);
	put(b, "\":\"");
	if (!put_escaped(b, text, len)) {
		put(b, "\",\"");
		put(b, key);
		put(b, "_b64\":\"");
		put_base64(b, (const unsigned char *)text, len);
	}
	put(b, "\"");
}

static void num_field(struct jbuf *b, const char *key, double v, bool comma)
{
	if (comma)
		put(b, ",");
	put(b, "\"");
	put(b, key);
	put(b, "\":");
	jbuf_double(b, v);
}

static void int_field(struct jbuf *b, const char *key, uint64_t v, bool comma)
{
	if (comma)
		put(b, ",");
	put(b, "\"");
	put(b, key);
	put(b, "\":");
	jbuf_u64(b, v);
}

static void format_process(struct jbuf *b, const struct proc *p, const struct row_context *ctx)
{
	put(b, ",\"process\":{");
	jbuf_string_field(b, "comm", p->comm ? p->comm : "", p->comm_len);
	if (p->exe) {
		put(b, ",");
		jbuf_string_field(b, "exe", p->exe, p->exe_len);
	}
	if (p->cg && p->cg->path) {
		put(b, ",");
		jbuf_string_field(b, "cgroup", p->cg->path, p->cg->path_len);
		if (p->cg->container_id[0]) {
			put(b, ",");
			jbuf_string_field(b, "container_id", p->cg->container_id,
				strlen(p->cg->container_id));
		}
	}
	if (p->cwd) {
		put(b, ",");
		jbuf_string_field(b, "cwd", p->cwd, p->cwd_len);
	}
	if (ctx->catalog && p->framework < ctx->catalog->entries_count) {
		const char *name = ctx->catalog->entries[p->framework].name;

		put(b, ",");
		jbuf_string_field(b, "framework", name, strlen(name));
	}
	put(b, "}");
}

static void format_gpu(struct jbuf *b, const struct proc *p, const struct row_context *ctx)
{
	put(b, ",\"workload\":\"");
	put(b, workload_name(p->wl.state));
	put(b, "\"");
	if (!p->probe.valid || p->wl.state == WL_NO_GPU)
		return;
	int_field(b, "ioctl_count", p->probe.gpu_ioctls, true);
	if (p->probe.last_gpu_ioctl_boot_ns && ctx->now_boot_ns >= p->probe.last_gpu_ioctl_boot_ns)
		int_field(b, "since_last_gpu_ioctl_ms",
			(ctx->now_boot_ns - p->probe.last_gpu_ioctl_boot_ns) / 1000000, true);
}

/* The GPUs held, sorted; [] when the GPU files held name none (nvidiactl, kfd). */
static void format_gpus(struct jbuf *b, const struct workload *wl)
{
	bool first = true;

	if (wl->state == WL_NO_GPU || !wl->gpus_known)
		return;
	put(b, ",\"gpus\":[");
	for (int i = 0; i < GPU_INDEX_MAX; i++) {
		if (!gpu_mask_has(&wl->gpus, i))
			continue;
		if (!first)
			put(b, ",");
		jbuf_u64(b, (uint64_t)i);
		first = false;
	}
	put(b, "]");
}

static void format_usage(struct jbuf *b, const struct proc *p)
{
	const struct proc_probe_rates *pr = &p->probe;

	put(b, ",\"usage\":{");
	num_field(b, "cpu_cores", p->cpu_cores, false);
	int_field(b, "rss_bytes", p->rss_bytes, true);
	int_field(b, "threads", p->threads, true);
	if (pr->valid) {
		num_field(b, "ctx_voluntary_s", pr->ctx_voluntary_s, true);
		num_field(b, "ctx_involuntary_s", pr->ctx_involuntary_s, true);
	}
	if (p->io_rates_valid) {
		num_field(b, "read_bytes_s", p->read_bytes_s, true);
		num_field(b, "write_bytes_s", p->write_bytes_s, true);
	}
	if (pr->valid && pr->net_valid) {
		num_field(b, "network_rx_bytes_s", pr->net_rx_bytes_s, true);
		num_field(b, "network_tx_bytes_s", pr->net_tx_bytes_s, true);
	}
	if (pr->valid)
		num_field(b, "runqueue_s", pr->runqueue_s, true);
	put(b, "}");
}

static void format_cgroup(struct jbuf *b, const struct cgroup *cg)
{
	const struct cgroup_figures *f = &cg->now;
	bool comma = false;

	if (!f->have)
		return;
	put(b, ",\"cgroup_usage\":{");
	if (f->have & CGF_CPU) {
		num_field(b, "cpu_cores", f->cpu_cores, comma);
		comma = true;
	}
	if (f->have & CGF_THROTTLED) {
		num_field(b, "cpu_throttled_fraction", f->throttled_fraction, comma);
		comma = true;
	}
	if (f->have & CGF_MEMORY) {
		int_field(b, "memory_bytes", f->memory_bytes, comma);
		comma = true;
	}
	if (f->have & CGF_OOM) {
		int_field(b, "oom_kills", f->oom_kills, comma);
		comma = true;
	}
	if (f->have & CGF_CPU_PSI) {
		num_field(b, "cpu_pressure_avg10", f->cpu_psi_avg10, comma);
		comma = true;
	}
	if (f->have & CGF_MEM_PSI) {
		num_field(b, "memory_pressure_avg10", f->memory_psi_avg10, comma);
		comma = true;
	}
	if (f->have & CGF_IO_PSI)
		num_field(b, "io_pressure_avg10", f->io_psi_avg10, comma);
	put(b, "}");
}

static void format_syscalls(struct jbuf *b, const struct proc_probe_rates *pr)
{
	if (!pr->valid)
		return;
	put(b, ",\"syscalls\":[");
	for (size_t i = 0; i < pr->syscalls_count; i++) {
		const char *name = pr->syscalls[i].name ? pr->syscalls[i].name : "?";

		put(b, i ? ",{" : "{");
		jbuf_string_field(b, "name", name, strlen(name));
		num_field(b, "rate_per_sec", pr->syscalls[i].rate_per_sec, true);
		put(b, "}");
	}
	put(b, "]");
}

void row_format(struct jbuf *b, const struct proc *p, const struct row_context *ctx)
{
	put(b, "{\"unix_ms\":");
	jbuf_u64(b, ctx->unix_ms);
	int_field(b, "tgid", (uint64_t)p->tgid, true);
	format_process(b, p, ctx);
	format_gpu(b, p, ctx);
	format_gpus(b, &p->wl);
	format_usage(b, p);
	if (p->cg)
		format_cgroup(b, p->cg);
	format_syscalls(b, &p->probe);
	if (ctx->label) {
		put(b, ",");
		jbuf_string_field(b, "label", ctx->label, ctx->label_len);
	} else if (p->label) {
		put(b, ",");
		jbuf_string_field(b, "label", p->label, p->label_len);
	}
	put(b, "}\n");
}
