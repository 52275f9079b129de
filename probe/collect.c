/*
 * collect.c: builds one answer of croft-probe.  Exactness: the programs
 * count into one of two map epochs; an answer drains the exit events,
 * flips the epoch, waits an RCU grace period (loader_flip) and then
 * reads and deletes the old epoch, so every count lands in exactly one
 * answer, and an exit is reported no earlier than its last counts.  Runs in
 * croft-probe as the croft user with no capabilities, on the fds it holds.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "clock.h"
#include "log.h"
#include "probed.h"

#define EXITS_PENDING_MAX  (1u << 20)              /* exits kept between two answers */
#define FINALS_PENDING_MAX (4u * PROBE_FINALS_MAX) /* finals kept between two answers */

/* A reaped group's record, and the epoch its program wrote into when it sent it. */
struct pending_final {
	struct probe_final rec;
	uint32_t epoch;
};

struct collector {
	struct probe_objs *objs;
	struct ring_buffer *rb;
	struct tgidmap starts; /* tgid -> start_boot_ns, from events and /proc */
	struct tgidmap index;  /* tgid -> procs index, this answer */
	struct probe_exit *pending;
	size_t pending_count, pending_cap;
	struct tgidmap exited;        /* tgid -> start_boot_ns of its last exit since take_exits */
	struct pending_final *finals; /* read, not yet in an answer */
	size_t finals_count, finals_cap;
	struct argvs argvs; /* exec'd groups' arguments, for their finals */
	uint64_t page_size;
	struct answer ans;
	struct collector_stats stats;
	uint64_t delivered[PROBE_EPOCHS][PROBE_EV_SLOTS]; /* read, not yet settled */
	uint64_t last_flip_boot_ns;
	uint8_t *keys, *vals; /* batch buffers, buf_entries of the largest concern's each */
	uint32_t buf_entries;
};

/* The wire has room for every drop reason (the rest are sent as 0). */
_Static_assert(PROBE_DROP_REASONS <= PROBE_WIRE_DROPS, "a drop reason has no room on the wire");

/*
 * An array of *cap items of size bytes, count in use, with room for one
 * more: itself, or moved to twice the room (64 at first, max at most);
 * NULL when max are in use or without memory, the array as it was.
 */
static void *grow(void *items, size_t *cap, size_t count, size_t size, size_t max)
{
	size_t room = *cap ? *cap * 2 : 64;
	void *grown;

	if (count < *cap)
		return items;
	if (room > max)
		room = max;
	if (room <= count || !(grown = realloc(items, room * size)))
		return NULL;
	*cap = room;
	return grown;
}

static int add_exit(struct collector *col, const struct probe_event *e)
{
	uint64_t *start = tgidmap_get(&col->exited, e->tgid);
	struct probe_exit *x;

	/* two threads saw signal->live == 0; its tgid is not reused before its free */
	if (start && *start == e->start_boot_ns)
		return 0;
	if (!(x = grow(col->pending, &col->pending_cap, col->pending_count, sizeof(*x),
		      EXITS_PENDING_MAX)))
		return -ENOMEM;
	col->pending = x;
	if (tgidmap_put(&col->exited, e->tgid, e->start_boot_ns) < 0)
		return -ENOMEM;
	x = &col->pending[col->pending_count++];
	memset(x, 0, sizeof(*x));
	x->tgid = e->tgid;
	x->ppid = e->ppid;
	x->exit_code = e->exit_code;
	x->start_boot_ns = e->start_boot_ns;
	x->exit_boot_ns = e->event_boot_ns;
	memcpy(x->comm, e->comm, sizeof(x->comm));
	col->stats.exits_seen++;
	return 0;
}

static int on_event(void *ctx, void *data, size_t len)
{
	struct collector *col = ctx;
	const struct probe_event *e = data;

	if (len < sizeof(*e) || e->kind >= PROBE_EV_SLOTS)
		return 0;
	col->delivered[e->epoch & 1][e->kind]++;
	if (e->kind != PROBE_EV_EXIT)
		tgidmap_put(&col->starts, e->tgid, e->start_boot_ns);
	else if (add_exit(col, e) < 0)
		col->stats.exits_unqueued++;
	return 0;
}

/*
 * A reaped group, as the wire says it; kept for the answer its epoch falls
 * in.  A shorter record is an exec's arguments (probe.h).
 */
static int on_final(void *ctx, void *data, size_t len)
{
	struct collector *col = ctx;
	const struct probe_final_event *e = data;
	struct pending_final *f;

	if (len < sizeof(*e)) {
		if (argvs_put(&col->argvs, data, len) < 0)
			col->stats.argvs_unkept++;
		return 0;
	}
	col->stats.finals_delivered++;
	if (!(f = grow(col->finals, &col->finals_cap, col->finals_count, sizeof(*f),
		      FINALS_PENDING_MAX))) {
		col->stats.finals_cut++;
		return 0;
	}
	col->finals = f;
	f = &col->finals[col->finals_count++];
	f->epoch = e->epoch & 1;
	f->rec = (struct probe_final){
		.tgid = e->tgid,
		.uid = e->uid,
		.start_boot_ns = e->start_boot_ns,
		.exit_boot_ns = e->exit_boot_ns,
		.cpu_ns = e->cpu_ns,
		.read_bytes = e->read_bytes,
		.write_bytes = e->write_bytes,
		.maxrss_bytes = e->maxrss_pages * col->page_size,
		.wait_status = e->wait_status,
		.flags = e->flags,
	};
	memcpy(f->rec.comm, e->comm, sizeof(f->rec.comm));
	memcpy(f->rec.cgroup, e->cgroup, sizeof(f->rec.cgroup));
	memcpy(f->rec.exe, e->exe, sizeof(f->rec.exe));
	f->rec.cgroup[sizeof(f->rec.cgroup) - 1] = f->rec.exe[sizeof(f->rec.exe) - 1] = '\0';
	argvs_take(&col->argvs, &f->rec); /* its exec's record came before it */
	return 0;
}

/* The fork/exec/exit events and the reaped groups: one ring buffer each, read together. */
static int rings_new(struct collector *col)
{
	int events = loader_events_fd(col->objs), finals = loader_finals_fd(col->objs);

	if (events >= 0 && !(col->rb = ring_buffer__new(events, on_event, col, NULL)))
		return -ENOMEM;
	if (finals < 0)
		return 0;
	if (!col->rb)
		return (col->rb = ring_buffer__new(finals, on_final, col, NULL)) ? 0 : -ENOMEM;
	return ring_buffer__add(col->rb, finals, on_final, col) < 0 ? -ENOMEM : 0;
}

/* Batch buffers for the largest map, key and value of the counted concerns. */
static int buffers_new(struct collector *col)
{
	size_t key_max = 0, val_max = 0;

	for (int c = 0; c < CONCERNS; c++) {
		if (!concerns[c].add)
			continue;
		if ((uint32_t)loader_map_max(col->objs, c) > col->buf_entries)
			col->buf_entries = (uint32_t)loader_map_max(col->objs, c);
		if (concerns[c].key_size > key_max)
			key_max = concerns[c].key_size;
		if (percpu_stride(concerns[c].val_size) > val_max)
			val_max = percpu_stride(concerns[c].val_size);
	}
	col->keys = calloc(col->buf_entries, key_max);
	col->vals = calloc(col->buf_entries, val_max * (size_t)col->objs->ncpus);
	return col->keys && col->vals ? 0 : -ENOMEM;
}

int collector_new(struct probe_objs *objs, struct collector **ret_collector)
{
	struct collector *col = calloc(1, sizeof(*col));

	if (!col)
		return -ENOMEM;
	col->objs = objs;
	col->starts.limit = PROBE_STARTS_MAX;
	col->exited.limit = EXITS_PENDING_MAX;
	col->index.limit = PROBE_STARTS_MAX;
	col->argvs.by_tgid.limit = PROBE_ARGVS_MAX;
	col->page_size = (uint64_t)sysconf(_SC_PAGESIZE);
	/* proc not loaded: no events, start times from /proc only */
	if (rings_new(col) < 0 || buffers_new(col) < 0) {
		collector_free(col);
		return -ENOMEM;
	}
	col->last_flip_boot_ns = clock_boot_ns();
	*ret_collector = col;
	return 0;
}

void collector_free(struct collector *col)
{
	if (!col)
		return;
	ring_buffer__free(col->rb);
	tgidmap_free(&col->starts);
	tgidmap_free(&col->index);
	tgidmap_free(&col->exited);
	for (size_t i = 0; i < col->ans.procs_cap; i++)
		free(col->ans.procs[i].syscalls);
	free(col->ans.procs);
	free(col->ans.exits);
	free(col->ans.finals);
	free(col->pending);
	free(col->finals);
	argvs_free(&col->argvs);
	free(col->keys);
	free(col->vals);
	free(col);
}

void collector_drain(struct collector *col)
{
	if (col->rb)
		ring_buffer__consume(col->rb);
}

uint64_t collector_last_flip(const struct collector *col)
{
	return col->last_flip_boot_ns;
}

const struct collector_stats *collector_stats(const struct collector *col)
{
	return &col->stats;
}

static struct answer_proc *collector_proc(struct collector *col, uint32_t tgid)
{
	struct answer *ans = &col->ans;
	uint64_t *idx = tgidmap_get(&col->index, tgid);
	size_t had = ans->procs_cap;
	struct answer_proc *p;

	if (idx)
		return &ans->procs[*idx];
	if (!(p = grow(ans->procs, &ans->procs_cap, ans->procs_count, sizeof(*p),
		      SIZE_MAX / sizeof(*p))))
		return NULL;
	memset(p + had, 0, (ans->procs_cap - had) * sizeof(*p)); /* no syscalls array yet */
	ans->procs = p;
	if (tgidmap_put(&col->index, tgid, ans->procs_count) < 0)
		return NULL;
	p = &ans->procs[ans->procs_count++];
	memset(&p->rec, 0, sizeof(p->rec));
	p->rec.tgid = tgid;
	return p;
}

/* Kernels without batch ops (before 5.6): walk the keys, then read and delete each. */
static int drain_slow(struct collector *col, int fd, const struct concern *c)
{
	size_t key_size = c->key_size;
	uint32_t n = 0;
	uint8_t *prev = NULL;

	while (n < col->buf_entries &&
		bpf_map_get_next_key(fd, prev, col->keys + (size_t)n * key_size) == 0) {
		prev = col->keys + (size_t)n * key_size;
		n++;
	}
	for (uint32_t i = 0; i < n; i++) {
		const uint8_t *key = col->keys + (size_t)i * key_size;

		if (bpf_map_lookup_elem(fd, key, col->vals) == 0)
			c->add(col, collector_proc, key, col->vals, col->objs->ncpus);
		bpf_map_delete_elem(fd, key);
	}
	return (int)n;
}

/* Reads and deletes every entry of a quiescent map; returns the entries read. */
static int drain_map(struct collector *col, int fd, const struct concern *c)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	size_t stride = percpu_stride(c->val_size) * (size_t)col->objs->ncpus;
	uint64_t in_batch = 0, out_batch = 0;
	bool first = true;
	int total = 0, r;

	for (;;) {
		uint32_t count = col->buf_entries;

		r = bpf_map_lookup_and_delete_batch(fd, first ? NULL : &in_batch, &out_batch,
			col->keys, col->vals, &count, &opts);
		r = r < 0 ? -errno : 0;
		if (r < 0 && r != -ENOENT && first && count == 0)
			return drain_slow(col, fd, c);
		for (uint32_t i = 0; i < count; i++)
			c->add(col, collector_proc, col->keys + i * c->key_size,
				col->vals + i * stride, col->objs->ncpus);
		total += (int)count;
		if (r < 0)
			return r == -ENOENT ? total : r;
		in_batch = out_batch;
		first = false;
	}
}

/* /proc/<tgid>/stat field 22 (clock ticks since boot) for tgids seen before their fork event. */
static uint64_t proc_start_ns(uint32_t tgid)
{
	char path[64], buf[1024], *p;
	unsigned long long ticks;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%u/stat", tgid);
	if (!(f = fopen(path, "re")))
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (!(p = strrchr(buf, ')')))
		return 0;
	/* after ")": state is field 3, starttime field 22 */
	if (sscanf(p + 2,
		    "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d %*d "
		    "%*d %llu",
		    &ticks) != 1)
		return 0;
	return (uint64_t)ticks * (1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK));
}

static int by_count_desc(const void *a, const void *b)
{
	const struct probe_syscall *x = a, *y = b;

	return x->count < y->count ? 1 : x->count > y->count ? -1 : (int)x->nr - (int)y->nr;
}

/* Start times, syscall order; then forgets the start times of groups that exited. */
static void finish_procs(struct collector *col)
{
	struct answer *ans = &col->ans;

	for (size_t i = 0; i < ans->exits_count; i++)
		if (!tgidmap_get(&col->starts, ans->exits[i].tgid))
			tgidmap_put(&col->starts, ans->exits[i].tgid, ans->exits[i].start_boot_ns);
	for (size_t i = 0; i < ans->procs_count; i++) {
		struct answer_proc *p = &ans->procs[i];
		uint64_t *start = tgidmap_get(&col->starts, p->rec.tgid);

		if (start) {
			p->rec.start_boot_ns = *start;
		} else {
			p->rec.start_boot_ns = proc_start_ns(p->rec.tgid);
			if (p->rec.start_boot_ns)
				tgidmap_put(&col->starts, p->rec.tgid, p->rec.start_boot_ns);
		}
		qsort(p->syscalls, p->rec.syscalls_count, sizeof(*p->syscalls), by_count_desc);
	}
	for (size_t i = 0; i < ans->exits_count; i++)
		tgidmap_del(&col->starts, ans->exits[i].tgid);
}

/*
 * Whether concern c lost counts in this answer: its epoch's map was found
 * full (exact per epoch) or could not be read, or a drop that voids it was counted since the
 * last answer (a drop just after the flip voids this answer rather than
 * the next: never too few left out).
 */
static bool concern_lost(const struct probe_end *end, enum probe_concern c, bool lost)
{
	if (lost)
		return true;
	for (int d = 0; d < CONCERN_DROPS_MAX && concerns[c].drops[d].name; d++)
		if (concerns[c].drops[d].voids && end->drops[concerns[c].drops[d].reason])
			return true;
	return false;
}

/* The drops since the last answer; a concern that lost counts sends no flag: left out. */
static void finish_end(struct collector *col, bool first, uint64_t until, const bool *lost)
{
	struct probe_end *end = &col->ans.end;
	uint64_t drops[PROBE_DROP_REASONS];
	bool drops_read = loader_drops(col->objs, drops) == 0;

	memset(end, 0, sizeof(*end));
	end->seq = ++col->stats.answers;
	end->since_boot_ns = col->last_flip_boot_ns;
	end->until_boot_ns = until;
	end->procs = (uint32_t)col->ans.procs_count;
	end->exits = (uint32_t)col->ans.exits_count;
	end->finals = (uint32_t)col->ans.finals_count;
	end->flags = (first ? PROBE_END_FIRST : 0);
	for (int r = 0; drops_read && r < PROBE_DROP_REASONS; r++) {
		end->drops[r] = drops[r] - col->stats.drops_total[r];
		end->drops_total[r] = drops[r];
		col->stats.drops_total[r] = drops[r];
	}
	for (int c = 0; c < CONCERNS; c++) {
		if (!loader_has(col->objs, c))
			continue;
		if (!drops_read || concern_lost(end, c, lost[c]))
			col->stats.voided_answers[c] += concerns[c].end_flag != 0;
		else
			end->flags |= concerns[c].end_flag;
	}
	col->last_flip_boot_ns = until;
}

#define INFLIGHT_BATCH 256 /* marks read per call */

/*
 * The threads inside a GPU ioctl or wait now, per tgid: gpufile's marks,
 * read, not emptied (a mark lives until its syscall returns).  By batch,
 * which walks buckets: a mark deleted meanwhile cannot restart the walk
 * and count others twice, as get_next_key would.
 */
static int count_inflight(struct collector *col)
{
	LIBBPF_OPTS(bpf_map_batch_opts, opts);
	int fd = loader_inflight_fd(col->objs), r;
	uint32_t keys[INFLIGHT_BATCH];
	uint64_t in_batch = 0, out_batch = 0;
	struct probe_inflight marks[INFLIGHT_BATCH];
	struct answer_proc *p;
	bool first = true;

	if (fd < 0)
		return 0;
	for (;;) {
		uint32_t count = INFLIGHT_BATCH;

		r = bpf_map_lookup_batch(
			fd, first ? NULL : &in_batch, &out_batch, keys, marks, &count, &opts);
		r = r < 0 ? -errno : 0;
		for (uint32_t i = 0; i < count; i++)
			if ((p = collector_proc(col, marks[i].tgid)))
				p->rec.gpu_blocked_threads++;
		if (r < 0)
			return r == -ENOENT ? 0 : r;
		in_batch = out_batch;
		first = false;
	}
}

/*
 * Adds epoch g's event counts to the tallies.  Called after the flip
 * away from g and a drain: every program that counted into g has returned,
 * so its event was delivered by that drain or counted dropped.  (An event
 * of g queued behind a newer one still being written is read by a later
 * drain and settled with g's next turn.)
 */
static void settle_events(struct collector *col, uint32_t g)
{
	struct probe_event_count counts[PROBE_EV_SLOTS];
	int r = loader_take_event_counts(col->objs, g, counts);

	if (r < 0) {
		log_warnx("reading the event counts: %s", strerror(-r));
		return;
	}
	for (int k = 0; k < PROBE_EV_SLOTS; k++) {
		col->stats.events[k].seen += counts[k].seen;
		col->stats.events[k].dropped += counts[k].dropped;
		col->stats.events[k].delivered += col->delivered[g & 1][k];
		col->delivered[g & 1][k] = 0;
	}
}

/* Hands the exits drained so far to the answer. */
static void take_exits(struct collector *col)
{
	struct probe_exit *x = col->ans.exits;
	size_t cap = col->ans.exits_cap;

	col->ans.exits = col->pending;
	col->ans.exits_count = col->pending_count;
	col->ans.exits_cap = col->pending_cap;
	col->pending = x;
	col->pending_cap = cap;
	col->pending_count = 0;
	tgidmap_clear(&col->exited);
}

/*
 * An exit drained after this answer's exits were taken, of a group whose
 * final goes in this answer, goes in it too: the sampler takes an exit
 * record with no final yet for a group still to be closed (ENOMEM: it
 * stays for the next answer).
 */
static void exit_with_final(struct collector *col, const struct probe_final *f)
{
	struct answer *ans = &col->ans;
	struct probe_exit *grown;

	for (size_t i = 0; i < col->pending_count; i++) {
		if (col->pending[i].tgid != f->tgid ||
			col->pending[i].start_boot_ns != f->start_boot_ns)
			continue;
		if (!(grown = grow(ans->exits, &ans->exits_cap, ans->exits_count, sizeof(*grown),
			      SIZE_MAX / sizeof(*grown))))
			return;
		ans->exits = grown;
		ans->exits[ans->exits_count++] = col->pending[i];
		col->pending[i] = col->pending[--col->pending_count];
		return;
	}
}

/*
 * The reaped groups of the epoch just closed (and any older straggler) to
 * the answer, at most PROBE_FINALS_MAX: their counts were all written
 * before, so they are in this answer or earlier ones.  Those sent under the
 * new epoch wait for the next answer, with their last counts.
 */
static void take_finals(struct collector *col, uint32_t now)
{
	struct answer *ans = &col->ans;
	struct probe_final *grown;
	size_t kept = 0, cut = 0;

	ans->finals_count = 0;
	for (size_t i = 0; i < col->finals_count; i++) {
		struct pending_final *f = &col->finals[i];

		if (f->epoch == (now & 1))
			col->finals[kept++] = *f;
		else if (ans->finals_count == PROBE_FINALS_MAX)
			cut++;
		else if ((grown = grow(ans->finals, &ans->finals_cap, ans->finals_count,
				  sizeof(*grown), PROBE_FINALS_MAX))) {
			ans->finals = grown;
			ans->finals[ans->finals_count++] = f->rec;
			exit_with_final(col, &f->rec);
		} else
			cut++;
	}
	col->finals_count = kept;
	if (cut)
		log_warnx("answer %llu: %zu reaped processes over the %u an answer holds are cut "
			  "(their last rows are written as vanished)",
			(unsigned long long)col->stats.answers + 1, cut, PROBE_FINALS_MAX);
	col->stats.finals_cut += cut;
}

/*
 * A group started before the previous answer's interval began was in /proc
 * when that answer's poll read it, unless it was gone by then: its final
 * came with that answer or this one.  Kept PROBE_ARGVS_KEEP_NS at least
 * besides, for a free the kernel delays.
 */
static void prune_argvs(struct collector *col, uint64_t until)
{
	uint64_t before = col->ans.end.since_boot_ns; /* still the previous answer's */

	if (until < PROBE_ARGVS_KEEP_NS)
		return;
	argvs_prune(&col->argvs,
		before < until - PROBE_ARGVS_KEEP_NS ? before : until - PROBE_ARGVS_KEEP_NS);
}

int collector_answer(struct collector *col, bool first, const struct answer **ret_answer)
{
	uint64_t began = clock_mono_ns(), until;
	bool lost[CONCERNS] = { false };
	uint32_t old;
	int r;

	/* exits first: an exit read now happened before the flip below */
	collector_drain(col);
	take_exits(col);
	col->ans.procs_count = 0;
	tgidmap_clear(&col->index);
	until = clock_boot_ns();
	if ((r = loader_flip(col->objs)) < 0)
		return r;
	old = col->objs->epoch ^ 1;
	collector_drain(col); /* the old epoch's last events: next answer's exits */
	take_finals(col, col->objs->epoch);
	prune_argvs(col, until);
	settle_events(col, old);
	if ((r = loader_walk_threads(col->objs, old)) < 0)
		log_warnx("walking the threads for their scheduling counts: %s", strerror(-r));
	for (int c = 0; c < CONCERNS; c++) {
		int fd = loader_map_fd(col->objs, c, old);

		if (fd < 0)
			continue;
		r = drain_map(col, fd, &concerns[c]);
		col->stats.entries_last[c] = r < 0 ? 0 : (size_t)r;
		if ((lost[c] = loader_clear_full(col->objs, c, old)))
			col->stats.full_answers[c]++;
		if (r < 0)
			log_warnx("reading %s map: %s", concerns[c].name, strerror(-r));
		lost[c] |= r < 0;
	}
	if ((r = count_inflight(col)) < 0) {
		log_warnx("reading the threads inside GPU calls: %s", strerror(-r));
		lost[CONCERN_GPUFILE] = true;
	}
	finish_procs(col);
	finish_end(col, first, until, lost);
	col->stats.procs_last = col->ans.procs_count;
	col->stats.collect_ns_last = clock_mono_ns() - began;
	*ret_answer = &col->ans;
	return 0;
}
