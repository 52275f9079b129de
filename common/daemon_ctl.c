/*
 * daemon_ctl.c: what every daemon's control socket shares: making it, the
 * answer to a reload and the status envelope with its figures.  Runs in
 * each daemon.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <jansson.h>

#include "clock.h"
#include "daemon.h"
#include "log.h"

/* One daemon a process: its name and start, for the status envelope. */
static struct {
	const char *name;
	uint64_t started_ms; /* CLOCK_MONOTONIC */
} daemon_self;

void daemon_status_start(const char *name)
{
	daemon_self.name = name;
	daemon_self.started_ms = clock_mono_ms();
}

int daemon_control_new(struct event_base *base, const char *runtime_dir, const char *name,
	gid_t gid, ctl_handler_fn handler, void *ctx, struct ctl_server **ret_server,
	char *ret_path)
{
	if (snprintf(ret_path, PATH_MAX, "%s/%s", runtime_dir, name) >= PATH_MAX)
		return -ENAMETOOLONG;
	return ctl_server_new(base, ret_path, gid, handler, ctx, ret_server);
}

int daemon_ctl_reload(daemon_reload_fn reload, void *ctx, const char *done, struct evbuffer *reply)
{
	char *errors = NULL;
	int r = reload(ctx, &errors);

	if (r < 0) {
		log_warnx("reload refused, the running configuration kept:\n%s",
			errors ? errors : strerror(-r));
		evbuffer_add_printf(reply, "reload refused, the running configuration kept:\n%s",
			errors ? errors : strerror(-r));
	} else if (done) {
		evbuffer_add_printf(reply, "%s", done);
	}
	free(errors);
	return r;
}

/* Sets one figure in root, in the object its key's prefix names; its value
 * is taken either way.  -1 on ENOMEM (or with root NULL). */
static int figure_set(json_t *root, const struct daemon_figure *figure)
{
	const char *dot = strchr(figure->key, '.');
	json_t *value = figure->value, *parent = root;
	char name[64];

	if (dot) {
		snprintf(name, sizeof(name), "%.*s", (int)(dot - figure->key), figure->key);
		parent = json_object_get(root, name);
		if (!parent && json_object_set_new(root, name, (parent = json_object())) < 0) {
			json_decref(value);
			return -1;
		}
	}
	return json_object_set_new(parent, dot ? dot + 1 : figure->key, value);
}

void *daemon_figures_new(const struct daemon_figure *figures, size_t count)
{
	json_t *root = json_object();
	bool failed = !root;

	for (size_t i = 0; i < count; i++)
		failed |= figure_set(root, &figures[i]) < 0;
	if (!failed)
		return root;
	json_decref(root);
	return NULL;
}

int daemon_status(const char *state, const char *why, void *figures, struct evbuffer *reply)
{
	json_t *o = json_pack("{s:s, s:s, s:i, s:f, s:s, s:s?, s:o}", "daemon", daemon_self.name,
		"version", CROFT_VERSION, "pid", (int)getpid(), "uptime_s",
		(double)(clock_mono_ms() - daemon_self.started_ms) / 1000.0, "state", state, "why",
		why, "figures", (json_t *)figures);
	char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;

	json_decref(o);
	if (!text)
		return -ENOMEM;
	evbuffer_add(reply, text, strlen(text));
	free(text);
	return 0;
}
