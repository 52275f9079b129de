/*
 * probe-mincount.c: loads and attaches probe-mincount.bpf.c, prints
 * "ready", and keeps it attached until SIGTERM or SIGINT.
 * bench-probe.sh's reference counter; runs as root.
 */
#include <signal.h>
#include <stdio.h>

#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverlength-strings"
#include "probe-mincount.bpf.skel.h"
#pragma GCC diagnostic pop

int main(void)
{
	struct probe_mincount_bpf *skel = probe_mincount_bpf__open_and_load();
	sigset_t set;
	int sig;

	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigprocmask(SIG_BLOCK, &set, NULL);

	if (!skel || probe_mincount_bpf__attach(skel) < 0) {
		fprintf(stderr, "probe-mincount: cannot load or attach\n");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	sigwait(&set, &sig);
	probe_mincount_bpf__destroy(skel);
	return 0;
}
