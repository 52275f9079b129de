/*
 * verdict.h: whether a GPU-state process used its GPU over a poll (busy,
 * idle or unknown) and on what evidence (NVML's per-process utilisation,
 * NVML's device utilisation where it is the GPU's only holder, or the
 * kernel's), and the verdict of a row's span from its polls'.  Pure
 * functions (verdict.c); the evidence is gathered in activity.c.
 * croft-sampler, croft user.
 */
#ifndef CROFT_VERDICT_H
#define CROFT_VERDICT_H

#include <stdbool.h>
#include <stdint.h>

#include "rowdef.h"

/*
 * Below this many cores of CPU a process can be idle on kernel evidence
 * alone: a CUDA launch loop or a spinning synchronise keeps a thread on a
 * core (about 1.0), while a process holding a context and sleeping uses
 * well under 1 % (the driver's helper threads wake a few times a second).
 * What it waited on a run queue counts too: a spinner starved of CPU on a
 * crowded host still wants its core.
 */
#define VERDICT_IDLE_CPU_CORES 0.05

struct verdict_input {
	/* NVML's per-process SM utilisation of this process over the poll (0-100) */
	bool nvml_process_known;
	double nvml_process_sm;
	/* NVML's device SM utilisation where the process is its GPUs' only holder */
	bool nvml_device_known;
	double nvml_device_sm;
	/* the probe's: GPU ioctls; waits on GPU files and threads blocked on them */
	bool ioctls_known;
	uint64_t ioctls;
	bool waits_known;
	uint64_t waits;
	uint32_t blocked_threads;
	/* usage.cpu_cores over the poll, and usage.runqueue_s: the time it waited for a core */
	bool cpu_known;
	double cpu_cores;
	bool runqueue_known;
	double runqueue_s;
};

struct verdict {
	enum gpu_activity activity;
	enum gpu_activity_source source;
};

/*
 * NVML's figure for the process first (0 idle, above busy), then the
 * device's where it is the only holder, then the kernel's: busy on a GPU
 * ioctl, wait or blocked thread; idle only with all of them known and
 * none, and CPU (run, and waited for where known) below
 * VERDICT_IDLE_CPU_CORES; unknown otherwise.
 */
struct verdict gpu_verdict(const struct verdict_input *in);
/* A span's verdict after one more poll: busy if any poll was, else unknown
 * if any was, else idle; the source of the poll that decided. */
struct verdict verdict_fold(struct verdict span, bool span_open, struct verdict poll);

/* ---- activity.c: the evidence of each GPU-state process at a poll ---- */
struct nvml_result;
struct proc;
struct proc_table;

struct activity_env {
	const struct nvml_result *nvml; /* a round fresh enough for this poll; NULL: none */
	const char *system_holders;     /* croft.conf gpu_system_holders: not workloads */
	uint16_t holders[256];          /* workload processes holding each GPU index */
};
/* Who holds each GPU, from this poll's fd looks (and the last for the rest). */
void activity_count_holders(struct activity_env *env, const struct proc_table *table);
/* p's NVML figures and verdict at this poll, folded into its row's span; a
 * busy GPU makes the row due now. */
void activity_settle(struct proc *p, const struct activity_env *env);
/* p's row is written: the next span starts afresh. */
void activity_span_end(struct proc *p);

#endif
