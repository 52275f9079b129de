/*
 * exits.c: a process's last row.  The probe's final figures (taken when
 * the kernel frees the group, as wait4's rusage gives them) close a
 * tracked process over the span from its previous row to its exit, or
 * make the one row of a process born and gone between two polls; without
 * them a process gone from /proc is written from what /proc last showed.
 * No I/O.  croft-sampler, croft user.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "catalog.h"
#include "host.h"
#include "probe_link.h"

static void exit_status(struct proc_exit *e, int32_t wait_status)
{
	if (WIFSIGNALED(wait_status)) {
		e->signal = WTERMSIG(wait_status);
		e->signal_known = true;
	} else {
		e->code = WEXITSTATUS(wait_status);
		e->code_known = true;
	}
}

/*
 * The final figures over the span from the previous row (or, for a process
 * never written, from its start) to the exit, in whole milliseconds, so
 * that cpu_cores x span_ms gives back the CPU time to the rows' precision.
 */
static void final_counters(
	struct proc *p, const struct probe_final *f, uint64_t exit_unix_ms, uint64_t from_unix_ms)
{
	struct proc_counters *c = &p->counters;
	struct proc_cadence *cad = &p->cadence;
	uint64_t span_ms = exit_unix_ms > from_unix_ms ? exit_unix_ms - from_unix_ms : 0;
	uint64_t base_cpu = cad->have_base ? cad->base_cpu_ns : 0;
	bool io_base = cad->have_base ? cad->base_io : true;

	if (!span_ms)
		span_ms = 1;
	c->span_s = (double)span_ms / 1e3;
	c->cpu_ns = f->cpu_ns;
	c->cpu_cores = (double)counter_delta(f->cpu_ns, base_cpu) / 1e9 / c->span_s;
	c->rss_bytes = f->maxrss_bytes;
	c->threads = 0; /* none left */
	c->io_rates_valid = io_base;
	if (io_base) {
		c->read_bytes_s =
			(double)counter_delta(f->read_bytes, cad->base_read_bytes) / c->span_s;
		c->write_bytes_s =
			(double)counter_delta(f->write_bytes, cad->base_write_bytes) / c->span_s;
	}
	c->rates_valid = true;
	cad->idle = false;
}

static char *copy_str(const char *s, size_t max, size_t *ret_len)
{
	char *out = strndup(s, max);

	if (out)
		*ret_len = strlen(out);
	return out;
}

/* The cgroup the group died in, as /proc/<pid>/cgroup would name it; NULL when unknown. */
static struct cgroup *final_cgroup(const struct probe_final *f, const struct poll_env *env)
{
	char text[PROBE_CGROUP_BYTES + 32];
	struct cgroup *cg;
	int n;

	if (!(f->flags & PROBE_FINAL_CGROUP_FLAG))
		return NULL;
	/* the line of v2, or of v1's memory controller, which rows name on v1 and hybrid hosts */
	n = snprintf(text, sizeof(text),
		(f->flags & PROBE_FINAL_CGROUP_V1_FLAG) ? "1:memory:%s\n" : "0::%s\n", f->cgroup);
	if (n <= 0 || (size_t)n >= sizeof(text) ||
		!(cg = cgroup_get(env->cgroups, text, (size_t)n)))
		return NULL;
	cgroup_refresh(env->cgroups, cg, env->gen);
	return cg;
}

/*
 * A tracked process's last row names the cgroup it died in: one read
 * between its fork and its move (a runtime's, or a shell's) named the one
 * before, and a zombie's /proc names the root.
 */
static void last_cgroup(struct proc *p, const struct probe_final *f, const struct poll_env *env)
{
	struct cgroup *cg = final_cgroup(f, env);

	if (!cg)
		return;
	if (p->ident.cg && p->ident.cg->path && cg->path && p->ident.cg->path_len == cg->path_len &&
		!memcmp(p->ident.cg->path, cg->path, cg->path_len)) {
		cgroup_put(env->cgroups, cg); /* the same place: its own entry, figures and all */
		return;
	}
	cgroup_put(env->cgroups, p->ident.cg);
	p->ident.cg = cg;
}

/*
 * Its framework, from the arguments its exec was given, as the catalog's
 * cmdline rules match /proc/<pid>/cmdline (its maps were never read); left
 * out where the probe did not see its exec.
 */
static size_t final_framework(const struct probe_final *f, const struct poll_env *env)
{
	if (!env->catalog || !(f->flags & PROBE_FINAL_ARGV_FLAG))
		return SIZE_MAX; /* never read: left out */
	return catalog_match_cmdline(env->catalog, f->argv, f->argv_len, SIZE_MAX);
}

/*
 * A process only the probe saw, as its final or its exit record names it
 * (tgid, start, comm), its maps never read; NULL without memory.
 */
static struct proc *probe_only_new(pid_t tgid, uint64_t start_boot_ns,
	const char comm[PROBE_COMM_BYTES], const struct poll_env *env)
{
	struct proc *p = calloc(1, sizeof(*p));

	if (!p)
		return NULL;
	p->tgid = tgid;
	p->ident.start_boot_ns = start_boot_ns;
	p->ident.start_ticks = start_boot_ns / env->tick_ns;
	p->ident.framework = SIZE_MAX; /* never read: left out */
	p->ident.framework_done = true;
	p->ident.comm = copy_str(comm, PROBE_COMM_BYTES, &p->ident.comm_len);
	p->cadence.rows_started = true;
	return p;
}

/* Who it was, beyond its name: what its final says, its cgroup as /proc would. */
static void final_identity(struct proc *p, const struct probe_final *f, const struct poll_env *env)
{
	struct proc_identity *id = &p->ident;

	id->framework = final_framework(f, env);
	id->uid = f->uid;
	id->uid_known = true;
	if (f->flags & PROBE_FINAL_EXE_FLAG)
		id->exe = copy_str(f->exe, sizeof(f->exe), &id->exe_len);
	id->cg = final_cgroup(f, env);
}

/* Whether tgid, started at start_ticks, was written vanished not long ago. */
static bool vanished_before(const struct proc_table *table, pid_t tgid, uint64_t start_ticks)
{
	size_t n = table->vanished_next < VANISHED_RECENT ? table->vanished_next : VANISHED_RECENT;

	for (size_t i = 0; i < n; i++)
		if (table->vanished[i].tgid == tgid &&
			table->vanished[i].start_ticks == start_ticks)
			return true;
	return false;
}

/* A process born and gone between two polls: one row, from what the probe saw. */
static struct proc *between_polls(
	struct proc_table *table, const struct probe_final *f, const struct poll_env *env)
{
	struct proc *p = probe_only_new((pid_t)f->tgid, f->start_boot_ns, f->comm, env);

	if (!p)
		return NULL;
	final_identity(p, f, env);
	p->exit.kind = EXIT_BETWEEN_POLLS;
	proc_table_add_gone(table, p);
	return p;
}

void proc_table_apply_finals(
	struct proc_table *table, const struct poll_env *env, const struct probe_answer *answer)
{
	for (size_t i = 0; i < answer->finals_count; i++) {
		const struct probe_final *f = &answer->finals[i];
		uint64_t start_ticks = f->start_boot_ns / env->tick_ns;
		struct proc *p = proc_table_find_start(table, (pid_t)f->tgid, start_ticks);
		uint64_t exit_unix_ms = env->boot_unix_ms + f->exit_boot_ns / 1000000;
		uint64_t from_unix_ms;

		if (p && p->exit.unread) { /* kept from its exit record: the final says more */
			proc_table_drop(table, env->cgroups, p);
			p = NULL;
		}
		if (p && (p->ident.kthread || p->exit.kind != EXIT_LIVES))
			continue;
		if (p) {
			p->exit.kind = EXIT_PROBE;
			last_cgroup(p, f, env);
			from_unix_ms =
				p->cadence.have_base ? p->cadence.base_poll.unix_ms : exit_unix_ms;
		} else if (vanished_before(table, (pid_t)f->tgid, start_ticks)) {
			table->finals_after_vanished++; /* it has its last row */
			continue;
		} else if ((p = between_polls(table, f, env))) {
			from_unix_ms = env->boot_unix_ms + f->start_boot_ns / 1000000;
		} else {
			continue;
		}
		if (f->flags & PROBE_FINAL_EXIT_TIME_FLAG)
			p->exit.unix_ms = exit_unix_ms;
		exit_status(&p->exit, f->wait_status);
		final_counters(p, f, exit_unix_ms, from_unix_ms);
	}
}

/*
 * Without the probe's final (none sent, none come within EXIT_WAIT_POLLS
 * polls, or it was cut) the row says what /proc last showed: over the span
 * from its previous row to the last poll that read it, when it had done
 * nothing since (a poll with something done wrote its row), and nothing
 * after, which is unknown.
 */
bool proc_vanished_due(struct proc *p, bool finals_sent, uint64_t now_unix_ms)
{
	struct proc_counters *c = &p->counters;

	if (p->ident.kthread ||
		(finals_sent && (p->exit.gone_polls < EXIT_WAIT_POLLS ||
					now_unix_ms < p->exit.last_seen.unix_ms + EXIT_WAIT_MS)))
		return false;
	c->span_s = p->cadence.have_base
			    ? proc_poll_span_s(&p->cadence.base_poll, &p->exit.last_seen)
			    : 0;
	c->cpu_cores = c->read_bytes_s = c->write_bytes_s = 0;
	c->rates_valid = true;
	c->probe.valid = c->probe.syscalls_valid = c->probe.ioctl_valid = false;
	c->probe.sched_valid = c->probe.net_valid = false;
	return true;
}

#define KTHREADD_PID 2 /* the kernel's thread maker: every kernel thread's parent */

/* Kernel threads have no rows. */
static bool exit_of_kthread(const struct probe_exit *x)
{
	return x->tgid == KTHREADD_PID || x->ppid == KTHREADD_PID;
}

/*
 * A group the probe saw exit, that no poll read and no final closed yet:
 * the kernel frees a reaped process (where the probe takes its final) an
 * RCU grace period after the reap, which a loaded host stretched past a
 * minute here.  Kept from its exit record, it waits for its final as a
 * process gone from /proc does, and is written vanished when none comes
 * (its comm and start, nothing else known), so that every group the probe
 * saw exit has a row.  The probe sends no exit record after its final's.
 */
void proc_table_apply_exits(
	struct proc_table *table, const struct poll_env *env, const struct probe_answer *answer)
{
	for (size_t i = 0; i < answer->exits_count; i++) {
		const struct probe_exit *x = &answer->exits[i];
		uint64_t start_ticks = x->start_boot_ns / env->tick_ns;
		struct proc *p;

		if (exit_of_kthread(x) || table->count >= SAMPLER_PROCS_MAX ||
			proc_table_find_start(table, (pid_t)x->tgid, start_ticks) ||
			vanished_before(table, (pid_t)x->tgid, start_ticks) ||
			!(p = probe_only_new((pid_t)x->tgid, x->start_boot_ns, x->comm, env)))
			continue;
		p->exit.unread = true;
		p->exit.last_seen = env->now;
		proc_table_add_gone(table, p);
	}
}
