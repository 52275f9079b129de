/*
 * test_cgroup.c: /proc/<pid>/cgroup and mountinfo parsing, container ids
 * of docker, containerd/CRI, CRI-O, podman and kubepods paths, pods of
 * every kubelet layout, the cgroup file parsers, and the CPU rates' start
 * over a fake cgroupfs.
 * Test process, any user.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host.h"
#include "scratch.h"
#include "testlib.h"

#define ID    "33813f5d2c0e7b1a9f8e6d5c4b3a29180716253443526170819a0b1c2d3e4f50"
#define OTHER "caffeeaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define UID   "1b2c3d4e-0000-1111-2222-333344445555"
#define UIDU  "1b2c3d4e_0000_1111_2222_333344445555"

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
			     "kubepods-burstable-pod" UIDU ".slice/cri-containerd-" ID ".scope"),
		ID);
	ck_assert_str_eq(cid("/kubepods.slice/kubepods-pod" UIDU ".slice/crio-" ID ".scope"), ID);
	ck_assert_str_eq(cid("/machine.slice/libpod-" ID ".scope"), ID);
	ck_assert_str_eq(cid("/machine.slice/libpod-" ID ".scope/container"), ID);
	ck_assert_str_eq(cid("/libpod_parent/libpod-" ID), ID);
	ck_assert_str_eq(cid("/docker/" ID), ID);
	ck_assert_str_eq(cid("/kubepods/burstable/pod" UID "/" ID), ID);
	ck_assert_str_eq(cid("/kubepods/besteffort/pod" UID "/" ID "/sub"), ID);
	/* a name inside a container is the container's: the runtime made the outer one */
	ck_assert_str_eq(cid("/system.slice/docker-" ID ".scope/docker-" OTHER ".scope"), ID);
	ck_assert_str_eq(cid("/docker/" ID "/docker/" OTHER), ID);
	ck_assert_str_eq(cid("/kubepods/pod" UID "/" ID "/kubepods/pod" UID "/" OTHER), ID);
	/* not containers */
	ck_assert_str_eq(cid("/"), "");
	ck_assert_str_eq(cid("/user.slice/user-1000.slice/session-2.scope"), "");
	ck_assert_str_eq(cid("/system.slice/docker.service"), "");
	ck_assert_str_eq(cid("/other/" ID), ""); /* bare id, no docker/kubepods */
	ck_assert_str_eq(cid("/system.slice/docker-33813f5d.scope"), ""); /* short id */
	ck_assert_str_eq(cid("/system.slice/docker-" ID "0.scope"), "");  /* 65 hex */
	ck_assert_str_eq(cid("/system.slice/docker-" ID ".scopex"), "");
	/* look-alikes where a user or a container makes cgroups: host processes */
	ck_assert_str_eq(
		cid("/user.slice/user-1000.slice/user@1000.service/docker-" ID ".scope"), "");
	ck_assert_str_eq(cid("/deleg/docker-" ID ".scope"), "");
	ck_assert_str_eq(cid("/deleg/docker/" ID), "");
	ck_assert_str_eq(
		cid("/user.slice/user-1000.slice/user@1000.service/kubepods/pod" UID "/" ID), "");
	ck_assert_str_eq(cid("/user.slice/kubepods.slice/kubepods-pod" UIDU
			     ".slice/cri-containerd-" ID ".scope"),
		"");
	ck_assert_str_eq(cid("/system.slice/x.service/docker-" ID ".scope"), "");
	ck_assert_str_eq(cid("/kubepods/burstable/podx/" ID), ""); /* no pod: no pod's container */
}
END_TEST

/* "uid qos" of the pod a path is in, "" outside pods. */
static const char *pod(const char *path)
{
	static char out[POD_UID_LEN + 16];
	struct pod_identity p;

	if (!cgroup_pod(path, strlen(path), &p))
		return "";
	snprintf(out, sizeof(out), "%s %s", p.uid, pod_qos_name(p.qos));
	return out;
}

START_TEST(pods)
{
	/* systemd driver: containerd, CRI-O, Docker through cri-dockerd */
	ck_assert_str_eq(pod("/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UIDU
			     ".slice/cri-containerd-" ID ".scope"),
		UID " burstable");
	ck_assert_str_eq(
		pod("/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UIDU
		    ".slice/crio-" ID ".scope"),
		UID " besteffort");
	ck_assert_str_eq(pod("/kubepods.slice/kubepods-pod" UIDU ".slice/docker-" ID ".scope"),
		UID " guaranteed");
	/* CRI-O's conmon sits beside the container, in the pod's slice */
	ck_assert_str_eq(pod("/kubepods.slice/kubepods-pod" UIDU ".slice/crio-conmon-" ID ".scope"),
		UID " guaranteed");
	/* cgroupfs driver: containerd and Docker by bare id, CRI-O prefixed */
	ck_assert_str_eq(pod("/kubepods/besteffort/pod" UID "/" ID), UID " besteffort");
	ck_assert_str_eq(pod("/kubepods/burstable/pod" UID "/crio-" ID), UID " burstable");
	ck_assert_str_eq(pod("/kubepods/pod" UID "/" ID), UID " guaranteed");
	/* a kubelet in a container (kind): its own cgroup above kubepods */
	ck_assert_str_eq(
		pod("/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/"
		    "kubelet-kubepods-burstable-pod" UIDU ".slice/cri-containerd-" ID ".scope"),
		UID " burstable");
	ck_assert_str_eq(pod("/kubelet/kubepods/besteffort/pod" UID "/" ID), UID " besteffort");
	/* a static pod's UID is the 32-hex hash of its manifest */
	ck_assert_str_eq(pod("/kubepods/burstable/pod0123456789abcdef0123456789abcdef/" ID),
		"0123456789abcdef0123456789abcdef burstable");
	/* not pods */
	ck_assert_str_eq(pod("/kubepods.slice/kubepods-burstable.slice"), "");
	ck_assert_str_eq(pod("/kubepods/burstable"), "");
	ck_assert_str_eq(pod("/system.slice/docker-" ID ".scope"), "");
	ck_assert_str_eq(pod("/user.slice/pod" UID), "");                 /* not under kubepods */
	ck_assert_str_eq(pod("/other/burstable/pod" UID "/" ID), "");     /* nor here */
	ck_assert_str_eq(pod("/kubepods/burstable/pod" UIDU "/" ID), ""); /* cgroupfs has dashes */
	ck_assert_str_eq(pod("/kubepods.slice/kubepods-pod" UID ".slice"), ""); /* systemd: _ */
	ck_assert_str_eq(pod("/kubepods/pod1b2c3d4e-0000-1111-2222-33334444555/" ID), "");
	ck_assert_str_eq(pod("/kubepods/pod1B2C3D4E-0000-1111-2222-333344445555/" ID), "");
	ck_assert_str_eq(pod("/kubepods.slice/kubepods-pod" UIDU ".slicex"), "");
	ck_assert_str_eq(pod("/kubepods.slice/kubepods-guaranteed-pod" UIDU ".slice"), "");
	ck_assert_str_eq(pod(""), "");
	/* look-alikes away from where the kubelet puts pods */
	ck_assert_str_eq(pod("/user.slice/user-1000.slice/user@1000.service/"
			     "kubepods-besteffort-pod" UIDU ".slice/cri-containerd-" ID ".scope"),
		"");
	ck_assert_str_eq(pod("/deleg/kubepods/besteffort/pod" UID "/" ID), "");
	ck_assert_str_eq(pod("/system.slice/docker-" ID ".scope/kubepods/pod" UID "/" OTHER), "");
	ck_assert_str_eq(pod("/kubepods.slice/x-kubepods-pod" UIDU ".slice"), ""); /* no chain */
	ck_assert_str_eq(
		pod("/kubepods.slice/kubepods-besteffort.slice/kubepods-pod" UIDU ".slice"),
		""); /* a slice that is not its parent's child */
}
END_TEST

static void scratch_setup(void)
{
	tl_scratch_new("cgroup");
}

/*
 * A fake cgroupfs in the scratch directory, a folder per hierarchy, with
 * rel made in each: as root (CI), root's own directories, as a runtime
 * makes them; as anyone else, a user's, which name no container.
 */
static struct cgroup_mounts fake_cgroupfs(const char *rel)
{
	static const char *const hier[] = { "v2", "memory", "cpu", "systemd" };
	struct cgroup_mounts m;
	char path[512];

	for (size_t i = 0; rel && i < sizeof(hier) / sizeof(hier[0]); i++) {
		snprintf(path, sizeof(path), "%s%s", hier[i], rel);
		tl_scratch_mkdirs(path);
	}
	snprintf(m.at[CGH_V2], sizeof(m.at[CGH_V2]), "%s/v2", tl_scratch());
	snprintf(m.at[CGH_MEMORY], sizeof(m.at[CGH_MEMORY]), "%s/memory", tl_scratch());
	snprintf(m.at[CGH_CPU], sizeof(m.at[CGH_CPU]), "%s/cpu", tl_scratch());
	snprintf(m.at[CGH_CPUACCT], sizeof(m.at[CGH_CPUACCT]), "%s/cpu", tl_scratch());
	snprintf(m.at[CGH_SYSTEMD], sizeof(m.at[CGH_SYSTEMD]), "%s/systemd", tl_scratch());
	return m;
}

/* What a runtime's cgroup is expected to name: the id as root, nothing otherwise. */
static const char *made_by_root(const char *id)
{
	return geteuid() == 0 ? id : "";
}

/* The pod reaches the cgroup of a v1 hybrid host's /proc/<pid>/cgroup, and a v2 one's. */
START_TEST(table_pods)
{
	static const char v1[] = "12:memory:/kubepods/burstable/pod" UID "/" ID "\n"
				 "11:cpu,cpuacct:/kubepods/burstable/pod" UID "/" ID "\n"
				 "1:name=systemd:/kubepods/burstable/pod" UID "/" ID "\n";
	static const char v2[] =
		"0::/kubepods.slice/kubepods-pod" UIDU ".slice/cri-containerd-" ID ".scope\n";
	static const char host[] = "0::/system.slice/sshd.service\n";
	struct cgroup_mounts m;
	struct cgroup_table *t;
	struct cgroup *a, *b, *c;

	fake_cgroupfs("/kubepods/burstable/pod" UID "/" ID);
	fake_cgroupfs("/kubepods.slice/kubepods-pod" UIDU ".slice/cri-containerd-" ID ".scope");
	m = fake_cgroupfs("/system.slice/sshd.service");
	t = cgroup_table_new(&m);
	a = cgroup_get(t, v1, strlen(v1));
	b = cgroup_get(t, v2, strlen(v2));
	c = cgroup_get(t, host, strlen(host));
	ck_assert_str_eq(a->pod.uid, made_by_root(UID));
	ck_assert_int_eq(a->pod.qos, POD_QOS_BURSTABLE);
	ck_assert_str_eq(a->container_id, made_by_root(ID));
	ck_assert_str_eq(b->pod.uid, made_by_root(UID));
	ck_assert_int_eq(b->pod.qos, POD_QOS_GUARANTEED);
	ck_assert_str_eq(c->pod.uid, "");
	cgroup_put(t, a);
	cgroup_put(t, b);
	cgroup_put(t, c);
	cgroup_table_free(t);
}
END_TEST

/*
 * A runtime's names in a directory root did not make (a delegated subtree,
 * chowned to its user) name nothing, wherever they sit; nor do they in a
 * hierarchy croft cannot look at; the one named by root's directories wins.
 */
START_TEST(table_lookalikes)
{
	static const char deleg[] = "4:memory:/system.slice/docker-" OTHER ".scope\n"
				    "1:name=systemd:/kubepods/pod" UID "/" OTHER "\n"
				    "0::/system.slice/docker-" ID ".scope\n";
	static const char unknown[] = "9:name=elogind:/system.slice/docker-" ID ".scope\n"
				      "4:memory:/user.slice\n";
	struct cgroup_mounts m;
	struct cgroup_table *t;
	struct cgroup *a, *b;
	char path[512];

	if (geteuid() != 0)
		return; /* only root makes the directories a runtime would */
	fake_cgroupfs("/system.slice/docker-" OTHER ".scope");
	fake_cgroupfs("/kubepods/pod" UID "/" OTHER);
	fake_cgroupfs("/user.slice");
	m = fake_cgroupfs("/system.slice/docker-" ID ".scope");
	/* the user's: memory's container scope, systemd's pod */
	ck_assert_int_eq(chown(tl_scratch_path("memory/system.slice/docker-" OTHER ".scope", path,
				       sizeof(path)),
				 4242, 4242),
		0);
	ck_assert_int_eq(
		chown(tl_scratch_path("systemd/kubepods/pod" UID, path, sizeof(path)), 4242, 4242),
		0);
	t = cgroup_table_new(&m);
	a = cgroup_get(t, deleg, strlen(deleg));
	ck_assert_str_eq(a->container_id, ID);
	ck_assert_str_eq(a->path, "/system.slice/docker-" ID ".scope");
	ck_assert_str_eq(a->pod.uid, "");
	b = cgroup_get(t, unknown, strlen(unknown));
	ck_assert_str_eq(b->container_id, "");
	ck_assert_str_eq(b->path, "/user.slice");
	cgroup_put(t, a);
	cgroup_put(t, b);
	cgroup_table_free(t);
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
	ck_assert_uint_eq(ps.len[CGH_MEMORY], strlen("/system.slice/docker-" ID ".scope"));
	ck_assert_ptr_nonnull(ps.path[CGH_CPU]);
	ck_assert_ptr_nonnull(ps.path[CGH_CPUACCT]);
	ck_assert_ptr_nonnull(ps.path[CGH_SYSTEMD]);
	ck_assert_ptr_nonnull(ps.path[CGH_V2]);
	ck_assert_int_eq(cgroup_parse_proc(v2, strlen(v2), &ps), 0);
	ck_assert_ptr_null(ps.path[CGH_MEMORY]);
	ck_assert_int_eq(
		strncmp(ps.path[CGH_V2], "/user.slice/session-1.scope", ps.len[CGH_V2]), 0);
	ck_assert_int_eq(cgroup_parse_proc(here, strlen(here), &ps), 0);
	ck_assert_int_eq(strncmp(ps.path[CGH_MEMORY], "/process_api/834e", ps.len[CGH_MEMORY]), 0);
	ck_assert_int_eq(strncmp(ps.path[CGH_CPU], "/", ps.len[CGH_CPU]), 0);
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
		"38 30 0:34 /sub /mnt/sub rw - cgroup2 cgroup2 rw\n"
		"39 30 0:35 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,xattr,name=systemd\n";
	static const char docker[] = "4:memory:/system.slice/docker-" ID ".scope\n"
				     "2:cpu,cpuacct:/\n0::/system.slice/docker-" ID ".scope\n";
	static const char host[] = "4:memory:/user.slice\n2:cpu,cpuacct:/\n0::/\n";
	struct cgroup_mounts m;
	struct cgroup_table *t;
	struct cgroup *a, *b, *c;
	char want[512];
	size_t n;

	ck_assert_int_eq(cgroup_mounts_parse(mountinfo, strlen(mountinfo), &m), 0);
	ck_assert_str_eq(m.at[CGH_MEMORY], "/sys/fs/cgroup/memory");
	ck_assert_str_eq(m.at[CGH_CPU], "/sys/fs/cgroup/cpu,cpuacct");
	ck_assert_str_eq(m.at[CGH_CPUACCT], "/sys/fs/cgroup/cpu,cpuacct");
	ck_assert_str_eq(m.at[CGH_V2], "/sys/fs/cgroup/unified"); /* the /sub mount is not a root */
	ck_assert_str_eq(m.at[CGH_SYSTEMD], "/sys/fs/cgroup/systemd");
	fake_cgroupfs("/user.slice");
	m = fake_cgroupfs("/system.slice/docker-" ID ".scope");
	t = cgroup_table_new(&m);
	a = cgroup_get(t, docker, strlen(docker));
	ck_assert_str_eq(a->container_id, made_by_root(ID));
	ck_assert_str_eq(a->path, "/system.slice/docker-" ID ".scope");
	snprintf(want, sizeof(want), "%s/memory/system.slice/docker-" ID ".scope", tl_scratch());
	ck_assert_str_eq(a->dir[CGH_MEMORY], want);
	snprintf(want, sizeof(want), "%s/v2/system.slice/docker-" ID ".scope", tl_scratch());
	ck_assert_str_eq(a->dir[CGH_V2], want);
	ck_assert_ptr_null(a->dir[CGH_CPU]); /* "/" is another cgroup: its figures would lie */
	b = cgroup_get(t, docker, strlen(docker));
	ck_assert_ptr_eq(a, b);
	c = cgroup_get(t, host, strlen(host));
	ck_assert_str_eq(c->path, "/user.slice");
	ck_assert_str_eq(c->container_id, "");
	ck_assert_int_eq(cgroup_table_containers(t, &n), 0);
	ck_assert_uint_eq(n, geteuid() == 0 ? 1 : 0);
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
	enum { CONTAINERS = 1000 };
	struct cgroup_mounts m = fake_cgroupfs(NULL);
	struct cgroup_table *t;
	struct cgroup **cgs = calloc(2 * CONTAINERS, sizeof(*cgs));
	char text[256];
	size_t n;

	ck_assert_ptr_nonnull(cgs);
	for (int i = 0; i < CONTAINERS; i++) {
		snprintf(text, sizeof(text), "v2/system.slice/docker-%064x.scope", i);
		tl_scratch_mkdirs(text);
	}
	t = cgroup_table_new(&m);
	for (int i = 0; i < 2 * CONTAINERS; i++) {
		/* the container's scope, and a cgroup below it (one process in each) */
		int len = snprintf(text, sizeof(text), "0::/system.slice/docker-%064x.scope%s\n",
			i / 2, i % 2 ? "/sub" : "");

		cgs[i] = cgroup_get(t, text, (size_t)len);
		ck_assert_ptr_nonnull(cgs[i]);
	}
	ck_assert_int_eq(cgroup_table_containers(t, &n), 0);
	ck_assert_uint_eq(n, geteuid() == 0 ? CONTAINERS : 0);
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
	snprintf(m.at[CGH_V2], sizeof(m.at[CGH_V2]), "%s", dir);
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

	ck_assert_int_eq(procfs_parse_keyed(cpu_stat, "usage_usec", &v), 0);
	ck_assert_uint_eq(v, 123456);
	ck_assert_int_eq(procfs_parse_keyed(cpu_stat, "nr_throttled", &v), 0);
	ck_assert_uint_eq(v, 4);
	ck_assert_int_eq(procfs_parse_keyed(cpu_stat, "usage", &v), -ENOENT);
	ck_assert_int_eq(procfs_parse_keyed(oom_control, "oom_kill", &v), 0);
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

	tcase_add_checked_fixture(tc, scratch_setup, tl_scratch_free);
	tcase_set_timeout(tc, 60); /* containers_count makes a thousand directories */
	tcase_add_test(tc, container_ids);
	tcase_add_test(tc, pods);
	tcase_add_test(tc, table_pods);
	tcase_add_test(tc, table_lookalikes);
	tcase_add_test(tc, proc_cgroup_v1_hybrid_v2);
	tcase_add_test(tc, table_paths);
	tcase_add_test(tc, containers_count);
	tcase_add_test(tc, file_parsers);
	tcase_add_test(tc, rates_from_used_read);
	suite_add_tcase(s, tc);
	return tl_run(s);
}
