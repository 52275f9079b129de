/*
 * svg.c: croft profile --svg: CPU cores, RSS and GPU ioctls per poll against
 * UTC time, three stacked charts on one page with labelled axes, readable
 * in a browser.  Invoking user, no privilege.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "readers.h"

#define SVG_POINTS_MAX 2000 /* points per series; more are bucketed (max) */
#define SVG_W          960
#define PLOT_X0        100
#define PLOT_X1        930
#define PANEL_H        170
#define PANEL_GAP      70
#define TOP            70
#define Y_TICKS        4
#define X_TICKS        6

struct series {
	const char *id, *title, *unit, *color;
	double scale; /* value / scale is what the axis shows */
	size_t field; /* offset in struct svg_point */
};

static void xml_text(FILE *f, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			/* Control bytes are not allowed in XML 1.0. */
			fputc((unsigned char)*s < 0x20 ? '?' : *s, f);
		}
	}
}

static double value(const struct svg_point *p, size_t field)
{
	double v;

	memcpy(&v, (const char *)p + field, sizeof(v));
	return v;
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

static void time_label(int64_t ms, bool with_date, char *buf, size_t size)
{
	time_t s = (time_t)(ms / 1000);
	struct tm tm;

	gmtime_r(&s, &tm);
	strftime(buf, size, with_date ? "%Y-%m-%d %H:%M:%S" : "%H:%M:%S", &tm);
}

static void panel(FILE *f, const struct series *se, int y0, const struct svg_point *pts, size_t n,
	int64_t t0, int64_t t1)
{
	double max = 0;
	char label[40];

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
	for (int i = 0; i <= X_TICKS; i++) {
		int x = PLOT_X0 + i * (PLOT_X1 - PLOT_X0) / X_TICKS;
		time_label(t0 + (t1 - t0) * i / X_TICKS, false, label, sizeof(label));
		fprintf(f,
			"<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"#eee\"/>"
			"<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" class=\"tick\">%s</text>\n",
			x, y0, x, y1, x, y1 + 16, label);
	}
	fprintf(f,
		"<text x=\"%d\" y=\"%d\" text-anchor=\"middle\" class=\"axis-label\">time "
		"(UTC)</text>\n",
		(PLOT_X0 + PLOT_X1) / 2, y1 + 34);
	fprintf(f, "<polyline id=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" points=\"",
		se->id, se->color);
	for (size_t i = 0; i < n; i++) {
		double x =
			PLOT_X0 + (t1 > t0 ? (double)(pts[i].ms - t0) / (double)(t1 - t0) : 0.5) *
					  (PLOT_X1 - PLOT_X0);
		double y = y1 - value(&pts[i], se->field) / se->scale / top * PANEL_H;
		fprintf(f, "%s%.1f,%.1f", i ? " " : "", x, y);
	}
	fprintf(f, "\"><title>%s</title></polyline>\n</g>\n", se->title);
}

/* More points than a page can show: the maximum of each bucket. */
static size_t bucket(const struct svg_point *pts, size_t n, struct svg_point *out)
{
	if (n <= SVG_POINTS_MAX) {
		memcpy(out, pts, n * sizeof(*pts));
		return n;
	}
	for (size_t b = 0; b < SVG_POINTS_MAX; b++) {
		size_t lo = b * n / SVG_POINTS_MAX, hi = (b + 1) * n / SVG_POINTS_MAX;
		out[b] = pts[lo];
		for (size_t i = lo + 1; i < hi; i++) {
			out[b].cpu_cores = fmax(out[b].cpu_cores, pts[i].cpu_cores);
			out[b].rss_bytes = fmax(out[b].rss_bytes, pts[i].rss_bytes);
			out[b].gpu_ioctls = fmax(out[b].gpu_ioctls, pts[i].gpu_ioctls);
		}
	}
	return SVG_POINTS_MAX;
}

int svg_write(const char *path, const char *title, const struct svg_point *pts, size_t count)
{
	struct svg_point *v =
		calloc(count < SVG_POINTS_MAX ? count + 1 : SVG_POINTS_MAX, sizeof(*v));
	double rss_max = 0;
	char a[40], b[40];
	int height = TOP + 3 * (PANEL_H + PANEL_GAP);

	if (!v)
		return -ENOMEM;
	size_t n = bucket(pts, count, v);
	for (size_t i = 0; i < n; i++)
		rss_max = fmax(rss_max, v[i].rss_bytes);
	bool gib = rss_max >= 1024.0 * 1024 * 1024;
	const struct series series[3] = {
		{ "cpu", "CPU", "cores", "#1f77b4", 1, offsetof(struct svg_point, cpu_cores) },
		{ "rss", "RSS", gib ? "GiB" : "MiB", "#2ca02c", gib ? 1073741824.0 : 1048576.0,
			offsetof(struct svg_point, rss_bytes) },
		{ "gpu-ioctls", "GPU ioctls", "per poll", "#d62728", 1,
			offsetof(struct svg_point, gpu_ioctls) },
	};
	FILE *f = fopen(path, "w");
	if (!f) {
		int r = -errno;
		free(v);
		return r;
	}
	int64_t t0 = n ? v[0].ms : 0, t1 = n ? v[n - 1].ms : 0;
	time_label(t0, true, a, sizeof(a));
	time_label(t1, true, b, sizeof(b));
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
	for (int i = 0; i < 3; i++)
		panel(f, &series[i], TOP + i * (PANEL_H + PANEL_GAP), v, n, t0, t1);
	fprintf(f, "</svg>\n");
	free(v);
	if (fclose(f) != 0)
		return -errno;
	return 0;
}
