/*
 * rowdef.h: the one definition of a croft-dataset row (croft-dataset(5)):
 * the row table (rowtable.h: every field's name, type, place, when it is
 * left out and what it means, in the order rows list them), the types of
 * its columns, and the writer that walks it.  The sampler writes rows
 * with it, the readers' scanner and jansson path read them by it, the
 * generator fakes them with it, and the JSON Schema and croft-dataset(5)'s
 * FIELDS are generated from it.  Any process, no privilege.
 */
#ifndef CROFT_ROWDEF_H
#define CROFT_ROWDEF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum row_type {
	RT_INT,          /* unsigned integer */
	RT_FLOAT,        /* at most 4 decimals, always a '.' */
	RT_STRING,       /* a "<name>_b64" follows when it was not UTF-8 */
	RT_OBJECT,       /* its fields are the list named after it */
	RT_INT_ARRAY,    /* small integers, ascending, each once: a bitset */
	RT_OBJECT_ARRAY, /* objects whose fields are the list named after it */
	RT_STRING_ARRAY, /* strings the program formed itself: ASCII, no "_b64" */
};

/* When a field is left out (never written as zero). */
enum row_omit {
	RO_NEVER,      /* in every row (every entry of its array) */
	RO_NO_PROBE,   /* without croft-probe */
	RO_NO_GPU,     /* for no-gpu rows (and, for the probe's, without it) */
	RO_UNREADABLE, /* where the host cannot give it */
	RO_NONE,       /* when there is none: a host process, no match, none seen */
	RO_OLDER,      /* in every row written now; rows of older datasets lack it */
};

/* Who lists a field in a status's left_out when this host cannot give it. */
enum row_left_by {
	RL_NONE = 0,
	/* croft-probe, for a concern that did not load (probe/concerns.c) */
	RL_PROBE_SYSCALLS = 1 << 0,
	RL_PROBE_IOCTL = 1 << 1,
	RL_PROBE_SCHED = 1 << 2,
	RL_PROBE_NET = 1 << 3,
	RL_PROBE_EXIT = 1 << 4,
	RL_PROBE_GPUFILE = 1 << 5,
	/* croft-sampler, where /proc/devices registers no GPU device of the set */
	RL_GPU_DEVICE = 1 << 6,
};

/*
 * The fields, one list per object, each in row order, with their
 * descriptions: rowtable.h.  Adding a field: one entry there, and its value
 * in each program's row_sink.get (tests/lib/rowfields.c's walk fails
 * without).
 */
#include "rowtable.h"

/* Every list, in the order the field ids follow. */
#define ROW_FIELDS_ALL(X)                                                                          \
	ROW_FIELDS_ROOT(X)                                                                         \
	ROW_FIELDS_PROCESS(X)                                                                      \
	ROW_FIELDS_USAGE(X) ROW_FIELDS_CGROUP_USAGE(X) ROW_FIELDS_SYSCALLS(X)

/* How many fields a list has: ROW_COUNT(ROW_FIELDS_USAGE). */
#define ROW_ONE_(object, ...) +1
#define ROW_COUNT(list)       (0 list(ROW_ONE_))

/* The field ids: the lists one after another, so an object's fields are one run. */
#define ROW_ID_(object, id, ...) RF_##id,
enum row_field {
	ROW_FIELDS_ALL(ROW_ID_) RF_COUNT,
	RF_ROOT = RF_COUNT, /* the object of the top-level fields */
};

struct row_field_def {
	const char *name;
	const char *path; /* as croft-dataset(5) and status name it: "usage.cpu_cores" */
	const char *key;  /* ,"name": as written (the first of an object without ',') */
	uint8_t key_len;
	enum row_type type;
	enum row_omit omit;
	unsigned left_by;      /* enum row_left_by bits */
	enum row_field object; /* RF_ROOT for the top level */
};
extern const struct row_field_def row_fields[RF_COUNT];

/* An object's fields (RT_OBJECT, RT_OBJECT_ARRAY and RF_ROOT): one run of ids. */
struct row_object {
	enum row_field first_field;
	uint8_t fields_count;
};
/* By the object's field id; RF_ROOT: the top level. */
extern const struct row_object row_objects[RF_COUNT + 1];

/* A field's value, as a row_sink gives it. */
struct row_value {
	uint64_t u;      /* RT_INT; the entries of an RT_OBJECT_ARRAY */
	double f;        /* RT_FLOAT */
	const char *str; /* RT_STRING: any bytes, escaped as written */
	size_t str_len;
	const uint64_t *bits;    /* RT_INT_ARRAY: bit i set for entry i */
	size_t bits_count;       /* a multiple of 64 */
	const char *const *strs; /* RT_STRING_ARRAY: its entries, in order */
	size_t strs_count;
};

/* Where row_write() puts a row's bytes, and where it gets the values from. */
struct row_sink {
	void *arg;
	void (*put)(void *arg, const char *s, size_t n);
	/* Whether field f is in this row (its index-th entry's, in an array
	 * of objects), and its value; an object's is only whether it is. */
	bool (*get)(void *arg, enum row_field f, size_t index, struct row_value *ret);
};
/* One row, the fields in the table's order, and its '\n'. */
void row_write(const struct row_sink *sink);
/* A float as rows write it: at most 4 decimals, zeros trimmed, always a '.'. */
void row_put_float(const struct row_sink *sink, double v);
/* The length of the valid UTF-8 sequence at s (left bytes), or 0. */
size_t utf8_seq(const unsigned char *s, size_t left);

/* ---- the workload states: the "workload" field's values ---- */
enum workload_state { WL_NO_GPU = 0, WL_GPU_ONSET, WL_GPU_HELD, WL_COUNT };
/* The order reports list them in: a GPU process's life, then the rest. */
extern const enum workload_state workload_report_order[WL_COUNT];
/* "no-gpu", "gpu-onset", "gpu-held"; "?" for another value */
const char *workload_name(enum workload_state w);
int workload_parse(const char *s, size_t len, enum workload_state *ret);

/*
 * ---- the GPU activity verdict: "gpu_activity" and "gpu_activity_source" ----
 * Idle only on evidence (croft-dataset(5)); unknown is the absence of a
 * verdict, so rows of older datasets, which have none, read as unknown.
 */
enum gpu_activity { GA_UNKNOWN = 0, GA_BUSY, GA_IDLE, GA_COUNT };
enum gpu_activity_source { GAS_NONE = 0, GAS_NVML_PROCESS, GAS_NVML_DEVICE, GAS_KERNEL, GAS_COUNT };
/* "unknown", "busy", "idle"; "?" for another value */
const char *gpu_activity_name(enum gpu_activity a);
/* The value named s (len bytes), or -EINVAL; so the others. */
int gpu_activity_parse(const char *s, size_t len);
/* "none", "nvml_process", "nvml_device", "kernel"; "?" for another value */
const char *gpu_activity_source_name(enum gpu_activity_source s);

/* ---- how a process's last row was seen: "exited" (absent: it lives) ---- */
enum exit_kind { EXIT_LIVES = 0, EXIT_PROBE, EXIT_BETWEEN_POLLS, EXIT_VANISHED, EXIT_COUNT };
/* "probe", "between_polls", "vanished"; NULL for EXIT_LIVES, "?" for another value */
const char *exit_kind_name(enum exit_kind k);
int exit_kind_parse(const char *s, size_t len);

/* ---- where a row's label came from: "label_source" ---- */
enum label_source { LABEL_NONE = 0, LABEL_ENV, LABEL_CROFTCTL, LABEL_SOURCE_COUNT };
/* "env", "croftctl"; NULL for LABEL_NONE, "?" for another value */
const char *label_source_name(enum label_source s);
int label_source_parse(const char *s, size_t len);

#endif
