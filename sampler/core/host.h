/*
 * host.h: what a poll reads of the host: the process table (/proc), the
 * cgroups and pods, the kubelet's GPU allocations, the probe's answer as
 * rates, the counters carried across a restart, and the steps of a poll.
 * The GPUs are gpu.h's.  Library of croft-sampler (sampler/core/), croft user.
 */
#ifndef CROFT_SAMPLER_HOST_H
#define CROFT_SAMPLER_HOST_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>
#include <sys/types.h>
#include <time.h>

#include "gpu.h"
#include "hash.h"
#include "rowdef.h"

/* A counter's growth since prev; 0 where it went back (a reused pid, a reset). */
static inline uint64_t counter_delta(uint64_t now, uint64_t prev)
{
	return now >= prev ? now - prev : 0;
}

struct catalog;

#define SAMPLER_PROCS_MAX    65536 /* processes tracked at once */
#define PROC_HASH_BUCKETS    16384
#define PROC_LINK_MAX        8192        /* bytes read from an exe/cwd link */
#define PROC_ENVIRON_MAX     (4u << 20)  /* bytes of environ scanned for CROFT_LABEL */
#define PROC_CMDLINE_MAX     (64u << 10) /* bytes of cmdline matched */
#define PROC_CGROUP_TEXT_MAX 8192        /* bytes of /proc/<pid>/cgroup */
#define PROC_STAT_TEXT_MAX   (1u << 20)  /* bytes of /proc/stat: its intr line grows with IRQs */
#define FRAMEWORK_WINDOW_NS  (60ull * 1000000000ull) /* detection after start */
#define CONTAINER_ID_LEN     64
#define FDS_SPARE            512 /* fds left for sockets when keeping /proc fds */

struct syscall_rate {
	const char *name;
	double rate_per_sec;
};

/* ---- the probe's figures of a process: probe_apply.c, from probe_link.c's answer ---- */
struct proc_probe_rates {
	bool valid; /* false: no probe answer this poll; the probe-only fields are left out */
	/* each false where the probe counts none of it (no kernel support, or not loaded) */
	bool syscalls_valid, ioctl_valid, sched_valid, net_valid;
	bool active;         /* a syscall, switch, run-queue wait, network byte or GPU ioctl seen */
	uint64_t gpu_ioctls; /* GPU ioctls this poll */
	/* CLOCK_BOOTTIME of the last GPU ioctl ever seen; 0 = none */
	uint64_t last_gpu_ioctl_boot_ns;
	double ctx_voluntary_s, ctx_involuntary_s, runqueue_s, net_rx_bytes_s, net_tx_bytes_s;
	/* GPU evidence beside the ioctls (gpu_wait_count, gpu_mmap_count,
	 * gpu_blocked_threads): false where the probe counts none of it */
	bool gpu_evidence_valid;
	uint64_t gpu_waits, gpu_mmaps; /* begun this span */
	uint32_t gpu_blocked_threads;  /* in a GPU ioctl or wait at the answer */
	size_t syscalls_count;
	struct syscall_rate *syscalls; /* highest rate first */
};

/* ---- kubepods.c: the pod of a cgroup path ---- */
#define POD_UID_LEN 36 /* "1b2c3d4e-0000-1111-2222-333344445555" */

enum pod_qos { POD_QOS_GUARANTEED, POD_QOS_BURSTABLE, POD_QOS_BESTEFFORT };

struct pod_identity {
	char uid[POD_UID_LEN + 1]; /* with dashes, as the API shows .metadata.uid; "" = no pod */
	enum pod_qos qos;
};
#define POD_DEPTH_MAX 4 /* kubelet/kubepods/<qos>/pod<uid>: the deepest a pod sits */

/* One component of a cgroup path (not NUL-terminated). */
struct path_part {
	const char *at;
	size_t len;
};
/* The path's non-empty components, up to max of them. */
size_t cgroup_path_split(const char *path, size_t len, struct path_part *ret, size_t max);
bool path_part_is(struct path_part c, const char *word);
/*
 * The pod a cgroup path is in, where the kubelet's systemd or cgroupfs
 * layout puts pods (from the root): the number of components up to the
 * pod's, 0 for none.
 */
size_t cgroup_pod(const char *path, size_t len, struct pod_identity *ret);
const char *pod_qos_name(enum pod_qos qos);

/* ---- kubelet.c: the GPUs the kubelet allocated, from its device-plugin checkpoint ---- */
#define KUBELET_CHECKPOINT_MAX (16u << 20) /* bytes of the checkpoint read */
#define KUBELET_DEVICES_MAX    4096        /* GPU allocations kept */
#define KUBELET_DEVICE_ID_MAX  127         /* bytes of a device id */
#define KUBELET_RESOURCE_GPU   "nvidia.com/gpu"
#define KUBELET_RESOURCE_MIG   "nvidia.com/mig-" /* nvidia.com/mig-1g.10gb... */

/* One GPU the checkpoint gives a pod (any of its containers). */
struct kubelet_device {
	char pod_uid[POD_UID_LEN + 1];
	char id[KUBELET_DEVICE_ID_MAX + 1]; /* the GPU's UUID, as the device plugin names it */
};

/* What the last look at the checkpoint saw: another size, inode or mtime is a new file. */
struct kubelet_file {
	bool looked, exists;
	uint64_t dev, ino, size, mtime_ns;
};

struct kubelet {
	bool loaded; /* a checkpoint is read: a pod's rows carry gpus_allocated */
	struct kubelet_device *devices; /* by pod_uid */
	size_t devices_count;
	char path[PATH_MAX];
	struct kubelet_file file;
	char problem[352]; /* why none is read; "" once one is */
	bool absent;       /* no such file: no kubelet here, nothing to warn of */
	bool said;         /* the problem (or its end) was logged */
};
/*
 * The checkpoint's JSON: {"Data":{"PodDeviceEntries":[{PodUID, ContainerName,
 * ResourceName, DeviceIDs}...], ...}, "Checksum"}; DeviceIDs a list (older
 * kubelets) or a map of NUMA node to list.  0, or -EINVAL with a reason.
 */
int kubelet_parse(const char *text, size_t len, struct kubelet_device **ret_devices,
	size_t *ret_count, char *err, size_t err_size);
/* Reads path again when its identity (device, inode, size, mtime) changed;
 * true when what to say of it changed (problem, or "" when read). */
bool kubelet_refresh(struct kubelet *k, const char *path);
void kubelet_free(struct kubelet *k);
/* The GPUs pod_uid was allocated; false when unknown (no checkpoint, a UUID
 * the driver does not name). */
bool kubelet_allocated(const struct kubelet *k, const struct nv_driver *nv, const char *pod_uid,
	struct gpu_mask *ret);

/* ---- cgroup.c ---- */
enum cgroup_have {
	CGF_CPU = 1 << 0,
	CGF_THROTTLED = 1 << 1,
	CGF_MEMORY = 1 << 2,
	CGF_OOM = 1 << 3,
	CGF_CPU_PSI = 1 << 4,
	CGF_MEM_PSI = 1 << 5,
	CGF_IO_PSI = 1 << 6,
};

struct cgroup_figures {
	unsigned have; /* enum cgroup_have: what this host gave */
	double cpu_cores, throttled_fraction;
	uint64_t memory_bytes, oom_kills;
	double cpu_psi_avg10, memory_psi_avg10, io_psi_avg10;
};

/*
 * The hierarchies a process's cgroup is looked for in: the v1 controllers
 * with figures, cgroup2, and v1's name=systemd; in this order a path that
 * names a container or pod is chosen to show (cgroup.c).
 */
enum cgroup_hier { CGH_MEMORY, CGH_CPU, CGH_CPUACCT, CGH_V2, CGH_SYSTEMD, CGH_COUNT };

/* Where each hierarchy is mounted ("" = not mounted). */
struct cgroup_mounts {
	char at[CGH_COUNT][256];
};

/* The paths one /proc/<pid>/cgroup names (NULL = not listed). */
struct cgroup_paths {
	const char *path[CGH_COUNT];
	size_t len[CGH_COUNT];
};

/* One read of a cgroup's CPU counters. */
struct cgroup_cpu {
	bool have; /* usage or throttling counters were read */
	uint64_t usage_ns, periods, throttled, mono_ns;
};

struct cgroup {
	struct hash_link hash; /* by key */
	char *key;             /* the raw /proc/<pid>/cgroup text */
	size_t key_len;
	char *path; /* process.cgroup: raw bytes */
	size_t path_len;
	char container_id[CONTAINER_ID_LEN + 1]; /* "" for host processes */
	struct pod_identity pod;                 /* uid "" outside pods */
	char *dir[CGH_SYSTEMD]; /* the figures' files, by enum cgroup_hier; NULL = none */
	size_t refs;
	uint64_t read_gen;      /* poll that last read the figures */
	uint64_t used_gen;      /* poll whose figures a row took last */
	struct cgroup_cpu base; /* the CPU counters of that poll: rates start there */
	struct cgroup_cpu last; /* those of read_gen */
	struct cgroup_figures now;
};

struct cgroup_table;

/* A row field the sampler leaves out on this host, for one of the host's reasons. */
#define LEFT_OUT_MAX     20 /* fields it may leave out so */
#define LEFT_OUT_WHY_MAX 384
struct left_out {
	const char *field; /* as croft-dataset(5) names it: "cgroup_usage.cpu_pressure_avg10" */
	char why[LEFT_OUT_WHY_MAX];
};

int cgroup_mounts_parse(const char *mountinfo, size_t len, struct cgroup_mounts *ret_mounts);
int cgroup_mounts_read(struct cgroup_mounts *ret_mounts);
int cgroup_parse_proc(const char *text, size_t len, struct cgroup_paths *ret_paths);
/*
 * The container id a cgroup path names where a runtime puts containers
 * (system.slice, machine.slice, docker/, a pod's cgroup): the number of
 * components up to the id's, 0 for none (a host process).
 */
size_t cgroup_container_id(const char *path, size_t len, char ret_id[CONTAINER_ID_LEN + 1]);
int cgroup_parse_pressure(const char *text, double *ret_avg10);
struct cgroup_table *cgroup_table_new(const struct cgroup_mounts *mounts);
void cgroup_table_free(struct cgroup_table *table);
/* The cgroup of one /proc/<pid>/cgroup text, shared and refcounted. */
struct cgroup *cgroup_get(struct cgroup_table *table, const char *text, size_t len);
void cgroup_put(struct cgroup_table *table, struct cgroup *cg);
/*
 * Reads the figures once per poll generation (in the poll's read step, for
 * every tracked process's cgroup); the rates run from the read of the last
 * poll whose figures a row took (cgroup_used), so that they are those of
 * reading only when a row is due.
 */
void cgroup_refresh(struct cgroup_table *table, struct cgroup *cg, uint64_t gen);
/* A row took the figures read at poll gen. */
void cgroup_used(struct cgroup *cg, uint64_t gen);
int cgroup_table_containers(const struct cgroup_table *table, size_t *ret_count);
/* The figures a tracked process's cgroup has no directory to be read from (the
 * host's layout: its path in no hierarchy that gives them), each with why. */
size_t cgroup_table_left_out(const struct cgroup_table *table, struct left_out *ret, size_t max);

/* ---- proc.c, procfs.c: the process table ---- */
/* A poll's two clocks, read together at its start. */
struct poll_clock {
	uint64_t unix_ms; /* the rows' unix_ms */
	uint64_t boot_ns; /* CLOCK_BOOTTIME */
};

/*
 * Where an exec put the program (stat's startcode, endcode, startstack):
 * every exec makes a new address space, and with ASLR (the kernel's
 * default) a new stack top, so a change shows an exec that kept the comm.
 * All 0 where the process may not be ptraced.
 */
struct proc_image {
	uint64_t start_code, end_code, start_stack;
};

/* What a process is: read when it is found, again at exec; raw bytes. */
struct proc_identity {
	uint64_t start_ticks;   /* /proc/<pid>/stat field 22 */
	uint64_t start_boot_ns; /* start_ticks in CLOCK_BOOTTIME ns */
	bool kthread;           /* kernel thread: tracked for reuse, never a row */
	char *comm, *exe, *cwd, *label;
	size_t comm_len, exe_len, cwd_len, label_len;
	struct proc_image image; /* at the read: another one is another exec */
	bool uid_known;
	uint32_t uid; /* the real uid */
	struct cgroup *cg;
	size_t framework;         /* catalog index; >= entries: none; SIZE_MAX: not read yet */
	uint64_t framework_vsize; /* vsize at the last detection */
	bool framework_done;
};

/* What this poll read and the probe counted, and the rates over the row's span. */
struct proc_counters {
	uint64_t cpu_ticks, cpu_ns, read_bytes, write_bytes, rss_bytes, vsize;
	uint32_t threads;
	bool io_ok;
	bool io_denied; /* not ours to read: not tried again */
	bool rates_valid, io_rates_valid;
	double span_s; /* what this poll's row stands for (proc_sample) */
	double cpu_cores, read_bytes_s, write_bytes_s;
	struct proc_probe_rates probe; /* the probe's answer (proc_table_apply_probe) */
};

/* When the process was seen and written, and what the next row's rates start from. */
struct proc_cadence {
	uint64_t seen_gen;
	bool have_base; /* the baseline: the last row (or the first sample) */
	struct poll_clock base_poll;
	uint64_t base_cpu_ns, base_read_bytes, base_write_bytes;
	bool base_io; /* the baseline has io counters */
	uint64_t prev_sample_boot_ns, sample_boot_ns;
	bool idle; /* nothing done since the last row (see proc_sample) */
	bool rows_started;
};

#define EXIT_WAIT_POLLS 3     /* polls a process gone from /proc waits for the probe's final, */
#define EXIT_WAIT_MS    10000 /* and at least this long (RCU callbacks can lag under load) */
#define VANISHED_RECENT 256   /* processes written vanished whose late finals are known */

/* How the process ended, for its last row; EXIT_LIVES while it lives. */
struct proc_exit {
	uint32_t gone_polls;         /* polls since /proc stopped showing it; 0: it shows */
	struct poll_clock last_seen; /* the last poll that read it */
	enum exit_kind kind;
	uint64_t unix_ms; /* the exit's wall clock; 0: unknown */
	bool code_known, signal_known;
	int code, signal; /* WEXITSTATUS; WTERMSIG */
	bool unread;      /* no poll read it: kept from the probe's exit record (exits.c) */
};

struct proc {
	struct hash_link hash; /* by tgid */
	struct proc *list_prev, *list_next;
	pid_t tgid;
	int stat_fd, io_fd;  /* kept open; -1: open per poll or unreadable */
	clockid_t cpu_clock; /* the process's CPU-time clock (all its threads) */
	bool cpu_clock_ok;
	struct proc_identity ident;
	struct proc_counters counters;
	struct proc_cadence cadence;
	struct proc_gpu gpu;
	struct proc_exit exit;
};

/*
 * The process table.  A poll reads it in slices between which the loop
 * serves the sockets; only the /proc scan removes processes, so a pointer
 * to the next process stays valid from the scan's end to the poll's end.
 */
struct proc_table {
	struct hash_link *buckets[PROC_HASH_BUCKETS];
	struct proc *list_head, *list_tail; /* discovery order */
	size_t count;
	size_t untracked;    /* processes over SAMPLER_PROCS_MAX this poll */
	bool untracked_said; /* logged, until all are tracked again */
	size_t fds_open;
	/* the last VANISHED_RECENT processes written vanished: a final the kernel
	 * sends later still (its free lagging past EXIT_WAIT_MS) would otherwise
	 * make a second last row, as one born and gone between polls */
	struct {
		pid_t tgid;
		uint64_t start_ticks;
	} vanished[VANISHED_RECENT];
	size_t vanished_next;
	uint64_t finals_after_vanished; /* such finals, dropped */
	uint64_t vanished_unread;       /* written vanished from the probe's exit record alone */
};

/* The live process of tgid (not one gone and waiting for its last row). */
struct proc *proc_table_find(struct proc_table *table, pid_t tgid);
/* The process of tgid started at start_ticks, live or gone. */
struct proc *proc_table_find_start(struct proc_table *table, pid_t tgid, uint64_t start_ticks);
/* A process only the probe saw (born and gone between polls), added gone. */
void proc_table_add_gone(struct proc_table *table, struct proc *p);
/* p's last row is written (or given up): it leaves the table. */
void proc_table_drop(struct proc_table *table, struct cgroup_table *cgroups, struct proc *p);
/* The span from one poll to another as rows take it (proc.c). */
double proc_poll_span_s(const struct poll_clock *from, const struct poll_clock *to);

struct poll_env;
/* exits.c: last rows.  The answer's finals close the processes they name
 * (tracked, or added as born and gone between polls); run after the
 * answer's records are reset, before they are applied. */
struct probe_answer;
void proc_table_apply_finals(
	struct proc_table *table, const struct poll_env *env, const struct probe_answer *answer);
/* Then its exit records: a group no poll read and no final closed waits for its final. */
void proc_table_apply_exits(
	struct proc_table *table, const struct poll_env *env, const struct probe_answer *answer);
/* Whether p (gone from /proc, no final) gets its last row now, as vanished. */
bool proc_vanished_due(struct proc *p, bool finals_sent, uint64_t now_unix_ms);

/* procfs.c: readers of /proc/<pid>/ files, relative to an open /proc. */
struct proc_stat {
	struct proc_image image;
	uint64_t cpu_ticks, start_ticks, vsize, rss_pages;
	uint32_t threads;
	unsigned flags;
	const char *comm; /* into the buffer parsed */
	size_t comm_len;
};
int procfs_parse_stat(const char *buf, size_t len, struct proc_stat *ret_stat);
/* The number after key and a blank at a line's start (cgroup's cpu.stat, memory.events;
 * /proc/<pid>/io, status); -ENOENT: no such line, -EINVAL: no number. */
int procfs_parse_keyed(const char *text, const char *key, uint64_t *ret_value);
int procfs_parse_io(const char *buf, size_t len, uint64_t *ret_read, uint64_t *ret_write);
/* The real uid from /proc/<pid>/status (its Uid: line is within the first
 * PROC_STATUS_HEAD bytes). */
#define PROC_STATUS_HEAD 1024
int procfs_parse_uid(const char *buf, size_t len, uint32_t *ret_uid);
int procfs_uid(int procfd, pid_t tgid, uint32_t *ret_uid);
/* Reads a whole small file into buf (NUL-terminated); returns bytes or -errno. */
ssize_t procfs_read_at(int dirfd, const char *path, char *buf, size_t size);
ssize_t procfs_pread(int fd, char *buf, size_t size);
int procfs_readlink(int procfd, pid_t tgid, const char *name, char **ret, size_t *ret_len);
int procfs_label(int procfd, pid_t tgid, char **ret, size_t *ret_len);
/* The earliest entry below best that cmdline or maps match, else best (at most entries_count). */
size_t procfs_framework(int procfd, pid_t tgid, const struct catalog *cat, size_t best);
/* The CPU time of all of tgid's threads, the exited ones too, in ns. */
int procfs_cpu_ns(clockid_t clock, uint64_t *ret_ns);
/* Whether the pids /proc shows are those of our own pid namespace. */
bool procfs_pidns_ours(int procfd);
/* Unix ms of the boot, whole seconds (btime); -ENOENT: from the clocks. */
int procfs_boot_unix_ms(int procfd, uint64_t *ret_ms);

/* ---- boottime.c: the boot's unix ms, kept for the boot in the state dir ---- */
uint64_t boottime_unix_ms(int state_dirfd, int procfd);

/* ---- carry.c: counters carried across a restart (runtime dir) ---- */
struct carry;
/* Opens (makes) <dir>/sampler.carry.{0,1}, before the drop; uid -1: no chown. */
int carry_open(const char *dir, uid_t uid, gid_t gid, struct carry **ret_carry);
/* Takes the newer whole file when it is of the spool's last batch (epoch,
 * seq) and of this boot; returns the poll number it was written at (0:
 * none taken, each case logged once). */
uint64_t carry_load(struct carry *c, uint64_t epoch, uint64_t seq, uint64_t boot_unix_ms);
/* At p's first sample: its baseline from the file; false when none (a new
 * process, or its tgid reused). */
bool carry_restore(const struct carry *c, struct proc *p);
void carry_forget(struct carry *c);
/* At a poll's end, once its batches are spooled: every process's baseline. */
void carry_save(struct carry *c, const struct proc_table *table, uint64_t epoch, uint64_t seq,
	uint64_t boot_unix_ms, uint64_t poll_gen);
void carry_free(struct carry *c);

/* ---- proc.c, probe_apply.c: the process table and the steps of a poll ---- */
struct poll_env {
	int procfd; /* open /proc */
	const struct catalog *catalog;
	const struct gpudev_set *gpu;
	struct gpu_index *gpu_index; /* which GPU a device file names */
	const char *driver_dir;      /* "/proc/driver" (croft.conf driver_dir) */
	bool gpu_possible;           /* a GPU major is registered: fd scans are worth it */
	struct cgroup_table *cgroups;
	uint64_t gen;    /* this poll's number, from 1 */
	bool first_poll; /* processes found now were running before us */
	uint32_t idle_every;
	uint64_t poll_interval_ms;
	uint64_t tick_ns; /* 1e9 / sysconf(_SC_CLK_TCK) */
	uint64_t page_size;
	struct poll_clock now, prev; /* this poll's clocks and the previous poll's */
	bool cpu_clock;              /* the per-process CPU clocks name the processes /proc shows */
	bool keep_fds;               /* keep /proc/<pid>/{stat,io} open between polls */
	uint64_t fds_max;            /* ... while fewer than this minus FDS_SPARE are open */
	pid_t self_tgid;             /* the sampler: its own (kept) fds are never scanned */
	const struct carry *carry;   /* first poll: the counters a restart carries on */
	uint64_t boot_unix_ms;       /* exit_ms = this + the exit's boot-clock ms */
	bool finals_sent;            /* this poll's answer sent reaped groups (probe_apply.c) */
	bool closing; /* the last poll of a clean stop: every process is read and written */
};
void proc_table_init(struct proc_table *table);
void proc_table_clear(struct proc_table *table, struct cgroup_table *cgroups);
/*
 * A poll is four steps over the table: read (all of /proc and the cgroups,
 * maps and fds), apply the probe's answer, settle and format (row.c), the
 * last two pure and taken together, a process at a time.  The passes run
 * in slices until until_ns (CLOCK_MONOTONIC).  The fd looks are the part
 * of the read that needs the answer (a process's first GPU ioctls make one
 * due), so they run once the answer is applied.
 */
struct proc_scan {
	DIR *dir; /* NULL: no pass under way */
};
/* read: the /proc listing (new processes, counters, rates, frameworks, cgroup figures). */
int proc_read_begin(struct proc_table *table, const struct poll_env *env, struct proc_scan *scan);
/*
 * Reads /proc/<pid> entries until until_ns: 0 when more remain; 1 when the
 * listing is done and the processes gone are dropped; -errno.
 */
int proc_read_step(struct proc_table *table, const struct poll_env *env, struct proc_scan *scan,
	uint64_t until_ns);
void proc_read_end(struct proc_scan *scan);
/* A whole listing at once (the fuzzer's fake /proc). */
int proc_table_read(struct proc_table *table, const struct poll_env *env);
/* apply (probe_apply.c): the answer's per-tgid counts as rates over each row's span. */
struct probe_answer;
void proc_table_apply_probe(
	struct proc_table *table, const struct poll_env *env, struct probe_answer *answer);
/* Where a pass over the table in slices stands. */
struct proc_cursor {
	struct proc *next;  /* the next process; NULL: all done */
	struct fd_scan fds; /* next's fd scan, when a slice ended in it */
};
/*
 * read, once the answer is applied: the fds of the processes due a look,
 * from cur->next on (a process's fd scan too goes on in the next slice);
 * cur->next is NULL once all are looked at.
 */
void proc_table_look(const struct poll_env *env, struct proc_cursor *cur, uint64_t until_ns);
/* settle: p's GPU state and idleness from what was read and applied; no I/O. */
void proc_settle(struct proc *p, uint64_t onset_window_ns, uint64_t now_boot_ns);
/*
 * Whether this poll writes a row for p: a busy process every poll, an idle
 * one once every idle_every polls, at the polls of its own slot.
 */
bool proc_row_due(struct proc *p, const struct poll_env *env);
/* The GPU device set changed: every process's fds are read at the next poll. */
void proc_table_rescan_fds(struct proc_table *table);
/* The catalog changed: every process's framework is detected again. */
void proc_table_redetect(struct proc_table *table);
/* p's row of this poll is written: the next one's rates start here. */
void proc_row_written(struct proc *p, const struct poll_env *env);

#endif
