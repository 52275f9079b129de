/*
 * probe.h: the structs and map sizes croft-probe's eBPF programs and its
 * loader share (kernel <-> croft-probe only; the wire structs towards the
 * sampler are in probe_wire.h; collect.c and concerns.c's adds convert).
 * Included by the probe/ .bpf.c files (kernel, after vmlinux.h) and by the
 * root-started loader.
 */
#ifndef CROFT_PROBE_H
#define CROFT_PROBE_H

/* Map sizes (entries).  --map-entries overrides the per-epoch ones. */
#define PROBE_SYSCALL_ENTRIES   16384         /* (tgid, syscall nr) pairs per epoch */
#define PROBE_TGID_ENTRIES      8192          /* tgids per epoch, per concern */
#define PROBE_RUNQ_ENTRIES      16384         /* threads woken and not yet running */
#define PROBE_GPU_RULES         64            /* GPUDEV_RULES_MAX: asserted in probed.h */
#define PROBE_EVENTS_BYTES      (256 * 1024)  /* ring buffer of fork/exec/exit events */
#define PROBE_COMM_LEN          16            /* PROBE_COMM_BYTES: asserted in probed.h */
#define PROBE_FINALS_BYTES      (2048 * 1024) /* reaped groups' finals, and exec's argvs */
#define PROBE_LIVES_ENTRIES     32768         /* groups whose exe (exec) or exit time is kept */
#define PROBE_EXE_LEN           256           /* PROBE_EXE_BYTES: asserted in probed.h */
#define PROBE_ARGV_LEN          512           /* PROBE_ARGV_BYTES: asserted in probed.h */
#define PROBE_CGROUP_LEN        256           /* PROBE_CGROUP_BYTES: asserted in probed.h */
#define PROBE_CGROUP_DEPTH      16            /* cgroup levels below the root walked */
#define PROBE_INFLIGHT_ENTRIES  16384         /* threads inside a GPU ioctl or wait at once */
#define PROBE_GPU_EPOLL_ENTRIES 4096          /* epoll sets a GPU fd was added to (LRU) */
#define PROBE_SYSCALL_NR_MAX    512           /* syscall numbers the jump table covers */

/*
 * Every count lives in one of two epochs of maps (suffix _0 and _1).
 * The programs write into epoch `epoch` (a .bss variable each object
 * has); croft-probe flips epoch, waits an RCU grace period so no program
 * still writes the old one, then reads and empties the old one.
 */
#define PROBE_EPOCHS 2

/*
 * Why something was not counted: one per-CPU counter per reason per object;
 * the concern whose programs count a reason names it (concerns.c).
 */
enum probe_drop {
	PROBE_DROP_SYSCALL_MAP_FULL = 0,
	PROBE_DROP_IOCTL_MAP_FULL = 1,
	PROBE_DROP_SCHED_MAP_FULL = 2,
	PROBE_DROP_RUNQ_MAP_FULL = 3,
	PROBE_DROP_NET_MAP_FULL = 4,
	PROBE_DROP_EVENTS_FULL = 5,
	PROBE_DROP_GPUFILE_MAP_FULL = 6,
	PROBE_DROP_INFLIGHT_MAP_FULL = 7, /* a thread entering a GPU ioctl or wait not marked */
	PROBE_DROP_WAIT_UNCHECKED = 8,    /* a poll/select set not read, or longer than checked */
	PROBE_DROP_REASONS = 9,
};

struct probe_syscall_key {
	__u32 tgid;
	__u32 nr;
};

/* ioctl_{0,1}: per-CPU hash, key tgid. */
struct probe_ioctl_val {
	__u64 count;
	__u64 last_boot_ns; /* CLOCK_BOOTTIME of the last GPU ioctl on this CPU */
};

/* sched_{0,1}: per-CPU hash, key tgid. */
struct probe_sched_val {
	__u64 voluntary;
	__u64 involuntary;
	__u64 runqueue_ns;
};

/* net_{0,1}: per-CPU hash, key tgid. */
struct probe_net_val {
	__u64 rx_bytes;
	__u64 tx_bytes;
};

/* gpufile_{0,1}: per-CPU hash, key tgid: evidence on GPU files beside the ioctls. */
struct probe_gpufile_val {
	__u64 waits; /* poll/select/epoll waits on a set holding a GPU fd, GPU ioctls that slept */
	__u64 mmaps; /* mmap calls on a GPU fd */
};

/* gpu_inflight: hash, key tid: a thread inside a GPU ioctl or wait (set at entry, gone at exit). */
enum probe_inflight_kind {
	PROBE_INFLIGHT_IOCTL = 1,
	PROBE_INFLIGHT_WAIT = 2,
};

struct probe_inflight {
	__u32 tgid;
	__u32 kind;     /* enum probe_inflight_kind */
	__u64 nvcsw;    /* the thread's voluntary switches at entry: more at exit = it slept */
	__u64 since_ns; /* CLOCK_BOOTTIME at entry */
};

/*
 * Which program syscalls.bpf.c tail-calls for a syscall number (its
 * jump_slot table, filled by croft-probe before load): slot + 1, 0 none.
 */
enum probe_jump {
	PROBE_JUMP_IOCTL = 0,   /* ioctl.bpf.c */
	PROBE_JUMP_GPUFILE = 1, /* gpufile.bpf.c: poll, select, epoll, mmap */
	PROBE_JUMPS = 2,
};

/* What a syscall number is to gpufile.bpf.c (its call_kind table, filled before load). */
enum probe_call {
	PROBE_CALL_NONE = 0,
	PROBE_CALL_POLL = 1,   /* poll, ppoll: (struct pollfd *, nfds, ...) */
	PROBE_CALL_SELECT = 2, /* select, pselect6: (n, in, out, ex, ...) */
	PROBE_CALL_EPOLL_CTL = 3,
	PROBE_CALL_EPOLL_WAIT = 4, /* epoll_wait, epoll_pwait, epoll_pwait2: (epfd, ...) */
	PROBE_CALL_MMAP = 5,
	PROBE_CALL_IOCTL = 6, /* counted by ioctl.bpf.c; its mark is cleared at sys_exit */
};

/* gpu_rules: one-element array, replaced whole by `reload`. */
struct probe_gpu_rule {
	__u32 major;
	__u32 minor_first;
	__u32 minor_last;
};

struct probe_gpu_rules {
	__u32 count;
	struct probe_gpu_rule rules[PROBE_GPU_RULES];
};

enum probe_event_kind {
	PROBE_EV_FORK = 1, /* a new thread group */
	PROBE_EV_EXEC = 2,
	PROBE_EV_EXIT = 3,  /* the last thread of a group */
	PROBE_EV_SLOTS = 4, /* event_counts keys per epoch: epoch * PROBE_EV_SLOTS + kind */
};

/*
 * event_counts: per-CPU array, per epoch and kind: the events the
 * programs saw (counted before the ring buffer reserve) and those the full
 * ring buffer dropped.  croft-probe checks seen == delivered + dropped.
 */
struct probe_event_count {
	__u64 seen;
	__u64 dropped;
};

struct probe_event {
	__u32 kind;
	__u32 tgid;
	__u32 ppid;
	__u32 exit_code;
	__u64 start_boot_ns; /* the group leader's start_boottime */
	__u64 event_boot_ns;
	char comm[PROBE_COMM_LEN];
	__u32 epoch; /* the epoch of event_counts that counted it */
	__u32 reserved;
};

/*
 * exit.bpf.c: what it keeps per thread group between its exec, its exit and
 * its reap (lives: hash, key tgid), and the record it sends at the reap.
 */
struct probe_life {
	__u64 start_boot_ns; /* the group leader's start_boottime */
	__u64 exit_boot_ns;  /* 0: not exited yet */
	char exe[PROBE_EXE_LEN];
};

/*
 * finals also carries, at each exec, the arguments the new image was
 * given, as /proc/<pid>/cmdline gives them (a NUL after each), their first
 * PROBE_ARGV_LEN bytes: a record of offsetof(argv) + argv_len bytes, always
 * shorter than a probe_final_event (asserted in probed.h).  croft-probe
 * keeps them until the group's final takes them, for the framework of a
 * process born and gone between two polls (the sampler reads
 * /proc/<pid>/cmdline for the others).  Sent rather than kept in lives:
 * a bigger life cost every exec 0.9 us more (cold memory written), a
 * record only its bytes.  The catalog's cmdline rules name a word in one
 * argument (the built-in one: pyspark, org.apache.spark), and the short
 * processes that carry one name it early: bin/pyspark, spark-class's
 * launcher (java -Xmx128m -cp with its jars' wildcard, then
 * org.apache.spark.launcher.Main), python -m pyspark.daemon: within 200
 * bytes, long paths and all; the drivers and executors whose main class
 * follows kilobytes of JVM options live across polls.  512 leaves room
 * for long paths.  A longer argv is cut: a word found in what is kept is
 * in the whole.
 */
struct probe_exec_argv {
	__u32 tgid;
	__u32 argv_len;      /* bytes of argv sent */
	__u64 start_boot_ns; /* the group leader's start_boottime */
	char argv[PROBE_ARGV_LEN];
};

enum probe_final_flag {
	PROBE_FINAL_EXE = 1u << 0,       /* exe is the path its exec was given */
	PROBE_FINAL_EXIT_TIME = 1u << 1, /* exit_boot_ns is the exit's (else the reap's) */
	PROBE_FINAL_CGROUP = 1u << 2,    /* cgroup is its path in the cgroup2 hierarchy */
	PROBE_FINAL_CGROUP_V1 = 1u << 3, /* ... in the cgroup v1 memory hierarchy */
};

/* finals: ring buffer, one per group leader reaped (release_task). */
struct probe_final_event {
	__u32 tgid;
	__u32 uid; /* real uid */
	__u64 start_boot_ns;
	__u64 exit_boot_ns;
	__u64 cpu_ns; /* every thread's, as wait4's rusage sums them */
	__u64 read_bytes;
	__u64 write_bytes;
	__u64 maxrss_pages;
	__s32 wait_status; /* as wait(2) gives it */
	__u32 flags;       /* enum probe_final_flag */
	__u32 epoch;       /* the epoch the programs wrote when it was sent */
	__u32 reserved;
	char comm[PROBE_COMM_LEN];
	char cgroup[PROBE_CGROUP_LEN];
	char exe[PROBE_EXE_LEN];
};

/* final_counts: per-CPU array of one: finals sent, finals the full ring buffer dropped,
 * exes or exit times the full lives map could not keep. */
struct probe_final_count {
	__u64 seen;
	__u64 dropped;
	__u64 lives_full;
	__u64 argvs_dropped; /* exec's arguments the full ring buffer dropped */
};

#endif
