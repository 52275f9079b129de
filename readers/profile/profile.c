/*
 * profile.c: croft profile.  Workers turn the selected rows into steps of
 * the per-poll sums (steps.c) and, per process and file, a track
 * (tracks.c) with its GPU phases whose first row join.c
 * settles.  Invoking user, no privilege.
 */
#include <stdlib.h>
#include <string.h>

#include "profile.h"

static int phase_of(const struct row *r)
{
	static const int8_t by_activity[GA_COUNT] = {
		[GA_UNKNOWN] = PH_UNKNOWN, [GA_BUSY] = PH_BUSY, [GA_IDLE] = PH_IDLE
	};

	if (r->workload == WL_GPU_ONSET)
		return PH_ONSET;
	if (r->workload != WL_GPU_HELD)
		return -1;
	return by_activity[row_activity(r)];
}

static struct phase_gpus row_gpus(const struct row *r)
{
	struct phase_gpus g = { .known = (r->has & HAS_GPUS) != 0 };

	memcpy(g.bits, r->gpus, sizeof(g.bits));
	return g;
}

static void push_stretch(struct pworker *w, struct profile_track *track, int kind, int64_t start,
	int64_t end, const struct phase_gpus *gpus)
{
	if (!VEC_ROOM(w->st, w->st_cap, w->st_count)) {
		w->sw.oom = true;
		return;
	}
	uint32_t i = (uint32_t)w->st_count++;
	w->st[i] = (struct stretch){ start, end, NONE_ID, (uint8_t)kind, *gpus };
	if (track->st_first == NONE_ID)
		track->st_first = i;
	else
		w->st[track->st_last].next = i;
	track->st_last = i;
	track->open_kind = (int8_t)kind;
}

/* The row's GPU phase: extends the open stretch (same kind, same GPUs) or
 * starts one.  A first row's stretch starts at the row for now; the join
 * moves it back. */
static void track_phase(struct pworker *w, struct profile_track *track, const struct row *r,
	uint64_t weight, bool first)
{
	int kind = phase_of(r);
	struct phase_gpus gpus = row_gpus(r);

	if (track->open_kind >= 0 &&
		(track->open_kind != kind || !phase_gpus_equal(&w->st[track->st_last].gpus, &gpus)))
		track->open_kind = -1;
	if (kind < 0)
		return;
	if (!first)
		w->phase_ms[kind] += weight;
	if (track->open_kind == kind)
		w->st[track->st_last].end_ms = r->unix_ms;
	else
		push_stretch(w, track, kind, r->unix_ms - (int64_t)weight, r->unix_ms, &gpus);
}

/* A track's first row: the join moves its phase's start back. */
static void track_first(
	struct pworker *w, struct profile_track *track, const struct row *r, const struct sample *s)
{
	track->first = *s;
	track->last = *s;
	track->st_first = NONE_ID;
	track->st_last = NONE_ID;
	track->first_kind = (int8_t)phase_of(r);
	track->open_kind = -1;
	track_phase(w, track, r, 0, true);
	steps_first(w, s);
}

static void origins_add(struct row_origins *o, const struct row *r)
{
	int k;

	if (r->label.ptr) {
		k = r->label_source.ptr
			    ? label_source_parse(r->label_source.ptr, r->label_source.len)
			    : -1;
		o->label_rows[k > 0 ? k : LABEL_NONE]++;
	}
	if (r->exited.ptr && (k = exit_kind_parse(r->exited.ptr, r->exited.len)) > 0)
		o->exits[k]++;
}

static void profile_row(void *ctx, const struct row *r)
{
	struct pworker *w = ctx;
	struct sample s;
	struct profile_track *track;
	uint64_t weight;
	bool first;

	if (w->sw.oom)
		return;
	steps_poll(w, r->unix_ms);
	if (!filter_match(&w->sw.o->filter, r))
		return;
	w->has_any |= r->has;
	origins_add(&w->origins, r);
	row_sample(r, &s);
	track = track_row(&w->sw, r, &weight, &first);
	if (!track)
		return;
	if (first) {
		track_first(w, track, r, &s);
		return;
	}
	steps_next(w, &track->last, &s);
	track->last = s;
	track_phase(w, track, r, weight, false);
}

/* The file's processes end at their last rows, unless the join finds them go on. */
static void profile_file_end(void *ctx, uint32_t file)
{
	struct pworker *w = ctx;

	for (size_t i = w->sw.file_first; i < w->sw.tracks_count && !w->sw.oom; i++)
		steps_end(w, &((struct profile_track *)track_at(&w->sw, i))->last);
}

static void pworker_free(struct pworker *w)
{
	track_worker_free(&w->sw);
	i64map_free(&w->step_index);
	free(w->st);
	steps_free(&w->steps);
}

int cmd_profile(int argc, char **argv)
{
	static const struct ds_sink sink = { track_file_begin, profile_row, profile_file_end };
	struct read_opts o;
	struct ds_files files = { 0 };
	struct ds_report rep;
	struct profile_result res = { 0 };
	struct pworker *pw;
	void *ctxs[DS_THREADS_MAX];
	int r = read_opts_parse(argc, argv, true, &o), status = 1;

	if (r != 0)
		return r > 0 ? 0 : 2;
	pw = track_workers_new(&o, sizeof(*pw), sizeof(struct profile_track), true, ctxs);
	if (!pw)
		return 1;
	for (int k = 0; k < o.threads; k++)
		pw[k].cached_ms[0] = pw[k].cached_ms[1] = pw[k].poll_ms = INT64_MIN;
	ds_report_init(&rep);
	if (read_dataset(&o, &sink, ctxs, o.threads, &files, &rep) < 0)
		goto out;
	if (profile_join(ctxs, o.threads, &res) < 0) {
		fprintf(stderr, "croft profile: out of memory\n");
		goto out;
	}
	if (o.svg_path && profile_write_svg(&o, &res) < 0)
		goto out;
	if (o.json)
		profile_print_json(&o, &res, &files, &rep);
	else
		profile_print_table(&o, &res, &files, &rep);
	status = exit_status(&rep);
out:
	for (int k = 0; k < o.threads; k++)
		pworker_free(&pw[k]);
	for (size_t i = 0; i < res.top_count; i++)
		free((char *)res.top[i].name);
	free(pw);
	free(res.phases);
	free(res.samples_v);
	ds_files_free(&files);
	ds_report_free(&rep);
	return status;
}
