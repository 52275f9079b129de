/*
 * probe-mincount.c: loads and attaches probe-mincount.bpf.c, prints
 * "ready", and keeps it attached until stdin closes or a signal comes.
 * bench-probe.sh's reference counter; runs as root.
 */
#include <stdio.h>
#include <unistd.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
#include "probe-mincount.bpf.skel.h"
#pragma GCC diagnostic pop

int main(void)
{
	struct probe_mincount_bpf *skel = probe_mincount_bpf__open_and_load();
	char c;

	if (!skel || probe_mincount_bpf__attach(skel) < 0) {
		fprintf(stderr, "probe-mincount: cannot load or attach\n");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	probe_mincount_bpf__destroy(skel);
	return 0;
}
