/*
 * leftout.c: the row fields croft-sampler leaves out on this host for one
 * of the host's reasons (its cgroup layout, no GPU device, no kubelet
 * checkpoint, no NVIDIA driver files), each with why: status's left_out,
 * and a log line when a field starts or stops being left out.  The probe's
 * own fields are croft-probe's to list.  croft-sampler, croft user.
 */
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "sampler.h"

/* What no process has without a GPU device in the set: the row table's RL_GPU_DEVICE fields. */
#define GPU_ONE_(object, id, name, type, omit, left_by, ...) +!!((left_by)&RL_GPU_DEVICE)
enum { GPU_FIELDS = 0 ROW_FIELDS_ALL(GPU_ONE_) };

static void gpu_left_out(const struct sampler *s, struct left_out *ret, size_t *n)
{
	char rules[160];

	if (s->gpu.registered) {
		if (s->gpu_index.nv.mig_count)
			return;
		ret[*n].field = row_fields[RF_MIG].path;
		snprintf(ret[(*n)++].why, LEFT_OUT_WHY_MAX,
			"no MIG instance: %.200s/nvidia-caps/mig-minors names none",
			s->cfg.driver_dir);
		return;
	}
	gpudev_set_format(&s->gpu.set, rules, sizeof(rules));
	for (int f = 0; f < RF_COUNT; f++) {
		if (!(row_fields[f].left_by & RL_GPU_DEVICE))
			continue;
		ret[*n].field = row_fields[f].path;
		snprintf(ret[(*n)++].why, LEFT_OUT_WHY_MAX,
			"no GPU device: /proc/devices registers none of gpu_devices (%s)", rules);
	}
}

size_t sampler_left_out(const struct sampler *s, struct left_out ret[LEFT_OUT_MAX])
{
	size_t n = cgroup_table_left_out(s->cgroups, ret, LEFT_OUT_MAX - GPU_FIELDS - 1 - 2);

	gpu_left_out(s, ret, &n);
	n += sampler_nvml_left_out(s, ret + n, 2);
	if (!s->kubelet.loaded) {
		ret[n].field = row_fields[RF_GPUS_ALLOCATED].path;
		snprintf(ret[n++].why, LEFT_OUT_WHY_MAX, "%s",
			s->kubelet.problem[0] ? s->kubelet.problem
					      : "no kubelet checkpoint read yet");
	} else if (!s->gpu_index.nv.gpus_count) {
		ret[n].field = row_fields[RF_GPUS_ALLOCATED].path;
		snprintf(ret[n++].why, LEFT_OUT_WHY_MAX,
			"the NVIDIA driver names no GPU (%.200s/nvidia/gpus/*/information): the "
			"checkpoint's GPU UUIDs give no index",
			s->cfg.driver_dir);
	}
	return n;
}

/* Whether list has field (with the same why, when why is given). */
static bool listed(const struct left_out *list, size_t n, const char *field, const char *why)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(list[i].field, field) && (!why || !strcmp(list[i].why, why)))
			return true;
	return false;
}

void sampler_left_out_log(struct sampler *s)
{
	struct left_out now[LEFT_OUT_MAX];
	size_t n = sampler_left_out(s, now);

	for (size_t i = 0; i < n; i++)
		if (!listed(s->left_out_said, s->left_out_said_count, now[i].field, now[i].why))
			log_info("rows leave out %s: %s", now[i].field, now[i].why);
	for (size_t i = 0; i < s->left_out_said_count; i++)
		if (!listed(now, n, s->left_out_said[i].field, NULL))
			log_info("rows carry %s again", s->left_out_said[i].field);
	memcpy(s->left_out_said, now, n * sizeof(now[0]));
	s->left_out_said_count = n;
}
