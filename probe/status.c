/*
 * status.c: probe.ctl requests.  status: programs and their variant, the
 * fallbacks taken and why, the concerns that failed to load and the row
 * fields left out (each with why), where socket bytes are counted (or why not), the
 * capabilities kept, map fill, drops per reason, fork/exec/exit events
 * seen, delivered and dropped, exits seen, peers.  reload: the GPU device
 * set from croft.conf, written into the device map without reloading any
 * program; the same when /proc/devices changes.  croft-probe, croft user,
 * after the drop (map updates go through fds it already holds).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <jansson.h>

#include "daemon.h"
#include "log.h"
#include "probed.h"
#include "rowdef.h"

static json_t *programs_json(const struct probe_objs *objs)
{
	json_t *progs = json_object();

	for (int c = 0; c < CONCERNS; c++) {
		const char *v = loader_has(objs, c) ? concerns[c].variant(&objs->plan) : NULL;

		json_object_set_new(progs, concerns[c].name, v ? json_string(v) : json_null());
	}
	return progs;
}

/* The verifier's count per loaded program: {"sys_enter_btf": 37, ...}. */
static json_t *verified_json(const struct probe_objs *objs)
{
	json_t *verified = json_object();

	for (size_t i = 0; i < objs->verified_count; i++)
		json_object_set_new(verified, objs->verified[i].name,
			json_integer((json_int_t)objs->verified[i].insns));
	return verified;
}

/* The concerns that did not load or attach: {"sched": "load: ...", ...}. */
static json_t *failed_json(const struct probe_objs *objs)
{
	json_t *failed = json_object();

	for (int c = 0; c < CONCERNS; c++)
		if (objs->failed[c][0])
			json_object_set_new(failed, concerns[c].name, json_string(objs->failed[c]));
	return failed;
}

/* Why concern's fields are left out, NULL when they are not. */
static const char *left_out_why(const struct probe_objs *objs, enum probe_concern concern)
{
	if (objs->failed[concern][0])
		return objs->failed[concern];
	if (concern == CONCERN_NET && objs->plan.net == NET_NONE)
		return objs->plan.why[CONCERN_NET];
	return NULL;
}

/* Every row field the probe would give and does not: {"usage.runqueue_s": "sched: ...", ...}. */
static json_t *left_out_json(const struct probe_objs *objs)
{
	json_t *left_out = json_object();
	char why[PROBE_FAILED_LEN + 32];

	for (int c = 0; c < CONCERNS; c++) {
		const char *because = left_out_why(objs, c);

		if (!because)
			continue;
		snprintf(why, sizeof(why), "%s: %s", concerns[c].name, because);
		for (int f = 0; f < RF_COUNT; f++)
			if (row_fields[f].left_by & concerns[c].left_by)
				json_object_set_new(left_out, row_fields[f].path, json_string(why));
	}
	return left_out;
}

/* Only the fallbacks taken: {"ioctl": "what instead: why", ...}. */
static json_t *fallbacks_json(const struct probe_plan *plan)
{
	json_t *fallbacks = json_object();

	for (int i = 0; i <= PLAN_ALL; i++)
		if (plan->why[i][0])
			json_object_set_new(fallbacks,
				i == PLAN_ALL ? "programs" : concerns[i].name,
				json_string(plan->why[i]));
	return fallbacks;
}

static json_t *net_json(const struct probe_plan *plan)
{
	if (plan->net == NET_NONE)
		return json_pack("{s:b, s:s}", "available", 0, "why", plan->why[CONCERN_NET]);
	return json_pack("{s:b, s:s}", "available", 1, "source", features_net_source(plan->net));
}

static json_t *maps_json(const struct probe_state *st, const struct collector_stats *cs)
{
	json_t *maps = json_object();

	for (int c = 0; c < CONCERNS; c++) {
		int max = loader_map_max(st->objs, c);

		if (max > 0)
			json_object_set_new(maps, concerns[c].name,
				json_pack("{s:I, s:I, s:I, s:I}", "entries_last_answer",
					(json_int_t)cs->entries_last[c], "max_entries",
					(json_int_t)max, "full_answers",
					(json_int_t)cs->full_answers[c], "fields_left_out_answers",
					(json_int_t)cs->voided_answers[c]));
	}
	return maps;
}

static json_t *drops_json(const struct probe_state *st, const struct collector_stats *cs)
{
	json_t *drops = json_object();
	uint64_t now[PROBE_DROP_REASONS];
	const uint64_t *src = cs->drops_total;

	if (loader_drops(st->objs, now) == 0)
		src = now;
	for (int r = 0; r < PROBE_DROP_REASONS; r++)
		json_object_set_new(drops, concern_drop_name(r), json_integer((json_int_t)src[r]));
	json_object_set_new(drops, "exit_queue_full", json_integer((json_int_t)cs->exits_unqueued));
	return drops;
}

/* Per kind, as of the last answer: seen == delivered + dropped unless events were lost. */
static json_t *events_json(const struct collector_stats *cs)
{
	static const char *const kinds[PROBE_EV_SLOTS] = {
		[PROBE_EV_FORK] = "fork",
		[PROBE_EV_EXEC] = "exec",
		[PROBE_EV_EXIT] = "exit",
	};
	json_t *events = json_object();

	for (int k = 0; k < PROBE_EV_SLOTS; k++) {
		const struct event_tally *t = &cs->events[k];

		if (kinds[k])
			json_object_set_new(events, kinds[k],
				json_pack("{s:I, s:I, s:I}", "seen", (json_int_t)t->seen,
					"delivered", (json_int_t)t->delivered, "dropped",
					(json_int_t)t->dropped));
	}
	return events;
}

/*
 * Reaped groups (exit.bpf.c): seen by the programs, dropped by the full ring
 * buffer, delivered to us, cut from answers over PROBE_FINALS_MAX; the exes
 * or exit times the full lives map could not keep; and the exec's
 * arguments the full ring buffer dropped, or we could not keep (their
 * between-polls rows leave the framework out).
 */
static json_t *finals_json(const struct probe_state *st, const struct collector_stats *cs)
{
	struct probe_final_count k;

	if (loader_final_counts(st->objs, &k) < 0)
		memset(&k, 0, sizeof(k));
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "seen", (json_int_t)k.seen,
		"dropped", (json_int_t)k.dropped, "delivered", (json_int_t)cs->finals_delivered,
		"cut", (json_int_t)cs->finals_cut, "lives_full", (json_int_t)k.lives_full,
		"argvs_dropped", (json_int_t)k.argvs_dropped, "argvs_unkept",
		(json_int_t)cs->argvs_unkept);
}

void *status_figures(struct probe_state *st)
{
	const struct collector_stats *cs = collector_stats(st->col);
	const struct daemon_figure figures[] = {
		{ "programs", programs_json(st->objs) },
		{ "fallbacks", fallbacks_json(&st->objs->plan) },
		{ "failed", failed_json(st->objs) },
		{ "left_out", left_out_json(st->objs) },
		{ "verified_insns", verified_json(st->objs) },
		{ "net", net_json(&st->objs->plan) },
		{ "capabilities", json_string(st->caps_kept[0] ? st->caps_kept : "none") },
		{ "maps", maps_json(st, cs) },
		{ "drops", drops_json(st, cs) },
		{ "answers", json_integer(cs->answers) },
		{ "exits_seen", json_integer(cs->exits_seen) },
		{ "events", events_json(cs) },
		{ "finals", finals_json(st, cs) },
		{ "procs_last_answer", json_integer(cs->procs_last) },
		{ "collect_ms_last", json_real((double)cs->collect_ns_last / 1e6) },
		{ "gpu_rules", json_integer(st->gpus.set.rules_count) },
		{ "gpu_devices_waiting", json_string(st->gpus.waiting) },
	};
	json_t *root = daemon_figures_new(figures, FIGURES_COUNT(figures));

	if (root)
		server_status(st->srv, root);
	return root;
}

/*
 * The device map takes the new set before st->gpus does: should the update
 * fail, the next drain tries again (logged once) and status shows the set
 * the map holds.
 */
void status_follow_devices(struct probe_state *st)
{
	struct gpudev_watch next = st->gpus;
	char err[256], rules[512];
	const char *waiting;
	bool changed;
	int r;

	if (gpudev_watch_refresh(&next, &changed, err, sizeof(err)) < 0)
		log_warnx("GPU devices: keeping the set as it was: %s", err);
	if (changed && (r = loader_set_gpu_rules(st->objs, &next.set)) < 0) {
		if (r != st->gpu_map_error)
			log_warnx("GPU devices: /proc/devices changed, cannot update the device "
				  "map: %s",
				strerror(-r));
		st->gpu_map_error = r;
		return;
	}
	st->gpus = next;
	st->gpu_map_error = 0;
	if ((waiting = gpudev_watch_waiting_news(&st->gpus)))
		log_warnx(GPUDEV_WAITING_FMT, waiting);
	if (!changed)
		return;
	gpudev_set_format(&st->gpus.set, rules, sizeof(rules));
	log_info("GPU devices: /proc/devices changed, %zu rules now: %s", st->gpus.set.rules_count,
		rules);
}
