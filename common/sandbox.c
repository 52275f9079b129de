/*
 * sandbox.c: a libseccomp allow-by-default filter denying the daemons' one
 * policy (common/meson.build's sandbox_denied, also in every unit) and exec,
 * and syscall number -> name for the probe's and sampler's syscall mix.
 * Runs in every daemon after priv_drop(); needs no privilege.
 */
#include <errno.h>
#include <seccomp.h>
#include <string.h>

#include "sandbox.h"
#include "sandbox_policy.h"

#define SANDBOX_NR_MAX 1024 /* syscall numbers we cache names for */

/* the units' policy (SANDBOX_DENIED, from common/meson.build), and exec */
static const char sandbox_denied[] = SANDBOX_DENIED " execve execveat";

static int sandbox_deny(scmp_filter_ctx ctx, const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR)
		return -EINVAL;
	return seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 0);
}

/* Each space-separated name of list. */
static int sandbox_deny_list(scmp_filter_ctx ctx, const char *list)
{
	char name[64];
	int r = 0;

	for (const char *p = list; r == 0 && *p;) {
		size_t len = strcspn(p, " ");
		if (len == 0 || len >= sizeof(name))
			return -EINVAL;
		memcpy(name, p, len);
		name[len] = '\0';
		r = sandbox_deny(ctx, name);
		p += len + strspn(p + len, " ");
	}
	return r;
}

int sandbox_apply(const char *const *extra_denied)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int r;

	if (!ctx)
		return -ENOMEM;
	r = sandbox_deny_list(ctx, sandbox_denied);
	for (size_t i = 0; r == 0 && extra_denied && extra_denied[i]; i++)
		r = sandbox_deny(ctx, extra_denied[i]);
	/* Other ABIs (i386 on x86_64) are not in the filter: libseccomp kills them. */
	if (r == 0)
		r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1);
	if (r == 0)
		r = seccomp_load(ctx);
	seccomp_release(ctx);
	return r;
}

const char *sandbox_syscall_name(int nr)
{
	static char *names[SANDBOX_NR_MAX];

	if (nr < 0 || nr >= SANDBOX_NR_MAX)
		return NULL;
	if (!names[nr])
		names[nr] = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
	return names[nr];
}
