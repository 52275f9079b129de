/*
 * proc.c: the process table, keyed by (tgid, start time), and the /proc
 * pass of each poll: identity read once per process, counters every poll,
 * rates over each process's own elapsed time, never invented.
 * croft-sampler (croft user, CAP_SYS_PTRACE + CAP_DAC_READ_SEARCH).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "clock.h"
#include "log.h"
#include "probe_link.h"
#include "sampler.h"

#define PF_KTHREAD      0x00200000u  /* include/linux/sched.h */
#define STAT_BUF        1024
#define IO_BUF          512
#define SPAN_SLACK_MS   2            /* the two clocks of a poll, each rounded to ms */

void proc_table_init(struct proc_table *table)
{
	memset(table, 0, sizeof(*table));
}

struct proc *proc_table_find(struct proc_table *table, pid_t tgid)
{
	struct proc *p = table->buckets[(uint32_t)tgid % PROC_HASH_BUCKETS];

	while (p && p->tgid != tgid)
		p = p->hash_next;
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

static void proc_remove(struct proc_table *table, struct cgroup_table *cgroups, struct proc *p)
{
	struct proc **pp = &table->buckets[(uint32_t)p->tgid % PROC_HASH_BUCKETS];

	while (*pp != p)
		pp = &(*pp)->hash_next;
	*pp = p->hash_next;
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
	cgroup_put(cgroups, p->cg);
	free(p->comm);
	free(p->exe);
	free(p->cwd);
	free(p->label);
	free(p->probe.syscalls); /* malloc'd by probe_link.c */
	gpu_fds_free(&p->gpu_fds);
	free(p);
}

void proc_table_clear(struct proc_table *table, struct cgroup_table *cgroups)
{
	while (table->list_head)
		proc_remove(table, cgroups, table->list_head);
	table->untracked = 0;
}

static void proc_insert(struct proc_table *table, struct proc *p)
{
	size_t b = (uint32_t)p->tgid % PROC_HASH_BUCKETS;

	p->hash_next = table->buckets[b];
	table->buckets[b] = p;
	p->list_prev = table->list_tail;
	if (table->list_tail)
		table->list_tail->list_next = p;
	else
		table->list_head = p;
	table->list_tail = p;
	table->count++;
}

/*
 * Opens <name> in an open /proc/<tgid> directory (dirfd -1: fds are not
 * kept), kept for later polls; -1 when it cannot be.  Opening through the
 * directory's fd binds every kept fd to the process that directory was:
 * none can name a later user of the tgid.
 */
static int open_kept(struct proc_table *table, const struct poll_env *env, int dirfd,
	const char *name)
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
static ssize_t read_proc_file(const struct poll_env *env, pid_t tgid, int fd, const char *name,
	char *buf, size_t size)
{
	char path[64];

	if (fd >= 0)
		return procfs_pread(fd, buf, size);
	snprintf(path, sizeof(path), "%d/%s", (int)tgid, name);
	return procfs_read_at(env->procfd, path, buf, size);
}

static void read_io(struct proc *p, const struct poll_env *env)
{
	char buf[IO_BUF];
	ssize_t n;

	p->io_ok = false;
	if (p->io_denied)
		return;
	n = read_proc_file(env, p->tgid, p->io_fd, "io", buf, sizeof(buf));
	if (n == -EACCES || n == -EPERM)
		p->io_denied = true; /* not ours to read: do not retry each poll */
	else if (n > 0 && procfs_parse_io(buf, (size_t)n, &p->read_bytes, &p->write_bytes) == 0)
		p->io_ok = true;
}

static uint64_t delta(uint64_t now, uint64_t prev)
{
	return now >= prev ? now - prev : 0;
}

/*
 * Seconds from one poll to another: the rows' own clock (unix_ms) while the
 * wall clock keeps pace with the boot clock, so that a rate times the time
 * between its row and the previous one is exactly the count; the boot clock
 * across a wall-clock step.
 */
static double poll_span_s(const struct poll_clock *from, const struct poll_clock *to)
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
	p->have_base = true;
	p->base_poll = *at;
	p->base_cpu_ns = p->cpu_ns;
	p->base_read_bytes = p->read_bytes;
	p->base_write_bytes = p->write_bytes;
	p->base_io = p->io_ok;
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
	uint64_t dcpu, dr = 0, dw = 0;

	if (st) {
		p->cpu_ticks = st->cpu_ticks;
		if (!p->cpu_clock_ok)
			p->cpu_ns = st->cpu_ticks * env->tick_ns;
		p->threads = st->threads;
		p->rss_bytes = st->rss_pages * env->page_size;
		p->vsize = st->vsize;
		if (!p->kthread)
			read_io(p, env);
	}
	p->rates_valid = false;
	p->io_rates_valid = false;
	p->prev_sample_boot_ns = p->sample_boot_ns;
	p->sample_boot_ns = now_boot_ns;
	if (!p->have_base) {
		set_base(p, &env->now); /* running before we looked: a baseline only */
		return;
	}
	p->span_s = p->rows_started ? poll_span_s(&p->base_poll, &env->now)
				    : (double)env->poll_interval_ms / 1e3;
	if (p->span_s <= 0 || env->now.boot_ns <= p->base_poll.boot_ns)
		return;
	dcpu = delta(p->cpu_ns, p->base_cpu_ns);
	p->cpu_cores = (double)dcpu / 1e9 / p->span_s;
	if (p->io_ok && p->base_io) {
		dr = delta(p->read_bytes, p->base_read_bytes);
		dw = delta(p->write_bytes, p->base_write_bytes);
		p->read_bytes_s = (double)dr / p->span_s;
		p->write_bytes_s = (double)dw / p->span_s;
		p->io_rates_valid = true;
	}
	p->rates_valid = true;
	p->idle = dcpu == 0 && dr == 0 && dw == 0;
}

/* comm, exe, cwd, cgroup and label: read once per process. */
static void proc_identity(struct proc *p, const struct proc_stat *st, const struct poll_env *env)
{
	char path[64], *buf;
	ssize_t n;

	p->comm = malloc(st->comm_len + 1);
	if (p->comm) {
		memcpy(p->comm, st->comm, st->comm_len);
		p->comm[st->comm_len] = '\0';
		p->comm_len = st->comm_len;
	}
	procfs_readlink(env->procfd, p->tgid, "exe", &p->exe, &p->exe_len);
	procfs_readlink(env->procfd, p->tgid, "cwd", &p->cwd, &p->cwd_len);
	procfs_label(env->procfd, p->tgid, &p->label, &p->label_len);
	buf = malloc(PROC_CGROUP_TEXT_MAX);
	if (!buf)
		return;
	snprintf(path, sizeof(path), "%d/cgroup", (int)p->tgid);
	n = procfs_read_at(env->procfd, path, buf, PROC_CGROUP_TEXT_MAX);
	if (n > 0)
		p->cg = cgroup_get(env->cgroups, buf, (size_t)n);
	free(buf);
}

/*
 * comm changes at exec (and PR_SET_NAME): what was read between fork and
 * exec named the parent's program, so the identity is read again.
 */
static void proc_reidentify(struct proc *p, const struct proc_stat *st, const struct poll_env *env)
{
	free(p->comm);
	free(p->exe);
	free(p->cwd);
	free(p->label);
	p->comm = p->exe = p->cwd = p->label = NULL;
	p->comm_len = p->exe_len = p->cwd_len = p->label_len = 0;
	cgroup_put(env->cgroups, p->cg);
	p->cg = NULL;
	proc_identity(p, st, env);
	p->framework = SIZE_MAX;
	p->framework_done = false;
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
			  procfs_cpu_ns(p->cpu_clock, &p->cpu_ns) == 0;
	if (!env->first_poll && p->start_boot_ns + env->tick_ns > env->prev.boot_ns) {
		p->have_base = true;
		p->base_poll = env->prev;
		p->base_io = true;
		p->sample_boot_ns = p->start_boot_ns < now_boot_ns ? p->start_boot_ns : now_boot_ns;
	}
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
	p->start_ticks = st.start_ticks;
	p->start_boot_ns = st.start_ticks * env->tick_ns;
	p->kthread = st.flags & PF_KTHREAD;
	p->framework = SIZE_MAX;
	p->at_sampler_start = env->first_poll;
	p->seen_gen = env->gen;
	if (!p->kthread) {
		proc_identity(p, &st, env);
		p->io_fd = open_kept(table, env, dirfd, "io");
	}
	if (dirfd >= 0)
		close(dirfd);
	proc_first_sample(p, env, now);
	proc_insert(table, p);
	proc_sample(p, &st, env, now);
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
	if (ns != p->cpu_ns) {
		p->cpu_ns = ns;
		return false;
	}
	return p->kthread || (p->rows_started && !proc_idle_slot(p, env));
}

static void proc_visit(struct proc_table *table, const struct poll_env *env, pid_t tgid)
{
	struct proc *p = proc_table_find(table, tgid);
	char buf[STAT_BUF];
	struct proc_stat st;

	if (p && proc_still(p, env)) {
		p->seen_gen = env->gen;
		if (!p->kthread)
			proc_sample(p, NULL, env, clock_boot_ns());
		return;
	}
	if (p) {
		ssize_t n = read_proc_file(env, tgid, p->stat_fd, "stat", buf, sizeof(buf));
		uint64_t now = clock_boot_ns();

		if (n > 0 && procfs_parse_stat(buf, (size_t)n, &st) == 0 &&
		    st.start_ticks == p->start_ticks) {
			p->seen_gen = env->gen;
			if (!p->kthread && (st.comm_len != p->comm_len ||
					    memcmp(st.comm, p->comm, st.comm_len)))
				proc_reidentify(p, &st, env);
			proc_sample(p, &st, env, now);
			return;
		}
		/* exited, or the tgid now names another process: start over */
		proc_remove(table, env->cgroups, p);
	}
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

int proc_scan_begin(struct proc_table *table, const struct poll_env *env, struct proc_scan *scan)
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
int proc_scan_step(struct proc_table *table, const struct poll_env *env, struct proc_scan *scan,
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
	proc_scan_end(scan);
	for (struct proc *p = table->list_head, *next; p; p = next) {
		next = p->list_next;
		if (p->seen_gen != env->gen)
			proc_remove(table, env->cgroups, p);
	}
	return 1;
}

void proc_scan_end(struct proc_scan *scan)
{
	if (scan->dir)
		closedir(scan->dir);
	scan->dir = NULL;
}

int proc_table_scan(struct proc_table *table, const struct poll_env *env)
{
	struct proc_scan scan;
	int r = proc_scan_begin(table, env, &scan);

	while (r == 0)
		r = proc_scan_step(table, env, &scan, UINT64_MAX);
	return r < 0 ? r : 0;
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
	if (!env->catalog || p->framework_done)
		return;
	if (p->framework == SIZE_MAX || p->vsize != p->framework_vsize) {
		p->framework = procfs_framework(env->procfd, p->tgid, env->catalog, p->framework);
		p->framework_vsize = p->vsize;
	}
	if (p->framework == 0 || now_boot_ns >= p->start_boot_ns + FRAMEWORK_WINDOW_NS)
		p->framework_done = true;
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
	if (!env->gpu_possible || p->tgid == env->self_tgid)
		return false;
	periodic = !p->fds_looked || proc_idle_slot(p, env);
	*ret_full = periodic || p->wl.state == WL_GPU_ONSET;
	return *ret_full || p->wl.state != WL_NO_GPU || (p->probe.valid && p->probe.gpu_ioctls);
}

/* 0, or -EAGAIN: its fd scan stopped at until_ns and goes on in the next slice. */
static int proc_settle(struct proc *p, const struct poll_env *env, uint64_t onset_window_ns,
	uint64_t now_boot_ns, struct fd_scan *fds, uint64_t until_ns)
{
	struct workload_input in = { 0 };
	struct workload before = p->wl;
	bool full;
	int r;

	detect_framework(p, env, now_boot_ns);
	if (gpu_look_due(p, env, &full)) {
		r = gpufd_look(env->procfd, p->tgid, env->gpu, env->gpu_index, full, fds, until_ns,
			&p->gpu_fds, &in.holds_gpu_fd, &in.gpus);
		if (r == -EAGAIN)
			return r;
		in.fd_scanned = r == 0;
		if (full)
			p->fds_looked = true;
	}
	in.at_sampler_start = p->at_sampler_start;
	in.probe_valid = p->probe.valid;
	in.gpu_ioctls = p->probe.gpu_ioctls;
	in.last_gpu_ioctl_boot_ns = p->probe.last_gpu_ioctl_boot_ns;
	in.prev_sample_boot_ns = p->prev_sample_boot_ns;
	in.now_boot_ns = p->sample_boot_ns ? p->sample_boot_ns : now_boot_ns;
	workload_update(&p->wl, &in, onset_window_ns);
	p->at_sampler_start = false;
	/* a change of state or GPUs is written now, not at the next idle row;
	 * and what the probe saw (waiting on a run queue without running, say) */
	if (p->probe.active || workload_changed(&before, &p->wl))
		p->idle = false;
	return 0;
}

void proc_table_settle(const struct poll_env *env, uint64_t onset_window_ns, uint64_t now_boot_ns,
	struct proc_cursor *cur, uint64_t until_ns)
{
	if (env->gpu_possible && env->gen >= env->gpu_index->next_load_gen) {
		gpu_index_load(env->gpu_index, "/proc/devices", "/sys");
		env->gpu_index->next_load_gen = env->gen + GPU_INDEX_LOAD_POLLS;
	}
	for (struct proc *p; (p = cur->next);) {
		if (!p->kthread && proc_settle(p, env, onset_window_ns, now_boot_ns, &cur->fds,
					   until_ns) == -EAGAIN)
			return;
		cur->next = p->list_next;
		if (clock_mono_ns() >= until_ns)
			return;
	}
}

void proc_table_rescan_fds(struct proc_table *table)
{
	for (struct proc *p = table->list_head; p; p = p->list_next)
		p->fds_looked = false;
}

bool proc_row_due(struct proc *p, const struct poll_env *env)
{
	if (p->kthread || !p->rates_valid)
		return false;
	if (!p->rows_started || !p->idle || proc_idle_slot(p, env)) {
		p->rows_started = true;
		return true;
	}
	return false;
}

void proc_row_written(struct proc *p, const struct poll_env *env)
{
	set_base(p, &env->now);
}
