/*
 * control.c: croft-sampler's side of sampler.ctl (status, reload, label)
 * and the reload itself: a bad config or catalog keeps the old one and the
 * reply says why.  croft-sampler, croft user; ctl.c checks the peer.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog.h"
#include "config.h"
#include "daemon.h"
#include "log.h"
#include "msg.h"
#include "probe_link.h"
#include "sampler.h"

/* The probe link's figures. */
static void probe_status(const struct sampler *s, json_t *o)
{
	struct probe_link_stats ps;

	probe_link_get_stats(s->probe, &ps);
	json_object_set_new(o, "probe_link",
		json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "answers", (json_int_t)ps.answers,
			"records_last", (json_int_t)ps.records_last, "exits_seen",
			(json_int_t)ps.exits_seen, "gpu_exits_between_polls",
			(json_int_t)ps.gpu_exits_between_polls, "gpu_records_unmatched",
			(json_int_t)ps.gpu_records_unmatched, "probe_drops_total",
			(json_int_t)ps.probe_drops_total));
}

/* What names a GPU here: the device set's rules, the majors with NVIDIA's
 * numbering and the devices behind render and accel nodes, in index order
 * (bench/gpu-host.sh prints them); the UUIDs and MIG instances the driver
 * names, and the GPU allocations of the kubelet's checkpoint (null: none read). */
static void gpu_status(const struct sampler *s, json_t *o)
{
	json_t *nv = json_array(), *devs = json_array();
	char rules[1024];

	gpudev_set_format(&s->gpu.set, rules, sizeof(rules));
	for (size_t i = 0; i < s->gpu_index.nvidia_count; i++)
		json_array_append_new(nv, json_integer(s->gpu_index.nvidia_majors[i]));
	for (size_t i = 0; i < s->gpu_index.devices_count; i++)
		json_array_append_new(devs, json_string(s->gpu_index.devices[i]));
	json_object_set_new(o, "gpu_device_rules", json_string(rules));
	json_object_set_new(o, "gpu_devices_waiting", json_string(s->gpu.waiting));
	json_object_set_new(o, "gpu_nvidia_majors", nv);
	json_object_set_new(o, "gpu_index_devices", devs);
	json_object_set_new(
		o, "gpu_driver_uuids", json_integer((json_int_t)s->gpu_index.nv.gpus_count));
	json_object_set_new(
		o, "mig_instances", json_integer((json_int_t)s->gpu_index.nv.mig_count));
	json_object_set_new(o, "kubelet_gpu_allocations",
		s->kubelet.loaded ? json_integer((json_int_t)s->kubelet.devices_count)
				  : json_null());
}

/* The fields this host's rows leave out, and why: {"gpus_allocated": "...", ...}. */
static void left_out_status(const struct sampler *s, json_t *o)
{
	struct left_out left_out[LEFT_OUT_MAX];
	size_t n = sampler_left_out(s, left_out);
	json_t *fields = json_object();

	for (size_t i = 0; i < n; i++)
		json_object_set_new(fields, left_out[i].field, json_string(left_out[i].why));
	json_object_set_new(o, "left_out", fields);
}

static json_t *status_json(struct sampler *s)
{
	struct spool_stats sp;
	size_t containers = 0;
	json_t *o;

	spool_stats(s->spool, &sp);
	if (cgroup_table_containers(s->cgroups, &containers) < 0)
		return NULL;
	o = json_pack("{s:I, s:I, s:I, s:I, s:f, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:b,"
		      " s:s, s:s, s:s, s:I, s:I, s:I, s:b}",
		"processes_tracked", (json_int_t)s->procs.count, "processes_untracked",
		(json_int_t)s->procs.untracked, "containers", (json_int_t)containers, "polls",
		(json_int_t)s->stats.polls, "last_poll_ms", (double)s->stats.duration_us / 1000.0,
		"last_poll_cpu_ms", (double)s->stats.cpu_us / 1000.0, "rows_last_poll",
		(json_int_t)s->stats.rows, "rows_total", (json_int_t)s->stats.rows_total,
		"rows_failed", (json_int_t)s->stats.rows_failed, "spool_bytes",
		(json_int_t)sp.bytes, "batches_unacked", (json_int_t)sp.batches, "dropped_batches",
		(json_int_t)sp.dropped_batches, "dropped_rows", (json_int_t)sp.dropped_rows,
		"spool_dropping", sp.dropping, "spool_persistent", sp.persistent, "writer",
		writer_link_state(s->writer), "probe", probe_link_state(s->probe), "catalog",
		s->catalog->source, "poll_interval_ms", (json_int_t)s->cfg.poll_interval_ms,
		"idle_every", (json_int_t)s->cfg.idle_every, "fds_open",
		(json_int_t)s->procs.fds_open, "gpu_devices_present", s->gpu.registered);
	if (!o)
		return NULL;
	/* answered between the slices of a poll too */
	json_object_set_new(o, "poll_running", json_boolean(s->poll.running));
	json_object_set_new(o, "polls_late", json_integer((json_int_t)s->stats.polls_late));
	json_object_set_new(o, "textfile",
		json_string(s->textfile_dir.state[0] ? s->textfile_dir.state : "not written yet"));
	probe_status(s, o);
	gpu_status(s, o);
	left_out_status(s, o);
	return o;
}

/* Degraded while rows cannot reach the writer: they wait in the spool. */
static int status_reply(struct sampler *s, struct evbuffer *reply)
{
	json_t *figures = status_json(s);
	const char *writer = writer_link_state(s->writer);
	bool ok = !strcmp(writer, "connected");
	char why[320];

	if (!figures)
		return -ENOMEM;
	snprintf(why, sizeof(why), "writer: %s", writer);
	return daemon_status(ok ? "up" : "degraded", ok ? NULL : why, figures, reply);
}

/* Config, catalog and GPU set, loaded together; on any error nothing is kept. */
static int settings_load(
	const struct sampler *s, struct sampler_settings *ret, char *err, size_t err_len)
{
	char *errors = NULL;
	const char *catalog_path;
	int r;

	r = daemon_reload_config(s->config_path, &ret->cfg, &errors);
	if (r) {
		snprintf(err, err_len, "%s", errors ? errors : strerror(-r));
		free(errors);
		return r;
	}
	catalog_path = s->frameworks_path ? s->frameworks_path : ret->cfg.frameworks;
	r = catalog_load(catalog_path, &ret->catalog, err, err_len);
	if (r)
		return r;
	r = gpudev_watch_init(&ret->gpu, ret->cfg.gpu_devices, "/proc/devices", err, err_len);
	if (r)
		catalog_free(ret->catalog);
	return r;
}

static int settings_apply(struct sampler *s, struct sampler_settings *set)
{
	int r;

	catalog_free(s->catalog);
	s->catalog = set->catalog;
	s->gpu = set->gpu;
	proc_table_rescan_fds(&s->procs);
	s->gpu_index.next_load_gen = 0; /* names of GPUs read again at the next poll */
	s->cfg = set->cfg;
	spool_set_max(s->spool, s->cfg.spool_size_bytes);
	/* catalog indices changed meaning: detect again (once for old processes) */
	proc_table_redetect(&s->procs);
	r = sampler_arm_timer(s);
	log_info("reloaded: poll every %llu ms, idle rows every %u polls, catalog %s",
		(unsigned long long)s->cfg.poll_interval_ms, s->cfg.idle_every, s->catalog->source);
	return r;
}

/* A reload checked while a poll ran, applied at its end (poll.c's at_end hook). */
static void reload_pending(struct sampler *s)
{
	if (settings_apply(s, s->reload_pending))
		log_warnx("reload: the poll timer could not be armed again");
	free(s->reload_pending);
	s->reload_pending = NULL;
}

/*
 * Reloads config and catalog together; on any error nothing changes.  While
 * a poll runs, what is loaded waits for its end: its rows keep the catalog
 * and GPU set they began with.
 */
int sampler_reload(void *ctx, char **ret_errors)
{
	struct sampler *s = ctx;
	struct sampler_settings set;
	char err[CONFIG_ERRORS_MAX * 128];
	int r = settings_load(s, &set, err, sizeof(err));

	if (r) {
		*ret_errors = strdup(err);
		return r;
	}
	if (!s->poll.running)
		return settings_apply(s, &set);
	if (!s->reload_pending && !(s->reload_pending = calloc(1, sizeof(set)))) {
		catalog_free(set.catalog);
		*ret_errors = NULL;
		return -ENOMEM;
	}
	if (s->reload_pending->catalog)
		catalog_free(s->reload_pending->catalog); /* a later reload replaces it */
	*s->reload_pending = set;
	s->poll.at_end = reload_pending;
	return 0;
}

static int label_request(struct sampler *s, struct msg_cursor *payload, struct evbuffer *reply)
{
	const char *id, *label;
	int r;

	if (msg_get_str(payload, &id, CONTAINER_ID_LEN) ||
		msg_get_str(payload, &label, CTL_LABEL_MAX) || msg_end(payload)) {
		evbuffer_add_printf(reply, "bad label request: expected container id and label");
		return -EINVAL;
	}
	if (strlen(id) != CONTAINER_ID_LEN || strspn(id, "0123456789abcdef") != CONTAINER_ID_LEN) {
		evbuffer_add_printf(reply, "container id must be 64 lowercase hex digits");
		return -EINVAL;
	}
	r = sampler_label_set(s, id, label);
	if (r) {
		evbuffer_add_printf(reply, "label not set: %s", strerror(-r));
		return r;
	}
	log_info("label of container %.12s %s", id, *label ? "set" : "cleared");
	evbuffer_add_printf(reply, *label ? "label set" : "label cleared");
	return 0;
}

int sampler_ctl(void *ctx, uint32_t type, struct msg_cursor *payload, struct evbuffer *reply)
{
	struct sampler *s = ctx;

	switch (type) {
	case MT_CTL_STATUS:
		return status_reply(s, reply);
	case MT_CTL_RELOAD:
		return daemon_ctl_reload(sampler_reload, s,
			s->poll.running ? "reloaded, in effect when the poll under way ends"
					: "reloaded",
			reply);
	case MT_CTL_LABEL:
		return label_request(s, payload, reply);
	default:
		evbuffer_add_printf(reply, "croft-sampler does not answer %s", msg_type_name(type));
		return -EOPNOTSUPP;
	}
}
