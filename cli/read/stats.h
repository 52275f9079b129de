/*
 * stats.h: croft stats' figures, shared by its worker/merge half (stats.c)
 * and its output half (stats_out.c).  Invoking user, no privilege.
 */
#ifndef CROFT_STATS_H
#define CROFT_STATS_H

#include "readers.h"

__extension__ typedef unsigned __int128 u128;

struct gpu_acc {
	uint64_t held_ms, idle_ms; /* gpu-held; of which with no GPU ioctl */
};

struct fw_acc {
	uint64_t processes;
	u128 cpu_e4ms; /* cpu_cores x 1e4 x ms */
};

/* Everything croft stats prints, global ids into the four tables. */
struct stats_result {
	uint64_t rows, processes, containers;
	int64_t first_ms, last_ms;
	uint64_t wl_rows[WL_COUNT], wl_processes[WL_COUNT], wl_ms[WL_COUNT];
	struct strtab containers_tab, cwds_tab, frameworks_tab, syscalls_tab;
	struct gpu_acc *by_container, *by_cwd; /* per id */
	struct fw_acc *by_framework, fw_none;
	u128 *syscall_calls_e7;     /* rate x 1e4 x ms */
	struct gpu_acc host;        /* rows with no container */
	struct gpu_acc cwd_unknown; /* rows with no cwd */
};

void stats_print_table(
	const struct stats_result *s, const struct ds_files *files, const struct ds_report *rep);
void stats_print_json(
	const struct stats_result *s, const struct ds_files *files, const struct ds_report *rep);

#endif
