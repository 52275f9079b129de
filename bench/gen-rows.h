/*
 * gen-rows.h: croft-gen-rows' model of a GPU host (containers, processes,
 * the generator's state) shared by gen-rows.c, which makes it up and
 * polls it, and gen-row.c, which writes its rows.  Unprivileged.
 */
#ifndef CROFT_GEN_ROWS_H
#define CROFT_GEN_ROWS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rowdef.h"

#define POLL_MS        2000 /* unix_ms step per poll */
#define IDLE_EVERY     15   /* polls between rows of an idle process */
#define ONSET_POLLS    15   /* 30 s onset window at 2 s polls */
#define SYSCALLS_MAX   20   /* entries in one process's mix */
#define CONTAINERS_MAX 64
#define HOST_GPUS      8 /* /dev/nvidia0..7: containers get 1, 2, 4 or all 8 of them */
#define OUT_BUF_BYTES  (1u << 20)

struct rng {
	uint64_t s;
};

/* splitmix64: tiny, fast and identical on every platform. */
static inline uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline double rng_unit(struct rng *r)
{
	return (double)(rng_next(r) >> 11) / 9007199254740992.0;
}

static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return n ? rng_next(r) % n : 0;
}

static inline bool rng_chance(struct rng *r, double p)
{
	return rng_unit(r) < p;
}

enum gpu_kind { GPU_NONE, GPU_LATER, GPU_HELD_FROM_START };

#define POD_UID_BYTES  37 /* 8-4-4-4-12 hex digits and dashes, and the NUL */
#define MIG_NAME_BYTES 16 /* "<gpu>/<gi>/<ci>" */

struct container {
	char id[65];
	char cgroup[256];
	char pod_uid[POD_UID_BYTES]; /* "" = not a Kubernetes pod */
	const char *pod_qos;
	uint64_t gpus_allocated;  /* bits; the kubelet's allocation (pods only) */
	char mig[MIG_NAME_BYTES]; /* "" = no MIG instance */
	char label[64];           /* "" = none */
	const char *framework;    /* main framework of its workload, NULL = none */
	bool gpu;
	uint8_t gpu_first, gpu_count; /* the GPUs its processes hold */
	uint64_t memory_bytes;
	double cpu_cores; /* mean of this poll */
	uint32_t oom_kills;
};

struct syscall_mix {
	uint8_t name;     /* index into syscall_names */
	double base_rate; /* calls per second */
};

struct proc {
	uint32_t tgid;
	uint64_t start_ms;        /* process.start_ms */
	uint64_t last_row_ms;     /* unix_ms of its previous row; 0: none yet */
	uint64_t exit_ms;         /* its last row's exit time; 0: it lives */
	enum exit_kind exit_kind; /* how that last row saw the exit */
	int container;            /* -1: host process */
	const char *comm, *exe, *cwd, *framework;
	char host_cgroup[96];
	bool idle;       /* written once every IDLE_EVERY polls */
	bool shortlived; /* replaced now and then by a new tgid */
	enum gpu_kind gpu;
	uint8_t gpu_first, gpu_count; /* "gpus" */
	int gpu_start_poll;           /* first GPU ioctl (GPU_LATER) */
	uint64_t since_last_ioctl_ms;
	uint64_t rss_bytes;
	uint32_t threads;
	double cpu_mean;          /* cores when active */
	double io_mean, net_mean; /* bytes per second when active */
	unsigned nsyscalls;
	struct syscall_mix syscalls[SYSCALLS_MAX];
};

/* syscall names, by the index struct syscall_mix keeps (gen-row.c) */
extern const char *const syscall_names[];
extern const size_t syscall_names_count;

struct rate_entry {
	unsigned name;
	double rate;
};

/* The row being written, as row_write() asks for its fields. */
struct gen_row {
	struct proc *p;
	const struct container *c; /* NULL: a host process */
	int poll;
	bool idle_now;
	uint64_t span_ms;
	double elapsed_s; /* span_ms in seconds: the rates' denominator */
	uint64_t unix_ms;
	bool gpu;          /* in a GPU state this poll */
	uint64_t ioctls;   /* this poll */
	uint64_t gpu_bits; /* "gpus": HOST_GPUS fit one word */
	const char *mig;   /* "mig"'s one entry */
	unsigned nrates;
	struct rate_entry rates[SYSCALLS_MAX];
};

struct gen {
	const char *host; /* every row's "host" */
	struct rng rng;
	struct rng id_rng;        /* container ids and pod UIDs: the seed and the host's */
	struct rng exit_rng;      /* last rows' draws, apart: the other rows stay a seed's */
	struct rng transient_rng; /* those of processes born and gone between polls */
	struct rng unread_rng;    /* those of processes no poll read (--vanished-unread) */
	uint32_t next_tgid;
	uint32_t transients;   /* processes born and gone between polls so far */
	uint32_t unread_every; /* polls between vanished rows of unread processes; 0: none */
	uint32_t unreads;      /* such rows so far */
	size_t ncontainers, nprocs;
	struct container containers[CONTAINERS_MAX];
	struct proc *procs;
	char *out;
	size_t out_len;
	uint64_t bytes_written;
	struct gen_row row;
};

void out_flush(struct gen *g);
/* One row of process p at this poll, into g's output. */
void emit_row(struct gen *g, struct proc *p, int poll, uint64_t unix_ms);
/* Its last row at this poll: it exited since the previous one. */
void emit_exit_row(struct gen *g, struct proc *p, int poll, uint64_t unix_ms);
/* The one row of a process like `like` born and gone since the previous poll. */
void emit_transient_row(struct gen *g, const struct proc *like, int poll, uint64_t unix_ms);
/* The vanished row of a process like `like` that no poll read and whose final never came. */
void emit_unread_row(struct gen *g, const struct proc *like, uint64_t unix_ms);

#endif
