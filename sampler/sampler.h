/*
 * sampler.h: the map of croft-sampler.  It reads /proc and cgroups once per
 * poll, turns them into finished JSON rows and hands one numbered batch per
 * poll to croft-writer.  Runs as the croft user with CAP_SYS_PTRACE and
 * CAP_DAC_READ_SEARCH only (or unprivileged, reading what it may).  This
 * folder is the daemon (loop, poll slices, control socket, links); what a
 * poll reads is core/host.h and core/gpu.h, what it makes core/output.h.
 */
#ifndef CROFT_SAMPLER_H
#define CROFT_SAMPLER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <limits.h>

#include "config.h"
#include "gpudev.h"
#include "host.h"
#include "output.h"
#include "wire.h"

struct catalog;
struct event_base;
struct evbuffer;
struct msg_cursor;

#define BATCH_BYTES_MAX      (32u << 20)      /* a poll's rows beyond this start a new batch */
#define CONTAINER_LABELS_MAX 4096             /* labels set through sampler.ctl */
#define POLL_SLICE_NS        (10u * 1000000u) /* a poll runs this long, then the loop serves the rest */

/* ---- writer_link.c: the connection to croft-writer ---- */
struct writer_link;
struct writer_link *writer_link_new(struct event_base *base, const char *path, struct spool *spool);
void writer_link_free(struct writer_link *link);
/* New batches in the spool: send them when connected. */
void writer_link_kick(struct writer_link *link);
const char *writer_link_state(const struct writer_link *link);

/* ---- sampler state (main.c, poll.c, control.c) ---- */
struct container_label {
	char id[CONTAINER_ID_LEN + 1];
	char *label;
	size_t label_len;
};

struct probe_link;
struct ctl_server;
struct event;
struct sampler;

struct poll_stats {
	uint64_t polls;
	uint64_t duration_us, cpu_us; /* of the last poll */
	uint64_t rows;                /* of the last poll */
	uint64_t rows_total;
	uint64_t rows_failed;           /* dropped: out of memory while formatting */
	uint64_t polls_late;            /* begun after their tick: the poll before ran past it */
	uint64_t last_rows[EXIT_COUNT]; /* processes' last rows written, by enum exit_kind */
};

/* What a reload loads; one checked while a poll runs is applied at its end. */
struct sampler_settings {
	struct croft_config cfg;
	struct catalog *catalog;
	struct gpudev_watch gpu;
};

enum poll_phase { POLL_READ, POLL_PROBE, POLL_LOOK, POLL_FORMAT };

/*
 * The poll under way, run in slices of POLL_SLICE_NS from the loop so that
 * the control and writer sockets are served while it reads 20 000 processes.
 */
struct poll_run {
	bool running;
	bool again;   /* the timer fired meanwhile: poll again at the end */
	bool closing; /* a clean stop asked for the last poll (sampler_poll_close) */
	enum poll_phase phase;
	struct poll_env env;
	struct proc_scan scan;
	struct proc_cursor cur; /* the next process to look at, or to settle and format */
	uint64_t now_boot_ns;   /* the boot clock once /proc was read */
	uint64_t start_mono_ns, start_cpu_us;
	uint32_t batch_rows;          /* rows in sampler.rows, not spooled yet */
	uint64_t rows;                /* formatted so far in this poll */
	struct event *slice;          /* runs the next slice */
	struct activity_env activity; /* NVML's round and the GPUs' holders, for the verdicts */
	/* run once as this poll ends (control.c: a reload checked while it ran) */
	void (*at_end)(struct sampler *s);
};

struct sampler {
	struct event_base *base;
	struct croft_config cfg;
	const char *config_path;
	const char *frameworks_path; /* --frameworks or CROFT_FRAMEWORKS; NULL = config */
	const char *runtime_dir;
	char state_dir[PATH_MAX]; /* spool and labels: persistent (--state-dir) */
	int state_dirfd;          /* opened before the drop */
	char writer_socket[PATH_MAX], probe_socket[PATH_MAX];
	struct catalog *catalog;
	struct gpudev_watch gpu; /* follows /proc/devices, read each poll */
	struct gpu_index gpu_index;
	struct kubelet kubelet; /* the kubelet's GPU allocations */
	int procfd;
	struct proc_table procs;
	struct cgroup_table *cgroups;
	struct spool *spool;
	struct carry *carry;
	uint64_t polls_before; /* the poll number the sampler before us reached (carry_load) */
	struct writer_link *writer;
	struct probe_link *probe;
	struct ctl_server *ctl;
	struct event *poll_timer;
	bool stopping;             /* SIGTERM/SIGINT: the last poll, then the writer's acks */
	struct event *flush_check; /* while stopping: every batch acked ends the loop */
	struct container_label *labels;
	size_t labels_count;
	struct poll_stats stats;
	struct poll_run poll;
	struct sampler_settings *reload_pending;
	struct jbuf rows;
	uint64_t tick_ns, page_size;
	uint64_t boot_unix_ms;               /* procfs_boot_unix_ms, at start */
	char node_name[CONFIG_HOST_MAX + 1]; /* uname, at start: the default host */
	bool cpu_clock;                      /* procfs_pidns_ours, at start */
	struct poll_clock last_poll;
	uint64_t nofile; /* RLIMIT_NOFILE: kept /proc fds stay well below it */
	char probe_state_logged[128];
	struct textfile *textfile;
	struct textfile_dir textfile_dir;
	bool textfile_on; /* this poll feeds croft.prom: textfile_dir is set */
	struct left_out left_out_said[LEFT_OUT_MAX]; /* as last logged */
	size_t left_out_said_count;
	struct nvml *nvml; /* NULL: nvml = off, or its thread could not start */
	struct event *nvml_event;
	struct nvml_result nvml_last; /* the last round that came back */
	char nvml_said[NVML_PROBLEM_MAX + 64];
	int nvml_gpu_said[NVML_GPUS_MAX]; /* per-process utilisation's error, as logged */
	uint64_t nvml_clamped_said;
};

/* poll.c */
int sampler_poll_init(struct sampler *s);
/* The poll timer (re)armed at cfg.poll_interval_ms. */
int sampler_arm_timer(struct sampler *s);
/* The timer's tick: a poll begins, or the one running is followed by another. */
void sampler_poll_start(struct sampler *s);
void sampler_poll_stop(struct sampler *s);
/*
 * At a clean stop, after sampler_poll_stop: one last poll (after the one
 * running, if any) writes a row for every process, idle or not, so the
 * dataset covers each up to the stop; the carry it saves is where the
 * next start goes on from.
 */
void sampler_poll_close(struct sampler *s);
void sampler_poll_free(struct sampler *s);
/* Labels (labels.c), sorted by container id, saved in the state dir at each
 * change (written, fsynced and renamed over the old file) and loaded at
 * start: a torn or foreign file is ignored with one log line. */
const struct container_label *sampler_label_find(const struct sampler *s, const char *id);
int sampler_label_set(struct sampler *s, const char *id, const char *label);
void sampler_labels_load(struct sampler *s);
/* leftout.c: what this host's rows leave out (status's left_out), and a log line
 * when a field starts or stops being left out (at each poll's end). */
size_t sampler_left_out(const struct sampler *s, struct left_out ret[LEFT_OUT_MAX]);
void sampler_left_out_log(struct sampler *s);
/* nvml_link.c: the NVML thread (gpu.h) from the loop's side */
void sampler_nvml_start(struct sampler *s);
void sampler_nvml_stop(struct sampler *s);
/* A poll begins: a round is asked for, and a hang said. */
void sampler_nvml_poll(struct sampler *s);
/* The last round, if fresh enough for this poll; NULL: off, absent, hung or stale. */
const struct nvml_result *sampler_nvml_fresh(struct sampler *s);
size_t sampler_nvml_left_out(const struct sampler *s, struct left_out *ret, size_t max);
/* control.c */
int sampler_ctl(void *ctx, uint32_t type, struct msg_cursor *payload, struct evbuffer *reply);
/* Checks and applies a reload (while a poll runs: at its end); a daemon_reload_fn. */
int sampler_reload(void *ctx, char **ret_errors);

#endif
