/*
 * rowscan.h: one croft-dataset row as the readers see it, and the two ways
 * to get it from a line: a schema-aware scanner (fast path) and jansson (the
 * reference, used for every line the scanner declines).  croft stats/profile,
 * invoking user, no privilege.
 */
#ifndef CROFT_ROWSCAN_H
#define CROFT_ROWSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rowdef.h"

#define ROW_SYSCALLS_MAX 512               /* syscalls kept per row; later ones ignored */
#define ROWSCAN_PAD      64                /* readable bytes the scanner needs past a line */
#define FIXED_SCALE      10000             /* fixed point: figures are kept in 1e-4 units */
#define FIXED_ABS_MAX    900000000000000LL /* |value| kept in 1e-4 units: 9e14 */

/* A string in the line (scanner) or in the jansson tree; ptr NULL = absent. */
struct strv {
	const char *ptr;
	uint32_t len;
};

struct row_syscall {
	struct strv name;
	int64_t rate_x1e4; /* calls per second x 1e4 */
};

enum row_has {
	HAS_IOCTL = 1u << 0,
	HAS_CPU = 1u << 1,
	HAS_RSS = 1u << 2,
	HAS_THREADS = 1u << 3,
	HAS_READ = 1u << 4,
	HAS_WRITE = 1u << 5,
	HAS_RX = 1u << 6,
	HAS_TX = 1u << 7,
	HAS_GPUS = 1u << 8,
	HAS_SPAN = 1u << 9,       /* span_ms: rows of older datasets lack it */
	HAS_START = 1u << 10,     /* process.start_ms: likewise */
	HAS_ALLOCATED = 1u << 11, /* gpus_allocated */
	HAS_UID = 1u << 12,       /* process.uid */
	HAS_SM = 1u << 13,        /* gpu_sm_percent: NVML read it */
};

#define ROW_GPUS_MAX 256 /* GPU indices kept, 0..255; others are not counted */

struct row {
	int64_t unix_ms, tgid;
	int64_t span_ms, start_ms; /* HAS_SPAN, HAS_START */
	struct strv host, comm, exe, container_id, pod_uid, pod_qos, cwd, framework, label;
	struct strv gpu_activity, exited, label_source; /* as written: row_activity() reads one */
	enum workload_state workload;
	uint32_t has; /* enum row_has */
	int64_t ioctl_count;
	int64_t uid, sm_x1e4; /* HAS_UID; HAS_SM: percent x 1e4 */
	int64_t cpu_x1e4, rss_bytes, threads;
	int64_t read_x1e4, write_x1e4, rx_x1e4, tx_x1e4; /* bytes per second x 1e4 */
	uint64_t gpus[ROW_GPUS_MAX / 64];                /* bit i: GPU i held (HAS_GPUS) */
	uint64_t gpus_allocated[ROW_GPUS_MAX / 64]; /* bit i: GPU i allocated (HAS_ALLOCATED) */
	uint32_t syscalls_count;
	struct row_syscall syscalls[ROW_SYSCALLS_MAX];
};

enum rowscan_result {
	ROWSCAN_OK = 0,
	ROWSCAN_FALLBACK = 1, /* not handled here: ask jansson */
};

/*
 * Scans the row at line, up to its '\n' (which must come before end; the
 * scanner finds it: *ret_newline); needs ROWSCAN_PAD readable bytes past end.
 * Handles exactly the rows whose meaning is plain: strict JSON, ASCII
 * strings without escapes, no duplicate known keys, numbers without
 * exponent.  Anything else returns ROWSCAN_FALLBACK and leaves the verdict
 * to rowscan_jansson(), which gives the same row for every line both accept.
 */
enum rowscan_result rowscan_fast(
	const char *line, const char *end, struct row *ret_row, const char **ret_newline);

/*
 * The reference: json_loadb + row_from_json.  Returns 0, or -EINVAL with a
 * reason in err (not JSON, or JSON that is not a croft row).  *ret_tree must
 * be json_decref()'d by the caller after using the row (its strings point
 * into it); it is NULL on error.
 */
struct json_t;
int rowscan_jansson(const char *line, size_t len, struct row *ret_row, struct json_t **ret_tree,
	char *err, size_t err_size);

/* The two paths' shared parts: an empty row, where a field is kept (NULL:
 * the readers skip it; *ret_has_bit: its HAS_ bit, 0 for one always
 * there), a GPU index into gpus or gpus_allocated (one outside
 * 0..ROW_GPUS_MAX-1 is left out). */
void row_clear(struct row *row);
struct strv *row_str_slot(struct row *row, enum row_field f);
int64_t *row_num_slot(struct row *row, enum row_field f, uint32_t *ret_has_bit);
void row_gpu_add(uint64_t bits[ROW_GPUS_MAX / 64], int64_t index);
/* The row's verdict; rows without one (older datasets, no-gpu rows) are unknown. */
static inline enum gpu_activity row_activity(const struct row *row)
{
	int a = row->gpu_activity.ptr
			? gpu_activity_parse(row->gpu_activity.ptr, row->gpu_activity.len)
			: -1;

	return a < 0 ? GA_UNKNOWN : (enum gpu_activity)a;
}
static inline bool row_has_gpu(const struct row *row, unsigned index)
{
	return index < ROW_GPUS_MAX && (row->gpus[index / 64] >> (index % 64)) & 1;
}

#endif
