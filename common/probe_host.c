/*
 * probe_host.c: why croft-probe cannot run on this host (probe_host.h):
 * what any user can see (the kernel's BTF, its version) and, for root, a
 * trial load.  croft run as root; croft-sampler as the croft user and
 * croftctl as whoever runs it, without the load.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "probe_host.h"

/* Loads the smallest tracing program: what the probe needs of the kernel. */
static int bpf_loads(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_TRACEPOINT;
	attr.insns = (uint64_t)(uintptr_t)insns;
	attr.insn_cnt = 2;
	attr.license = (uint64_t)(uintptr_t) "GPL";
	fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

/* A release older than the probe's minimum ("4.19.0-26-amd64"); an unreadable one is not. */
static bool kernel_too_old(const char *release)
{
	unsigned major, minor;

	if (sscanf(release, "%u.%u", &major, &minor) != 2)
		return false;
	return major < PROBE_HOST_MAJOR_MIN ||
	       (major == PROBE_HOST_MAJOR_MIN && minor < PROBE_HOST_MINOR_MIN);
}

const char *probe_host_blocker(bool try_load, char *buf, size_t len)
{
	struct utsname uts;
	int r;

	if (access(PROBE_HOST_BTF, R_OK) < 0)
		return "the kernel has no BTF (" PROBE_HOST_BTF ")";
	if (uname(&uts) == 0 && kernel_too_old(uts.release)) {
		snprintf(buf, len, "kernel %s is older than %d.%d (the BPF ring buffer)",
			uts.release, PROBE_HOST_MAJOR_MIN, PROBE_HOST_MINOR_MIN);
		return buf;
	}
	if (try_load && (r = bpf_loads()) < 0) {
		snprintf(buf, len, "the kernel refuses BPF programs: %s", strerror(-r));
		return buf;
	}
	return NULL;
}
