/*
 * textfile_nvml.c: croft.prom's per-GPU figures from NVML's last round
 * (gpu.h): utilisation, memory used, power and the energy counter, each
 * printed only where NVML gave it (a missing call, MIG, or no fresh round
 * leaves the series out).  croft-sampler, croft user.
 */
#include <stdio.h>

#include "output.h"

enum nvml_figure { NF_SM, NF_MEMORY_UTIL, NF_MEMORY_USED, NF_POWER, NF_ENERGY, NF_COUNT };

static const struct nvml_metric {
	const char *name, *type, *help;
	unsigned have; /* enum nvml_gpu_have */
} nvml_metrics[NF_COUNT] = {
	[NF_SM] = { "croft_gpu_nvml_sm_utilization_ratio", "gauge",
		"NVML's GPU utilisation (a kernel ran on the GPU) over its last sample period, "
		"0 to 1.",
		NG_UTIL },
	[NF_MEMORY_UTIL] = { "croft_gpu_nvml_memory_utilization_ratio", "gauge",
		"NVML's memory utilisation (device memory read or written) over its last sample "
		"period, 0 to 1.",
		NG_UTIL },
	[NF_MEMORY_USED] = { "croft_gpu_nvml_memory_used_bytes", "gauge",
		"Device memory in use, as NVML says.", NG_MEMORY },
	[NF_POWER] = { "croft_gpu_nvml_power_watts", "gauge", "The GPU's power draw, as NVML says.",
		NG_POWER },
	[NF_ENERGY] = { "croft_gpu_nvml_energy_joules_total", "counter",
		"Energy the GPU used since the driver loaded, as NVML says.", NG_ENERGY },
};

static void value(FILE *f, enum nvml_figure m, const struct nvml_gpu *g)
{
	switch (m) {
	case NF_SM:
		fprintf(f, " %.2f\n", g->sm_percent / 100.0);
		return;
	case NF_MEMORY_UTIL:
		fprintf(f, " %.2f\n", g->memory_percent / 100.0);
		return;
	case NF_MEMORY_USED:
		fprintf(f, " %llu\n", (unsigned long long)g->memory_used_bytes);
		return;
	case NF_POWER:
		fprintf(f, " %u.%03u\n", g->power_mw / 1000, g->power_mw % 1000);
		return;
	default: /* NF_ENERGY */
		fprintf(f, " %llu.%03llu\n", (unsigned long long)(g->energy_mj / 1000),
			(unsigned long long)(g->energy_mj % 1000));
		return;
	}
}

void textfile_print_nvml(const struct nvml_result *r, FILE *f)
{
	for (int m = 0; r && m < NF_COUNT; m++) {
		const struct nvml_metric *nm = &nvml_metrics[m];

		fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", nm->name, nm->help, nm->name, nm->type);
		for (size_t i = 0; i < r->gpus_count; i++) {
			const struct nvml_gpu *g = &r->gpus[i];

			if (!(g->have & nm->have))
				continue;
			if (g->minor >= 0) /* the rows' GPU index */
				fprintf(f, "%s{gpu=\"%d\"}", nm->name, g->minor);
			else
				fprintf(f, "%s{gpu=\"nvml%u\"}", nm->name, g->nvml_index);
			value(f, (enum nvml_figure)m, g);
		}
	}
}
