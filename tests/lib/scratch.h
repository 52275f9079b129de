/*
 * scratch.h: a scratch directory per test for the fake trees Check suites
 * build (driver files, sysfs, /proc/devices, the kubelet's checkpoint):
 * files, directories and links written by path relative to it, the whole
 * tree removed after.  Test processes only.
 */
#ifndef CROFT_SCRATCH_H
#define CROFT_SCRATCH_H

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The directory: "" until tl_scratch_new. */
static inline char *tl_scratch(void)
{
	static char dir[64];

	return dir;
}

/* A fresh /tmp/croft-test-<name>.XXXXXX (a checked fixture's setup). */
static inline void tl_scratch_new(const char *name)
{
	snprintf(tl_scratch(), 64, "/tmp/croft-test-%s.XXXXXX", name);
	ck_assert_ptr_nonnull(mkdtemp(tl_scratch()));
}

/* Removes the directory and all in it (the fixture's teardown). */
static inline void tl_scratch_free(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tl_scratch());
	ck_assert_int_eq(system(cmd), 0);
}

/* rel's path in the directory, in buf. */
static inline const char *tl_scratch_path(const char *rel, char *buf, size_t size)
{
	ck_assert_int_lt(snprintf(buf, size, "%s/%s", tl_scratch(), rel), (int)size);
	return buf;
}

static inline void tl_scratch_write(const char *rel, const char *text)
{
	char path[512];
	FILE *f = fopen(tl_scratch_path(rel, path, sizeof(path)), "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

/* rel and every directory above it (mkdir -p: those there already are kept). */
static inline void tl_scratch_mkdirs(const char *rel)
{
	char path[512], *p;

	tl_scratch_path(rel, path, sizeof(path));
	for (p = path + strlen(tl_scratch()) + 1; (p = strchr(p, '/')); p++) {
		*p = '\0';
		mkdir(path, 0755);
		*p = '/';
	}
	ck_assert(mkdir(path, 0755) == 0 || errno == EEXIST);
}

static inline void tl_scratch_link(const char *target, const char *rel)
{
	char path[512];

	ck_assert_int_eq(symlink(target, tl_scratch_path(rel, path, sizeof(path))), 0);
}

#endif
