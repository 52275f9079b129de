/*
 * profile.c: croft profile.  Workers turn the selected rows into steps of
 * the per-poll sums (profile_steps.c) and, per process and file, a segment
 * with its GPU phases and syscall calls whose first row profile_join.c
 * settles.  Invoking user, no privilege.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "profile.h"

/* Grows *v (elements of elem bytes) to hold one more; false when out of memory. */
static bool room(void **v, size_t *cap, size_t count, size_t elem)
{
	if (count < *cap)
		return true;
	size_t n = *cap ? *cap * 2 : 1024;
	void *p = realloc(*v, n * elem);
	if (!p)
		return false;
	*v = p;
	*cap = n;
	return true;
}

static int phase_of(const struct row *r)
{
	if (r->workload == WL_GPU_ONSET)
		return PH_ONSET;
	if (r->workload != WL_GPU_HELD)
		return -1;
	if (!(r->has & HAS_IOCTL))
		return PH_HELD;
	return r->ioctl_count > 0 ? PH_ACTIVE : PH_IDLE;
}

static struct phase_gpus row_gpus(const struct row *r)
{
	struct phase_gpus g = { .known = (r->has & HAS_GPUS) != 0 };

	memcpy(g.bits, r->gpus, sizeof(g.bits));
	return g;
}

static void push_stretch(struct pworker *w, struct pseg *seg, int kind, int64_t start, int64_t end,
	const struct phase_gpus *gpus)
{
	if (!room((void **)&w->st, &w->st_cap, w->st_count, sizeof(*w->st))) {
		w->oom = true;
		return;
	}
	uint32_t i = (uint32_t)w->st_count++;
	w->st[i] = (struct stretch){ start, end, NONE_ID, (uint8_t)kind, *gpus };
	if (seg->st_first == NONE_ID)
		seg->st_first = i;
	else
		w->st[seg->st_last].next = i;
	seg->st_last = i;
	seg->open_kind = (int8_t)kind;
}

/* The row's GPU phase: extends the open stretch (same kind, same GPUs) or
 * starts one.  A first row's stretch starts at the row for now; the join
 * moves it back. */
static void seg_phase(
	struct pworker *w, struct pseg *seg, const struct row *r, uint64_t weight, bool first)
{
	int kind = phase_of(r);
	struct phase_gpus gpus = row_gpus(r);

	if (seg->open_kind >= 0 &&
		(seg->open_kind != kind || !phase_gpus_equal(&w->st[seg->st_last].gpus, &gpus)))
		seg->open_kind = -1;
	if (kind < 0)
		return;
	if (!first)
		w->phase_ms[kind] += weight;
	if (seg->open_kind == kind)
		w->st[seg->st_last].end_ms = r->unix_ms;
	else
		push_stretch(w, seg, kind, r->unix_ms - (int64_t)weight, r->unix_ms, &gpus);
}

static void add_calls(struct pworker *w, const struct row *r, uint64_t weight)
{
	for (uint32_t i = 0; i < r->syscalls_count; i++) {
		const struct row_syscall *sc = &r->syscalls[i];
		uint32_t id = strtab_intern(&w->syscalls, sc->name.ptr, sc->name.len);
		if (id == NONE_ID) {
			w->oom = true;
			return;
		}
		while (id >= w->calls_cap) {
			size_t old = w->calls_cap;
			if (!room((void **)&w->calls, &w->calls_cap, old, sizeof(*w->calls))) {
				w->oom = true;
				return;
			}
			memset(w->calls + old, 0, (w->calls_cap - old) * sizeof(*w->calls));
		}
		if (sc->rate_e4 > 0)
			w->calls[id] += (u128_p)sc->rate_e4 * weight;
	}
}

static void defer_calls(struct pworker *w, struct pseg *seg, const struct row *r)
{
	seg->sys_off = (uint32_t)w->sys_count;
	for (uint32_t i = 0; i < r->syscalls_count; i++) {
		const struct row_syscall *sc = &r->syscalls[i];
		uint32_t id = strtab_intern(&w->syscalls, sc->name.ptr, sc->name.len);
		if (id == NONE_ID ||
			!room((void **)&w->sys, &w->sys_cap, w->sys_count, sizeof(*w->sys))) {
			w->oom = true;
			return;
		}
		if (sc->rate_e4 <= 0)
			continue;
		w->sys[w->sys_count++] = (struct sys_ref){ id, sc->rate_e4 };
		seg->sys_n++;
	}
}

static struct pseg *seg_start(
	struct pworker *w, const struct row *r, const struct sample *s, uint64_t ident)
{
	if (!room((void **)&w->segs, &w->segs_cap, w->segs_count, sizeof(*w->segs)))
		return NULL;
	struct pseg *seg = &w->segs[w->segs_count++];
	*seg = (struct pseg){ .key = { r->tgid, r->unix_ms, r->unix_ms, ident, w->file },
		.first = *s,
		.last = *s,
		.st_first = NONE_ID,
		.st_last = NONE_ID,
		.first_kind = (int8_t)phase_of(r),
		.open_kind = -1,
		.worker = w->index };
	seg_phase(w, seg, r, 0, true);
	defer_calls(w, seg, r);
	steps_first(w, s);
	return seg;
}

static void profile_row(void *ctx, const struct row *r)
{
	struct pworker *w = ctx;
	struct sample s;

	if (w->oom)
		return;
	steps_poll(w, r->unix_ms);
	if (!filter_match(&w->o->filter, r))
		return;
	if (w->rows++ == 0 || r->unix_ms < w->first_ms)
		w->first_ms = r->unix_ms;
	if (w->rows == 1 || r->unix_ms > w->last_ms)
		w->last_ms = r->unix_ms;
	w->has_any |= r->has;
	row_sample(r, &s);

	uint64_t ident = row_ident(r);
	struct i64_slot *slot = i64map_slot(&w->tgids, r->tgid);
	struct pseg *seg = NULL;

	if (!slot) {
		w->oom = true;
		return;
	}
	if (slot->gen == w->tgids.gen) {
		seg = &w->segs[slot->value];
		if (!seg_key_continues(&seg->key, r->tgid, ident, r->unix_ms, w->o->gap_ms))
			seg = NULL;
	}
	if (seg) {
		uint64_t weight = (uint64_t)(r->unix_ms - seg->key.last_ms);
		seg->key.last_ms = r->unix_ms;
		steps_next(w, &seg->last, &s);
		seg->last = s;
		seg_phase(w, seg, r, weight, false);
		add_calls(w, r, weight);
		return;
	}
	seg = seg_start(w, r, &s, ident);
	if (!seg) {
		w->oom = true;
		return;
	}
	i64map_set(&w->tgids, slot, r->tgid, (uint32_t)(seg - w->segs));
}

/* A new file: its rows start their own segments. */
static void profile_file_begin(void *ctx, uint32_t file)
{
	struct pworker *w = ctx;

	i64map_clear(&w->tgids);
	w->file = file;
	w->file_segs = w->segs_count;
}

/* The file's processes end at their last rows, unless the join finds them go on. */
static void profile_file_end(void *ctx, uint32_t file)
{
	struct pworker *w = ctx;

	for (size_t i = w->file_segs; i < w->segs_count && !w->oom; i++)
		steps_end(w, &w->segs[i].last);
}

static void pworker_free(struct pworker *w)
{
	strtab_free(&w->syscalls);
	i64map_free(&w->tgids);
	i64map_free(&w->step_index);
	free(w->calls);
	free(w->segs);
	free(w->st);
	free(w->sys);
	steps_free(&w->steps);
}

int cmd_profile(int argc, char **argv)
{
	static const struct ds_sink sink = { profile_file_begin, profile_row, profile_file_end };
	struct read_opts o;
	struct ds_files files = { 0 };
	struct ds_report rep;
	struct profile_result res = { 0 };
	struct pworker *pw;
	void *ctxs[DS_THREADS_MAX];
	int r = read_opts_parse(argc, argv, true, &o), status = 1;

	if (r != 0)
		return r > 0 ? 0 : 2;
	pw = calloc((size_t)o.threads, sizeof(*pw));
	if (!pw)
		return 1;
	for (int k = 0; k < o.threads; k++) {
		pw[k] = (struct pworker){
			.o = &o, .index = (uint8_t)k, .cached_ms = { INT64_MIN, INT64_MIN }
		};
		ctxs[k] = &pw[k];
	}
	ds_report_init(&rep);
	if (read_dataset(&o, &sink, ctxs, o.threads, &files, &rep) < 0)
		goto out;
	if (profile_join(&o, pw, o.threads, &res) < 0) {
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
