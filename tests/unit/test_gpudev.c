/*
 * test_gpudev.c: the GPU device resolver against fake /proc/devices files:
 * the default set, names, numbers, ranges, and malformed specs; the watch
 * that follows the file as it is rewritten in place.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "gpudev.h"
#include "testlib.h"

static char devices_path[64];

static const char *fake_devices(void)
{
	static const char text[] = "Character devices:\n"
				   "  1 mem\n"
				   "195 nvidia-frontend\n"
				   "226 drm\n"
				   "234 kfd\n"
				   "261 accel\n"
				   "509 nvidia-uvm\n"
				   "510 nvidia-caps\n"
				   "\n"
				   "Block devices:\n"
				   "  8 sd\n"
				   "240 nvidia-blk\n";
	FILE *f;
	int fd;

	snprintf(devices_path, sizeof(devices_path), "/tmp/croft-test-devices.XXXXXX");
	fd = mkstemp(devices_path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fputs(text, f);
	fclose(f);
	return devices_path;
}

START_TEST(test_default_set)
{
	struct gpudev_watch w;
	const struct gpudev_set *set = &w.set;
	char err[256] = "";

	ck_assert_int_eq(gpudev_watch_init(&w, "", fake_devices(), err, sizeof(err)), 0);
	unlink(devices_path);
	ck_assert(gpudev_match(set, makedev(195, 0)));
	ck_assert(gpudev_match(set, makedev(195, 255)));
	ck_assert(gpudev_match(set, makedev(509, 1)));
	ck_assert(gpudev_match(set, makedev(510, 1)));
	ck_assert(gpudev_match(set, makedev(234, 0)));
	ck_assert(gpudev_match(set, makedev(261, 3)));
	ck_assert(gpudev_match(set, makedev(226, 128)));
	ck_assert(gpudev_match(set, makedev(226, 255)));
	ck_assert(!gpudev_match(set, makedev(226, 0))); /* card0: display, not compute */
	ck_assert(!gpudev_match(set, makedev(226, 256)));
	ck_assert(!gpudev_match(set, makedev(1, 3)));   /* /dev/null */
	ck_assert(!gpudev_match(set, makedev(240, 0))); /* a block major */
}
END_TEST

START_TEST(test_explicit_spec)
{
	struct gpudev_watch w;
	const struct gpudev_set *set = &w.set;
	char err[256] = "";

	ck_assert_int_eq(gpudev_watch_init(&w, "kfd 300:7,301:*  absent-driver", fake_devices(),
				 err, sizeof(err)),
		0);
	unlink(devices_path);
	ck_assert_uint_eq(set->rules_count, 3);
	ck_assert(gpudev_match(set, makedev(234, 9)));
	ck_assert(gpudev_match(set, makedev(300, 7)));
	ck_assert(!gpudev_match(set, makedev(300, 8)));
	ck_assert(gpudev_match(set, makedev(301, 12345)));
	ck_assert(!gpudev_match(set, makedev(195, 0)));
}
END_TEST

START_TEST(test_bad_specs)
{
	static const char *const bad[] = {
		"abc:1",
		"1:x",
		"5000:1",
		"1:5-3",
		"bad name!",
		"12:",
		":3",
		"*",
		"1:2-",
		"1:99999999",
		"nv*idia",
		"1:2:3",
	};
	struct gpudev_watch w = { .set.rules_count = 7 };
	char err[256];

	fake_devices();
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		ck_assert_msg(
			gpudev_watch_init(&w, bad[i], devices_path, err, sizeof(err)) == -EINVAL,
			"'%s' accepted", bad[i]);
		ck_assert_ptr_nonnull(strstr(err, "gpu_devices: bad entry"));
		ck_assert_uint_eq(w.set.rules_count, 7); /* untouched */
	}
	unlink(devices_path);
}
END_TEST

START_TEST(test_limits)
{
	char spec[2048] = "", err[256];
	struct gpudev_watch w;

	for (int i = 0; i < GPUDEV_RULES_MAX + 1; i++)
		snprintf(spec + strlen(spec), sizeof(spec) - strlen(spec), "%d:1 ", i + 1);
	ck_assert_int_eq(gpudev_watch_init(&w, spec, fake_devices(), err, sizeof(err)), -EINVAL);
	ck_assert_ptr_nonnull(strstr(err, "more than"));
	memset(spec, 'a', sizeof(spec) - 1);
	spec[sizeof(spec) - 1] = '\0';
	ck_assert_int_eq(gpudev_watch_init(&w, spec, devices_path, err, sizeof(err)), -EINVAL);
	unlink(devices_path);
	ck_assert_int_eq(
		gpudev_watch_init(&w, "", "/nonexistent/devices", err, sizeof(err)), -ENOENT);
	ck_assert_int_eq(gpudev_watch_init(&w, "1:1", "/proc/devices", NULL, 0), 0);
}
END_TEST

/* Rewrites path in place (same inode, as a bind mount over /proc/devices needs). */
static void rewrite(const char *path, const char *text)
{
	FILE *f = fopen(path, "r+");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(ftruncate(fileno(f), 0), 0);
	fputs(text, f);
	fclose(f);
}

START_TEST(test_watch_follows)
{
	static const char before[] = "Character devices:\n  1 mem\n195 nvidia\n\nBlock devices:\n";
	static const char after[] =
		"Character devices:\n  1 mem\n195 nvidia\n508 nvidia-uvm\n\nBlock devices:\n";
	struct gpudev_watch w;
	char err[256] = "", text[256];
	bool changed = true;

	fake_devices();
	rewrite(devices_path, before);
	ck_assert_int_eq(gpudev_watch_init(&w, "", devices_path, err, sizeof(err)), 0);
	ck_assert(w.registered);
	ck_assert(!gpudev_match(&w.set, makedev(508, 0)));
	ck_assert_int_eq(gpudev_watch_refresh(&w, &changed, err, sizeof(err)), 0);
	ck_assert(!changed);
	rewrite(devices_path, after);
	ck_assert_int_eq(gpudev_watch_refresh(&w, &changed, err, sizeof(err)), 0);
	ck_assert(changed);
	ck_assert(gpudev_match(&w.set, makedev(508, 0)));
	gpudev_set_format(&w.set, text, sizeof(text));
	ck_assert_str_eq(text, "195:*, 508:*, 226:128-255");
	ck_assert_int_eq(gpudev_watch_refresh(&w, &changed, err, sizeof(err)), 0);
	ck_assert(!changed); /* once per change */
	/* unloaded again: out of the set */
	rewrite(devices_path, before);
	ck_assert_int_eq(gpudev_watch_refresh(&w, &changed, err, sizeof(err)), 0);
	ck_assert(changed && !gpudev_match(&w.set, makedev(508, 0)));
	/* a change that leaves the set as it was is no change */
	rewrite(devices_path, "Character devices:\n  1 mem\n  4 tty\n195 nvidia\n");
	ck_assert_int_eq(gpudev_watch_refresh(&w, &changed, err, sizeof(err)), 0);
	ck_assert(!changed);
	/* unreadable: the set stays, the error comes once */
	unlink(devices_path);
	ck_assert_int_eq(gpudev_watch_refresh(&w, &changed, err, sizeof(err)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(err, devices_path));
	ck_assert_int_eq(gpudev_watch_refresh(&w, &changed, err, sizeof(err)), 0);
	ck_assert(!changed && gpudev_match(&w.set, makedev(195, 0)));
}
END_TEST

/* Whether a GPU file can exist: some rule's major is a registered character device. */
START_TEST(test_watch_registered)
{
	static const char devices[] = "Character devices:\n  1 mem\n  4 tty\n\n"
				      "Block devices:\n  8 sd\n226 notdrm\n";
	struct gpudev_watch w;
	char err[256] = "";
	bool changed;

	fake_devices();
	rewrite(devices_path, devices);
	/* 226 is only a block major here: no DRM render node can exist */
	ck_assert_int_eq(gpudev_watch_init(&w, "", devices_path, err, sizeof(err)), 0);
	ck_assert(!w.registered && w.set.rules_count == 1);
	ck_assert_int_eq(gpudev_watch_init(&w, "4:64", devices_path, err, sizeof(err)), 0);
	ck_assert(w.registered);
	ck_assert_int_eq(gpudev_watch_init(&w, "absent", devices_path, err, sizeof(err)), 0);
	ck_assert(!w.registered && w.set.rules_count == 0);
	/* the driver registers: a name rule appears, and its major is registered */
	ck_assert_int_eq(gpudev_watch_init(&w, "accel", devices_path, err, sizeof(err)), 0);
	ck_assert(!w.registered);
	rewrite(devices_path, "Character devices:\n  1 mem\n261 accel\n");
	ck_assert_int_eq(gpudev_watch_refresh(&w, &changed, err, sizeof(err)), 0);
	ck_assert(changed && w.registered && gpudev_match(&w.set, makedev(261, 0)));
	/* no character section: unknown, so scan while there are rules */
	rewrite(devices_path, "garbage\n");
	ck_assert_int_eq(gpudev_watch_init(&w, "5:1", devices_path, err, sizeof(err)), 0);
	ck_assert(w.registered);
	unlink(devices_path);
}
END_TEST

/* A name that is no GPU driver's and matches nothing is accepted but
 * waiting, told once, and leaves the list once a driver registers it. */
START_TEST(test_watch_waiting)
{
	struct gpudev_watch w;
	char err[256] = "";
	bool changed;

	fake_devices();
	rewrite(devices_path, "Character devices:\n  1 mem\n195 nvidia\n");
	ck_assert_int_eq(gpudev_watch_init(&w, "nvdia, nvidia-uvm, kfd, accel*, drm, vfio*, 1:7",
				 devices_path, err, sizeof(err)),
		0);
	ck_assert_str_eq(w.waiting, "nvdia, vfio*");
	ck_assert_str_eq(gpudev_watch_waiting_news(&w), "nvdia, vfio*");
	ck_assert_ptr_null(gpudev_watch_waiting_news(&w)); /* once */
	ck_assert(gpudev_match(&w.set, makedev(1, 7)));
	/* the unknown driver loads: no longer waiting */
	rewrite(devices_path, "Character devices:\n  1 mem\n195 nvidia\n300 nvdia\n");
	ck_assert_int_eq(gpudev_watch_refresh(&w, &changed, err, sizeof(err)), 0);
	ck_assert(changed && gpudev_match(&w.set, makedev(300, 0)));
	ck_assert_str_eq(w.waiting, "vfio*");
	ck_assert_str_eq(gpudev_watch_waiting_news(&w), "vfio*");
	/* only known names: nothing waits */
	ck_assert_int_eq(gpudev_watch_init(&w, "", devices_path, err, sizeof(err)), 0);
	ck_assert_str_eq(w.waiting, "");
	ck_assert_ptr_null(gpudev_watch_waiting_news(&w));
	unlink(devices_path);
}
END_TEST

static Suite *gpudev_suite(void)
{
	Suite *s = suite_create("gpudev");
	TCase *tc = tcase_create("gpudev");

	tcase_add_test(tc, test_default_set);
	tcase_add_test(tc, test_explicit_spec);
	tcase_add_test(tc, test_bad_specs);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_watch_follows);
	tcase_add_test(tc, test_watch_registered);
	tcase_add_test(tc, test_watch_waiting);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return tl_run(gpudev_suite());
}
