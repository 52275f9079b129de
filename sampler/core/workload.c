/*
 * workload.c: the GPU state of a process (no-gpu, gpu-onset, gpu-held),
 * fed by fd scans ("holds a GPU device file", and which GPUs) and by the
 * probe's GPU ioctl counts.  Pure logic, unit-tested with synthetic
 * inputs.  croft-sampler.
 */
#include <string.h>

#include "host.h"

/*
 * The first ioctl is only known to lie in this poll's interval: the probe
 * gives the last one.  With several ioctls this poll, the interval's start
 * bounds the first one from below.
 */
static uint64_t first_ioctl_estimate(const struct workload_input *in)
{
	uint64_t first = in->last_gpu_ioctl_boot_ns ? in->last_gpu_ioctl_boot_ns : in->now_boot_ns;

	if (in->gpu_ioctls > 1 && in->prev_sample_boot_ns && in->prev_sample_boot_ns < first)
		first = in->prev_sample_boot_ns;
	return first;
}

void workload_update(struct workload *wl, const struct workload_input *in, uint64_t onset_window_ns)
{
	bool ioctl_now = in->probe_valid && in->gpu_ioctls > 0;

	if (in->fd_scanned) {
		wl->holds_gpu_fd = in->holds_gpu_fd;
		wl->gpus = in->gpus;
		wl->gpus_known = true;
		/* Held when croft started: it is past its onset (DESIGN "GPU states"). */
		if (in->holds_gpu_fd && in->at_sampler_start && !wl->first_ioctl_boot_ns)
			wl->held_before_ioctl = true;
	} else if (ioctl_now) {
		/* An ioctl on a GPU file proves one is open, whatever an older scan
		 * said; a scan of this poll came after the ioctls and knows better. */
		wl->holds_gpu_fd = true;
	}
	if (in->probe_valid && !wl->first_ioctl_boot_ns &&
		(in->gpu_ioctls || in->last_gpu_ioctl_boot_ns))
		wl->first_ioctl_boot_ns = first_ioctl_estimate(in);

	if (wl->first_ioctl_boot_ns && !wl->held_before_ioctl &&
		in->now_boot_ns < wl->first_ioctl_boot_ns + onset_window_ns)
		wl->state = WL_GPU_ONSET;
	else if (wl->holds_gpu_fd)
		wl->state = WL_GPU_HELD;
	else
		wl->state = WL_NO_GPU;
}

/* gpus is written for GPU states only: what no-gpu rows hold is not news. */
bool workload_changed(const struct workload *before, const struct workload *after)
{
	if (before->state != after->state)
		return true;
	return after->state != WL_NO_GPU &&
	       (before->gpus_known != after->gpus_known ||
		       memcmp(&before->gpus, &after->gpus, sizeof(before->gpus)) != 0);
}
