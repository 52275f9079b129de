/*
 * probed.h: croft-probe's map: the loaded objects, the table of concerns,
 * the collector that turns a map epoch into an answer, the probe.sock
 * server and the status reply, with every function grouped by its file.
 * croft-probe only (root until priv_drop, then the croft user with no
 * capabilities, or CAP_BPF alone where the kernel gates every bpf() call).
 */
#ifndef CROFT_PROBED_H
#define CROFT_PROBED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>

#include "gpudev.h"
#include "probe.h"
#include "probe_wire.h"

/* The kernel side's limits (probe.h, which BPF code includes alone) where
 * they meet croft.conf's and the wire's. */
_Static_assert(PROBE_GPU_RULES == GPUDEV_RULES_MAX, "a gpu_devices rule has no room in the map");
_Static_assert(PROBE_COMM_LEN == PROBE_COMM_BYTES, "an exit's comm is copied whole to the wire");
_Static_assert(PROBE_EXE_LEN == PROBE_EXE_BYTES, "a final's exe is copied whole to the wire");
_Static_assert(PROBE_CGROUP_LEN == PROBE_CGROUP_BYTES, "a final's cgroup is copied whole");
_Static_assert(PROBE_ARGV_LEN == PROBE_ARGV_BYTES, "an exec's argv is copied whole");
_Static_assert(sizeof(struct probe_exec_argv) < sizeof(struct probe_final_event),
	"finals tells its two records apart by their length");
_Static_assert((unsigned)PROBE_FINAL_EXE == PROBE_FINAL_EXE_FLAG &&
		       (unsigned)PROBE_FINAL_EXIT_TIME == PROBE_FINAL_EXIT_TIME_FLAG &&
		       (unsigned)PROBE_FINAL_CGROUP == PROBE_FINAL_CGROUP_FLAG &&
		       (unsigned)PROBE_FINAL_CGROUP_V1 == PROBE_FINAL_CGROUP_V1_FLAG,
	"a final's flags are sent as the programs set them");

struct event_base;
struct evbuffer;
struct msg_cursor;
struct syscalls_bpf;
struct ioctl_bpf;
struct sched_bpf;
struct net_bpf;
struct proc_bpf;
struct exit_bpf;
struct gpufile_bpf;
struct ring_buffer;
struct bpf_object;
struct bpf_map;

#define PROBE_NAME           "croft-probe"
#define PROBE_SOCKET_NAME    "probe.sock"
#define PROBE_CTL_NAME       "probe.ctl"
#define PROBE_PEERS_MAX      4              /* connections on probe.sock at once */
#define PROBE_HELLO_S        5              /* seconds a new peer has to say HELLO */
#define PROBE_PEER_QUEUE_MAX (64u << 20)    /* bytes queued towards one peer */
#define PROBE_STARTS_MAX     (1u << 20)     /* tgids whose start time we remember */
#define PROBE_ARGVS_MAX      32768          /* exec'd groups whose arguments we keep */
#define PROBE_ARGVS_KEEP_NS  10000000000ull /* ... at least this long, unless taken */

/*
 * croft-probe's concerns, one eBPF object each; concerns[] (concerns.c)
 * says the rest.  Those that count per tgid have two epochs of maps.
 */
enum probe_concern {
	CONCERN_SYSCALLS,
	CONCERN_IOCTL,
	CONCERN_SCHED,
	CONCERN_PROC, /* fork/exec/exit events: a ring buffer, no counted maps */
	CONCERN_NET,
	CONCERN_EXIT, /* reaped groups' final figures: a ring buffer of its own, no counted maps */
	CONCERN_GPUFILE, /* waits on and mmaps of GPU files, threads inside GPU ioctls and waits */
	CONCERNS,
};

/* Where socket bytes are counted (features.c picks the best that works). */
enum net_source {
	NET_NONE,       /* nowhere: the net fields are left out */
	NET_TRACEPOINT, /* sock_send_length / sock_recv_length (Linux 6.3) */
	NET_FEXIT,      /* fexit on inet{,6}_{send,recv}msg */
	NET_KRETPROBE,  /* kretprobe on the same (no BPF trampoline) */
};

#define PLAN_ALL         CONCERNS /* why[] index of what applies to every program */
#define PLAN_WHY_LEN     192
#define PROBE_FAILED_LEN 320 /* a failed concern's step, error, libbpf line, memlock */

/* features.c's answer: which variant of each program this kernel takes. */
struct probe_plan {
	bool use_btf;    /* tp_btf programs, else raw_tp */
	bool ioctl_cast; /* ioctl types the file with the bpf_rdonly_cast kfunc */
	bool sched_walk; /* sched reads the kernel's counts by a thread walk (tp_btf) */
	enum net_source net;
	bool net_inet6; /* fexit/kretprobe: the IPv6 functions are hooked too */
	/* per concern, then PLAN_ALL: the fallback taken and why, "" when none */
	char why[CONCERNS + 1][PLAN_WHY_LEN];
};

#define PROBE_PROGS_MAX        48   /* programs across the objects (status's verified_insns) */
#define PROBE_VLOG_BYTES       1024 /* a program's verifier log at BPF_LOG_STATS: one line */
#define PROBE_VLOG_CALLS_BYTES (64u << 10) /* the same with a line per global call walked */

/* What the verifier said of a loaded program: the instructions it processed. */
struct prog_verified {
	char name[16]; /* BPF_OBJ_NAME_LEN */
	uint32_t insns;
};

struct probe_objs {
	struct syscalls_bpf *syscalls;
	struct ioctl_bpf *ioctl;
	struct sched_bpf *sched;
	struct net_bpf *net; /* NULL: plan.net is NET_NONE */
	struct proc_bpf *proc;
	struct exit_bpf *exit;
	struct gpufile_bpf *gpufile;
	struct probe_plan plan;
	int ncpus;         /* possible CPUs: per-CPU value slots */
	uint32_t epoch;    /* epoch the programs write now */
	int sync_outer_fd; /* ARRAY_OF_MAPS: updating it waits for an RCU grace period */
	int sync_inner_fd;
	uint32_t map_entries; /* per-epoch map size override, 0: probe.h sizes */
	/* per concern: why it did not load or attach (libbpf's reason), "" when it did */
	char failed[CONCERNS][PROBE_FAILED_LEN];
	struct prog_verified verified[PROBE_PROGS_MAX]; /* programs loaded, in load order */
	size_t verified_count;
};

/* What probe.bpf.h gives every object; all NULL while it is not loaded. */
struct concern_skel {
	struct bpf_object *obj;
	volatile uint32_t *epoch;    /* the epoch its programs write */
	volatile uint32_t *map_full; /* [PROBE_EPOCHS]: an insert found that epoch full */
	const struct bpf_map *drops; /* per-CPU counters by enum probe_drop */
};

#define CONCERN_DROPS_MAX 3

struct concern_drop {
	enum probe_drop reason; /* 0 with name NULL: none */
	const char *name;       /* its key in status's drops */
	bool voids;             /* one in an answer leaves the concern's fields out of it */
};

struct collector;
struct answer_proc;
/* The answer's record for tgid, made on first use; NULL when out of memory. */
typedef struct answer_proc *answer_proc_fn(struct collector *col, uint32_t tgid);
/* Adds one entry of a drained map (vals: ncpus values, percpu_stride apart)
 * to the answer; proc_of is the collector's, passed down to the table. */
typedef void (*concern_add_fn)(struct collector *col, answer_proc_fn *proc_of, const void *key,
	const uint8_t *vals, int ncpus);

/*
 * One concern.  Its counted maps are the per-CPU hashes <name>_0 and
 * <name>_1; name is also its key in status's programs, maps and fallbacks
 * and in the log.
 */
struct concern {
	const char *name;
	size_t key_size, val_size; /* of a counted map (val_size: one CPU's value) */
	concern_add_fn add;        /* NULL: no counted maps */
	uint32_t end_flag;         /* the probe_end flag saying its figures are counted, or 0 */
	/* the row fields left out when it is not loaded: those the row table
	 * (contract/rowtable.h) marks with this bit of enum row_left_by; 0: none */
	unsigned left_by;
	struct concern_drop drops[CONCERN_DROPS_MAX]; /* what its programs count as not counted */
	/* the variant its programs run as (status's programs), NULL: not loaded */
	const char *(*variant)(const struct probe_plan *plan);
	struct concern_skel (*skel)(const struct probe_objs *objs);
	void (*destroy)(struct probe_objs *objs); /* NULL-safe; leaves its object NULL */
};

/* libbpf lays out per-CPU values 8-byte aligned. */
static inline size_t percpu_stride(size_t val_size)
{
	return (val_size + 7) & ~(size_t)7;
}

/* concerns.c */
extern const struct concern concerns[CONCERNS];
/* The status name of reason (every reason has one). */
const char *concern_drop_name(enum probe_drop reason);

/* features.c: as root, before loading anything. */
/* Probes the kernel; -EINVAL (err says why) for a bad CROFT_PROBE_NET. */
int features_plan(struct probe_plan *ret_plan, char *err, size_t err_len);
/* "tracepoint", "fexit", "kretprobe"; NULL for NET_NONE. */
const char *features_net_source(enum net_source source);

/*
 * loader.c: as root, before the drop; the rest also after it.  A concern
 * that does not load or attach is left out (objs->failed says why) and the
 * rest load; -errno only when nothing could.
 */
int loader_open(struct probe_objs *objs, uint32_t map_entries, char *err, size_t err_len);
/* Whether concern's programs are loaded and attached. */
bool loader_has(const struct probe_objs *objs, enum probe_concern concern);
void loader_close(struct probe_objs *objs);
/* "tp_btf" or "raw_tp" */
const char *loader_variant(const struct probe_objs *objs);

/* loader_open.c: as root, before the drop. */
/* Opens, loads and attaches one concern's object; *what: the step it failed at. */
struct concern_opener {
	enum probe_concern concern;
	int (*open)(struct probe_objs *objs, const char **what);
};
/* In load order: gpufile, then ioctl (which takes gpufile's maps), then syscalls. */
extern const struct concern_opener openers[CONCERNS];

/* loader_maps.c: on the fds held, before and after the drop. */
/* concern's counted map of epoch g; NULL when not loaded or it has none. */
struct bpf_map *concern_map(const struct probe_objs *objs, enum probe_concern concern, uint32_t g);
int loader_set_gpu_rules(struct probe_objs *objs, const struct gpudev_set *set);
/* Points the programs at the other epoch and waits until none writes the old one. */
int loader_flip(struct probe_objs *objs);
/* The map fd of concern's epoch g, -1 when not loaded. */
int loader_map_fd(const struct probe_objs *objs, enum probe_concern concern, uint32_t g);
int loader_map_max(const struct probe_objs *objs, enum probe_concern concern);
/*
 * After epoch g of concern was emptied: inserts into it may be tried
 * again.  Returns whether an insert had found it full.
 */
bool loader_clear_full(struct probe_objs *objs, enum probe_concern concern, uint32_t g);
/* gpufile's marks of threads inside a GPU ioctl or wait (tid -> probe_inflight), -1 when
 * gpufile did not load. */
int loader_inflight_fd(const struct probe_objs *objs);
/* The fork/exec/exit ring buffer, -1 when proc did not load. */
int loader_events_fd(const struct probe_objs *objs);
/* The reaped groups' ring buffer, -1 when exit did not load. */
int loader_finals_fd(const struct probe_objs *objs);
/* Sums exit.bpf.c's per-CPU counts (since load) into *ret_count; zeros where it is not loaded. */
int loader_final_counts(const struct probe_objs *objs, struct probe_final_count *ret_count);
/* Sums every object's per-CPU drop counters into ret_drops[PROBE_DROP_REASONS]. */
int loader_drops(const struct probe_objs *objs, uint64_t *ret_drops);
/*
 * tp_btf: adds every thread's context switches and run-queue wait not yet
 * counted to epoch g (at an answer, the one just closed) by running
 * sched.bpf.c's walk; raw_tp: nothing (sched_switch counts them).
 */
int loader_walk_threads(struct probe_objs *objs, uint32_t g);
/*
 * Sums epoch g's event counts (seen, dropped per kind) into
 * ret_counts[PROBE_EV_SLOTS] and zeroes them; only for an epoch no
 * program writes (after loader_flip).
 */
int loader_take_event_counts(
	const struct probe_objs *objs, uint32_t g, struct probe_event_count *ret_counts);

/* tgidmap.c: tgid -> u64, at most limit entries */
struct tgidmap {
	uint32_t *keys; /* 0: free slot */
	uint64_t *vals;
	size_t cap, count, limit;
};
uint64_t *tgidmap_get(const struct tgidmap *m, uint32_t key);
int tgidmap_put(struct tgidmap *m, uint32_t key, uint64_t val);
void tgidmap_del(struct tgidmap *m, uint32_t key);
void tgidmap_clear(struct tgidmap *m);
void tgidmap_free(struct tgidmap *m);

/* argvs.c: exec'd groups' arguments, by tgid, until their final takes them */
struct argvs {
	struct tgidmap by_tgid; /* -> struct kept_argv * */
};
int argvs_put(struct argvs *a, const struct probe_exec_argv *rec, size_t len);
void argvs_take(struct argvs *a, struct probe_final *f);
void argvs_prune(struct argvs *a, uint64_t before_boot_ns);
void argvs_free(struct argvs *a);

/* collect.c: one answer = everything since the previous one. */
struct answer_proc {
	struct probe_proc rec;
	struct probe_syscall *syscalls;
	uint32_t syscalls_cap;
};

struct answer {
	struct answer_proc *procs;
	size_t procs_count, procs_cap;
	struct probe_exit *exits;
	size_t exits_count, exits_cap;
	struct probe_final *finals; /* reaped groups: their final figures */
	size_t finals_count, finals_cap;
	struct probe_end end;
};

int collector_new(struct probe_objs *objs, struct collector **ret_collector);
void collector_free(struct collector *col);
/* Drains events, flips the epoch, reads and empties the old one. */
int collector_answer(struct collector *col, bool first, const struct answer **ret_answer);
/* Drains events only (between answers, so the ring buffer never fills). */
void collector_drain(struct collector *col);
/* Boot ns of the last flip: when the last answer was taken (or discarded). */
uint64_t collector_last_flip(const struct collector *col);
/* One event kind since start, settled at each answer: seen == delivered + dropped. */
struct event_tally {
	uint64_t seen;      /* counted by the programs before the ring buffer reserve */
	uint64_t delivered; /* read from the ring buffer */
	uint64_t dropped;   /* ring buffer full */
};

struct collector_stats {
	uint64_t answers;
	uint64_t exits_seen;       /* whole thread groups, since start */
	uint64_t exits_unqueued;   /* exits lost: EXITS_PENDING_MAX reached */
	uint64_t finals_delivered; /* reaped groups read from their ring buffer */
	uint64_t finals_cut;       /* not sent: over PROBE_FINALS_MAX an answer, or memory */
	uint64_t argvs_unkept;     /* exec's arguments not kept: PROBE_ARGVS_MAX, or memory */
	struct event_tally events[PROBE_EV_SLOTS]; /* by enum probe_event_kind */
	uint64_t full_answers[CONCERNS];           /* answers that found the map full */
	uint64_t voided_answers[CONCERNS];         /* answers that left its fields out: drops */
	uint64_t drops_total[PROBE_DROP_REASONS];
	size_t procs_last;             /* tgids in the last answer */
	size_t entries_last[CONCERNS]; /* map entries the last answer read */
	uint64_t collect_ns_last;      /* how long the last answer took */
};
const struct collector_stats *collector_stats(const struct collector *col);

/* server.c: probe.sock */
struct server;
int server_new(struct event_base *base, const char *path, gid_t gid, uid_t peer_uid,
	struct collector *col, struct server **ret_server);
void server_free(struct server *srv);
/* Appends {"peers": [...]} style figures to a JSON object (json_t *). */
void server_status(const struct server *srv, void *json_obj);
/* True while a sampler (a peer past HELLO) is connected. */
bool server_has_poller(const struct server *srv);

/* status.c, control.c: probe.ctl */
struct probe_state {
	struct event_base *base;
	struct probe_objs *objs;
	struct collector *col;
	struct server *srv;
	const char *config_path;
	struct gpudev_watch gpus;     /* follows /proc/devices (status_follow_devices) */
	int gpu_map_error;            /* the device map update that failed, 0 none */
	char caps_kept[PLAN_WHY_LEN]; /* after the drop: "" for none, else which and why */
};
/* status.c: the figures of probe.ctl's status (a json_t *). */
void *status_figures(struct probe_state *st);
/* control.c */
int probe_ctl(void *ctx, uint32_t type, struct msg_cursor *payload, struct evbuffer *reply);
/* Re-reads gpu_devices from the config file and updates the device map; a daemon_reload_fn. */
int probe_reload(void *ctx, char **ret_errors);
/* /proc/devices read again: a driver registered or gone updates the device map in place. */
void status_follow_devices(struct probe_state *st);

#endif
