/*
 * control.c: croft-probe's answers on probe.ctl: status (status.c's
 * figures in the envelope) and reload (the GPU device set from croft.conf,
 * written into the device map without reloading any program).
 * croft-probe, croft user, after the drop (map updates go through fds it
 * already holds).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <event2/buffer.h>

#include "config.h"
#include "daemon.h"
#include "log.h"
#include "msg.h"
#include "probed.h"

int probe_reload(void *ctx, char **ret_errors)
{
	struct probe_state *st = ctx;
	struct croft_config cfg;
	struct gpudev_watch gpus;
	char err[256];
	int r;

	if ((r = daemon_reload_config(st->config_path, &cfg, ret_errors)) < 0)
		return r;
	r = gpudev_watch_init(&gpus, cfg.gpu_devices, "/proc/devices", err, sizeof(err));
	if (r == 0 && (r = loader_set_gpu_rules(st->objs, &gpus.set)) < 0)
		snprintf(err, sizeof(err), "updating the GPU device map: %s", strerror(-r));
	if (r < 0) {
		*ret_errors = strdup(err);
		return r;
	}
	st->gpus = gpus;
	log_info("GPU device set reloaded: %zu rules", gpus.set.rules_count);
	return 0;
}

/*
 * Degraded while a concern failed to load (its fields are missing) or the
 * device map lags /proc/devices (GPU figures may miss a device).  A field
 * the kernel cannot give is no fault: status lists it under left_out.
 */
static int status_reply(struct probe_state *st, struct evbuffer *reply)
{
	void *figures = status_figures(st);
	char why[256] = "";

	if (!figures)
		return -ENOMEM;
	for (int c = 0; c < CONCERNS; c++)
		if (st->objs->failed[c][0])
			snprintf(why + strlen(why), sizeof(why) - strlen(why), "%s%s not loaded",
				why[0] ? ", " : "", concerns[c].name);
	if (st->gpu_map_error)
		snprintf(why + strlen(why), sizeof(why) - strlen(why),
			"%sGPU device map not updated: %s", why[0] ? "; " : "",
			strerror(-st->gpu_map_error));
	return daemon_status(why[0] ? "degraded" : "up", why[0] ? why : NULL, figures, reply);
}

int probe_ctl(void *ctx, uint32_t type, struct msg_cursor *payload, struct evbuffer *reply)
{
	struct probe_state *st = ctx;
	int r;

	switch (type) {
	case MT_CTL_STATUS:
		return status_reply(st, reply);
	case MT_CTL_RELOAD:
		r = daemon_ctl_reload(probe_reload, st, NULL, reply);
		if (r == 0)
			evbuffer_add_printf(reply, "GPU device set reloaded: %zu rules",
				st->gpus.set.rules_count);
		return r;
	default:
		evbuffer_add_printf(
			reply, "%s: not a request croft-probe answers", msg_type_name(type));
		return -EOPNOTSUPP;
	}
}
