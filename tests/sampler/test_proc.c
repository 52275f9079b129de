/*
 * test_proc.c: the process table's pass in slices, as a poll runs it from
 * the loop: over a fake /proc of FAKE_PROCS processes, a pass cut after
 * every entry finds the same processes as one uncut pass, drops the gone,
 * and looking at the fds of one process a slice (the read's part after
 * the probe's answer) reaches every process once.  And a process written
 * vanished (its final late) whose final then comes gets no second last
 * row.  A process born and gone between polls takes its framework from
 * the argv the probe sent, where it sent one.  Test process, any user.
 */
#include <fcntl.h>
#include <jansson.h>
#include <sys/stat.h>

#include "catalog.h"
#include "host.h"
#include "output.h"
#include "probe_link.h"
#include "testlib.h"

#define FAKE_PROCS 300

static char root[] = "/tmp/croft-test-proc.XXXXXX";

static void fake_proc(pid_t tgid)
{
	char path[128], stat[200];
	int fd, n;

	snprintf(path, sizeof(path), "%s/%d", root, (int)tgid);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	n = snprintf(stat, sizeof(stat),
		"%d (fake) S 1 %d %d 0 -1 4194304 0 0 0 0 7 3 0 0 20 0 1 0 %d 1000 10\n", (int)tgid,
		(int)tgid, (int)tgid, (int)tgid);
	snprintf(path, sizeof(path), "%s/%d/stat", root, (int)tgid);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, stat, (size_t)n), n);
	close(fd);
}

static void gone_proc(pid_t tgid)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/%d/stat", root, (int)tgid);
	ck_assert_int_eq(unlink(path), 0);
	snprintf(path, sizeof(path), "%s/%d", root, (int)tgid);
	ck_assert_int_eq(rmdir(path), 0);
}

/* A pass whose every step is cut after one entry (its deadline is long past). */
static size_t sliced_pass(struct proc_table *table, const struct poll_env *env)
{
	struct proc_scan scan;
	size_t steps = 0;
	int r = proc_read_begin(table, env, &scan);

	while (r == 0) {
		r = proc_read_step(table, env, &scan, 0);
		steps++;
	}
	ck_assert_int_eq(r, 1);
	ck_assert_ptr_null(scan.dir);
	return steps;
}

START_TEST(sliced_scan)
{
	struct cgroup_mounts mounts = { 0 };
	struct poll_env env = {
		.idle_every = 15, .tick_ns = 10000000, .page_size = 4096, .first_poll = true
	};
	struct proc_table table;
	struct proc_cursor cur;
	size_t looked = 0;

	ck_assert_ptr_nonnull(mkdtemp(root));
	for (pid_t tgid = 100; tgid < 100 + FAKE_PROCS; tgid++)
		fake_proc(tgid);
	env.procfd = open(root, O_RDONLY | O_DIRECTORY);
	env.cgroups = cgroup_table_new(&mounts);
	ck_assert_ptr_nonnull(env.cgroups);
	proc_table_init(&table);

	env.gen = 1;
	/* one step per entry ("." and ".." too), and the last one finds the end */
	ck_assert_uint_eq(sliced_pass(&table, &env), FAKE_PROCS + 2 + 1);
	ck_assert_uint_eq(table.count, FAKE_PROCS);
	for (pid_t tgid = 100; tgid < 100 + FAKE_PROCS; tgid++)
		ck_assert_ptr_nonnull(proc_table_find(&table, tgid));

	for (pid_t tgid = 100; tgid < 100 + FAKE_PROCS; tgid += 3)
		gone_proc(tgid);
	env.gen = 2;
	env.first_poll = false;
	sliced_pass(&table, &env);
	/* the processes gone stay until their last row is written, out of the live lookup */
	ck_assert_uint_eq(table.count, FAKE_PROCS);
	for (pid_t tgid = 100; tgid < 100 + FAKE_PROCS; tgid++)
		ck_assert(!proc_table_find(&table, tgid) == ((tgid - 100) % 3 == 0));
	for (struct proc *p = table.list_head; p; p = p->list_next)
		ck_assert((p->exit.gone_polls == 1) == ((p->tgid - 100) % 3 == 0));

	cur = (struct proc_cursor){ .next = table.list_head };
	while (cur.next) {
		proc_table_look(&env, &cur, 0);
		looked++;
	}
	ck_assert_uint_eq(looked, table.count);

	proc_table_clear(&table, env.cgroups);
	cgroup_table_free(env.cgroups);
	close(env.procfd);
	for (pid_t tgid = 101; tgid < 100 + FAKE_PROCS; tgid++)
		if ((tgid - 100) % 3)
			gone_proc(tgid);
	rmdir(root);
}
END_TEST

/*
 * The kernel frees a reaped process (and so the probe sends its final) an
 * RCU grace period after its reap, which a loaded host stretched past
 * EXIT_WAIT_MS: the process is written vanished, and its final, come
 * later, must not make it a second last row, as one born and gone between
 * polls.  A final of a process never seen still makes its one row.
 */
START_TEST(final_after_vanished)
{
	struct cgroup_mounts mounts = { 0 };
	struct poll_env env = { .idle_every = 15, .tick_ns = 10000000, .page_size = 4096 };
	struct probe_final late = { .tgid = 500,
		.start_boot_ns = 500 * env.tick_ns + 1234,
		.exit_boot_ns = 600 * env.tick_ns,
		.cpu_ns = 20000000 };
	struct probe_answer answer = {
		.answered = true, .finals_sent = true, .finals = &late, .finals_count = 1
	};
	struct proc_table table;
	struct proc *p;

	memcpy(root + sizeof(root) - 7, "XXXXXX", 6); /* a template again, after the test before */
	ck_assert_ptr_nonnull(mkdtemp(root));
	fake_proc(500);
	env.procfd = open(root, O_RDONLY | O_DIRECTORY);
	env.cgroups = cgroup_table_new(&mounts);
	ck_assert_ptr_nonnull(env.cgroups);
	proc_table_init(&table);
	env.gen = 1;
	env.first_poll = true;
	sliced_pass(&table, &env);
	gone_proc(500);
	env.gen = 2;
	env.first_poll = false;
	sliced_pass(&table, &env);
	p = proc_table_find_start(&table, 500, 500);
	ck_assert_ptr_nonnull(p);
	ck_assert_uint_eq(p->exit.gone_polls, 1);

	/* no final in time: its last row says what /proc showed, and it leaves (as poll.c) */
	ck_assert(proc_vanished_due(p, false, 0));
	p->exit.kind = EXIT_VANISHED;
	proc_table_drop(&table, env.cgroups, p);
	ck_assert_uint_eq(table.count, 0);

	proc_table_apply_finals(&table, &env, &answer);
	ck_assert_uint_eq(table.count, 0);
	ck_assert_ptr_null(proc_table_find_start(&table, 500, 500));
	ck_assert_uint_eq(table.finals_after_vanished, 1);

	late.tgid = 501; /* never seen: born and gone between two polls */
	late.start_boot_ns = 501 * env.tick_ns;
	proc_table_apply_finals(&table, &env, &answer);
	p = proc_table_find_start(&table, 501, 501);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(p->exit.kind, EXIT_BETWEEN_POLLS);
	ck_assert_uint_eq(table.finals_after_vanished, 1);

	proc_table_clear(&table, env.cgroups);
	cgroup_table_free(env.cgroups);
	close(env.procfd);
	rmdir(root);
}
END_TEST

/* tgid's between-polls row, made from a final with argv_len bytes of argv (NULL: none sent). */
static size_t between_polls_framework(
	const struct poll_env *env, pid_t tgid, const char *argv, uint32_t argv_len)
{
	struct probe_final f = { .tgid = (uint32_t)tgid, .start_boot_ns = tgid * env->tick_ns };
	struct probe_answer answer = {
		.answered = true, .finals_sent = true, .finals = &f, .finals_count = 1
	};
	struct proc_table table;
	struct proc *p;
	size_t framework;

	if (argv) {
		f.flags = PROBE_FINAL_ARGV_FLAG;
		f.argv_len = argv_len;
		memcpy(f.argv, argv, argv_len);
	}
	proc_table_init(&table);
	proc_table_apply_finals(&table, env, &answer);
	p = proc_table_find_start(&table, tgid, (uint64_t)tgid);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(p->exit.kind, EXIT_BETWEEN_POLLS);
	framework = p->ident.framework;
	proc_table_clear(&table, env->cgroups);
	return framework;
}

/*
 * The catalog's cmdline rules over the argv the probe kept: the earliest
 * entry with a word inside one argument (not across the NUL between two,
 * not past argv_len), none where none has; left out without an argv.
 */
START_TEST(between_polls_argv)
{
	static const char text[] = "[{\"name\": \"lib\", \"libraries\": [\"libzed\"]},"
				   " {\"name\": \"bee\", \"cmdline\": [\"bee\"]},"
				   " {\"name\": \"sea\", \"cmdline\": [\"sea\", \"bee-cut\"]}]";
	struct cgroup_mounts mounts = { 0 };
	struct poll_env env = { .idle_every = 15, .tick_ns = 10000000, .page_size = 4096 };
	struct catalog *cat;
	char err[256];

	ck_assert_int_eq(catalog_parse(text, sizeof(text) - 1, "test", &cat, err, sizeof(err)), 0);
	env.catalog = cat;
	env.cgroups = cgroup_table_new(&mounts);
	ck_assert_ptr_nonnull(env.cgroups);
	ck_assert_uint_eq(between_polls_framework(&env, 601, "x\0sea\0bee-cut\0", 16), 1);
	ck_assert_uint_eq(between_polls_framework(&env, 602, "x\0sea\0", 7), 2);
	ck_assert_uint_eq(between_polls_framework(&env, 603, "x\0be\0e\0libzed\0", 14), 3);
	ck_assert_uint_eq(between_polls_framework(&env, 604, "x\0sea\0", 4), 3); /* "x\0se" */
	ck_assert_uint_eq(between_polls_framework(&env, 605, "\xff\n\"bee\"\xfe", 8), 1);
	ck_assert_uint_eq(between_polls_framework(&env, 606, NULL, 0), SIZE_MAX);
	env.catalog = NULL; /* none loaded: left out */
	ck_assert_uint_eq(between_polls_framework(&env, 607, "bee", 3), SIZE_MAX);
	cgroup_table_free(env.cgroups);
	catalog_free(cat);
}
END_TEST

/* p's row, as the poll writes it: its "exited" and, where it has one, its "workload". */
static void row_says(const struct proc *p, const char *exited, const char *workload)
{
	struct row_context ctx = { .unix_ms = 1 };
	struct jbuf b = { 0 };
	json_error_t err;
	json_t *row;

	row_format(&b, p, &ctx);
	ck_assert(!b.failed);
	row = json_loadb(b.data, b.len, 0, &err);
	ck_assert_msg(row, "%s: %.*s", err.text, (int)b.len, b.data);
	ck_assert_str_eq(json_string_value(json_object_get(row, "exited")), exited);
	if (workload)
		ck_assert_str_eq(json_string_value(json_object_get(row, "workload")), workload);
	else
		ck_assert_msg(!json_object_get(row, "workload"), "%.*s", (int)b.len, b.data);
	json_decref(row);
	jbuf_free(&b);
}

/*
 * The probe saw a group exit, no poll read it and its final has not come
 * (its free lagging): it waits as a process gone from /proc does, then is
 * written vanished from the exit record, without a workload (what the
 * probe saw of its GPU use went with the final); a final that comes first
 * makes it the one row of a process born and gone between polls, which
 * has one; a kernel thread's exit makes nothing.
 */
START_TEST(exit_without_final)
{
	struct cgroup_mounts mounts = { 0 };
	struct poll_env env = { .idle_every = 15, .tick_ns = 10000000, .page_size = 4096 };
	struct probe_exit exits[] = {
		{ .tgid = 600, .ppid = 1, .start_boot_ns = 600 * env.tick_ns, .comm = "short" },
		{ .tgid = 601, .ppid = 1, .start_boot_ns = 601 * env.tick_ns, .comm = "freed" },
		{ .tgid = 602,
			.ppid = 2,
			.start_boot_ns = 602 * env.tick_ns,
			.comm = "kworker/0:1" },
	};
	struct probe_final freed = { .tgid = 601,
		.start_boot_ns = 601 * env.tick_ns,
		.exit_boot_ns = 700 * env.tick_ns,
		.cpu_ns = 20000000,
		.comm = "freed" };
	struct probe_answer answer = {
		.answered = true, .finals_sent = true, .exits = exits, .exits_count = 3
	};
	struct proc_table table;
	struct proc *p;

	env.cgroups = cgroup_table_new(&mounts);
	ck_assert_ptr_nonnull(env.cgroups);
	proc_table_init(&table);
	env.now.unix_ms = 1000000;
	proc_table_apply_finals(&table, &env, &answer);
	proc_table_apply_exits(&table, &env, &answer);
	ck_assert_uint_eq(table.count, 2); /* not the kernel thread */
	p = proc_table_find_start(&table, 600, 600);
	ck_assert_ptr_nonnull(p);
	ck_assert(p->exit.unread);
	ck_assert_str_eq(p->ident.comm, "short");

	/* the final of 601 comes: its one row is a between-polls row, and only one */
	answer = (struct probe_answer){
		.answered = true, .finals_sent = true, .finals = &freed, .finals_count = 1
	};
	proc_table_apply_finals(&table, &env, &answer);
	ck_assert_uint_eq(table.count, 2);
	p = proc_table_find_start(&table, 601, 601);
	ck_assert_ptr_nonnull(p);
	ck_assert(!p->exit.unread);
	ck_assert_int_eq(p->exit.kind, EXIT_BETWEEN_POLLS);
	ck_assert_str_eq(p->ident.comm, "freed");
	row_says(p, "between_polls", "no-gpu");
	proc_table_drop(&table, env.cgroups, p);

	/* 600's never comes: it waits 3 polls and 10 s, then is written vanished */
	p = proc_table_find_start(&table, 600, 600);
	p->exit.gone_polls = EXIT_WAIT_POLLS;
	ck_assert(!proc_vanished_due(p, true, env.now.unix_ms + EXIT_WAIT_MS - 1));
	ck_assert(proc_vanished_due(p, true, env.now.unix_ms + EXIT_WAIT_MS));
	ck_assert(p->counters.rates_valid && p->counters.span_s == 0 && p->counters.cpu_cores == 0);
	p->exit.kind = EXIT_VANISHED;
	row_says(p, "vanished", NULL);
	proc_table_drop(&table, env.cgroups, p);
	ck_assert_uint_eq(table.vanished_unread, 1);

	/* its exit record again, or its final late: no second row */
	answer = (struct probe_answer){
		.answered = true, .finals_sent = true, .exits = exits, .exits_count = 1
	};
	proc_table_apply_exits(&table, &env, &answer);
	ck_assert_uint_eq(table.count, 0);
	freed.tgid = 600;
	freed.start_boot_ns = 600 * env.tick_ns;
	answer = (struct probe_answer){
		.answered = true, .finals_sent = true, .finals = &freed, .finals_count = 1
	};
	proc_table_apply_finals(&table, &env, &answer);
	ck_assert_uint_eq(table.count, 0);
	ck_assert_uint_eq(table.finals_after_vanished, 1);

	proc_table_clear(&table, env.cgroups);
	cgroup_table_free(env.cgroups);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("proc");
	TCase *tc = tcase_create("proc");

	tcase_add_test(tc, sliced_scan);
	tcase_add_test(tc, final_after_vanished);
	tcase_add_test(tc, between_polls_argv);
	tcase_add_test(tc, exit_without_final);
	suite_add_tcase(s, tc);
	return tl_run(s);
}
