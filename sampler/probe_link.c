/*
 * probe_link.c: placeholder client of croft-probe.  Until the probe part
 * lands it reports why it is not connected and leaves every process's
 * probe rates invalid, so rows leave the probe-only fields out.
 * croft-sampler, croft user.
 */
#include <stdlib.h>

#include "probe_link.h"
#include "sampler.h"

struct probe_link {
	int unused;
};

struct probe_link *probe_link_new(const char *socket_path)
{
	(void)socket_path;
	return calloc(1, sizeof(struct probe_link));
}

void probe_link_free(struct probe_link *link)
{
	free(link);
}

void probe_link_poll(struct probe_link *link, struct proc_table *table, uint64_t now_boot_ns)
{
	(void)link;
	(void)now_boot_ns;
	for (struct proc *p = table->list_head; p; p = p->list_next)
		p->probe.valid = false;
}

const char *probe_link_state(const struct probe_link *link)
{
	(void)link;
	return "probe not connected: probe support not built yet";
}
