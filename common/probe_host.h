/*
 * probe_host.h: why croft-probe cannot run on this host, one check for
 * croft run (before it starts the probe), croft-sampler and croftctl (for
 * status, when the probe is absent).  Any process, any user; the trial
 * load is for root.
 */
#ifndef CROFT_PROBE_HOST_H
#define CROFT_PROBE_HOST_H

#include <stdbool.h>
#include <stddef.h>

#define PROBE_HOST_BTF       "/sys/kernel/btf/vmlinux" /* the kernel's BTF the probe loads against */
#define PROBE_HOST_MAJOR_MIN 5                         /* Linux 5.8: the BPF ring buffer */
#define PROBE_HOST_MINOR_MIN 8
#define PROBE_HOST_WHY_MAX   160 /* bytes of a reason, its NUL included */

/*
 * The host's reason, NULL when nothing here says the probe cannot run:
 * the kernel's BTF missing, a kernel before 5.8, then (with try_load, as
 * root) the kernel refusing the smallest tracing program.  The reason is
 * a constant or written to buf.
 */
const char *probe_host_blocker(bool try_load, char *buf, size_t len);

#endif
