/*
 * svg.c: croft profile --svg: CPU cores, RSS, GPU ioctls and (where NVML
 * was read) SM % per poll against UTC time, stacked charts on one page
 * with labelled axes and ticks at round times, the GPU phases (busy, idle,
 * unknown) as a shaded band above them; readable in a browser.  Invoking
 * user, no privilege.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "profile.h"

#define SVG_POINTS_MAX 2000 /* points per series; more are bucketed (max) */
#define SVG_W          960
#define PLOT_X0        100
#define PLOT_X1        930
#define PANEL_H        170
#define PANEL_GAP      70
#define TOP            70
#define BAND_H         22 /* the GPU phases' band */
#define BAND_GAP       48 /* below it: its legend */
#define Y_TICKS        4
#define X_TICKS_MAX    8
#define PANELS_MAX     4

struct series {
	const char *id, *title, *unit, *color;
	double scale; /* value / scale is what the axis shows */
	size_t field; /* offset of an int64_t in struct sample */
};

static void xml_text(FILE *f, const char *s)
{
	static const char *const entities[0x80] = {
		['&'] = "&amp;",
		['<'] = "&lt;",
		['>'] = "&gt;",
		['"'] = "&quot;",
	};

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x80 && entities[c])
			fputs(entities[c], f);
		else /* Control bytes are not allowed in XML 1.0. */
			fputc(c < 0x20 ? '?' : c, f);
	}
}

static double value(const struct sample *p, size_t field)
{
	int64_t v;

	memcpy(&v, (const char *)p + field, sizeof(v));
	return (double)v;
}

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

/* A round axis top at or above max: 1, 2 or 5 times a power of ten. */
static double nice_top(double max)
{
	if (max <= 0)
		return 1;
	double e = pow(10, floor(log10(max)));
	for (int i = 0; i < 3; i++) {
		double m = (double[]){ 1, 2, 5 }[i] * e;
		if (m >= max)
			return m;
	}
	return 10 * e;
}

static void time_label(int64_t ms, const char *fmt, char *buf, size_t size)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&s, &tm);
	strftime(buf, size, fmt, &tm);
}

/* Round steps, each a divisor of the next bigger unit: ticks fall on the
 * minute, the hour, the day. */
static const int64_t tick_steps_ms[] = { 1000, 2000, 5000, 10000, 15000, 30000, 60000, 120000,
	300000, 600000, 900000, 1800000, 3600000, 7200000, 10800000, 21600000, 43200000, 86400000 };

/* The x axis' step: the least round one (then whole days) giving at most max_ticks ticks. */
static int64_t tick_step_ms(int64_t t0, int64_t t1, int max_ticks)
{
	size_t n = sizeof(tick_steps_ms) / sizeof(tick_steps_ms[0]);

	for (size_t i = 0; i < n; i++)
		if ((t1 - t0) / tick_steps_ms[i] + 1 <= max_ticks)
			return tick_steps_ms[i];
	int64_t days = (t1 - t0) / (max_ticks - 1) / tick_steps_ms[n - 1] + 1;
	return days * tick_steps_ms[n - 1];
}

static double x_of(int64_t ms, int64_t t0, int64_t t1)
{
	return PLOT_X0 +
	       (t1 > t0 ? (double)(ms - t0) / (double)(t1 - t0) : 0.5) * (PLOT_X1 - PLOT_X0);
}

/* Ticks at the multiples of a round step (UTC): 14:05, 14:10, not
 * 14:05:37; a span too short for one: its start. */
static void x_ticks(FILE *f, int y0, int y1, int64_t t0, int64_t t1)
{
	int64_t step = tick_step_ms(t0, t1, X_TICKS_MAX);
	int64_t first = t0 % step ? t0 - t0 % step + step : t0;
	const char *fmt = step % 60000 ? "%H:%M:%S" : "%H:%M";
	char label[40];

	if (first > t1) {
		first = t0;
		fmt = "%H:%M:%S";
	}
	for (int64_t t = first; t <= t1 || t == first; t += step) {
		double x = x_of(t, t0, t1);

		time_label(t, fmt, label, sizeof(label));
		fprintf(f,
			"<line class=\"x-tick\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" "
			"stroke=\"#eee\"/>"
			"<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\" "
			"class=\"tick\">%s</text>\n",
			x, y0, x, y1, x, y1 + 16, label);
	}
}

static void panel(FILE *f, const struct series *se, int y0, const struct sample *pts, size_t n,
	int64_t t0, int64_t t1)
{
	double max = 0;

	for (size_t i = 0; i < n; i++)
		if (value(&pts[i], se->field) / se->scale > max)
			max = value(&pts[i], se->field) / se->scale;
	double top = nice_top(max);
	int y1 = y0 + PANEL_H;

	fprintf(f,
		"<g class=\"panel\">\n<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
		"fill=\"none\" stroke=\"#888\"/>\n",
		PLOT_X0, y0, PLOT_X1 - PLOT_X0, PANEL_H);
	fprintf(f,
		"<text x=\"20\" y=\"%d\" transform=\"rotate(-90 20 %d)\" text-anchor=\"middle\" "
		"class=\"axis-label\">%s (%s)</text>\n",
		y0 + PANEL_H / 2, y0 + PANEL_H / 2, se->title, se->unit);
	for (int i = 0; i <= Y_TICKS; i++) {
		int y = y1 - i * PANEL_H / Y_TICKS;
		fprintf(f,
			"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>"
			"<text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"tick\">%g</text>\n",
			PLOT_X0, y, PLOT_X1, y, PLOT_X0 - 6, y + 4, top * i / Y_TICKS);
	}
	x_ticks(f, y0, y1, t0, t1);
	fprintf(f,
		"<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" class=\"axis-label\">time "
		"(UTC)</text>\n",
		(PLOT_X0 + PLOT_X1) / 2, y1 + 34);
	fprintf(f, "<polyline id=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
		se->id, se->color);
	for (size_t i = 0; i < n; i++) {
		double x = x_of(pts[i].ms, t0, t1);
		double y = y1 - value(&pts[i], se->field) / se->scale / top * PANEL_H;
		fprintf(f, "%s%.1f,%.1f", i ? " " : "", x, y);
	}
	fprintf(f, "\"><title>%s</title></polyline>\n</g>\n", se->title);
}

/* More points than a page can show: the maximum of each bucket. */
static size_t bucket(const struct sample *pts, size_t n, struct sample *out)
{
	if (n <= SVG_POINTS_MAX) {
		memcpy(out, pts, n * sizeof(*pts));
		return n;
	}
	for (size_t b = 0; b < SVG_POINTS_MAX; b++) {
		size_t lo = b * n / SVG_POINTS_MAX, hi = (b + 1) * n / SVG_POINTS_MAX;
		out[b] = pts[lo];
		for (size_t i = lo + 1; i < hi; i++) {
			out[b].cpu_x1e4 = max64(out[b].cpu_x1e4, pts[i].cpu_x1e4);
			out[b].rss = max64(out[b].rss, pts[i].rss);
			out[b].ioctls = max64(out[b].ioctls, pts[i].ioctls);
			out[b].sm_x1e4 = max64(out[b].sm_x1e4, pts[i].sm_x1e4);
		}
	}
	return SVG_POINTS_MAX;
}

/* The band's colours, by phase; its legend in this order. */
static const char *const band_colors[PH_KINDS] = { "#9ecae1", "#74c476", "#fd8d3c", "#bdbdbd" };

/* The GPU phases over the panels' time axis; several processes' overlap, shaded. */
static void band(FILE *f, const struct profile_result *p, int y0, int64_t t0, int64_t t1)
{
	fprintf(f,
		"<g class=\"band\">\n<text x=\"%d\" y=\"%d\" text-anchor=\"end\" "
		"class=\"axis-label\">GPU</text>\n<rect x=\"%d\" y=\"%d\" width=\"%d\" "
		"height=\"%d\" fill=\"none\" stroke=\"#888\"/>\n",
		PLOT_X0 - 6, y0 + BAND_H / 2 + 4, PLOT_X0, y0, PLOT_X1 - PLOT_X0, BAND_H);
	for (size_t i = 0; i < p->phases_count; i++) {
		const struct phase *st = &p->phases[i];
		int64_t a = st->start_ms < t0 ? t0 : st->start_ms;
		int64_t b = st->end_ms > t1 ? t1 : st->end_ms;
		double x = x_of(a, t0, t1), w = b > a ? x_of(b, t0, t1) - x : 1.0;

		if (b < a)
			continue;
		fprintf(f,
			"<rect class=\"phase phase-%s\" x=\"%.1f\" y=\"%d\" width=\"%.1f\" "
			"height=\"%d\" fill=\"%s\" fill-opacity=\"0.8\"><title>%s</title></rect>\n",
			phase_name(st->kind), x, y0, w < 1.0 ? 1.0 : w, BAND_H,
			band_colors[st->kind], phase_name(st->kind));
	}
	for (int i = 0; i < PH_KINDS; i++) {
		int x = PLOT_X0 + i * 110;
		fprintf(f,
			"<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/>"
			"<text x=\"%d\" y=\"%d\" class=\"tick\">%s</text>\n",
			x, y0 + BAND_H + 8, band_colors[i], x + 16, y0 + BAND_H + 18,
			phase_name(i));
	}
	fprintf(f, "</g>\n");
}

int svg_write(const char *path, const char *title, const struct profile_result *p)
{
	size_t count = p->samples;
	struct sample *v = calloc(count < SVG_POINTS_MAX ? count + 1 : SVG_POINTS_MAX, sizeof(*v));
	int64_t rss_max = 0;
	char a[40], b[40];

	if (!v)
		return -ENOMEM;
	size_t n = bucket(p->samples_v, count, v);
	for (size_t i = 0; i < n; i++)
		rss_max = max64(rss_max, v[i].rss);
	bool gib = rss_max >= 1024LL * 1024 * 1024;
	const struct series series[PANELS_MAX] = {
		{ "cpu", "CPU", "cores", "#1f77b4", FIXED_SCALE,
			offsetof(struct sample, cpu_x1e4) },
		{ "rss", "RSS", gib ? "GiB" : "MiB", "#2ca02c", gib ? 1073741824.0 : 1048576.0,
			offsetof(struct sample, rss) },
		{ "gpu-ioctls", "GPU ioctls", "per poll", "#d62728", 1,
			offsetof(struct sample, ioctls) },
		{ "gpu-sm", "GPU SM", "%, NVML", "#9467bd", FIXED_SCALE,
			offsetof(struct sample, sm_x1e4) },
	};
	int panels = p->has_any & HAS_SM ? 4 : 3;
	int top = TOP + BAND_H + BAND_GAP;
	int height = top + panels * (PANEL_H + PANEL_GAP);
	FILE *f = fopen(path, "w");
	if (!f) {
		int r = -errno;
		free(v);
		return r;
	}
	int64_t t0 = n ? v[0].ms : 0, t1 = n ? v[n - 1].ms : 0;
	for (size_t i = 0, any = n; i < p->phases_count; i++, any = 1) {
		/* a process's first phase begins before its first row */
		if (!any || p->phases[i].start_ms < t0)
			t0 = p->phases[i].start_ms;
		if (!any || p->phases[i].end_ms > t1)
			t1 = p->phases[i].end_ms;
	}
	time_label(t0, "%Y-%m-%d %H:%M:%S", a, sizeof(a));
	time_label(t1, "%Y-%m-%d %H:%M:%S", b, sizeof(b));
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 "
		"0 %d %d\" "
		"font-family=\"sans-serif\" font-size=\"12\">\n"
		"<style>.tick{font-size:11px;fill:#444}.axis-label{font-size:12px;fill:#000}</"
		"style>\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n<text x=\"%d\" y=\"30\" "
		"font-size=\"16\">croft profile: ",
		SVG_W, height, SVG_W, height, PLOT_X0);
	xml_text(f, title);
	fprintf(f,
		"</text>\n<text x=\"%d\" y=\"50\" class=\"tick\">%s .. %s UTC, %zu polls</text>\n",
		PLOT_X0, a, b, count);
	band(f, p, TOP, t0, t1);
	for (int i = 0; i < panels; i++)
		panel(f, &series[i], top + i * (PANEL_H + PANEL_GAP), v, n, t0, t1);
	fprintf(f, "</svg>\n");
	free(v);
	if (fclose(f) != 0)
		return -errno;
	return 0;
}
