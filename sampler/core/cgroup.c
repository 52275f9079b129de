/*
 * cgroup.c: a process's cgroup (v2, v1 or hybrid), its container id, its
 * pod (kubepods.c) and the cgroup's figures, read once per cgroup per
 * poll.  A figure the host cannot give is left out, never zero-filled.
 * An id counts only where a runtime puts containers, in directories root
 * made: a look-alike name elsewhere is a host process.
 * croft-sampler (croft user; cgroup files are world-readable).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "clock.h"
#include "fileio.h"
#include "host.h"

#define CGROUP_HASH_BUCKETS  1024
#define CGROUP_FILE_MAX      4096
#define CGROUP_MOUNTINFO_MAX (16u << 20) /* bytes of /proc/self/mountinfo */

struct cgroup_table {
	struct cgroup_mounts mounts;
	struct hash_link *buckets[CGROUP_HASH_BUCKETS];
};

/* A v1 hierarchy's controller (or name) as mountinfo and /proc/<pid>/cgroup list it. */
static const char *const v1_names[CGH_COUNT] = { [CGH_MEMORY] = "memory",
	[CGH_CPU] = "cpu",
	[CGH_CPUACCT] = "cpuacct",
	[CGH_SYSTEMD] = "name=systemd" };

static const char *const id_prefixes[] = { "docker-", "cri-containerd-", "crio-", "libpod-" };

/* Copies a mount point, refusing escaped or oversized ones. */
static void set_mount(char *dst, size_t size, const char *src, size_t len)
{
	if (len < size && !memchr(src, '\\', len)) {
		memcpy(dst, src, len);
		dst[len] = '\0';
	}
}

static bool has_option(const char *opts, size_t len, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = opts; p < opts + len;) {
		const char *comma = memchr(p, ',', (size_t)(opts + len - p));
		size_t w = comma ? (size_t)(comma - p) : (size_t)(opts + len - p);

		if (w == n && memcmp(p, name, n) == 0)
			return true;
		p += w + 1;
	}
	return false;
}

/* One mountinfo line: "id parent maj:min root mountpoint opts ... - fstype src superopts". */
static void mounts_line(const char *line, size_t len, struct cgroup_mounts *m)
{
	const char *f[5], *sep, *fstype, *super, *end = line + len;
	size_t flen[5];
	const char *p = line;

	for (int i = 0; i < 5; i++) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));

		if (!sp)
			return;
		f[i] = p;
		flen[i] = (size_t)(sp - p);
		p = sp + 1;
	}
	sep = memmem(p, (size_t)(end - p), " - ", 3);
	if (!sep || flen[3] != 1 || f[3][0] != '/')
		return; /* a mount of a subtree: its paths would not line up */
	fstype = sep + 3;
	super = memchr(fstype, ' ', (size_t)(end - fstype));
	super = super ? memchr(super + 1, ' ', (size_t)(end - super - 1)) : NULL;
	if (!super)
		return;
	super++;
	for (int h = 0; h < CGH_COUNT; h++)
		if (h == CGH_V2 ? strncmp(fstype, "cgroup2 ", 8) == 0
				: strncmp(fstype, "cgroup ", 7) == 0 &&
					  has_option(super, (size_t)(end - super), v1_names[h]))
			set_mount(m->at[h], sizeof(m->at[h]), f[4], flen[4]);
}

int cgroup_mounts_parse(const char *mountinfo, size_t len, struct cgroup_mounts *ret_mounts)
{
	struct cgroup_mounts m = { 0 };
	const char *p = mountinfo, *end = mountinfo + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t n = nl ? (size_t)(nl - p) : (size_t)(end - p);

		mounts_line(p, n, &m);
		p += n + 1;
	}
	*ret_mounts = m;
	return 0;
}

int cgroup_mounts_read(struct cgroup_mounts *ret_mounts)
{
	size_t len;
	char *buf;
	int r = file_read_bounded("/proc/self/mountinfo", CGROUP_MOUNTINFO_MAX, &buf, &len);

	if (r)
		return r;
	r = cgroup_mounts_parse(buf, len, ret_mounts);
	free(buf);
	return r;
}

/* "hierarchy:controllers:path" lines; v2 is "0::path". */
int cgroup_parse_proc(const char *text, size_t len, struct cgroup_paths *ret_paths)
{
	struct cgroup_paths paths = { 0 };
	const char *p = text, *end = text + len;
	bool any = false;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *lend = nl ? nl : end;
		const char *c1 = memchr(p, ':', (size_t)(lend - p));
		const char *c2 = c1 ? memchr(c1 + 1, ':', (size_t)(lend - c1 - 1)) : NULL;

		if (c2) {
			const char *ctl = c1 + 1, *path = c2 + 1;
			size_t ctl_len = (size_t)(c2 - ctl), plen = (size_t)(lend - path);

			for (int h = 0; h < CGH_COUNT; h++)
				if (h == CGH_V2 ? ctl_len == 0 && c1 - p == 1 && p[0] == '0'
						: has_option(ctl, ctl_len, v1_names[h])) {
					paths.path[h] = path;
					paths.len[h] = plen;
					any = true;
				}
		}
		p = lend + 1;
	}
	if (!any)
		return -ENOENT;
	*ret_paths = paths;
	return 0;
}

static bool is_hex64(const char *s, size_t n)
{
	if (n != CONTAINER_ID_LEN)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* "docker-<id>.scope", "crio-<id>", ...: the id or NULL. */
static const char *prefixed_id(const char *c, size_t n)
{
	for (size_t i = 0; i < sizeof(id_prefixes) / sizeof(id_prefixes[0]); i++) {
		size_t pl = strlen(id_prefixes[i]);

		if (n < pl + CONTAINER_ID_LEN || memcmp(c, id_prefixes[i], pl))
			continue;
		if (n == pl + CONTAINER_ID_LEN ||
			(n == pl + CONTAINER_ID_LEN + 6 && memcmp(c + n - 6, ".scope", 6) == 0))
			if (is_hex64(c + pl, CONTAINER_ID_LEN))
				return c + pl;
	}
	return NULL;
}

/* The parents runtimes put a container's "<runtime>-<id>.scope" or "<id>" in, from the root. */
static const char *container_id_at(const struct path_part *parts, size_t n)
{
	if (n < 2)
		return NULL;
	if (path_part_is(parts[0], "system.slice") || path_part_is(parts[0], "machine.slice") ||
		path_part_is(parts[0], "libpod_parent"))
		return prefixed_id(parts[1].at, parts[1].len);
	if (path_part_is(parts[0], "docker") && is_hex64(parts[1].at, parts[1].len))
		return parts[1].at;
	return NULL;
}

size_t cgroup_container_id(const char *path, size_t len, char ret_id[CONTAINER_ID_LEN + 1])
{
	struct path_part parts[POD_DEPTH_MAX + 1];
	size_t n = cgroup_path_split(path, len, parts, POD_DEPTH_MAX + 1), depth = 2;
	struct pod_identity pod;
	const char *id = container_id_at(parts, n);

	if (!id && (depth = cgroup_pod(path, len, &pod)) && depth < n) {
		/* a pod's container, right in the pod's cgroup */
		id = prefixed_id(parts[depth].at, parts[depth].len);
		if (!id && is_hex64(parts[depth].at, parts[depth].len))
			id = parts[depth].at;
		depth++;
	}
	if (!id)
		return 0;
	memcpy(ret_id, id, CONTAINER_ID_LEN);
	ret_id[CONTAINER_ID_LEN] = '\0';
	return depth;
}

/* "some avg10=1.23 avg60=... total=..." */
int cgroup_parse_pressure(const char *text, double *ret_avg10)
{
	const char *p = strstr(text, "some avg10=");
	char *endp;
	double v;

	if (!p || (p != text && p[-1] != '\n'))
		return -ENOENT;
	v = strtod(p + 11, &endp);
	if (endp == p + 11)
		return -EINVAL;
	*ret_avg10 = v;
	return 0;
}

static int read_small(const char *dir, const char *name, char *buf, size_t size)
{
	char path[PATH_MAX];
	ssize_t n;

	if (!dir || snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
		return -ENOENT;
	n = procfs_read_at(AT_FDCWD, path, buf, size);
	return n < 0 ? (int)n : 0;
}

static int read_u64(const char *dir, const char *name, uint64_t *ret)
{
	char buf[64], *endp;
	unsigned long long v;
	int r = read_small(dir, name, buf, sizeof(buf));

	if (r)
		return r;
	errno = 0;
	v = strtoull(buf, &endp, 10);
	if (errno || endp == buf)
		return -EINVAL;
	*ret = v;
	return 0;
}

static void read_pressure(struct cgroup *cg, const char *name, unsigned bit, double *ret)
{
	char buf[CGROUP_FILE_MAX];

	if (read_small(cg->dir[CGH_V2], name, buf, sizeof(buf)) == 0 &&
		cgroup_parse_pressure(buf, ret) == 0)
		cg->now.have |= bit;
}

static void read_memory(struct cgroup *cg)
{
	char buf[CGROUP_FILE_MAX];

	if (read_u64(cg->dir[CGH_V2], "memory.current", &cg->now.memory_bytes) == 0 ||
		read_u64(cg->dir[CGH_MEMORY], "memory.usage_in_bytes", &cg->now.memory_bytes) == 0)
		cg->now.have |= CGF_MEMORY;
	if ((read_small(cg->dir[CGH_V2], "memory.events", buf, sizeof(buf)) == 0 &&
		    procfs_parse_keyed(buf, "oom_kill", &cg->now.oom_kills) == 0) ||
		(read_small(cg->dir[CGH_MEMORY], "memory.oom_control", buf, sizeof(buf)) == 0 &&
			procfs_parse_keyed(buf, "oom_kill", &cg->now.oom_kills) == 0))
		cg->now.have |= CGF_OOM;
}

/* CPU time (ns) and CFS period counters: v2 cpu.stat, else v1 cpuacct/cpu. */
static void read_cpu(struct cgroup *cg, uint64_t *usage_ns, bool *have_usage, uint64_t *periods,
	uint64_t *throttled, bool *have_throttle)
{
	char buf[CGROUP_FILE_MAX];
	bool v2 = read_small(cg->dir[CGH_V2], "cpu.stat", buf, sizeof(buf)) == 0;

	*have_usage = false;
	*have_throttle = false;
	if (v2 && procfs_parse_keyed(buf, "usage_usec", usage_ns) == 0) {
		*usage_ns *= 1000;
		*have_usage = true;
	} else if (read_u64(cg->dir[CGH_CPUACCT], "cpuacct.usage", usage_ns) == 0) {
		*have_usage = true;
	}
	if (!(v2 && procfs_parse_keyed(buf, "nr_periods", periods) == 0 &&
		    procfs_parse_keyed(buf, "nr_throttled", throttled) == 0))
		if (read_small(cg->dir[CGH_CPU], "cpu.stat", buf, sizeof(buf)) ||
			procfs_parse_keyed(buf, "nr_periods", periods) ||
			procfs_parse_keyed(buf, "nr_throttled", throttled))
			return;
	*have_throttle = true;
}

/* CPU rates from the base read to one read now, which becomes the last. */
static void cpu_rates(struct cgroup *cg)
{
	const struct cgroup_cpu *base = &cg->base;
	struct cgroup_cpu now = { .mono_ns = clock_mono_ns() };
	bool have_usage, have_throttle;

	read_cpu(cg, &now.usage_ns, &have_usage, &now.periods, &now.throttled, &have_throttle);
	if (base->have && now.mono_ns > base->mono_ns) {
		if (have_usage && now.usage_ns >= base->usage_ns) {
			cg->now.cpu_cores = (double)(now.usage_ns - base->usage_ns) /
					    (double)(now.mono_ns - base->mono_ns);
			cg->now.have |= CGF_CPU;
		}
		if (have_throttle && now.periods >= base->periods &&
			now.throttled >= base->throttled) {
			uint64_t dp = now.periods - base->periods;

			cg->now.throttled_fraction =
				dp ? (double)(now.throttled - base->throttled) / (double)dp : 0.0;
			cg->now.have |= CGF_THROTTLED;
		}
	}
	now.have = have_usage || have_throttle;
	cg->last = now;
}

void cgroup_refresh(struct cgroup_table *table, struct cgroup *cg, uint64_t gen)
{
	if (cg->read_gen == gen)
		return;
	/* rates run from the last read a row took: a read no row took changes none */
	if (cg->read_gen && cg->used_gen == cg->read_gen)
		cg->base = cg->last;
	cg->read_gen = gen;
	cg->now = (struct cgroup_figures){ 0 };
	cpu_rates(cg);
	read_memory(cg);
	if (cg->dir[CGH_V2]) {
		read_pressure(cg, "cpu.pressure", CGF_CPU_PSI, &cg->now.cpu_psi_avg10);
		read_pressure(cg, "memory.pressure", CGF_MEM_PSI, &cg->now.memory_psi_avg10);
		read_pressure(cg, "io.pressure", CGF_IO_PSI, &cg->now.io_psi_avg10);
	}
}

void cgroup_used(struct cgroup *cg, uint64_t gen)
{
	cg->used_gen = gen;
}

static const struct cgroup_source {
	unsigned bit; /* enum cgroup_have */
	enum cgroup_hier
		v1; /* the v1 controller that gives it where cgroup2 does not; CGH_V2: none */
	enum row_field field;
	const char *files;
} cgroup_sources[] = {
	{ CGF_CPU, CGH_CPUACCT, RF_CG_CPU_CORES, "cpu.stat, v1 cpuacct.usage" },
	{ CGF_THROTTLED, CGH_CPU, RF_CG_CPU_THROTTLED_FRACTION, "cpu.stat, v1 cpu.stat" },
	{ CGF_MEMORY, CGH_MEMORY, RF_CG_MEMORY_BYTES, "memory.current, v1 memory.usage_in_bytes" },
	{ CGF_OOM, CGH_MEMORY, RF_CG_OOM_KILLS, "memory.events, v1 memory.oom_control" },
	{ CGF_CPU_PSI, CGH_V2, RF_CG_CPU_PRESSURE_AVG10, "cpu.pressure (v1 has none)" },
	{ CGF_MEM_PSI, CGH_V2, RF_CG_MEMORY_PRESSURE_AVG10, "memory.pressure (v1 has none)" },
	{ CGF_IO_PSI, CGH_V2, RF_CG_IO_PRESSURE_AVG10, "io.pressure (v1 has none)" },
};
#define CGROUP_SOURCES (sizeof(cgroup_sources) / sizeof(cgroup_sources[0]))

/* The figures some cgroup has no directory for: neither cgroup2's nor its v1 controller's. */
static unsigned table_unsourced(const struct cgroup_table *table)
{
	unsigned lacking = 0;

	for (size_t b = 0; b < CGROUP_HASH_BUCKETS; b++)
		for (struct hash_link *l = table->buckets[b]; l; l = l->next) {
			const struct cgroup *cg = hash_entry(l, struct cgroup, hash);

			for (size_t i = 0; i < CGROUP_SOURCES; i++)
				if (!cg->dir[CGH_V2] && !cg->dir[cgroup_sources[i].v1])
					lacking |= cgroup_sources[i].bit;
		}
	return lacking;
}

size_t cgroup_table_left_out(const struct cgroup_table *table, struct left_out *ret, size_t max)
{
	const struct cgroup_mounts *m = &table->mounts;
	unsigned lacking = table_unsourced(table);
	size_t n = 0;

	for (size_t i = 0; i < CGROUP_SOURCES && n < max; i++) {
		const struct cgroup_source *src = &cgroup_sources[i];
		char *why = ret[n].why;
		int len;

		if (!(lacking & src->bit))
			continue;
		ret[n++].field = row_fields[src->field].path;
		len = snprintf(why, LEFT_OUT_WHY_MAX,
			"%s: a cgroup's path is not in cgroup2 (%s%s)", src->files,
			m->at[CGH_V2][0] ? "at " : "not mounted", m->at[CGH_V2]);
		if (src->v1 != CGH_V2 && len > 0 && len < LEFT_OUT_WHY_MAX)
			snprintf(why + len, LEFT_OUT_WHY_MAX - (size_t)len, " nor in v1 %s (%s%s)",
				v1_names[src->v1], m->at[src->v1][0] ? "at " : "not mounted",
				m->at[src->v1]);
	}
	return n;
}

struct cgroup_table *cgroup_table_new(const struct cgroup_mounts *mounts)
{
	struct cgroup_table *t = calloc(1, sizeof(*t));

	if (t)
		t->mounts = *mounts;
	return t;
}

static void cgroup_free(struct cgroup *cg)
{
	free(cg->key);
	free(cg->path);
	for (int h = 0; h < CGH_SYSTEMD; h++)
		free(cg->dir[h]);
	free(cg);
}

void cgroup_table_free(struct cgroup_table *table)
{
	if (!table)
		return;
	for (size_t i = 0; i < CGROUP_HASH_BUCKETS; i++)
		while (table->buckets[i]) {
			struct hash_link *l = table->buckets[i];

			table->buckets[i] = l->next;
			cgroup_free(hash_entry(l, struct cgroup, hash));
		}
	free(table);
}

/* mount + path when path is the one shown, else NULL: figures of another cgroup would lie. */
static char *figure_dir(const char *mount, const char *path, size_t len, const struct cgroup *cg)
{
	char *dir;

	if (!mount[0] || !path || len != cg->path_len || memcmp(path, cg->path, len) ||
		memchr(path, '\0', len))
		return NULL;
	if (asprintf(&dir, "%s%.*s", mount, (int)len, path) < 0)
		return NULL;
	return dir;
}

/* One hierarchy's path for a process, and where that hierarchy is mounted. */
struct hier_path {
	const char *path;
	size_t len;
	const char *mount;
};

/*
 * Whether the directories of the path's first `depth` components are all
 * root's: runtimes and the kubelet make them as root, whereas a delegated
 * subtree (systemd's user@.service, a chowned v1 cgroup) belongs to its
 * user, whose names prove nothing.  Read once per cgroup.
 */
static bool made_by_root(const struct hier_path *h, size_t depth)
{
	struct path_part parts[POD_DEPTH_MAX + 1];
	size_t n = cgroup_path_split(h->path, h->len, parts, depth);
	char dir[PATH_MAX];
	struct stat st;

	if (!h->mount[0] || n < depth || memchr(h->path, '\0', h->len))
		return false;
	for (size_t i = 0; i < depth; i++) {
		int upto = (int)(parts[i].at + parts[i].len - h->path);

		if (snprintf(dir, sizeof(dir), "%s%.*s", h->mount, upto, h->path) >=
				(int)sizeof(dir) ||
			lstat(dir, &st) || !S_ISDIR(st.st_mode) || st.st_uid != 0)
			return false;
	}
	return true;
}

/* The container and pod h names where runtimes put them, made by root; false for none. */
static bool path_identity(
	const struct hier_path *h, char ret_id[CONTAINER_ID_LEN + 1], struct pod_identity *ret_pod)
{
	size_t id_depth, pod_depth, depth;

	if (!h->path)
		return false;
	id_depth = cgroup_container_id(h->path, h->len, ret_id);
	pod_depth = cgroup_pod(h->path, h->len, ret_pod);
	depth = id_depth > pod_depth ? id_depth : pod_depth;
	if (!depth || !made_by_root(h, depth))
		return false;
	if (!id_depth)
		ret_id[0] = '\0';
	if (!pod_depth)
		ret_pod->uid[0] = '\0';
	return true;
}

/*
 * The path shown: the first naming a container or pod where root put it
 * (which gives cg its identity), else v2 on a v2 host, else memory, cpu...
 */
static void choose_path(const struct cgroup_paths *ps, const struct cgroup_mounts *m,
	struct cgroup *cg, struct hier_path *ret)
{
	struct hier_path order[CGH_COUNT];
	bool v1 = false;

	for (int h = 0; h < CGH_COUNT; h++) {
		order[h] = (struct hier_path){ ps->path[h], ps->len[h], m->at[h] };
		v1 = v1 || (h != CGH_V2 && ps->path[h]);
	}
	for (int h = 0; h < CGH_COUNT; h++)
		if (path_identity(&order[h], cg->container_id, &cg->pod)) {
			*ret = order[h];
			return;
		}
	cg->container_id[0] = '\0';
	cg->pod.uid[0] = '\0';
	*ret = order[CGH_V2];
	for (int h = 0; v1 && h < CGH_COUNT; h++)
		if (order[h].path) {
			*ret = order[h];
			return;
		}
}

static struct cgroup *cgroup_create(struct cgroup_table *table, const char *text, size_t len)
{
	struct cgroup_paths ps;
	struct hier_path shown;
	struct cgroup *cg;

	if (cgroup_parse_proc(text, len, &ps))
		return NULL;
	cg = calloc(1, sizeof(*cg));
	if (!cg)
		return NULL;
	choose_path(&ps, &table->mounts, cg, &shown);
	cg->key = malloc(len + 1);
	cg->path = malloc(shown.len + 1);
	if (!cg->key || !cg->path) {
		cgroup_free(cg);
		return NULL;
	}
	memcpy(cg->key, text, len);
	cg->key_len = len;
	memcpy(cg->path, shown.path, shown.len);
	cg->path[shown.len] = '\0';
	cg->path_len = shown.len;
	for (int h = 0; h < CGH_SYSTEMD; h++)
		cg->dir[h] = figure_dir(table->mounts.at[h], ps.path[h], ps.len[h], cg);
	return cg;
}

struct cgroup *cgroup_get(struct cgroup_table *table, const char *text, size_t len)
{
	uint64_t hash = fnv1a(FNV1A_BASIS, text, len);
	struct cgroup *cg;

	for (struct hash_link *l = hash_match(*HASH_BUCKET(table->buckets, hash), hash); l;
		l = hash_match(l->next, hash)) {
		cg = hash_entry(l, struct cgroup, hash);
		if (cg->key_len == len && memcmp(cg->key, text, len) == 0) {
			cg->refs++;
			return cg;
		}
	}
	cg = cgroup_create(table, text, len);
	if (!cg)
		return NULL;
	cg->refs = 1;
	hash_add(HASH_BUCKET(table->buckets, hash), &cg->hash, hash);
	return cg;
}

void cgroup_put(struct cgroup_table *table, struct cgroup *cg)
{
	if (!cg || --cg->refs)
		return;
	hash_del(HASH_BUCKET(table->buckets, cg->hash.hash), &cg->hash);
	cgroup_free(cg);
}

static int id_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Distinct container ids among the tracked processes' cgroups (several
 * cgroups can be one container's), sorted to count them: a host of 20 000
 * cgroups answers status in O(n log n).
 */
int cgroup_table_containers(const struct cgroup_table *table, size_t *ret_count)
{
	const char **ids = NULL;
	size_t n = 0, cap = 0, count = 0;

	for (size_t i = 0; i < CGROUP_HASH_BUCKETS; i++)
		for (struct hash_link *l = table->buckets[i]; l; l = l->next) {
			const struct cgroup *cg = hash_entry(l, struct cgroup, hash);

			if (!cg->container_id[0])
				continue;
			if (n == cap) {
				const char **more =
					realloc(ids, (cap ? cap * 2 : 64) * sizeof(*ids));

				if (!more) {
					free(ids);
					return -ENOMEM;
				}
				ids = more;
				cap = cap ? cap * 2 : 64;
			}
			ids[n++] = cg->container_id;
		}
	if (n)
		qsort(ids, n, sizeof(*ids), id_cmp);
	for (size_t i = 0; i < n; i++)
		count += i == 0 || strcmp(ids[i - 1], ids[i]) != 0;
	free(ids);
	*ret_count = count;
	return 0;
}
