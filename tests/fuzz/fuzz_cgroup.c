/*
 * fuzz_cgroup.c: libFuzzer harness for the sampler's cgroup readers.  The
 * first byte picks the input: a mountinfo text (cgroup_mounts_parse), a
 * /proc/<pid>/cgroup text (cgroup_parse_proc, container ids, pods, and a cgroup
 * made from it by cgroup_get), or the figure files of a fake hybrid
 * cgroupfs in the scratch directory, read by cgroup_refresh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzzlib.h"
#include "host.h"

/* The figure files, in the order the NUL-separated parts of an input fill them. */
static const char *const figure_files[] = {
	"v2/cpu.stat",
	"v2/memory.current",
	"v2/memory.events",
	"v2/cpu.pressure",
	"v2/memory.pressure",
	"v2/io.pressure",
	"memory/memory.usage_in_bytes",
	"memory/memory.oom_control",
	"cpu/cpuacct.usage",
	"cpu/cpu.stat",
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_mount(const char *mount, size_t size)
{
	size_t len = strnlen(mount, size);

	if (len == size || memchr(mount, '\\', len))
		abort(); /* always a string, never an escaped path */
}

static void fuzz_mountinfo(const uint8_t *data, size_t size)
{
	char *text = fuzz_memdup(data, size);
	struct cgroup_mounts m;

	if (cgroup_mounts_parse(text, size, &m) == 0) {
		check_mount(m.at[CGH_V2], sizeof(m.at[CGH_V2]));
		check_mount(m.at[CGH_MEMORY], sizeof(m.at[CGH_MEMORY]));
		check_mount(m.at[CGH_CPU], sizeof(m.at[CGH_CPU]));
		check_mount(m.at[CGH_CPUACCT], sizeof(m.at[CGH_CPUACCT]));
	}
	free(text);
}

/* A hybrid host whose every hierarchy is a directory of the scratch directory. */
static struct cgroup_table *fake_table(void)
{
	static struct cgroup_table *table;
	struct cgroup_mounts m = { 0 };

	if (table)
		return table;
	fuzz_write("v2/.keep", NULL, 0);
	fuzz_write("memory/.keep", NULL, 0);
	fuzz_write("cpu/.keep", NULL, 0);
	snprintf(m.at[CGH_V2], sizeof(m.at[CGH_V2]), "%s/v2", fuzz_dir());
	snprintf(m.at[CGH_MEMORY], sizeof(m.at[CGH_MEMORY]), "%s/memory", fuzz_dir());
	snprintf(m.at[CGH_CPU], sizeof(m.at[CGH_CPU]), "%s/cpu", fuzz_dir());
	snprintf(m.at[CGH_CPUACCT], sizeof(m.at[CGH_CPUACCT]), "%s/cpu", fuzz_dir());
	table = cgroup_table_new(&m);
	if (!table)
		abort();
	return table;
}

static void check_id(const char *path, size_t len)
{
	char id[CONTAINER_ID_LEN + 1];

	if (!path || !cgroup_container_id(path, len, id))
		return;
	if (strlen(id) != CONTAINER_ID_LEN || strspn(id, "0123456789abcdef") != CONTAINER_ID_LEN ||
		!memmem(path, len, id, CONTAINER_ID_LEN))
		abort(); /* 64 hex digits found in the path */
}

/* A pod UID as the API writes it: 36 characters with dashes, or a static pod's 32 hex digits. */
static void check_pod(const char *path, size_t len)
{
	struct pod_identity pod;
	size_t n;

	if (!path || !cgroup_pod(path, len, &pod))
		return;
	n = strlen(pod.uid);
	if ((n != POD_UID_LEN && n != 32) || strspn(pod.uid, "0123456789abcdef-") != n ||
		!pod_qos_name(pod.qos) || !strcmp(pod_qos_name(pod.qos), "?"))
		abort();
}

static void check_path(const char *path, size_t len, const char *text, size_t size)
{
	if (path && (path < text || path + len > text + size))
		abort();
	check_id(path, len);
	check_pod(path, len);
}

/* One cgroup from text, its figures read twice (rates need two readings). */
static void use_cgroup(const char *text, size_t size)
{
	struct cgroup_table *table = fake_table();
	struct cgroup *cg = cgroup_get(table, text, size);
	size_t containers;

	if (!cg)
		return;
	cgroup_refresh(table, cg, 1);
	cgroup_used(cg, 1); /* a row took them: the next read has rates */
	cgroup_refresh(table, cg, 2);
	if (cgroup_table_containers(table, &containers) == 0 && containers > 1)
		abort(); /* one cgroup in the table */
	cgroup_put(table, cg);
}

static void fuzz_proc_cgroup(const uint8_t *data, size_t size)
{
	char *text = fuzz_memdup(data, size);
	struct cgroup_paths ps;

	check_id(text, size);
	if (cgroup_parse_proc(text, size, &ps) == 0) {
		check_path(ps.path[CGH_V2], ps.len[CGH_V2], text, size);
		check_path(ps.path[CGH_MEMORY], ps.len[CGH_MEMORY], text, size);
		check_path(ps.path[CGH_CPU], ps.len[CGH_CPU], text, size);
		check_path(ps.path[CGH_CPUACCT], ps.len[CGH_CPUACCT], text, size);
		check_path(ps.path[CGH_SYSTEMD], ps.len[CGH_SYSTEMD], text, size);
	}
	use_cgroup(text, size);
	free(text);
}

static void fuzz_figures(const uint8_t *data, size_t size)
{
	static const char hybrid[] = "0::/\n4:memory:/\n2:cpu,cpuacct:/\n";
	const uint8_t *p = data, *end = data + size;

	for (size_t i = 0; i < sizeof(figure_files) / sizeof(figure_files[0]); i++) {
		const uint8_t *nul = memchr(p, '\0', (size_t)(end - p));
		size_t n = nul ? (size_t)(nul - p) : (size_t)(end - p);

		fuzz_write(figure_files[i], p, n);
		p = nul ? nul + 1 : end;
	}
	use_cgroup(hybrid, sizeof(hybrid) - 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size == 0)
		return 0;
	switch (data[0] % 3) {
	case 0:
		fuzz_mountinfo(data + 1, size - 1);
		break;
	case 1:
		fuzz_proc_cgroup(data + 1, size - 1);
		break;
	default:
		fuzz_figures(data + 1, size - 1);
	}
	return 0;
}
