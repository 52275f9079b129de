/*
 * proc.c: the process table, keyed by (tgid, start time), and the steps
 * of each poll over it (sampler.h) but the probe's (probe_apply.c): the
 * read (identity once per process, counters every poll, frameworks, cgroup
 * figures, fd looks) and the settling of GPU states; rates over each
 * process's own elapsed time, never invented.
 * croft-sampler (croft user, CAP_SYS_PTRACE + CAP_DAC_READ_SEARCH).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "kernel.h"
#include "host.h"

#define STAT_BUF      1024
#define IO_BUF        512
#define SPAN_SLACK_MS 2 /* the two clocks of a poll, each rounded to ms */

void proc_table_init(struct proc_table *table)
{
	memset(table, 0, sizeof(*table));
}

/* The next process of tgid in its chain from l on, live or gone. */
static struct proc *proc_of_tgid(struct hash_link *l, pid_t tgid)
{
	l = hash_match(l, (uint32_t)tgid);
	return l ? hash_entry(l, struct proc, hash) : NULL;
}

struct proc *proc_table_find(struct proc_table *table, pid_t tgid)
{
	struct proc *p = proc_of_tgid(*HASH_BUCKET(table->buckets, (uint32_t)tgid), tgid);

	while (p && p->exit.gone_polls)
		p = proc_of_tgid(p->hash.next, tgid);
	return p;
}

struct proc *proc_table_find_start(struct proc_table *table, pid_t tgid, uint64_t start_ticks)
{
	struct proc *p = proc_of_tgid(*HASH_BUCKET(table->buckets, (uint32_t)tgid), tgid);

	while (p && p->ident.start_ticks != start_ticks)
		p = proc_of_tgid(p->hash.next, tgid);
	return p;
}

static void close_fd(struct proc_table *table, int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		table->fds_open--;
		*fd = -1;
	}
}

/* What was read of who a process is, let go (it is gone, or it exec'd): start and kind stay. */
static void identity_drop(struct proc_identity *id, struct cgroup_table *cgroups)
{
	free(id->comm);
	free(id->exe);
	free(id->cwd);
	free(id->label);
	cgroup_put(cgroups, id->cg);
	*id = (struct proc_identity){ .start_ticks = id->start_ticks,
		.start_boot_ns = id->start_boot_ns,
		.kthread = id->kthread,
		.framework = SIZE_MAX };
}

void proc_table_drop(struct proc_table *table, struct cgroup_table *cgroups, struct proc *p)
{
	if (p->exit.kind == EXIT_VANISHED) { /* its final may come yet (exits.c) */
		size_t i = table->vanished_next++ % VANISHED_RECENT;

		table->vanished_unread += p->exit.unread;
		table->vanished[i].tgid = p->tgid;
		table->vanished[i].start_ticks = p->ident.start_ticks;
	}
	hash_del(HASH_BUCKET(table->buckets, p->hash.hash), &p->hash);
	if (p->list_prev)
		p->list_prev->list_next = p->list_next;
	else
		table->list_head = p->list_next;
	if (p->list_next)
		p->list_next->list_prev = p->list_prev;
	else
		table->list_tail = p->list_prev;
	table->count--;
	close_fd(table, &p->stat_fd);
	close_fd(table, &p->io_fd);
	identity_drop(&p->ident, cgroups);
	free(p->counters.probe.syscalls); /* malloc'd by probe_apply.c */
	gpu_fds_free(&p->gpu.fds);
	free(p);
}

void proc_table_clear(struct proc_table *table, struct cgroup_table *cgroups)
{
	while (table->list_head)
		proc_table_drop(table, cgroups, table->list_head);
	table->untracked = 0;
}

static void proc_insert(struct proc_table *table, struct proc *p)
{
	hash_add(HASH_BUCKET(table->buckets, (uint32_t)p->tgid), &p->hash, (uint32_t)p->tgid);
	p->list_prev = table->list_tail;
	if (table->list_tail)
		table->list_tail->list_next = p;
	else
		table->list_head = p;
	table->list_tail = p;
	table->count++;
}

void proc_table_add_gone(struct proc_table *table, struct proc *p)
{
	p->stat_fd = p->io_fd = -1;
	p->exit.gone_polls = 1;
	proc_insert(table, p);
}

/*
 * Opens <name> in an open /proc/<tgid> directory (dirfd -1: fds are not
 * kept), kept for later polls; -1 when it cannot be.  Opening through the
 * directory's fd binds every kept fd to the process that directory was:
 * none can name a later user of the tgid.
 */
static int open_kept(
	struct proc_table *table, const struct poll_env *env, int dirfd, const char *name)
{
	int fd;

	if (dirfd < 0 || table->fds_open + FDS_SPARE >= env->fds_max)
		return -1; /* read by path each poll: sockets need fds too */
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		table->fds_open++;
	return fd;
}

/* /proc/<tgid>, when fds are kept (-1 otherwise, or when it is gone). */
static int proc_dir_open(const struct poll_env *env, pid_t tgid)
{
	char path[16];

	if (!env->keep_fds)
		return -1;
	snprintf(path, sizeof(path), "%d", (int)tgid);
	return openat(env->procfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

/* One small /proc/<tgid>/<name> file, through the kept fd when there is one. */
static ssize_t read_proc_file(
	const struct poll_env *env, pid_t tgid, int fd, const char *name, char *buf, size_t size)
{
	char path[64];

	if (fd >= 0)
		return procfs_pread(fd, buf, size);
	snprintf(path, sizeof(path), "%d/%s", (int)tgid, name);
	return procfs_read_at(env->procfd, path, buf, size);
}

static void read_io(struct proc *p, const struct poll_env *env)
{
	struct proc_counters *c = &p->counters;
	char buf[IO_BUF];
	ssize_t n;

	c->io_ok = false;
	if (c->io_denied)
		return;
	n = read_proc_file(env, p->tgid, p->io_fd, "io", buf, sizeof(buf));
	if (n == -EACCES || n == -EPERM)
		c->io_denied = true; /* not ours to read: do not retry each poll */
	else if (n > 0 && procfs_parse_io(buf, (size_t)n, &c->read_bytes, &c->write_bytes) == 0)
		c->io_ok = true;
}

/*
 * Seconds from one poll to another: the rows' own clock (unix_ms) while the
 * wall clock keeps pace with the boot clock, so that a rate times the time
 * between its row and the previous one is exactly the count; the boot clock
 * across a wall-clock step.
 */
double proc_poll_span_s(const struct poll_clock *from, const struct poll_clock *to)
{
	int64_t wall_ms = (int64_t)(to->unix_ms - from->unix_ms);
	int64_t boot_ms;

	if (to->boot_ns <= from->boot_ns)
		return 0;
	boot_ms = (int64_t)((to->boot_ns - from->boot_ns) / 1000000);
	if (wall_ms > 0 && wall_ms <= boot_ms + SPAN_SLACK_MS && boot_ms <= wall_ms + SPAN_SLACK_MS)
		return (double)wall_ms / 1e3;
	return (double)(to->boot_ns - from->boot_ns) / 1e9;
}

/* The counters the next row's rates are taken from, as of poll `at`. */
static void set_base(struct proc *p, const struct poll_clock *at)
{
	struct proc_cadence *cad = &p->cadence;

	cad->have_base = true;
	cad->base_poll = *at;
	cad->base_cpu_ns = p->counters.cpu_ns;
	cad->base_read_bytes = p->counters.read_bytes;
	cad->base_write_bytes = p->counters.write_bytes;
	cad->base_io = p->counters.io_ok;
}

/* The counters of one read of stat (and of io, for a user process). */
static void take_stat(struct proc *p, const struct proc_stat *st, const struct poll_env *env)
{
	struct proc_counters *c = &p->counters;

	c->cpu_ticks = st->cpu_ticks;
	if (!p->cpu_clock_ok)
		c->cpu_ns = st->cpu_ticks * env->tick_ns;
	c->threads = st->threads;
	c->rss_bytes = st->rss_pages * env->page_size;
	c->vsize = st->vsize;
	if (!p->ident.kthread)
		read_io(p, env);
}

/*
 * Counters of this poll, and rates over the time the row stands for: the
 * whole span since the process's last row, so that skipping an idle row
 * loses nothing; a first row, one poll interval (it holds at most that
 * poll's counts), as croft stats counts it.
 * st is NULL for a process that has not run since the last sample: its
 * counters are those of that sample.  Idle: no CPU time, no disk byte since
 * the baseline (the probe's part is in proc_settle).
 */
static void proc_sample(struct proc *p, const struct proc_stat *st, const struct poll_env *env,
	uint64_t now_boot_ns)
{
	struct proc_counters *c = &p->counters;
	struct proc_cadence *cad = &p->cadence;
	uint64_t dcpu, dr = 0, dw = 0;

	if (st)
		take_stat(p, st, env);
	c->rates_valid = false;
	c->io_rates_valid = false;
	cad->prev_sample_boot_ns = cad->sample_boot_ns;
	cad->sample_boot_ns = now_boot_ns;
	if (!cad->have_base) {
		set_base(p, &env->now); /* running before we looked: a baseline only */
		return;
	}
	c->span_s = cad->rows_started ? proc_poll_span_s(&cad->base_poll, &env->now)
				      : (double)env->poll_interval_ms / 1e3;
	if (c->span_s <= 0 || env->now.boot_ns <= cad->base_poll.boot_ns)
		return;
	dcpu = counter_delta(c->cpu_ns, cad->base_cpu_ns);
	c->cpu_cores = (double)dcpu / 1e9 / c->span_s;
	if (c->io_ok && cad->base_io) {
		dr = counter_delta(c->read_bytes, cad->base_read_bytes);
		dw = counter_delta(c->write_bytes, cad->base_write_bytes);
		c->read_bytes_s = (double)dr / c->span_s;
		c->write_bytes_s = (double)dw / c->span_s;
		c->io_rates_valid = true;
	}
	c->rates_valid = true;
	cad->idle = dcpu == 0 && dr == 0 && dw == 0;
}

/*
 * A process moved to another cgroup (systemd, a runtime, cgclassify) is in
 * that one's container and pod from the next read in full: each poll for a
 * process that ran, at its idle slot for one that did not, which is when
 * its rows are written.
 */
static void proc_cgroup_follow(struct proc *p, const struct poll_env *env)
{
	char path[64], buf[PROC_CGROUP_TEXT_MAX];
	struct cgroup *moved;
	ssize_t n;

	snprintf(path, sizeof(path), "%d/cgroup", (int)p->tgid);
	n = procfs_read_at(env->procfd, path, buf, sizeof(buf));
	if (n <= 0 || (p->ident.cg && p->ident.cg->key_len == (size_t)n &&
			      memcmp(p->ident.cg->key, buf, (size_t)n) == 0))
		return;
	moved = cgroup_get(env->cgroups, buf, (size_t)n);
	if (!moved)
		return;
	cgroup_put(env->cgroups, p->ident.cg);
	p->ident.cg = moved;
}

/* comm, exe, cwd, label, uid and cgroup: read once per process. */
static void proc_identity(struct proc *p, const struct proc_stat *st, const struct poll_env *env)
{
	p->ident.image = st->image;
	p->ident.comm = malloc(st->comm_len + 1);
	if (p->ident.comm) {
		memcpy(p->ident.comm, st->comm, st->comm_len);
		p->ident.comm[st->comm_len] = '\0';
		p->ident.comm_len = st->comm_len;
	}
	procfs_readlink(env->procfd, p->tgid, "exe", &p->ident.exe, &p->ident.exe_len);
	procfs_readlink(env->procfd, p->tgid, "cwd", &p->ident.cwd, &p->ident.cwd_len);
	procfs_label(env->procfd, p->tgid, &p->ident.label, &p->ident.label_len);
	p->ident.uid_known = procfs_uid(env->procfd, p->tgid, &p->ident.uid) == 0;
	proc_cgroup_follow(p, env); /* its first: none yet */
}

/*
 * An exec since the identity was read (or PR_SET_NAME): comm changes at
 * most execs, and the program's place in memory at every one (an exec of
 * a binary with the same name, or of the same binary with another
 * CROFT_LABEL, keeps the comm).  What was read before named the old
 * program, so the identity is read again.
 */
static bool proc_exec_seen(const struct proc *p, const struct proc_stat *st)
{
	const struct proc_image *was = &p->ident.image, *now = &st->image;

	if (st->comm_len != p->ident.comm_len || memcmp(st->comm, p->ident.comm, st->comm_len))
		return true;
	/* no address space (exiting: its identity stays) or none shown to us */
	if (!now->start_stack || !was->start_stack)
		return false;
	return was->start_code != now->start_code || was->end_code != now->end_code ||
	       was->start_stack != now->start_stack;
}

static void proc_reidentify(struct proc *p, const struct proc_stat *st, const struct poll_env *env)
{
	identity_drop(&p->ident, env->cgroups);
	proc_identity(p, st, env);
}

/*
 * A process born since the last poll had all its counters at 0 when it
 * started: its first row holds all it did.
 * One found later that started before (not tracked then: over the limit) is
 * a baseline only, as is everything found at the sampler's first poll.
 * Start times are whole clock ticks, so a start up to a tick before the
 * last poll is still this interval's.
 */
static void proc_first_sample(struct proc *p, const struct poll_env *env, uint64_t now_boot_ns)
{
	p->cpu_clock_ok = env->cpu_clock && clock_getcpuclockid(p->tgid, &p->cpu_clock) == 0 &&
			  procfs_cpu_ns(p->cpu_clock, &p->counters.cpu_ns) == 0;
	if (env->first_poll && !p->ident.kthread && carry_restore(env->carry, p))
		return; /* the sampler before us wrote its rows: the next goes on from there */
	if (!env->first_poll && p->ident.start_boot_ns + env->tick_ns > env->prev.boot_ns) {
		p->cadence.have_base = true;
		p->cadence.base_poll = env->prev;
		p->cadence.base_io = true;
		p->cadence.sample_boot_ns =
			p->ident.start_boot_ns < now_boot_ns ? p->ident.start_boot_ns : now_boot_ns;
	}
}

/*
 * Detection while the match can still improve: in the process's first
 * minute, until it matches the catalog's first entry, keeping the earliest
 * entry seen (a vLLM server maps libtorch before vllm's extension).  Maps
 * and cmdline are read again only when the mappings' size changed: a
 * PyTorch-sized maps costs about a millisecond.
 */
static void detect_framework(struct proc *p, const struct poll_env *env, uint64_t now_boot_ns)
{
	struct proc_identity *id = &p->ident;

	if (!env->catalog || id->framework_done)
		return;
	if (id->framework == SIZE_MAX || p->counters.vsize != id->framework_vsize) {
		id->framework = procfs_framework(env->procfd, p->tgid, env->catalog, id->framework);
		id->framework_vsize = p->counters.vsize;
	}
	if (id->framework == 0 || now_boot_ns >= id->start_boot_ns + FRAMEWORK_WINDOW_NS)
		id->framework_done = true;
}

/*
 * What a row needs beyond stat and io, read with them: the framework, and
 * the figures of the process's cgroup (once per cgroup per poll, whether or
 * not a row of it is due: that is known only once the poll is settled;
 * cgroup_refresh keeps the rates those of the rows' reads).
 */
static void proc_read_more(struct proc *p, const struct poll_env *env, uint64_t now_boot_ns)
{
	if (p->ident.kthread)
		return;
	detect_framework(p, env, now_boot_ns);
	if (p->ident.cg)
		cgroup_refresh(env->cgroups, p->ident.cg, env->gen);
}

static void proc_new(struct proc_table *table, const struct poll_env *env, pid_t tgid)
{
	char buf[STAT_BUF];
	struct proc_stat st;
	struct proc *p;
	int dirfd = proc_dir_open(env, tgid);
	int fd = open_kept(table, env, dirfd, "stat");
	ssize_t n = read_proc_file(env, tgid, fd, "stat", buf, sizeof(buf));
	uint64_t now = clock_boot_ns();

	if (n <= 0 || procfs_parse_stat(buf, (size_t)n, &st) || !(p = calloc(1, sizeof(*p)))) {
		close_fd(table, &fd);
		if (dirfd >= 0)
			close(dirfd);
		return; /* gone already, or unreadable */
	}
	p->tgid = tgid;
	p->stat_fd = fd;
	p->io_fd = -1;
	p->ident.start_ticks = st.start_ticks;
	p->ident.start_boot_ns = st.start_ticks * env->tick_ns;
	p->ident.kthread = st.flags & PF_KTHREAD_FLAG;
	p->ident.framework = SIZE_MAX;
	p->gpu.at_sampler_start = env->first_poll;
	p->cadence.seen_gen = env->gen;
	p->exit.last_seen = env->now;
	if (!p->ident.kthread) {
		proc_identity(p, &st, env);
		p->io_fd = open_kept(table, env, dirfd, "io");
	}
	if (dirfd >= 0)
		close(dirfd);
	proc_first_sample(p, env, now);
	proc_insert(table, p);
	proc_sample(p, &st, env, now);
	proc_read_more(p, env, now);
}

/*
 * Whether this poll is the one of p's idle cycle at which an idle p is read
 * in full and written: every idle_every polls, at a slot hashed from its
 * tgid (Fibonacci hashing: consecutive or evenly spaced tgids spread too).
 * The thousands of processes found at the sampler's start, or a fork storm,
 * then spread their reads and rows over the cycle instead of all coming due
 * in one poll.
 */
static bool proc_idle_slot(const struct proc *p, const struct poll_env *env)
{
	uint32_t hash = (uint32_t)p->tgid * 2654435761u;
	uint64_t slot = ((uint64_t)hash * env->idle_every) >> 32;

	return env->idle_every <= 1 || (env->gen + slot) % env->idle_every == 0;
}

/*
 * Whether p has not run since its last sample, so that reading its stat and
 * io would only repeat them (most processes on a host sleep through most
 * polls): its CPU clock, all threads together, has not moved.  A process
 * that took the tgid since would show another clock, and one that ran is
 * read in full, which checks that it is the same one.  A kernel thread
 * never makes a row: being alive is all it needs.  A process whose idle row
 * is due this poll is read in full, so the row is fresh.
 */
static bool proc_still(struct proc *p, const struct poll_env *env)
{
	uint64_t ns;

	if (!p->cpu_clock_ok || procfs_cpu_ns(p->cpu_clock, &ns) < 0)
		return false; /* gone, or no clock: the full read finds out */
	if (ns != p->counters.cpu_ns) {
		p->counters.cpu_ns = ns;
		return false;
	}
	return p->ident.kthread ||
	       (p->cadence.rows_started && !proc_idle_slot(p, env) && !env->closing);
}

/* A tracked process read again; false when it exited or its tgid names another one now. */
static bool proc_reread(struct proc *p, const struct poll_env *env)
{
	char buf[STAT_BUF];
	struct proc_stat st;
	uint64_t now;
	ssize_t n;

	if (proc_still(p, env)) {
		now = clock_boot_ns();
		if (!p->ident.kthread)
			proc_sample(p, NULL, env, now);
	} else {
		n = read_proc_file(env, p->tgid, p->stat_fd, "stat", buf, sizeof(buf));
		now = clock_boot_ns();
		if (n <= 0 || procfs_parse_stat(buf, (size_t)n, &st) ||
			st.start_ticks != p->ident.start_ticks)
			return false;
		if (!p->ident.kthread && proc_exec_seen(p, &st))
			proc_reidentify(p, &st, env);
		else if (!p->ident.kthread && st.image.start_stack)
			proc_cgroup_follow(
				p, env); /* a zombie's names the root: its last row keeps its own */
		proc_sample(p, &st, env, now);
	}
	p->cadence.seen_gen = env->gen;
	p->exit.last_seen = env->now;
	proc_read_more(p, env, now);
	return true;
}

static void proc_visit(struct proc_table *table, const struct poll_env *env, pid_t tgid)
{
	struct proc *p = proc_table_find(table, tgid);

	if (p && proc_reread(p, env))
		return;
	if (p && p->ident.kthread)
		proc_table_drop(table, env->cgroups, p);
	else if (p) /* exited, and the tgid names another process now: its last row is due */
		p->exit.gone_polls = 1;
	if (table->count >= SAMPLER_PROCS_MAX) {
		table->untracked++;
		return;
	}
	proc_new(table, env, tgid);
}

static pid_t parse_tgid(const char *name)
{
	long v = 0;

	if (!*name)
		return 0;
	for (const char *c = name; *c; c++) {
		if (*c < '0' || *c > '9' || v > 1 << 30)
			return 0;
		v = v * 10 + (*c - '0');
	}
	return (pid_t)v;
}

int proc_read_begin(struct proc_table *table, const struct poll_env *env, struct proc_scan *scan)
{
	int dfd = openat(env->procfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (dfd < 0)
		return -errno;
	scan->dir = fdopendir(dfd);
	if (!scan->dir) {
		close(dfd);
		return -errno;
	}
	table->untracked = 0;
	return 0;
}

/*
 * The listing goes on from where the last step left it: /proc lists by
 * pid, so a process born meanwhile with a higher pid is met in this pass,
 * one with a lower pid in the next, and none twice.
 */
int proc_read_step(struct proc_table *table, const struct poll_env *env, struct proc_scan *scan,
	uint64_t until_ns)
{
	struct dirent *de;

	while ((de = readdir(scan->dir))) {
		pid_t tgid = parse_tgid(de->d_name);

		if (tgid > 0)
			proc_visit(table, env, tgid);
		if (clock_mono_ns() >= until_ns)
			return 0;
	}
	proc_read_end(scan);
	/* the processes gone wait for their last row (exits.c), kernel threads need none */
	for (struct proc *p = table->list_head, *next; p; p = next) {
		next = p->list_next;
		if (p->cadence.seen_gen == env->gen)
			continue;
		if (p->ident.kthread)
			proc_table_drop(table, env->cgroups, p);
		else
			p->exit.gone_polls++;
	}
	return 1;
}

void proc_read_end(struct proc_scan *scan)
{
	if (scan->dir)
		closedir(scan->dir);
	scan->dir = NULL;
}

int proc_table_read(struct proc_table *table, const struct poll_env *env)
{
	struct proc_scan scan;
	int r = proc_read_begin(table, env, &scan);

	while (r == 0)
		r = proc_read_step(table, env, &scan, UINT64_MAX);
	return r < 0 ? r : 0;
}

/*
 * The fds of a process in a GPU state are looked at every poll, so that
 * closing its last GPU file ends gpu-held at the next poll; between full
 * scans, only its GPU files are checked (gpufd_look).  Full scans: at the
 * first look, during onset (CUDA opens its files then) and once every
 * idle_every polls (at the process's idle slot), for files opened without
 * an ioctl.
 */
static bool gpu_look_due(struct proc *p, const struct poll_env *env, bool *ret_full)
{
	bool periodic;

	/* the sampler holds no GPU file, but one kept /proc fd per process: not worth a scan */
	if (!env->gpu_possible || p->tgid == env->self_tgid || p->exit.gone_polls)
		return false;
	periodic = !p->gpu.fds_looked || proc_idle_slot(p, env);
	*ret_full = periodic || p->gpu.wl.state == WL_GPU_ONSET;
	return *ret_full || p->gpu.wl.state != WL_NO_GPU ||
	       (p->counters.probe.valid && p->counters.probe.gpu_ioctls);
}

/* 0, or -EAGAIN: its fd scan stopped at until_ns and goes on in the next slice. */
static int proc_look(
	struct proc *p, const struct poll_env *env, struct fd_scan *fds, uint64_t until_ns)
{
	struct proc_look *look = &p->gpu.look;
	bool full;
	int r;

	*look = (struct proc_look){ .scanned = false };
	if (!gpu_look_due(p, env, &full))
		return 0;
	r = gpufd_look(env->procfd, p->tgid, env->gpu, env->gpu_index, full, fds, until_ns,
		&p->gpu.fds, &look->holds_gpu_fd, &look->gpus);
	if (r == -EAGAIN)
		return r;
	look->scanned = r == 0;
	if (full)
		p->gpu.fds_looked = true;
	return 0;
}

void proc_table_look(const struct poll_env *env, struct proc_cursor *cur, uint64_t until_ns)
{
	if (env->gpu_possible && env->gen >= env->gpu_index->next_load_gen) {
		gpu_index_load(env->gpu_index, "/proc/devices", "/sys", env->driver_dir);
		env->gpu_index->next_load_gen = env->gen + GPU_INDEX_LOAD_POLLS;
	}
	for (struct proc *p; (p = cur->next);) {
		if (!p->ident.kthread && proc_look(p, env, &cur->fds, until_ns) == -EAGAIN)
			return;
		cur->next = p->list_next;
		if (clock_mono_ns() >= until_ns)
			return;
	}
}

void proc_settle(struct proc *p, uint64_t onset_window_ns, uint64_t now_boot_ns)
{
	const struct proc_probe_rates *pr = &p->counters.probe;
	struct workload_input in = {
		.fd_scanned = p->gpu.look.scanned,
		.holds_gpu_fd = p->gpu.look.holds_gpu_fd,
		.gpus = p->gpu.look.gpus,
		.at_sampler_start = p->gpu.at_sampler_start,
		.probe_valid = pr->valid,
		.gpu_ioctls = pr->gpu_ioctls,
		.last_gpu_ioctl_boot_ns = pr->last_gpu_ioctl_boot_ns,
		.prev_sample_boot_ns = p->cadence.prev_sample_boot_ns,
		.now_boot_ns = p->cadence.sample_boot_ns ? p->cadence.sample_boot_ns : now_boot_ns,
	};
	struct workload before = p->gpu.wl;

	if (p->ident.kthread)
		return;
	workload_update(&p->gpu.wl, &in, onset_window_ns);
	p->gpu.at_sampler_start = false;
	/* a change of state or GPUs is written now, not at the next idle row;
	 * and what the probe saw (waiting on a run queue without running, say) */
	if (pr->active || workload_changed(&before, &p->gpu.wl))
		p->cadence.idle = false;
}

void proc_table_rescan_fds(struct proc_table *table)
{
	for (struct proc *p = table->list_head; p; p = p->list_next)
		p->gpu.fds_looked = false;
}

void proc_table_redetect(struct proc_table *table)
{
	for (struct proc *p = table->list_head; p; p = p->list_next) {
		p->ident.framework = SIZE_MAX;
		p->ident.framework_done = false;
	}
}

bool proc_row_due(struct proc *p, const struct poll_env *env)
{
	if (p->exit.kind != EXIT_LIVES)
		return !p->ident.kthread;
	if (p->ident.kthread || !p->counters.rates_valid || p->exit.gone_polls)
		return false;
	if (!p->cadence.rows_started || !p->cadence.idle || proc_idle_slot(p, env) ||
		env->closing) {
		p->cadence.rows_started = true;
		return true;
	}
	return false;
}

void proc_row_written(struct proc *p, const struct poll_env *env)
{
	set_base(p, &env->now);
	if (p->ident.cg)
		cgroup_used(p->ident.cg, env->gen);
}
