/*
 * rowdef.h: the one definition of a croft-dataset row (croft-dataset(5)):
 * every field's name, type, place and when it is left out, in the order
 * rows list them, and the writer that walks it.  The sampler writes rows
 * with it, the readers' scanner and jansson path read them by it, the
 * generator fakes them with it, and a test holds the JSON Schema and the
 * man page to it.  Any process, no privilege.
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

/*
 * The fields, one list per object, each in row order:
 * X(object, id, "name", type, omit).  A field of type RT_OBJECT or
 * RT_OBJECT_ARRAY has its fields in ROW_FIELDS_<id>.  Adding a field: one
 * line here, and its value in each program's row_sink.get.
 */
#define ROW_FIELDS_ROOT(X)                                                                         \
	X(ROOT, UNIX_MS, "unix_ms", RT_INT, RO_NEVER)                                              \
	X(ROOT, SPAN_MS, "span_ms", RT_INT, RO_OLDER)                                              \
	X(ROOT, TGID, "tgid", RT_INT, RO_NEVER)                                                    \
	X(ROOT, HOST, "host", RT_STRING, RO_OLDER)                                                 \
	X(ROOT, PROCESS, "process", RT_OBJECT, RO_NEVER)                                           \
	X(ROOT, WORKLOAD, "workload", RT_STRING, RO_NEVER)                                         \
	X(ROOT, IOCTL_COUNT, "ioctl_count", RT_INT, RO_NO_GPU)                                     \
	X(ROOT, SINCE_LAST_GPU_IOCTL_MS, "since_last_gpu_ioctl_ms", RT_INT, RO_NONE)               \
	X(ROOT, GPUS, "gpus", RT_INT_ARRAY, RO_NO_GPU)                                             \
	X(ROOT, GPUS_ALLOCATED, "gpus_allocated", RT_INT_ARRAY, RO_UNREADABLE)                     \
	X(ROOT, MIG, "mig", RT_STRING_ARRAY, RO_NONE)                                              \
	X(ROOT, USAGE, "usage", RT_OBJECT, RO_NEVER)                                               \
	X(ROOT, CGROUP_USAGE, "cgroup_usage", RT_OBJECT, RO_UNREADABLE)                            \
	X(ROOT, SYSCALLS, "syscalls", RT_OBJECT_ARRAY, RO_NO_PROBE)                                \
	X(ROOT, LABEL, "label", RT_STRING, RO_NONE)
#define ROW_FIELDS_PROCESS(X)                                                                      \
	X(PROCESS, START_MS, "start_ms", RT_INT, RO_OLDER)                                         \
	X(PROCESS, COMM, "comm", RT_STRING, RO_NEVER)                                              \
	X(PROCESS, EXE, "exe", RT_STRING, RO_UNREADABLE)                                           \
	X(PROCESS, CGROUP, "cgroup", RT_STRING, RO_UNREADABLE)                                     \
	X(PROCESS, CONTAINER_ID, "container_id", RT_STRING, RO_NONE)                               \
	X(PROCESS, POD_UID, "pod_uid", RT_STRING, RO_NONE)                                         \
	X(PROCESS, POD_QOS, "pod_qos", RT_STRING, RO_NONE)                                         \
	X(PROCESS, CWD, "cwd", RT_STRING, RO_UNREADABLE)                                           \
	X(PROCESS, FRAMEWORK, "framework", RT_STRING, RO_NONE)
#define ROW_FIELDS_USAGE(X)                                                                        \
	X(USAGE, CPU_CORES, "cpu_cores", RT_FLOAT, RO_NEVER)                                       \
	X(USAGE, RSS_BYTES, "rss_bytes", RT_INT, RO_NEVER)                                         \
	X(USAGE, THREADS, "threads", RT_INT, RO_NEVER)                                             \
	X(USAGE, CTX_VOLUNTARY_S, "ctx_voluntary_s", RT_FLOAT, RO_NO_PROBE)                        \
	X(USAGE, CTX_INVOLUNTARY_S, "ctx_involuntary_s", RT_FLOAT, RO_NO_PROBE)                    \
	X(USAGE, READ_BYTES_S, "read_bytes_s", RT_FLOAT, RO_UNREADABLE)                            \
	X(USAGE, WRITE_BYTES_S, "write_bytes_s", RT_FLOAT, RO_UNREADABLE)                          \
	X(USAGE, NETWORK_RX_BYTES_S, "network_rx_bytes_s", RT_FLOAT, RO_UNREADABLE)                \
	X(USAGE, NETWORK_TX_BYTES_S, "network_tx_bytes_s", RT_FLOAT, RO_UNREADABLE)                \
	X(USAGE, RUNQUEUE_S, "runqueue_s", RT_FLOAT, RO_NO_PROBE)
#define ROW_FIELDS_CGROUP_USAGE(X)                                                                 \
	X(CGROUP_USAGE, CG_CPU_CORES, "cpu_cores", RT_FLOAT, RO_UNREADABLE)                        \
	X(CGROUP_USAGE, CG_CPU_THROTTLED_FRACTION, "cpu_throttled_fraction", RT_FLOAT,             \
		RO_UNREADABLE)                                                                     \
	X(CGROUP_USAGE, CG_MEMORY_BYTES, "memory_bytes", RT_INT, RO_UNREADABLE)                    \
	X(CGROUP_USAGE, CG_OOM_KILLS, "oom_kills", RT_INT, RO_UNREADABLE)                          \
	X(CGROUP_USAGE, CG_CPU_PRESSURE_AVG10, "cpu_pressure_avg10", RT_FLOAT, RO_UNREADABLE)      \
	X(CGROUP_USAGE, CG_MEMORY_PRESSURE_AVG10, "memory_pressure_avg10", RT_FLOAT,               \
		RO_UNREADABLE)                                                                     \
	X(CGROUP_USAGE, CG_IO_PRESSURE_AVG10, "io_pressure_avg10", RT_FLOAT, RO_UNREADABLE)
#define ROW_FIELDS_SYSCALLS(X)                                                                     \
	X(SYSCALLS, SYSCALL_NAME, "name", RT_STRING, RO_NEVER)                                     \
	X(SYSCALLS, SYSCALL_RATE_PER_SEC, "rate_per_sec", RT_FLOAT, RO_NEVER)

/* Every list (rowdef.c checks that none is missing). */
#define ROW_FIELDS_ALL(X)                                                                          \
	ROW_FIELDS_ROOT(X)                                                                         \
	ROW_FIELDS_PROCESS(X)                                                                      \
	ROW_FIELDS_USAGE(X) ROW_FIELDS_CGROUP_USAGE(X) ROW_FIELDS_SYSCALLS(X)

/* How many fields a list has: ROW_COUNT(ROW_FIELDS_USAGE). */
#define ROW_ONE_(object, id, name, type, omit) +1
#define ROW_COUNT(list)                        (0 list(ROW_ONE_))

/*
 * The field ids: the top level's from 0, then each object's fields, one
 * after another from RF_FIRST_<object> (an alias of its first field's id).
 * ROW_GROUP_<type> pastes the type, so that only objects add their list.
 */
#define ROW_ID_(object, id, name, type, omit)    RF_##id,
#define ROW_GROUP_(object, id, name, type, omit) ROW_GROUP_##type(id)
#define ROW_GROUP_RT_OBJECT(id)                                                                    \
	RF_FIRST_##id, RF_BEFORE_##id = RF_FIRST_##id - 1, ROW_FIELDS_##id(ROW_ID_)
#define ROW_GROUP_RT_OBJECT_ARRAY(id) ROW_GROUP_RT_OBJECT(id)
#define ROW_GROUP_RT_INT(id)
#define ROW_GROUP_RT_FLOAT(id)
#define ROW_GROUP_RT_STRING(id)
#define ROW_GROUP_RT_INT_ARRAY(id)
#define ROW_GROUP_RT_STRING_ARRAY(id)
enum row_field {
	ROW_FIELDS_ROOT(ROW_ID_) ROW_FIELDS_ROOT(ROW_GROUP_) RF_COUNT,
	RF_ROOT = RF_COUNT, /* the object of the top-level fields */
};

struct row_field_def {
	const char *name;
	const char *key; /* ,"name": as written (the first of an object without ',') */
	uint8_t key_len;
	enum row_type type;
	enum row_omit omit;
	enum row_field object;      /* RF_ROOT for the top level */
	enum row_field first_field; /* RT_OBJECT, RT_OBJECT_ARRAY: its fields */
	uint8_t fields_count;
};
extern const struct row_field_def row_fields[RF_COUNT];
/* The top level's fields, as first_field and fields_count of an object. */
extern const struct row_field_def row_root;

/* A field's value, as a row_sink gives it. */
struct row_value {
	uint64_t u;      /* RT_INT; the entries of an RT_OBJECT_ARRAY */
	double f;        /* RT_FLOAT */
	const char *str; /* RT_STRING */
	size_t str_len;
	const uint64_t *bits;    /* RT_INT_ARRAY: bit i set for entry i */
	size_t bits_count;       /* a multiple of 64 */
	const char *const *strs; /* RT_STRING_ARRAY: its entries, in order */
	size_t strs_count;
};

/* Where row_write() puts a row, and where it gets the values from. */
struct row_sink {
	void *arg;
	void (*put)(void *arg, const char *s, size_t n);
	void (*put_int)(void *arg, uint64_t v);
	void (*put_float)(void *arg, double v);
	/* The string in quotes, and its "<name>_b64" after it where needed
	 * (never for an RT_STRING_ARRAY's entries: f says which it is). */
	void (*put_string)(void *arg, enum row_field f, const char *s, size_t len);
	/* Whether field f is in this row (its index-th entry's, in an array
	 * of objects), and its value; an object's is only whether it is. */
	bool (*get)(void *arg, enum row_field f, size_t index, struct row_value *ret);
};
/* One row, the fields in the table's order, and its '\n'. */
void row_write(const struct row_sink *sink);

/* ---- the workload states: the "workload" field's values ---- */
enum workload_state { WL_NO_GPU = 0, WL_GPU_ONSET, WL_GPU_HELD, WL_COUNT };
/* The order reports list them in: a GPU process's life, then the rest. */
extern const enum workload_state workload_report_order[WL_COUNT];
/* "no-gpu", "gpu-onset", "gpu-held"; "?" for another value */
const char *workload_name(enum workload_state w);
int workload_parse(const char *s, size_t len, enum workload_state *ret);

#endif
