/*
 * test_gpus.c: which GPU a device number names (NVIDIA minors from a
 * /proc/devices written here, DRM and accel nodes through a sysfs tree
 * built here, the way the kernel lays it out) and the fd scan of this very
 * process holding /dev/random and /dev/urandom.  Test process, any user.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "sampler.h"
#include "testlib.h"

static char tmp[64];

static void write_file(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmp, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void make_dirs(const char *rel)
{
	char path[512], *p;

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	for (p = path + strlen(tmp) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	mkdir(path, 0755);
}

static void make_link(const char *target, const char *rel)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", tmp, rel);
	ck_assert_int_eq(symlink(target, path), 0);
}

static void setup(void)
{
	snprintf(tmp, sizeof(tmp), "/tmp/croft-test-gpus.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	ck_assert_int_eq(system(cmd), 0);
}

static void load(struct gpu_index *gi, const char *devices)
{
	static char sys[256]; /* gi keeps the pointer */
	char path[256];

	write_file("devices", devices);
	snprintf(path, sizeof(path), "%s/devices", tmp);
	snprintf(sys, sizeof(sys), "%s/sys", tmp);
	ck_assert_int_eq(gpu_index_load(gi, path, sys), 0);
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
	ck_assert_int_eq(gpu_index_of(&gi, makedev(194, 0)), -1);   /* a block major */
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

	make_dirs("sys/class/drm");
	make_dirs("sys/class/accel");
	make_dirs("sys/dev/char");
	for (size_t i = 0; i < sizeof(nodes) / sizeof(nodes[0]); i++) {
		snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/%s/%s", nodes[i].pci,
			nodes[i].cls, nodes[i].node);
		make_dirs(rel);
		snprintf(rel, sizeof(rel), "sys/devices/pci0000:00/%s/%s/%s/device", nodes[i].pci,
			nodes[i].cls, nodes[i].node);
		snprintf(target, sizeof(target), "../../../%s", nodes[i].pci);
		make_link(target, rel);
		snprintf(rel, sizeof(rel), "sys/class/%s/%s", nodes[i].cls, nodes[i].node);
		snprintf(target, sizeof(target), "../../devices/pci0000:00/%s/%s/%s", nodes[i].pci,
			nodes[i].cls, nodes[i].node);
		make_link(target, rel);
		snprintf(rel, sizeof(rel), "sys/dev/char/%s", nodes[i].devnum);
		make_link(target, rel);
	}
	make_dirs("sys/devices/virtual/mem/full");
	make_link("../../devices/virtual/mem/full", "sys/dev/char/1:7");
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
	ck_assert_int_eq(gpu_index_load(&gi, "/nonexistent/devices", "/nonexistent"), -ENOENT);
	ck_assert_int_eq(gpu_index_of(&gi, makedev(195, 0)), -1);
}
END_TEST

static void scan_self(struct gpu_index *gi, const char *spec, bool *holds, struct gpu_mask *m)
{
	struct gpudev_set set;
	char err[256];
	int procfd = open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	ck_assert_int_ge(procfd, 0);
	ck_assert_int_eq(gpudev_resolve(spec, "/proc/devices", &set, err, sizeof(err)), 0);
	ck_assert_int_eq(gpufd_scan(procfd, getpid(), &set, gi, holds, m), 0);
	close(procfd);
}

/* mem's major named nvidia: /dev/random (1:8) is GPU 8, /dev/urandom (1:9)
 * GPU 9 (not /dev/null: stdin may be it). */
START_TEST(scan_own_fds)
{
	struct gpu_index gi;
	struct gpu_mask m;
	bool holds;
	int rand_fd, urand_fd, zero_fd;

	load(&gi, "Character devices:\n  1 nvidia\n");
	rand_fd = open("/dev/random", O_RDONLY);
	urand_fd = open("/dev/urandom", O_RDONLY);
	zero_fd = open("/dev/zero", O_RDONLY);
	ck_assert_int_ge(rand_fd, 0);
	ck_assert_int_ge(urand_fd, 0);
	ck_assert_int_ge(zero_fd, 0);
	scan_self(&gi, "1:8-9", &holds, &m);
	ck_assert(holds);
	for (int i = 0; i < GPU_INDEX_MAX; i++)
		ck_assert_int_eq(gpu_mask_has(&m, i), i == 8 || i == 9);
	close(urand_fd);
	scan_self(&gi, "1:8-9", &holds, &m);
	ck_assert(holds && gpu_mask_has(&m, 8) && !gpu_mask_has(&m, 9));
	close(rand_fd);
	scan_self(&gi, "1:8-9", &holds, &m);
	ck_assert(!holds && !gpu_mask_has(&m, 8));
	/* a GPU file that names no GPU: held, no index */
	load(&gi, "Character devices:\n  1 mem\n");
	scan_self(&gi, "1:5", &holds, &m);
	ck_assert(holds);
	for (int i = 0; i < GPU_INDEX_MAX; i++)
		ck_assert(!gpu_mask_has(&m, i));
	close(zero_fd);
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

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, nvidia_minors);
	tcase_add_test(tc, drm_by_pci_order);
	tcase_add_test(tc, no_sysfs);
	tcase_add_test(tc, scan_own_fds);
	tcase_add_test(tc, mask_bounds);
	suite_add_tcase(s, tc);
	return tl_run(s);
}
