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

/* The fields this host's rows leave out, and why: {"gpus_allocated": "...", ...}. */
static json_t *left_out_json(const struct sampler *s)
{
	struct left_out left_out[LEFT_OUT_MAX];
	size_t n = sampler_left_out(s, left_out);
	json_t *fields = json_object();

	for (size_t i = 0; fields && i < n; i++)
		json_object_set_new(fields, left_out[i].field, json_string(left_out[i].why));
	return fields;
}

/* The names of GPUs here: the majors with NVIDIA's numbering and the
 * devices behind render and accel nodes, in index order (bench/gpu-host.sh
 * prints them). */
static json_t *gpu_index_json(const struct sampler *s, bool majors)
{
	json_t *a = json_array();
	size_t n = majors ? s->gpu_index.nvidia_count : s->gpu_index.devices_count;

	for (size_t i = 0; a && i < n; i++)
		json_array_append_new(a, majors ? json_integer(s->gpu_index.nvidia_majors[i])
						: json_string(s->gpu_index.devices[i]));
	return a;
}

/* "read" while NVML answers, else why its figures are left out. */
static const char *nvml_state(struct sampler *s, char *buf, size_t size)
{
	struct left_out lo[2];

	if (sampler_nvml_left_out(s, lo, 2) == 2 &&
		lo[0].field == row_fields[RF_GPU_MEMORY_BYTES].path)
		snprintf(buf, size, "%s", lo[0].why);
	else
		snprintf(buf, size, "read");
	return buf;
}

/* The figures: one row each, in the order croftctl shows them; the device
 * set's rules, the UUIDs and MIG instances the driver names, and the GPU
 * allocations of the kubelet's checkpoint (null: none read) last. */
static json_t *status_json(struct sampler *s)
{
	struct probe_link_stats ps;
	struct spool_stats sp;
	size_t containers = 0;
	char rules[1024], nvml[LEFT_OUT_WHY_MAX];
	uint64_t rounds = 0, hangs = 0;

	spool_stats(s->spool, &sp);
	if (cgroup_table_containers(s->cgroups, &containers) < 0)
		return NULL;
	probe_link_get_stats(s->probe, &ps);
	gpudev_set_format(&s->gpu.set, rules, sizeof(rules));
	if (s->nvml)
		nvml_counts(s->nvml, &rounds, &hangs);
	const struct daemon_figure figures[] = {
		{ "processes_tracked", json_integer(s->procs.count) },
		{ "processes_untracked", json_integer(s->procs.untracked) },
		{ "containers", json_integer(containers) },
		{ "polls", json_integer(s->stats.polls) },
		{ "last_poll_ms", json_real((double)s->stats.duration_us / 1000.0) },
		{ "last_poll_cpu_ms", json_real((double)s->stats.cpu_us / 1000.0) },
		{ "rows_last_poll", json_integer(s->stats.rows) },
		{ "rows_total", json_integer(s->stats.rows_total) },
		{ "rows_failed", json_integer(s->stats.rows_failed) },
		{ "spool_bytes", json_integer(sp.bytes) },
		{ "batches_unacked", json_integer(sp.batches) },
		{ "dropped_batches", json_integer(sp.dropped_batches) },
		{ "dropped_rows", json_integer(sp.dropped_rows) },
		{ "spool_dropping", json_boolean(sp.dropping) },
		{ "spool_persistent", json_boolean(sp.persistent) },
		{ "writer", json_string(writer_link_state(s->writer)) },
		{ "probe", json_string(probe_link_state(s->probe)) },
		{ "catalog", json_string(s->catalog->source) },
		{ "poll_interval_ms", json_integer(s->cfg.poll_interval_ms) },
		{ "idle_every", json_integer(s->cfg.idle_every) },
		{ "fds_open", json_integer(s->procs.fds_open) },
		{ "gpu_devices_present", json_boolean(s->gpu.registered) },
		{ "poll_running",
			json_boolean(s->poll.running) }, /* answered between a poll's slices too */
		{ "polls_late", json_integer(s->stats.polls_late) },
		{ "textfile", json_string(s->textfile_dir.state[0] ? s->textfile_dir.state
								   : "not written yet") },
		{ "probe_link.answers", json_integer(ps.answers) },
		{ "probe_link.records_last", json_integer(ps.records_last) },
		{ "probe_link.exits_seen", json_integer(ps.exits_seen) },
		{ "probe_link.gpu_exits_between_polls", json_integer(ps.gpu_exits_between_polls) },
		{ "probe_link.gpu_records_unmatched", json_integer(ps.gpu_records_unmatched) },
		{ "probe_link.probe_drops_total", json_integer(ps.probe_drops_total) },
		{ "probe_link.answers_lost", json_integer(ps.answers_lost) },
		{ "last_rows.probe", json_integer(s->stats.last_rows[EXIT_PROBE]) },
		{ "last_rows.between_polls", json_integer(s->stats.last_rows[EXIT_BETWEEN_POLLS]) },
		{ "last_rows.vanished", json_integer(s->stats.last_rows[EXIT_VANISHED]) },
		{ "last_rows.vanished_unread", json_integer((json_int_t)s->procs.vanished_unread) },
		{ "last_rows.finals_after_vanished",
			json_integer((json_int_t)s->procs.finals_after_vanished) },
		{ "gpu_device_rules", json_string(rules) },
		{ "gpu_devices_waiting", json_string(s->gpu.waiting) },
		{ "gpu_nvidia_majors", gpu_index_json(s, true) },
		{ "gpu_index_devices", gpu_index_json(s, false) },
		{ "gpu_driver_uuids", json_integer(s->gpu_index.nv.gpus_count) },
		{ "mig_instances", json_integer(s->gpu_index.nv.mig_count) },
		{ "kubelet_gpu_allocations",
			s->kubelet.loaded ? json_integer((json_int_t)s->kubelet.devices_count)
					  : json_null() },
		{ "nvml", json_string(nvml_state(s, nvml, sizeof(nvml))) },
		{ "nvml_gpus", json_integer((json_int_t)s->nvml_last.gpus_count) },
		{ "nvml_rounds", json_integer((json_int_t)rounds) },
		{ "nvml_hangs", json_integer((json_int_t)hangs) },
		{ "nvml_samples_clamped", json_integer((json_int_t)s->nvml_last.samples_clamped) },
		{ "left_out", left_out_json(s) },
	};

	return daemon_figures_new(figures, FIGURES_COUNT(figures));
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
	if (s->cfg.nvml == CONFIG_NVML_OFF) /* no library, handle or thread left */
		sampler_nvml_stop(s);
	else
		sampler_nvml_start(s);
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

_Static_assert(CTL_LABEL_ID_LEN == CONTAINER_ID_LEN, "croftctl checks the ids the sampler takes");

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
