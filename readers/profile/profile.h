/*
 * profile.h: the map of croft profile, a report over the engine: its
 * workers' sums (profile.c), the per-poll sums' steps (steps.c), how they
 * are joined into one result (join.c), printed (out.c) and charted
 * (svg.c).  Invoking user, no privilege.
 */
#ifndef CROFT_PROFILE_H
#define CROFT_PROFILE_H

#include "readers.h"

#define PHASES_SHOWN 1000 /* GPU phases listed; the count is exact */

/*
 * One poll's figures, summed over the selected processes alive then: what
 * the charts show.  Also one row's figures, and (in a step) what the sums
 * gain at one instant.
 */
struct sample {
	int64_t ms;
	int64_t cpu_x1e4, rss, threads, ioctls;
	int64_t rx_x1e4, tx_x1e4, read_x1e4, write_x1e4;
	int64_t sm_x1e4; /* gpu_sm_percent x 1e4 (NVML), summed over processes */
};

/* The kinds of figures: how long a row's value lasts (steps.c). */
enum fig_kind {
	FIG_LEVEL = 1, /* rss, threads: from its poll until the process's next row */
	FIG_RATE = 2,  /* cpu, network, disk, SM: the polls since the process's previous row */
	FIG_COUNT = 4, /* ioctls: its own poll */
	FIG_ALL = 7,
};

/* What the per-poll sums gain at d.ms; the polls are the instants rows were taken at. */
struct step {
	struct sample d;
	int32_t alive; /* selected processes begun minus ended */
	bool poll;     /* some row of the files (selected or not) was taken at d.ms */
};

struct steps {
	struct step *v;
	size_t count, cap;
};

/* gpu-onset, then gpu-held by its verdict (gpu_activity; none: unknown). */
enum phase_kind { PH_ONSET, PH_BUSY, PH_IDLE, PH_UNKNOWN, PH_KINDS };
const char *phase_name(enum phase_kind kind);

/* The GPUs a phase held: its rows' gpus, all the same (a change starts
 * another phase); known false where the rows carry none. */
struct phase_gpus {
	uint64_t bits[ROW_GPU_WORDS];
	bool known;
};

struct phase {
	int64_t tgid, start_ms, end_ms;
	enum phase_kind kind;
	struct phase_gpus gpus;
};

struct summary {
	double mean, p50, p95, max;
};

/* Whose word the rows are: labelled rows by label_source (LABEL_NONE:
 * older rows, which do not say), last rows by how the exit was seen. */
struct row_origins {
	uint64_t label_rows[LABEL_SOURCE_COUNT];
	uint64_t exits[EXIT_COUNT];
};

struct profile_result {
	uint64_t rows, processes, samples;
	int64_t first_ms, last_ms;
	struct summary cpu, rss;
	double threads_mean, threads_max;
	struct summary sm;             /* gpu_sm_percent (HAS_SM in has_any) */
	struct summary rx, tx, rd, wr; /* mean and max used */
	uint32_t has_any;              /* enum row_has: figures some row carried */
	struct phase *phases;
	size_t phases_count;
	struct phase_gpus gpus; /* every GPU a phase held */
	uint64_t phase_ms[PH_KINDS];
	struct row_origins origins;
	struct syscall_calls top[TOP_SYSCALLS_PROF]; /* names strdup'd */
	size_t top_count;
	u128 syscalls_x1e7;       /* all of them */
	struct sample *samples_v; /* for --svg */
};

/* One GPU phase inside one track; tracks chain theirs by index. */
struct stretch {
	int64_t start_ms, end_ms;
	uint32_t next; /* NONE_ID: the track's last */
	uint8_t kind;
	struct phase_gpus gpus;
};

/*
 * One process's rows in one file.  Its first row waits for the join: what
 * it stands for (and so its phase's start, its syscall calls) depends on
 * the process's previous row, maybe in another file.
 */
struct profile_track {
	struct track_head head;    /* first */
	struct sample first, last; /* the figures of its first and last rows */
	uint32_t st_first, st_last;
	int8_t first_kind; /* phase of the first row, -1 none */
	int8_t open_kind;  /* phase still open at the last row, -1 none */
};

struct pworker {
	struct track_worker sw; /* first: the sink's ctx */
	uint64_t phase_ms[PH_KINDS];
	struct row_origins origins;
	uint32_t has_any; /* enum row_has seen in any row */
	struct stretch *st;
	size_t st_count, st_cap;
	struct steps steps; /* one per instant, found through step_index */
	struct i64map step_index;
	int64_t cached_ms[2]; /* the last two instants stepped, and their steps */
	uint32_t cached_step[2];
	int64_t poll_ms; /* the last poll noted (rows of a poll come together); INT64_MIN: none */
};

/* steps.c: the worker's half */
void row_sample(const struct row *r, struct sample *ret);
/* A row taken at ms, selected or not: a poll, when the time filter lets it. */
void steps_poll(struct pworker *w, int64_t ms);
/* A track's first row s; a row s after its track's previous row prev; its last. */
void steps_first(struct pworker *w, const struct sample *s);
void steps_next(struct pworker *w, const struct sample *prev, const struct sample *s);
void steps_end(struct pworker *w, const struct sample *last);
/* steps.c: the join's half.  b_first's process continues from a_last's row. */
int steps_continue(struct steps *fix, const struct sample *a_last, const struct sample *b_first);
/* The polls with a selected process alive, their sums (res->samples_v); pw: the workers. */
int steps_sum(void *const *pw, int workers, const struct steps *fix, struct profile_result *res);
void steps_free(struct steps *s);

/* svg.c: CPU, RSS, GPU ioctls and (where rows carried it) NVML's SM % of
 * the polls' sums against time, the GPU phases as a band above them */
int svg_write(const char *path, const char *title, const struct profile_result *p);

/* join.c */
int profile_join(void *const *ctxs, int workers, struct profile_result *res);

bool phase_gpus_equal(const struct phase_gpus *a, const struct phase_gpus *b);
void profile_print_table(const struct read_opts *o, const struct profile_result *p,
	const struct ds_files *files, const struct ds_report *rep);
void profile_print_json(const struct read_opts *o, const struct profile_result *p,
	const struct ds_files *files, const struct ds_report *rep);
int profile_write_svg(const struct read_opts *o, const struct profile_result *p);

#endif
