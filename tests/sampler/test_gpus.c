/*
 * test_gpus.c: which GPU a device number names (NVIDIA minors from a
 * /proc/devices written here, DRM and accel nodes through a sysfs tree
 * built here, the way the kernel lays it out) and the fd scans and checks
 * of a child holding /dev/random and /dev/urandom.  Test process, any user.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>

#include "host.h"
#include "scratch.h"
#include "testlib.h"

static void setup(void)
{
	tl_scratch_new("gpus");
}

static void load(struct gpu_index *gi, const char *devices)
{
	static char sys[256]; /* gi keeps the pointer */
	char path[256], driver[256];

	tl_scratch_write("devices", devices);
	tl_scratch_path("devices", path, sizeof(path));
	tl_scratch_path("sys", sys, sizeof(sys));
	tl_scratch_path("driver", driver, sizeof(driver));
	ck_assert_int_eq(gpu_index_load(gi, path, sys, driver), 0);
}

START_TEST(nvidia_minors)
{
	struct gpu_index gi;

	load(&gi, "Character devices:\n  1 mem\n195 nvidia\n195 nvidiactl\n195 nvidia-modeset\n"
		  "237 nvidia-uvm\n236 nvidia-caps\n\nBlock devices:\n  8 sd\n194 nvidia\n");
	ck_assert_int_eq(gpu_index_of(&gi, makedev(195, 0)), 0);
	ck_assert_int_eq(gpu_index_of(&gi, makedev(195, 1)), 1);
	ck_assert_int_eq(gpu_index_of(&gi, makedev(195, 3)), 3);
	ck_assert_int_eq(gpu_index_of(&gi, makedev(195, 253)), 253);
	ck_assert_int_eq(gpu_index_of(&gi, makedev(195, 254)), -1); /* nvidia-modeset */
	ck_assert_int_eq(gpu_index_of(&gi, makedev(195, 255)), -1); /* nvidiactl */
	ck_assert_int_eq(gpu_index_of(&gi, makedev(237, 0)), -1);   /* nvidia-uvm */
	ck_assert_int_eq(gpu_index_of(&gi, makedev(236, 1)), -1);   /* nvidia-caps */
	ck_assert_uint_eq(gi.caps_major, 236); /* its minors name MIG instances (mig) */
	ck_assert_int_eq(gpu_index_of(&gi, makedev(194, 0)), -1); /* a block major */
	ck_assert_int_eq(gpu_index_of(&gi, makedev(1, 7)), -1);
	/* older drivers: the major is nvidia-frontend */
	load(&gi, "Character devices:\n195 nvidia-frontend\n");
	ck_assert_int_eq(gpu_index_of(&gi, makedev(195, 7)), 7);
}
END_TEST

/*
 * A host with an integrated GPU (00:02.0), a server BMC with a card node
 * only (03:00.0), a discrete GPU with render and card nodes (41:00.0) and
 * an accelerator (a1:00.0), linked as sysfs links them.
 */
static void fake_sysfs(void)
{
	static const struct {
		const char *pci, *cls, *node, *devnum;
	} nodes[] = {
		{ "0000:41:00.0", "drm", "renderD129", "226:129" },
		{ "0000:41:00.0", "drm", "card1", "226:1" },
		{ "0000:00:02.0", "drm", "renderD128", "226:128" },
		{ "0000:00:02.0", "drm", "card2", "226:2" },
		{ "0000:03:00.0", "drm", "card0", "226:0" },
		{ "0000:a1:00.0", "accel", "accel0", "261:0" },
	};
	char rel[256], target[256];

	tl_scratch_mkdirs("sys/class/drm");
	tl_scratch_mkdirs("sys/class/accel");
	tl_scratch_mkdirs("sys/dev/char");
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/%s/%s", nodes[i].pci,
			nodes[i].cls, nodes[i].node);
		tl_scratch_mkdirs(rel);
		snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/%s/%s/device", nodes[i].pci,
			nodes[i].cls, nodes[i].node);
		snprintf(target, sizeof(target), "../../../%s", nodes[i].pci);
		tl_scratch_link(target, rel);
		snprintf(rel, sizeof(rel), "sys/class/%s/%s", nodes[i].cls, nodes[i].node);
		snprintf(target, sizeof(target), "../../devices/pci0000:00/%s/%s/%s", nodes[i].pci,
			nodes[i].cls, nodes[i].node);
		tl_scratch_link(target, rel);
		snprintf(rel, sizeof(rel), "sys/dev/char/%s", nodes[i].devnum);
		tl_scratch_link(target, rel);
	}
	tl_scratch_mkdirs("sys/devices/virtual/mem/full");
	tl_scratch_link("../../devices/virtual/mem/full", "sys/dev/char/1:7");
}

START_TEST(drm_by_pci_order)
{
	struct gpu_index gi;

	fake_sysfs();
	load(&gi, "Character devices:\n  1 mem\n226 drm\n261 accel\n");
	ck_assert_uint_eq(gi.devices_count, 3);
	ck_assert_str_eq(gi.devices[0], "0000:00:02.0");
	ck_assert_int_eq(gpu_index_of(&gi, makedev(226, 128)), 0);
	ck_assert_int_eq(gpu_index_of(&gi, makedev(226, 2)), 0);
	ck_assert_int_eq(gpu_index_of(&gi, makedev(226, 129)), 1);
	ck_assert_int_eq(gpu_index_of(&gi, makedev(226, 1)), 1);
	ck_assert_int_eq(gpu_index_of(&gi, makedev(261, 0)), 2);
	ck_assert_int_eq(gpu_index_of(&gi, makedev(226, 0)), -1);   /* the BMC: no GPU */
	ck_assert_int_eq(gpu_index_of(&gi, makedev(226, 130)), -1); /* no such node */
	ck_assert_int_eq(gpu_index_of(&gi, makedev(1, 7)), -1);     /* a virtual device */
	/* asked again: the cached answers agree */
	ck_assert_int_eq(gpu_index_of(&gi, makedev(226, 129)), 1);
	ck_assert_int_eq(gpu_index_of(&gi, makedev(226, 0)), -1);
}
END_TEST

START_TEST(no_sysfs)
{
	struct gpu_index gi;

	load(&gi, "Character devices:\n226 drm\n");
	ck_assert_uint_eq(gi.devices_count, 0);
	ck_assert_int_eq(gpu_index_of(&gi, makedev(226, 128)), -1);
	ck_assert_int_eq(
		gpu_index_load(&gi, "/nonexistent/devices", "/nonexistent", "/nonexistent"),
		-ENOENT);
	ck_assert_int_eq(gpu_index_of(&gi, makedev(195, 0)), -1);
}
END_TEST

/* A child whose fds change on our word (not this process: scanning our own
 * fd/ opens one there). */
struct child {
	pid_t pid;
	int cmd, ack;
};

enum { OPEN_RANDOM = -1, OPEN_URANDOM = -2 };

static void child_loop(int cmd, int ack)
{
	int what, fd;

	while (read(cmd, &what, sizeof(what)) == sizeof(what)) {
		if (what >= 0)
			close(what);
		fd = what >= 0
			     ? what
			     : open(what == OPEN_RANDOM ? "/dev/random" : "/dev/urandom", O_RDONLY);
		if (write(ack, &fd, sizeof(fd)) != sizeof(fd))
			break;
	}
	_exit(0);
}

static void child_start(struct child *c)
{
	int to[2], from[2];

	ck_assert_int_eq(pipe(to), 0);
	ck_assert_int_eq(pipe(from), 0);
	c->pid = fork();
	ck_assert_int_ge(c->pid, 0);
	if (c->pid == 0) {
		close(to[1]); /* or our own write end keeps the loop from its EOF */
		close(from[0]);
		child_loop(to[0], from[1]);
	}
	close(to[0]);
	close(from[1]);
	c->cmd = to[1];
	c->ack = from[0];
}

/* OPEN_*: the child's new fd; an fd: closed. */
static int child_do(struct child *c, int what)
{
	int fd = -1;

	ck_assert_int_eq(write(c->cmd, &what, sizeof(what)), sizeof(what));
	ck_assert_int_eq(read(c->ack, &fd, sizeof(fd)), sizeof(fd));
	return fd;
}

static void look(struct gpu_index *gi, pid_t pid, const char *spec, bool full,
	struct gpu_fds **kept, bool *holds, struct gpu_mask *m)
{
	struct gpudev_watch w;
	struct fd_scan scan = { .pos = 0 };
	char err[256];
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	ck_assert_int_ge(procfd, 0);
	ck_assert_int_eq(gpudev_watch_init(&w, spec, "/proc/devices", err, sizeof(err)), 0);
	ck_assert_int_eq(
		gpufd_look(procfd, pid, &w.set, gi, full, &scan, UINT64_MAX, kept, holds, m), 0);
	close(procfd);
}

static bool only(const struct gpu_mask *m, int a, int b)
{
	for (int i = 0; i < GPU_INDEX_MAX; i++)
		if (gpu_mask_has(m, i) != (i == a || i == b))
			return false;
	return true;
}

/* mem's major named nvidia: /dev/random (1:8) is GPU 8, /dev/urandom (1:9)
 * GPU 9 (not /dev/null: stdin may be it).  Full scans and checks alike see
 * what the child holds now. */
START_TEST(look_child_fds)
{
	struct gpu_index gi;
	struct gpu_fds *kept = NULL;
	struct gpu_mask m;
	struct child c;
	struct stat st;
	bool holds, counted;
	int rand_fd, urand_fd, dup_fd;

	ck_assert_int_eq(stat("/proc/self/fd", &st), 0);
	counted = st.st_size != 0; /* the kernel counts open fds: 6.2+ */
	child_start(&c);
	rand_fd = child_do(&c, OPEN_RANDOM);
	urand_fd = child_do(&c, OPEN_URANDOM);
	load(&gi, "Character devices:\n  1 nvidia\n");
	look(&gi, c.pid, "1:8-9", true, &kept, &holds, &m);
	ck_assert(holds && only(&m, 8, 9) && kept && kept->kept_count == 2);
	look(&gi, c.pid, "1:8-9", false, &kept, &holds, &m); /* nothing changed */
	ck_assert(holds && only(&m, 8, 9));
	/* a second fd on a device kept: still the same GPUs */
	dup_fd = child_do(&c, OPEN_RANDOM);
	look(&gi, c.pid, "1:8-9", false, &kept, &holds, &m);
	ck_assert(holds && only(&m, 8, 9) && kept->kept_count == 2);
	child_do(&c, urand_fd);
	look(&gi, c.pid, "1:8-9", false, &kept, &holds, &m);
	ck_assert(holds && only(&m, 8, -1));
	/* the kept fd of 1:8 closed: the other keeps GPU 8 */
	child_do(&c, rand_fd);
	look(&gi, c.pid, "1:8-9", false, &kept, &holds, &m);
	ck_assert(holds && only(&m, 8, -1));
	/* opened between full scans: seen at once where the kernel counts fds */
	urand_fd = child_do(&c, OPEN_URANDOM);
	look(&gi, c.pid, "1:8-9", !counted, &kept, &holds, &m);
	ck_assert(holds && only(&m, 8, 9));
	child_do(&c, urand_fd);
	child_do(&c, dup_fd);
	look(&gi, c.pid, "1:8-9", false, &kept, &holds, &m);
	ck_assert(!holds && only(&m, -1, -1) && !kept);
	/* a GPU file that names no GPU: held, no index */
	load(&gi, "Character devices:\n  1 mem\n");
	child_do(&c, OPEN_RANDOM);
	look(&gi, c.pid, "1:8", true, &kept, &holds, &m);
	ck_assert(holds && only(&m, -1, -1));
	gpu_fds_free(&kept);
	close(c.cmd);
	close(c.ack);
	waitpid(c.pid, NULL, 0);
}
END_TEST

/*
 * A full scan cut at every entry (its deadline long past) goes on where it
 * stopped: over a child's 300 fds of /dev/null, then /dev/random (1:8, GPU
 * 8 here), it finds GPU 8 after looking at each fd once.
 */
START_TEST(look_sliced)
{
	struct gpudev_watch w;
	struct gpu_index gi;
	struct gpu_fds *kept = NULL;
	struct fd_scan scan = { .pos = 0 };
	struct gpu_mask m;
	char err[256], c;
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), ready[2], r, cuts = 0;
	bool holds = false;
	pid_t pid;

	ck_assert_int_ge(procfd, 0);
	ck_assert_int_eq(pipe(ready), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		for (int i = 0; i < 300; i++)
			if (open("/dev/null", O_RDONLY) < 0)
				_exit(1);
		if (open("/dev/random", O_RDONLY) < 0 || write(ready[1], "r", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	ck_assert_int_eq(read(ready[0], &c, 1), 1);
	load(&gi, "Character devices:\n  1 nvidia\n");
	ck_assert_int_eq(gpudev_watch_init(&w, "1:8", "/proc/devices", err, sizeof(err)), 0);
	while ((r = gpufd_look(procfd, pid, &w.set, &gi, true, &scan, 0, &kept, &holds, &m)) ==
		-EAGAIN)
		cuts++;
	ck_assert_int_eq(r, 0);
	ck_assert(holds && only(&m, 8, -1) && kept && kept->kept_count == 1);
	ck_assert_int_ge(cuts, 300); /* one fd a call, each looked at once */
	ck_assert_int_le(cuts, kept->fd[0] + 3);
	ck_assert_int_eq(scan.pos, 0);
	gpu_fds_free(&kept);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	close(procfd);
}
END_TEST

START_TEST(mask_bounds)
{
	struct gpu_mask m = { { 0 } };

	gpu_mask_set(&m, -1);
	gpu_mask_set(&m, GPU_INDEX_MAX);
	gpu_mask_set(&m, 255);
	gpu_mask_set(&m, 64);
	ck_assert(gpu_mask_has(&m, 255) && gpu_mask_has(&m, 64) && !gpu_mask_has(&m, 63));
	ck_assert(!gpu_mask_has(&m, GPU_INDEX_MAX) && !gpu_mask_has(&m, -1));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("gpus");
	TCase *tc = tcase_create("gpus");

	tcase_add_checked_fixture(tc, setup, tl_scratch_free);
	tcase_add_test(tc, nvidia_minors);
	tcase_add_test(tc, drm_by_pci_order);
	tcase_add_test(tc, no_sysfs);
	tcase_add_test(tc, look_child_fds);
	tcase_add_test(tc, look_sliced);
	tcase_add_test(tc, mask_bounds);
	suite_add_tcase(s, tc);
	return tl_run(s);
}
