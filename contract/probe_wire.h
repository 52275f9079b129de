/*
 * probe_wire.h: the payloads of probe.sock (SOCK_SEQPACKET, one common/
 * msg.h message per packet) between croft-probe (croft user after its drop)
 * and croft-sampler.  One answer to MT_PROBE_POLL is any number of
 * MT_PROBE_PROCS, MT_PROBE_EXITS and MT_PROBE_FINALS packets, then one
 * MT_PROBE_END.
 */
#ifndef CROFT_PROBE_PROTO_H
#define CROFT_PROBE_PROTO_H

#include <stdint.h>

#define PROBE_PROC_SYSCALLS_MAX 1024 /* syscall entries after one proc record */
#define PROBE_WIRE_DROPS        12   /* drop reasons on the wire (enum probe_drop, rest 0) */
#define PROBE_COMM_BYTES        16
#define PROBE_EXE_BYTES         256
#define PROBE_CGROUP_BYTES      256
#define PROBE_ARGV_BYTES        512   /* of a final's argv; why so many: probe/bpf/probe.h */
#define PROBE_FINALS_MAX        16384 /* probe_final records in one answer; more are cut, counted */

/* MT_PROBE_POLL: sampler -> probe. */
struct probe_poll {
	uint64_t reserved; /* 0 */
};
_Static_assert(sizeof(struct probe_poll) == 8, "probe_poll is 8 bytes");

/* Leads every MT_PROBE_PROCS, MT_PROBE_EXITS and MT_PROBE_FINALS packet. */
struct probe_batch {
	uint32_t count;    /* records that follow */
	uint32_t reserved; /* 0 */
};
_Static_assert(sizeof(struct probe_batch) == 8, "probe_batch is 8 bytes");

/*
 * One tgid's counts over the answer's interval, followed by syscalls_count
 * struct probe_syscall (highest count first).  start_boot_ns is the group
 * leader's start_boottime (0: unknown); the sampler matches it against
 * /proc/<pid>/stat starttime.
 */
struct probe_proc {
	uint32_t tgid;
	uint32_t syscalls_count;
	uint64_t start_boot_ns;
	uint64_t gpu_ioctls;
	uint64_t last_gpu_ioctl_boot_ns; /* within this interval; 0: none */
	uint64_t ctx_voluntary;
	uint64_t ctx_involuntary;
	uint64_t runqueue_ns;
	uint64_t net_rx_bytes;
	uint64_t net_tx_bytes;
	uint64_t gpu_waits;           /* waits on GPU files begun, GPU ioctls slept in */
	uint64_t gpu_mmaps;           /* mmaps of GPU files */
	uint32_t gpu_blocked_threads; /* threads inside a GPU ioctl or wait at the answer */
	uint32_t reserved;            /* 0 */
};
_Static_assert(sizeof(struct probe_proc) == 96, "probe_proc is 96 bytes");

struct probe_syscall {
	uint32_t nr;       /* this architecture's syscall number */
	uint32_t reserved; /* 0 */
	uint64_t count;
};
_Static_assert(sizeof(struct probe_syscall) == 16, "probe_syscall is 16 bytes");

/* A whole thread group exited; its final counts are in this answer or earlier ones. */
struct probe_exit {
	uint32_t tgid;
	uint32_t ppid;
	uint32_t exit_code;
	uint32_t reserved; /* 0 */
	uint64_t start_boot_ns;
	uint64_t exit_boot_ns;
	char comm[PROBE_COMM_BYTES]; /* NUL-padded, may lack the NUL when 16 bytes long */
};
_Static_assert(sizeof(struct probe_exit) == 48, "probe_exit is 48 bytes");

/* probe_final.flags: which of its fields are known. */
enum probe_final_wire_flag {
	PROBE_FINAL_EXE_FLAG = 1u << 0,       /* exe */
	PROBE_FINAL_EXIT_TIME_FLAG = 1u << 1, /* exit_boot_ns is the exit's, not the reap's */
	PROBE_FINAL_CGROUP_FLAG = 1u << 2,    /* cgroup: its cgroup2 path */
	PROBE_FINAL_CGROUP_V1_FLAG = 1u << 3, /* cgroup: its v1 memory controller's path */
	PROBE_FINAL_ARGV_FLAG = 1u << 4,      /* argv_len bytes of argv: its exec's arguments */
};

/*
 * A whole thread group reaped (its parent's wait, or its own autoreap): its
 * final figures, as wait4's rusage gives them, and who it was.  Its
 * per-tgid counts are in this answer or earlier ones.  Sent in the answer
 * whose interval saw the reap, at most PROBE_FINALS_MAX per answer.
 */
struct probe_final {
	uint32_t tgid;
	uint32_t uid; /* real uid */
	uint64_t start_boot_ns;
	uint64_t exit_boot_ns; /* the exit's, else (flags) the reap's */
	uint64_t cpu_ns;       /* all its threads' CPU time */
	uint64_t read_bytes;   /* /proc/<pid>/io read_bytes, all threads */
	uint64_t write_bytes;
	uint64_t maxrss_bytes; /* its peak RSS */
	int32_t wait_status;   /* as wait(2) gives it: WIFEXITED/WIFSIGNALED */
	uint32_t flags;        /* enum probe_final_flag (probe.h): which of the below are known */
	char comm[PROBE_COMM_BYTES];
	char cgroup[PROBE_CGROUP_BYTES]; /* NUL-terminated path, in the hierarchy flags name */
	char exe[PROBE_EXE_BYTES];       /* NUL-terminated: the path its exec was given */
	uint32_t argv_len;               /* bytes of argv that are its (flags); the rest are 0 */
	uint32_t reserved;               /* 0 */
	/* the arguments its latest exec was given, a NUL after each as in
	 * /proc/<pid>/cmdline, their first PROBE_ARGV_BYTES: the last one may be cut */
	char argv[PROBE_ARGV_BYTES];
};
_Static_assert(sizeof(struct probe_final) == 1112, "probe_final is 1112 bytes");

/*
 * A figure whose concern is not loaded, or lost counts this answer (a full
 * map), is left out of the rows, never sent as 0.
 */
enum probe_end_flags {
	PROBE_END_NET = 1u << 0,      /* net_* figures are counted */
	PROBE_END_FIRST = 1u << 1,    /* first answer to this peer: covers time before it asked */
	PROBE_END_SYSCALLS = 1u << 2, /* syscalls_count and the syscalls are counted */
	PROBE_END_IOCTL = 1u << 3,    /* gpu_ioctls and last_gpu_ioctl_boot_ns are counted */
	PROBE_END_SCHED = 1u << 4,    /* ctx_* and runqueue_ns are counted */
	PROBE_END_FINALS = 1u << 5,   /* reaped groups are sent (MT_PROBE_FINALS) */
	PROBE_END_GPUFILE = 1u << 6,  /* gpu_waits, gpu_mmaps and gpu_blocked_threads are counted */
};

/* MT_PROBE_END: closes an answer covering (since_boot_ns, until_boot_ns]. */
struct probe_end {
	uint64_t seq; /* answers sent by this croft-probe, from 1 */
	uint64_t since_boot_ns;
	uint64_t until_boot_ns;
	uint32_t procs;                         /* probe_proc records in this answer */
	uint32_t exits;                         /* probe_exit records in this answer */
	uint32_t flags;                         /* enum probe_end_flags */
	uint32_t finals;                        /* probe_final records in this answer */
	uint64_t drops[PROBE_WIRE_DROPS];       /* during this interval, per reason */
	uint64_t drops_total[PROBE_WIRE_DROPS]; /* since croft-probe started */
};
_Static_assert(sizeof(struct probe_end) == 232, "probe_end is 232 bytes");

#endif
