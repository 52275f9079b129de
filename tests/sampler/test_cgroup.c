/*
 * test_cgroup.c: /proc/<pid>/cgroup and mountinfo parsing, container ids
 * of docker, containerd/CRI, CRI-O, podman and kubepods paths, the
 * cgroup file parsers, and the CPU rates' start over a fake cgroupfs.
 * Test process, any user.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sampler.h"
#include "testlib.h"

#define ID "33813f5d2c0e7b1a9f8e6d5c4b3a29180716253443526170819a0b1c2d3e4f50"

static const char *cid(const char *path)
{
	static char id[CONTAINER_ID_LEN + 1];

	if (!cgroup_container_id(path, strlen(path), id))
		return "";
	return id;
}

START_TEST(container_ids)
{
	ck_assert_str_eq(cid("/system.slice/docker-" ID ".scope"), ID);
	ck_assert_str_eq(cid("/system.slice/containerd.service/kubepods-burstable-pod1.slice:"
			     "cri-containerd:" ID),
		"");
	ck_assert_str_eq(cid("/kubepods.slice/kubepods-burstable.slice/"
			     "kubepods-burstable-pod12.slice/cri-containerd-" ID ".scope"),
		ID);
	ck_assert_str_eq(cid("/kubepods.slice/kubepods-pod3.slice/crio-" ID ".scope"), ID);
	ck_assert_str_eq(cid("/machine.slice/libpod-" ID ".scope"), ID);
	ck_assert_str_eq(cid("/machine.slice/libpod-" ID ".scope/container"), ID);
	ck_assert_str_eq(cid("/docker/" ID), ID);
	ck_assert_str_eq(cid("/kubepods/burstable/pod5a2f/" ID), ID);
	ck_assert_str_eq(cid("/kubepods/besteffort/podx/" ID "/sub"), ID);
	/* not containers */
	ck_assert_str_eq(cid("/"), "");
	ck_assert_str_eq(cid("/user.slice/user-1000.slice/session-2.scope"), "");
	ck_assert_str_eq(cid("/system.slice/docker.service"), "");
	ck_assert_str_eq(cid("/other/" ID), ""); /* bare id, no docker/kubepods */
	ck_assert_str_eq(cid("/system.slice/docker-33813f5d.scope"), ""); /* short id */
	ck_assert_str_eq(cid("/system.slice/docker-" ID "0.scope"), "");  /* 65 hex */
	ck_assert_str_eq(cid("/system.slice/docker-" ID ".scopex"), "");
}
END_TEST

START_TEST(proc_cgroup_v1_hybrid_v2)
{
	static const char hybrid[] = "9:name=systemd:/system.slice/docker-" ID ".scope\n"
				     "4:memory:/system.slice/docker-" ID ".scope\n"
				     "2:cpu,cpuacct:/system.slice/docker-" ID ".scope\n"
				     "0::/system.slice/docker-" ID ".scope\n";
	static const char v2[] = "0::/user.slice/session-1.scope\n";
	static const char here[] = "4:memory:/process_api/834e\n1:cpu:/\n2:cpuacct:/\n0::/\n";
	struct cgroup_paths ps;

	ck_assert_int_eq(cgroup_parse_proc(hybrid, strlen(hybrid), &ps), 0);
	ck_assert_uint_eq(ps.memory_len, strlen("/system.slice/docker-" ID ".scope"));
	ck_assert_ptr_nonnull(ps.cpu);
	ck_assert_ptr_nonnull(ps.cpuacct);
	ck_assert_ptr_nonnull(ps.systemd);
	ck_assert_ptr_nonnull(ps.v2);
	ck_assert_int_eq(cgroup_parse_proc(v2, strlen(v2), &ps), 0);
	ck_assert_ptr_null(ps.memory);
	ck_assert_int_eq(strncmp(ps.v2, "/user.slice/session-1.scope", ps.v2_len), 0);
	ck_assert_int_eq(cgroup_parse_proc(here, strlen(here), &ps), 0);
	ck_assert_int_eq(strncmp(ps.memory, "/process_api/834e", ps.memory_len), 0);
	ck_assert_int_eq(strncmp(ps.cpu, "/", ps.cpu_len), 0);
	ck_assert_int_eq(cgroup_parse_proc("garbage", 7, &ps), -ENOENT);
}
END_TEST

START_TEST(table_paths)
{
	static const char mountinfo[] =
		"30 24 0:26 / /sys/fs/cgroup ro,nosuid - tmpfs tmpfs ro,mode=755\n"
		"35 30 0:31 / /sys/fs/cgroup/memory rw,relatime shared:1 - cgroup cgroup "
		"rw,memory\n"
		"36 30 0:32 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
		"37 30 0:33 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate\n"
		"38 30 0:34 /sub /mnt/sub rw - cgroup2 cgroup2 rw\n";
	static const char docker[] = "4:memory:/system.slice/docker-" ID ".scope\n"
				     "2:cpu,cpuacct:/\n0::/system.slice/docker-" ID ".scope\n";
	static const char host[] = "4:memory:/user.slice\n2:cpu,cpuacct:/\n0::/\n";
	struct cgroup_mounts m;
	struct cgroup_table *t;
	struct cgroup *a, *b, *c;
	size_t n;

	ck_assert_int_eq(cgroup_mounts_parse(mountinfo, strlen(mountinfo), &m), 0);
	ck_assert_str_eq(m.memory, "/sys/fs/cgroup/memory");
	ck_assert_str_eq(m.cpu, "/sys/fs/cgroup/cpu,cpuacct");
	ck_assert_str_eq(m.cpuacct, "/sys/fs/cgroup/cpu,cpuacct");
	ck_assert_str_eq(m.v2, "/sys/fs/cgroup/unified"); /* the /sub mount is not a root */
	t = cgroup_table_new(&m);
	a = cgroup_get(t, docker, strlen(docker));
	ck_assert_str_eq(a->path, "/system.slice/docker-" ID ".scope");
	ck_assert_str_eq(a->container_id, ID);
	ck_assert_str_eq(a->dir_memory, "/sys/fs/cgroup/memory/system.slice/docker-" ID ".scope");
	ck_assert_str_eq(a->dir_v2, "/sys/fs/cgroup/unified/system.slice/docker-" ID ".scope");
	ck_assert_ptr_null(a->dir_cpu); /* "/" is another cgroup: its figures would lie */
	b = cgroup_get(t, docker, strlen(docker));
	ck_assert_ptr_eq(a, b);
	c = cgroup_get(t, host, strlen(host));
	ck_assert_str_eq(c->path, "/user.slice");
	ck_assert_str_eq(c->container_id, "");
	ck_assert_int_eq(cgroup_table_containers(t, &n), 0);
	ck_assert_uint_eq(n, 1);
	cgroup_put(t, a);
	cgroup_put(t, b);
	cgroup_put(t, c);
	ck_assert_int_eq(cgroup_table_containers(t, &n), 0);
	ck_assert_uint_eq(n, 0);
	cgroup_table_free(t);
}
END_TEST

/* Containers are counted by id: two cgroups of one container are one. */
START_TEST(containers_count)
{
	enum { CONTAINERS = 3000 };
	struct cgroup_mounts m = { 0 };
	struct cgroup_table *t = cgroup_table_new(&m);
	struct cgroup **cgs = calloc(2 * CONTAINERS, sizeof(*cgs));
	char text[256];
	size_t n;

	ck_assert_ptr_nonnull(cgs);
	for (int i = 0; i < 2 * CONTAINERS; i++) {
		/* the container's scope, and a cgroup below it (one process in each) */
		int len = snprintf(text, sizeof(text), "0::/system.slice/docker-%064x.scope%s\n",
			i / 2, i % 2 ? "/sub" : "");

		cgs[i] = cgroup_get(t, text, (size_t)len);
		ck_assert_ptr_nonnull(cgs[i]);
	}
	ck_assert_int_eq(cgroup_table_containers(t, &n), 0);
	ck_assert_uint_eq(n, CONTAINERS);
	for (int i = 0; i < 2 * CONTAINERS; i++)
		cgroup_put(t, cgs[i]);
	free(cgs);
	cgroup_table_free(t);
}
END_TEST

static void write_cpu_stat(
	const char *dir, uint64_t usage_usec, uint64_t periods, uint64_t throttled)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/a/cpu.stat", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "usage_usec %llu\nnr_periods %llu\nnr_throttled %llu\n",
		(unsigned long long)usage_usec, (unsigned long long)periods,
		(unsigned long long)throttled);
	ck_assert_int_eq(fclose(f), 0);
}

/*
 * The poll reads every tracked cgroup once per poll, rows or not; the rates
 * run from the last read a row took, as when only due rows read them: a
 * read no row took moves no rate's start.
 */
START_TEST(rates_from_used_read)
{
	static const char text[] = "0::/a\n";
	char dir[] = "/tmp/croft-test-cgroup.XXXXXX", sub[300];
	struct cgroup_mounts m = { 0 };
	struct cgroup_table *t;
	struct cgroup *cg;
	uint64_t base_mono;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(sub, sizeof(sub), "%s/a", dir);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	snprintf(m.v2, sizeof(m.v2), "%s", dir);
	t = cgroup_table_new(&m);
	cg = cgroup_get(t, text, strlen(text));
	ck_assert_ptr_nonnull(cg);

	write_cpu_stat(dir, 1000, 10, 1);
	cgroup_refresh(t, cg, 1);
	ck_assert(!(cg->now.have & CGF_CPU)); /* one read: no rate yet */
	cgroup_used(cg, 1);
	write_cpu_stat(dir, 2000, 20, 3);
	cgroup_refresh(t, cg, 2); /* from poll 1's read; no row takes it */
	ck_assert(cg->now.have & CGF_CPU);
	ck_assert_double_eq_tol(cg->now.throttled_fraction, 0.2, 1e-9);
	base_mono = cg->base.mono_ns;
	write_cpu_stat(dir, 4000, 40, 9);
	cgroup_refresh(t, cg, 3);
	ck_assert_uint_eq(cg->base.mono_ns, base_mono); /* still poll 1's read */
	ck_assert_uint_eq(cg->base.usage_ns, 1000000);
	ck_assert_double_eq_tol(
		cg->now.cpu_cores, 3000000.0 / (double)(cg->last.mono_ns - base_mono), 1e-9);
	ck_assert_double_eq_tol(cg->now.throttled_fraction, 8.0 / 30.0, 1e-9);
	cgroup_used(cg, 3);
	write_cpu_stat(dir, 4500, 50, 9);
	cgroup_refresh(t, cg, 4); /* a row took poll 3's: the rates start there */
	ck_assert_uint_eq(cg->base.usage_ns, 4000000);
	ck_assert_double_eq_tol(cg->now.throttled_fraction, 0.0, 1e-9);

	cgroup_put(t, cg);
	cgroup_table_free(t);
	snprintf(sub, sizeof(sub), "%s/a/cpu.stat", dir);
	unlink(sub);
	snprintf(sub, sizeof(sub), "%s/a", dir);
	rmdir(sub);
	rmdir(dir);
}
END_TEST

START_TEST(file_parsers)
{
	static const char cpu_stat[] = "usage_usec 123456\nuser_usec 1\nnr_periods 10\n"
				       "nr_throttled 4\nthrottled_usec 9\n";
	static const char oom_control[] = "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n";
	static const char pressure[] = "some avg10=31.06 avg60=2.00 avg300=0.50 total=12\n"
				       "full avg10=1.00 avg60=0.00 avg300=0.00 total=3\n";
	uint64_t v;
	double d;

	ck_assert_int_eq(cgroup_parse_keyed(cpu_stat, "usage_usec", &v), 0);
	ck_assert_uint_eq(v, 123456);
	ck_assert_int_eq(cgroup_parse_keyed(cpu_stat, "nr_throttled", &v), 0);
	ck_assert_uint_eq(v, 4);
	ck_assert_int_eq(cgroup_parse_keyed(cpu_stat, "usage", &v), -ENOENT);
	ck_assert_int_eq(cgroup_parse_keyed(oom_control, "oom_kill", &v), 0);
	ck_assert_uint_eq(v, 3);
	ck_assert_int_eq(cgroup_parse_pressure(pressure, &d), 0);
	ck_assert_double_eq_tol(d, 31.06, 1e-9);
	ck_assert_int_eq(cgroup_parse_pressure("full avg10=1.0\n", &d), -ENOENT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cgroup");
	TCase *tc = tcase_create("cgroup");

	tcase_add_test(tc, container_ids);
	tcase_add_test(tc, proc_cgroup_v1_hybrid_v2);
	tcase_add_test(tc, table_paths);
	tcase_add_test(tc, containers_count);
	tcase_add_test(tc, file_parsers);
	tcase_add_test(tc, rates_from_used_read);
	suite_add_tcase(s, tc);
	return tl_run(s);
}
