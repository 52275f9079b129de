/*
 * poll.c: one poll of croft-sampler, in its steps (sampler.h): read /proc
 * and the cgroups for every process, ask the probe and apply its answer,
 * look at the fds the answer makes due (the rest of the read), then for
 * each process settle its GPU state and format its row when one is due,
 * and hand the rows to the spool as one numbered batch.  A poll runs in
 * slices of POLL_SLICE_NS from the loop, and waits for the probe's answer
 * in the loop, so that the control and writer sockets are served while it
 * reads 20 000 processes.
 * croft-sampler, croft user.
 */
#include <errno.h>
#include <event2/event.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "probe_link.h"
#include "sampler.h"

#define POLL_PRIORITIES 3

static void flush_batch(struct sampler *s)
{
	struct poll_run *run = &s->poll;
	int r;

	if (!run->batch_rows)
		return;
	r = spool_add(s->spool, run->env.now.unix_ms, run->batch_rows, s->rows.data, s->rows.len);
	if (r)
		log_warnx("poll: a batch of %u rows could not be spooled: %s", run->batch_rows,
			strerror(-r));
	jbuf_reset(&s->rows);
	run->batch_rows = 0;
}

/* The row's context for p: its container's label from sampler.ctl, if any. */
static struct row_context proc_context(
	const struct sampler *s, const struct proc *p, const struct row_context *base)
{
	struct row_context ctx = *base;
	const struct container_label *cl = NULL;
	const struct cgroup *cg = p->ident.cg;

	if (s->labels_count && cg && cg->container_id[0])
		cl = sampler_label_find(s, cg->container_id);
	ctx.label = cl ? cl->label : NULL;
	ctx.label_len = cl ? cl->label_len : 0;
	return ctx;
}

/* true when the row is written */
static bool format_row(struct sampler *s, struct proc *p, const struct row_context *ctx)
{
	size_t mark = s->rows.len;

	row_format(&s->rows, p, ctx);
	if (s->rows.failed) {
		s->rows.len = mark;
		s->rows.failed = false;
		s->stats.rows_failed++;
		return false; /* the next row covers this one's span too */
	}
	s->poll.batch_rows++;
	s->poll.rows++;
	if (s->rows.len >= BATCH_BYTES_MAX)
		flush_batch(s);
	return true;
}

/* Settled, and the rows that are due formatted, from poll.cur on; true once all are. */
static bool format_rows(struct sampler *s, uint64_t until_ns)
{
	struct poll_run *run = &s->poll;
	uint64_t onset_window_ns = s->cfg.onset_window_ms * 1000000;
	struct row_context base = { .unix_ms = run->env.now.unix_ms,
		.host = s->cfg.host[0] ? s->cfg.host : s->node_name,
		.boot_unix_ms = s->boot_unix_ms,
		.now_boot_ns = run->now_boot_ns,
		.catalog = s->catalog,
		.gpu_index = &s->gpu_index,
		.kubelet = &s->kubelet };

	for (struct proc *p; (p = run->cur.next);) {
		struct row_context ctx = proc_context(s, p, &base);
		bool written = false;

		run->cur.next = p->list_next;
		proc_settle(p, onset_window_ns, run->now_boot_ns);
		activity_settle(p, &run->activity);
		if (p->exit.gone_polls && p->exit.kind == EXIT_LIVES &&
			proc_vanished_due(p, run->env.finals_sent, run->env.now.unix_ms))
			p->exit.kind = EXIT_VANISHED;
		if (proc_row_due(p, &run->env))
			written = format_row(s, p, &ctx);
		if (s->textfile_on && !p->ident.kthread && (written || !p->exit.gone_polls))
			row_textfile(s->textfile, p, &ctx, written);
		if (written) { /* the next row's rates start here: after row_textfile's look */
			proc_row_written(p, &run->env);
			activity_span_end(p);
		}
		if (p->exit.kind != EXIT_LIVES && (written || p->ident.kthread)) {
			s->stats.last_rows[p->exit.kind] += written;
			proc_table_drop(&s->procs, s->cgroups, p);
		}
		if (clock_mono_ns() >= until_ns)
			return false;
	}
	flush_batch(s);
	return true;
}

static void log_probe_state(struct sampler *s)
{
	const char *state = probe_link_state(s->probe);

	if (strncmp(state, s->probe_state_logged, sizeof(s->probe_state_logged) - 1) == 0)
		return;
	log_info("probe: %s", state);
	snprintf(s->probe_state_logged, sizeof(s->probe_state_logged), "%s", state);
}

/* A driver loaded since the last poll joins the device set (one log line per change). */
static void follow_gpu_devices(struct sampler *s)
{
	char err[256], rules[512];
	const char *waiting;
	bool changed;

	if (gpudev_watch_refresh(&s->gpu, &changed, err, sizeof(err)) < 0)
		log_warnx("GPU devices: keeping the set as it was: %s", err);
	if ((waiting = gpudev_watch_waiting_news(&s->gpu)))
		log_warnx(GPUDEV_WAITING_FMT, waiting);
	if (!changed)
		return;
	gpudev_set_format(&s->gpu.set, rules, sizeof(rules));
	log_info("GPU devices: /proc/devices changed, %zu rules now: %s", s->gpu.set.rules_count,
		rules);
	proc_table_rescan_fds(&s->procs);
	s->gpu_index.next_load_gen = 0; /* which major is NVIDIA's may have changed too */
}

/* The kubelet's checkpoint, read again when it changed; a line per change of what it gives. */
static void follow_kubelet(struct sampler *s)
{
	const struct kubelet *k = &s->kubelet;

	if (!kubelet_refresh(&s->kubelet, s->cfg.kubelet_checkpoint))
		return;
	if (k->loaded)
		log_info("kubelet checkpoint %s: %zu GPU allocations; pods' rows carry "
			 "gpus_allocated",
			k->path, k->devices_count);
	else if (!k->absent) /* its absence is said with what rows leave out (leftout.c) */
		log_warnx("%s: gpus_allocated left out", k->problem);
}

static void next_slice(struct sampler *s)
{
	static const struct timeval now = { 0, 0 };

	/* a timer, not event_active: the loop looks at the sockets before it runs */
	evtimer_add(s->poll.slice, &now);
}

/* croft.prom from this poll's processes and croft's own state. */
static void write_textfile(struct sampler *s)
{
	const char *probe_state = probe_link_state(s->probe);
	struct spool_stats sp;
	struct textfile_health h;

	if (!s->textfile_on)
		return;
	spool_stats(s->spool, &sp);
	h = (struct textfile_health){
		.unix_ms = s->poll.env.now.unix_ms,
		.duration_us = s->stats.duration_us,
		.polls = s->stats.polls,
		.processes = s->procs.count,
		.untracked = s->procs.untracked,
		.rows_written = sp.acked_rows,
		.batches_written = sp.acked_batches,
		.spool_bytes = sp.bytes,
		.spool_batches = sp.batches,
		.dropped_rows_spool_full = sp.dropped_rows,
		.dropped_batches_spool_full = sp.dropped_batches,
		.dropped_rows_out_of_memory = s->stats.rows_failed,
		.probe_attached = strncmp(probe_state, "connected", 9) == 0,
		.writer_connected = strcmp(writer_link_state(s->writer), "connected") == 0,
		.probe_state = probe_state,
		.nvml = sampler_nvml_fresh(s),
	};
	textfile_settle(s->textfile, s->cfg.textfile_top);
	if (textfile_dir_open(&s->textfile_dir, s->cfg.textfile_dir) == 0)
		textfile_write(&s->textfile_dir, s->textfile, &h);
}

/* The baselines as of the batches just spooled: a SIGKILL from here on costs at most a poll. */
static void save_carry(struct sampler *s)
{
	struct spool_stats sp;

	spool_stats(s->spool, &sp);
	carry_save(s->carry, &s->procs, spool_epoch(s->spool), sp.next_seq - 1, s->boot_unix_ms,
		s->poll.env.gen);
	if (s->poll.env.first_poll)
		carry_forget(s->carry);
}

static void poll_finish(struct sampler *s)
{
	struct poll_run *run = &s->poll;

	s->stats.rows = run->rows;
	s->stats.rows_total += run->rows;
	save_carry(s);
	writer_link_kick(s->writer);
	run->running = false;
	s->last_poll = run->env.now;
	s->stats.polls++;
	s->stats.duration_us = (clock_mono_ns() - run->start_mono_ns) / 1000;
	s->stats.cpu_us = clock_ns(CLOCK_PROCESS_CPUTIME_ID) / 1000 - run->start_cpu_us;
	write_textfile(s);
	sampler_left_out_log(s);
	if (run->at_end) {
		void (*at_end)(struct sampler *) = run->at_end;

		run->at_end = NULL;
		at_end(s);
	}
	if (run->again) {
		if (!run->closing || run->env.closing)
			s->stats.polls_late++;
		if (!run->env.closing)
			sampler_poll_start(s);
	}
}

/* A pass over the table from its head, in slices. */
static void pass_begin(struct sampler *s, enum poll_phase phase)
{
	s->poll.phase = phase;
	s->poll.cur = (struct proc_cursor){ .next = s->procs.list_head };
}

/* The answer (or none) applied; then the fds it makes due are read. */
static void probe_answered(struct probe_answer *answer, void *arg)
{
	struct sampler *s = arg;

	s->poll.env.finals_sent = answer->answered && answer->finals_sent;
	proc_table_apply_probe(&s->procs, &s->poll.env, answer);
	log_probe_state(s);
	pass_begin(s, POLL_LOOK);
	next_slice(s);
}

/* /proc is read: the probe is asked, and its answer awaited in the loop. */
static void ask_probe(struct sampler *s)
{
	s->poll.now_boot_ns = clock_boot_ns();
	s->poll.phase = POLL_PROBE;
	probe_link_ask(s->probe, probe_answered, s);
}

static void format_begin(struct sampler *s)
{
	pass_begin(s, POLL_FORMAT);
	/* summed whether or not the directory is there yet: counters from the start */
	s->textfile_on = s->cfg.textfile_dir[0] != '\0';
	if (s->textfile_on)
		textfile_begin(s->textfile, s->poll.env.gen);
	s->poll.batch_rows = 0;
	s->poll.rows = 0;
	jbuf_reset(&s->rows);
	s->poll.activity.nvml = sampler_nvml_fresh(s);
	s->poll.activity.system_holders = s->cfg.gpu_system_holders;
	activity_count_holders(&s->poll.activity, &s->procs);
}

/* The processes over the limit, said when they begin and when they end. */
static void log_untracked(struct proc_table *procs)
{
	if (procs->untracked && !procs->untracked_said)
		log_warnx("poll: %zu processes over the %d tracked get no rows (counted in status "
			  "as processes_untracked and in croft.prom as croft_untracked_processes)",
			procs->untracked, SAMPLER_PROCS_MAX);
	else if (!procs->untracked && procs->untracked_said)
		log_info("poll: every process tracked again");
	procs->untracked_said = procs->untracked > 0;
}

/* One slice of the poll: until POLL_SLICE_NS have passed, the probe is awaited or it ends. */
static void poll_slice_cb(evutil_socket_t fd, short what, void *arg)
{
	struct sampler *s = arg;
	struct poll_run *run = &s->poll;
	uint64_t until_ns = clock_mono_ns() + POLL_SLICE_NS;
	int r;

	switch (run->phase) {
	case POLL_READ:
		r = proc_read_step(&s->procs, &run->env, &run->scan, until_ns);
		if (r == 0)
			break;
		if (r < 0)
			log_warnx("poll: reading /proc: %s", strerror(-r));
		log_untracked(&s->procs);
		ask_probe(s);
		return;
	case POLL_PROBE:
		return; /* the probe's answer goes on with the poll */
	case POLL_LOOK:
		proc_table_look(&run->env, &run->cur, until_ns);
		if (!run->cur.next)
			format_begin(s);
		break;
	case POLL_FORMAT:
		if (format_rows(s, until_ns)) {
			poll_finish(s);
			return;
		}
		break;
	}
	next_slice(s);
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
	sampler_poll_start(arg);
}

/*
 * The slices run at the lowest of three priorities: a socket that is ready
 * (a status asked, the writer's ack, the probe's answer) is served first,
 * and a slice only when none is.  Events made before this have priority 0,
 * those made after it 1.
 */
int sampler_poll_init(struct sampler *s)
{
	if (event_base_priority_init(s->base, POLL_PRIORITIES) < 0)
		return -EINVAL;
	s->poll.slice = evtimer_new(s->base, poll_slice_cb, s);
	s->poll_timer = event_new(s->base, -1, EV_PERSIST, tick_cb, s);
	if (!s->poll.slice || !s->poll_timer)
		return -ENOMEM;
	return event_priority_set(s->poll.slice, POLL_PRIORITIES - 1) < 0 ? -EINVAL : 0;
}

int sampler_arm_timer(struct sampler *s)
{
	struct timeval tv = {
		.tv_sec = (time_t)(s->cfg.poll_interval_ms / 1000),
		.tv_usec = (suseconds_t)(s->cfg.poll_interval_ms % 1000) * 1000,
	};

	evtimer_del(s->poll_timer);
	return evtimer_add(s->poll_timer, &tv) ? -EINVAL : 0;
}

/* No poll begins after this one; a poll running ends as it would. */
void sampler_poll_stop(struct sampler *s)
{
	if (s->poll_timer)
		evtimer_del(s->poll_timer);
	s->poll.again = false;
}

void sampler_poll_close(struct sampler *s)
{
	s->poll.closing = true;
	sampler_poll_start(s); /* one running: it sets again, and its end begins ours */
}

void sampler_poll_free(struct sampler *s)
{
	proc_read_end(&s->poll.scan);
	if (s->poll.slice)
		event_free(s->poll.slice);
	if (s->poll_timer)
		event_free(s->poll_timer);
	s->poll.slice = NULL;
	s->poll_timer = NULL;
	s->poll.running = false;
}

void sampler_poll_start(struct sampler *s)
{
	struct poll_run *run = &s->poll;
	int r;

	if (run->running) {
		run->again = true; /* it ran past the tick: the next begins when it ends */
		return;
	}
	follow_gpu_devices(s);
	follow_kubelet(s);
	sampler_nvml_poll(s);
	run->env = (struct poll_env){
		.now = { clock_real_ms(), clock_boot_ns() },
		.prev = s->last_poll,
		.cpu_clock = s->cpu_clock,
		.procfd = s->procfd,
		.catalog = s->catalog,
		.gpu = &s->gpu.set,
		.gpu_index = &s->gpu_index,
		.driver_dir = s->cfg.driver_dir,
		.gpu_possible = s->gpu.registered,
		.cgroups = s->cgroups,
		.gen = s->polls_before + s->stats.polls + 1, /* the idle cycle goes on */
		.first_poll = s->stats.polls == 0,
		.carry = s->stats.polls == 0 ? s->carry : NULL,
		.idle_every = s->cfg.idle_every ? s->cfg.idle_every : 1,
		.poll_interval_ms = s->cfg.poll_interval_ms,
		.tick_ns = s->tick_ns,
		.page_size = s->page_size,
		.keep_fds = true,
		.fds_max = s->nofile,
		.self_tgid = getpid(),
		.boot_unix_ms = s->boot_unix_ms,
		.closing = run->closing,
	};
	run->start_mono_ns = clock_mono_ns();
	run->start_cpu_us = clock_ns(CLOCK_PROCESS_CPUTIME_ID) / 1000;
	run->running = true;
	run->again = false;
	run->phase = POLL_READ;
	r = proc_read_begin(&s->procs, &run->env, &run->scan);
	if (r < 0) {
		log_warnx("poll: reading /proc: %s", strerror(-r));
		ask_probe(s);
		return;
	}
	next_slice(s);
}
