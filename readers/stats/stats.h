/*
 * stats.h: the map of croft stats, a report over the engine: its
 * worker/merge half (stats.c) with the sums per GPU (gpu.c), per pod
 * (pod.c) and per user (user.c), and its output half (out.c).  Invoking
 * user, no privilege.
 */
#ifndef CROFT_STATS_H
#define CROFT_STATS_H

#include "readers.h"

/* gpu-held ms, and of them by the rows' verdict (gpu_activity; none: unknown). */
struct gpu_acc {
	uint64_t held_ms;
	uint64_t activity_ms[GA_COUNT];
};

#define GPU_NONE ROW_GPUS_MAX /* by_gpu's entry for rows naming no GPU */

/* gpu.c: per GPU, per container x GPU, per system holder */
struct gpu_pair {
	uint32_t container; /* an id of the containers' table; NONE_ID: host */
	uint16_t gpu;       /* GPU_NONE: none named */
	struct gpu_acc acc;
};

struct gpu_sums {
	struct gpu_acc by_gpu[GPU_NONE + 1];
	struct i64map pair_index; /* PAIR_KEY -> pairs[] */
	struct gpu_pair *pairs;
	size_t pairs_count, pairs_cap;
	struct gpu_acc *system; /* per gpu_system_holders name */
	size_t system_count;
};

void gpu_acc_add(struct gpu_acc *a, enum gpu_activity activity, uint64_t ms);
void gpu_acc_sum(struct gpu_acc *to, const struct gpu_acc *from);
bool gpu_sums_init(struct gpu_sums *g, size_t holders);
void gpu_sums_free(struct gpu_sums *g);
/* ms of a workload's gpu-held row on each of its GPUs (or on none). */
bool gpu_sums_add(struct gpu_sums *g, uint32_t container, const uint64_t gpus[ROW_GPU_WORDS],
	enum gpu_activity activity, uint64_t ms);
/* remap: from's container ids to to's (NULL: the same table). */
bool gpu_sums_merge(struct gpu_sums *to, const struct gpu_sums *from, const uint32_t *remap);

/* pod.c: per pod and per pod x GPU */
#define POD_QOS_KINDS 4 /* none named, guaranteed, burstable, besteffort */

struct span {
	int64_t start_ms, end_ms;
};
struct span_set {
	struct span *v;
	size_t count, cap;
};

struct pod_gpu {
	uint16_t gpu;
	struct gpu_acc acc;          /* gpu-held rows naming it, per process */
	struct span_set allocated;   /* rows whose gpus_allocated names it */
	struct span_set held;        /* rows of the pod's processes holding it */
	struct span_set unallocated; /* ... of rows whose gpus_allocated does not name it */
	uint64_t allocated_not_held_ms, held_not_allocated_ms; /* pod_sums_finish */
};

struct pod_acc {
	uint8_t qos;        /* index of POD_QOS_KINDS; 0: none named */
	struct gpu_acc acc; /* gpu-held rows, per process */
	uint32_t *containers;
	size_t containers_count, containers_cap;
	struct pod_gpu *gpus;
	size_t gpus_count, gpus_cap;
	uint64_t allocated_not_held_ms, held_not_allocated_ms; /* over its GPUs */
};

struct pod_sums {
	struct strtab uids;
	struct pod_acc *pods; /* per uid id */
	size_t pods_cap;
};

/* What a pod's row stands for: its ms, whether it holds GPUs (a workload
 * in a GPU state), is gpu-held, and its verdict. */
struct pod_row_weight {
	uint64_t ms;
	bool holds, held;
	enum gpu_activity activity;
};

/* container: an id of the same worker's containers table, or NONE_ID. */
bool pod_sums_row(struct pod_sums *ps, const struct row *row, uint32_t container,
	const struct pod_row_weight *w);
/* containers: from's container ids to to's (NULL: the same table). */
bool pod_sums_merge(struct pod_sums *to, const struct pod_sums *from, const uint32_t *containers);
/* The allocated and held times, once all is merged. */
void pod_sums_finish(struct pod_sums *ps);
void pod_sums_free(struct pod_sums *ps);
const char *pod_qos_text(uint8_t qos); /* NULL for none named */

/* user.c: per user (process.uid) */
#define USER_NONE       (-1) /* rows without process.uid (older datasets) */
#define USER_NAMES_FILE "/etc/passwd"
struct user_acc {
	int64_t uid; /* USER_NONE: none */
	struct gpu_acc acc;
};
struct user_sums {
	struct i64map index; /* uid -> v[] */
	struct user_acc *v;
	size_t count, cap;
};
bool user_sums_add(struct user_sums *u, int64_t uid, enum gpu_activity activity, uint64_t ms);
bool user_sums_merge(struct user_sums *to, const struct user_sums *from);
void user_sums_free(struct user_sums *u);
/*
 * The user names of the host, read from passwd_path (/etc/passwd) as a
 * file: never through NSS, whose LDAP or sssd lookups may block.  Names of
 * uids it does not list are left out (the number is shown).
 */
struct user_names {
	struct user_name {
		int64_t uid;
		char *name;
	} * v;
	size_t count, cap;
};
void user_names_load(struct user_names *n, const char *passwd_path);
const char *user_name(const struct user_names *n, int64_t uid); /* NULL: unknown */
void user_names_free(struct user_names *n);

/* One host's figures: rows, processes, process-hours, its workloads' GPU-held hours. */
struct host_acc {
	uint64_t rows, processes, ms;
	struct gpu_acc gpu;
};

struct fw_acc {
	uint64_t processes;
	u128 cpu_x1e4_ms; /* cpu_cores x 1e4 x ms */
};

/* Everything croft stats prints, global ids into the tables. */
struct stats_result {
	uint64_t wl_rows[WL_COUNT], wl_processes[WL_COUNT], wl_ms[WL_COUNT];
	struct strtab containers_tab, cwds_tab, frameworks_tab;
	struct gpu_acc *by_container, *by_cwd; /* per id */
	struct fw_acc *by_framework, fw_none;
	struct host_acc *by_host, no_host; /* per the join's host id; rows without one */
	const struct track_join *join;     /* rows, processes, span; syscalls: rate x 1e4 x ms */
	struct gpu_acc host;               /* rows with no container */
	struct gpu_acc cwd_unknown;        /* rows with no cwd */
	struct gpu_sums gpu;               /* workloads per GPU, container x GPU; system holders */
	struct pod_sums pods;              /* per pod, pod x GPU */
	struct user_sums users;            /* per process.uid */
	const struct read_opts *o;         /* the holders' names */
};

/* out.c: the table, or --json */
void stats_print(const struct stats_result *s, const struct ds_files *files,
	const struct ds_report *rep, bool json);

#endif
