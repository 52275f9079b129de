/*
 * fuzz_probe.c: libFuzzer harness for croft-probe's answers as the sampler
 * decodes them: the input is a run of packets, each [kind][length, 2
 * bytes][payload], fed to probe_link_take until the answer ends or is
 * refused; a complete answer is applied (twice: the first is a baseline) to
 * a process table read from a fake /proc of three processes.
 */
#include <event2/event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "catalog.h"
#include "fuzzlib.h"
#include "msg.h"
#include "probe_link.h"
#include "probe_wire.h"
#include "host.h"

#define FAKE_PIDS 3 /* tgids 1..3, started at clock tick 0 */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const uint32_t kinds[] = { MT_PROBE_PROCS, MT_PROBE_EXITS, MT_PROBE_FINALS, MT_PROBE_END,
	MT_HELLO };

static struct poll_env env;

/* The table a poll would hold: tgids 1..FAKE_PIDS, each with rates of its own. */
static struct proc_table *fake_table(void)
{
	static struct proc_table table;
	static struct catalog *cat;
	static struct gpudev_set gpu;
	static struct cgroup_table *cgroups;
	struct cgroup_mounts mounts = { 0 };

	if (cat)
		return &table;
	if (catalog_load_builtin(&cat) < 0)
		abort();
	for (int pid = 1; pid <= FAKE_PIDS; pid++) {
		char name[32], stat[160];
		int n = snprintf(stat, sizeof(stat),
			"%d (fake) S 0 %d %d 0 -1 4194304 0 0 0 0 7 3 0 0 20 0 1 0 0 1000 10\n",
			pid, pid, pid);

		snprintf(name, sizeof(name), "%d/stat", pid);
		fuzz_write(name, (const uint8_t *)stat, (size_t)n);
	}
	env.procfd = fuzz_dir_fd();
	env.catalog = cat;
	env.gpu = &gpu;
	env.cgroups = cgroups = cgroup_table_new(&mounts);
	env.gen = 1;
	env.idle_every = 1;
	env.tick_ns = 1000000000ull / (uint64_t)sysconf(_SC_CLK_TCK);
	env.page_size = 4096;
	proc_table_init(&table);
	if (!env.cgroups || proc_table_read(&table, &env) < 0 || table.count != FAKE_PIDS)
		abort();
	return &table;
}

static void check_rates(const struct proc_table *table)
{
	for (const struct proc *p = table->list_head; p; p = p->list_next)
		if (p->counters.probe.syscalls_count > PROBE_PROC_SYSCALLS_MAX ||
			(p->counters.probe.syscalls_count && !p->counters.probe.syscalls))
			abort();
}

/* The poll's completion: the answer applied, the rates checked. */
static void apply_answer(struct probe_answer *answer, void *arg)
{
	struct proc_table *table = arg;

	proc_table_apply_probe(table, &env, answer);
	check_rates(table);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t packet[MSG_PACKET_MAX];
	static struct event_base *base;
	struct proc_table *table = fake_table();
	struct probe_link *link;
	const uint8_t *p = data, *end = data + size;
	int r = 0;

	if (!base && !(base = event_base_new()))
		abort();
	if (!(link = probe_link_new(base, "/nonexistent")))
		abort();
	probe_link_ask(link, apply_answer, table); /* no probe there: answered with none */
	while (r == 0 && end - p >= 3) {
		struct msg_hdr hdr = { kinds[p[0] % 4], (uint32_t)(p[1] | p[2] << 8) };
		size_t left = (size_t)(end - p - 3);

		p += 3;
		if (hdr.len > left)
			hdr.len = (uint32_t)left;
		if (hdr.len > sizeof(packet))
			hdr.len = sizeof(packet);
		/* an exact-size copy: a read past the payload is caught */
		memcpy(packet + sizeof(packet) - hdr.len, p, hdr.len);
		r = probe_link_take(link, &hdr, packet + sizeof(packet) - hdr.len);
		p += hdr.len;
	}
	for (int i = 0; r == 1 && i < 2; i++)
		probe_link_answered(link);
	probe_link_free(link);
	return 0;
}
