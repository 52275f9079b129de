/*
 * dataset.c: the read both reports start with: the files collected, the
 * --framework pass, the workers run, every skip printed; and the row filter
 * their sinks ask.  croft stats/profile, invoking user, no privilege.
 */
#include <inttypes.h>
#include <limits.h>
#include <string.h>

#include "engine.h"

bool filter_in_span(const struct filter *f, int64_t ms)
{
	return (!f->has_since || ms >= f->since_ms) && (!f->has_until || ms < f->until_ms);
}

/* Whether the row's string is want, or (prefix) begins with it; want's ptr NULL: any. */
static bool str_match(const struct strv *v, const struct strv *want, bool prefix)
{
	return !want->ptr || (v->ptr && (prefix ? v->len >= want->len : v->len == want->len) &&
				     !memcmp(v->ptr, want->ptr, want->len));
}

bool filter_match(const struct filter *f, const struct row *row)
{
	return filter_in_span(f, row->unix_ms) && (!f->has_tgid || row->tgid == f->tgid) &&
	       str_match(&row->container_id, &f->container, true) &&
	       str_match(&row->pod_uid, &f->pod, true) &&
	       str_match(&row->label, &f->label, false) && str_match(&row->host, &f->host, false) &&
	       (!f->framework.ptr || (f->fw_select && fw_select_has(f->fw_select, row)));
}

int read_dataset(struct read_opts *o, const struct ds_sink *sink, void *const *ctxs, int threads,
	struct ds_files *ret_files, struct ds_report *rep)
{
	char err[PATH_MAX + 64];
	int r = ds_collect(o->paths, o->paths_count, ret_files, err, sizeof(err));
	struct fw_select *sel = NULL;

	if (r < 0) {
		fprintf(stderr, "croft %s: %s\n", o->cmd, err[0] ? err : strerror(-r));
		return r;
	}
	if (ret_files->n == 0)
		fprintf(stderr, "croft %s: no .jsonl or .jsonl.zst files under the given paths\n",
			o->cmd);
	if (o->filter.framework.ptr && (r = fw_select_build(o, ret_files, &sel)) == 0)
		o->filter.fw_select = sel;
	if (r == 0)
		r = ds_read(ret_files, threads, o->jansson_only, sink, ctxs, rep);
	o->filter.fw_select = NULL;
	fw_select_free(sel);
	if (r < 0) {
		fprintf(stderr, "croft %s: cannot read: %s\n", o->cmd, strerror(-r));
		return r;
	}
	ds_report_sort(rep);
	for (size_t i = 0; i < rep->skips_count; i++) {
		fprintf(stderr, "croft %s: ", o->cmd);
		put_text(stderr, ret_files->v[rep->skips[i].file].path, 0, 0);
		fprintf(stderr, ": %s\n", rep->skips[i].reason);
	}
	if (o->verbose)
		fprintf(stderr, "croft %s: %" PRIu64 " rows, %" PRIu64 " through jansson\n", o->cmd,
			rep->rows, rep->rows_jansson);
	return 0;
}
