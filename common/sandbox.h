/*
 * sandbox.h: the seccomp filter every croft daemon applies right after its
 * privilege drop (nothing in croft traces, reads other processes' memory or
 * execs), and syscall names for the running architecture.  Any process.
 */
#ifndef CROFT_SANDBOX_H
#define CROFT_SANDBOX_H

/*
 * Default allow; the daemons' policy (common/meson.build's sandbox_denied:
 * ptrace, process_vm_*, pidfd_getfd, kcmp, open_by_handle_at, io_uring_*,
 * mount, namespace and module calls; the units deny the same), execve and
 * execveat, plus each name in extra_denied (NULL-terminated, may be NULL),
 * fail with EPERM.  Sets no_new_privs.  Returns 0 or -errno (-EINVAL for a
 * name this architecture does not know).
 */
int sandbox_apply(const char *const *extra_denied);

/* "openat" for the number on this architecture, NULL when unknown.  The
 * string is cached and lives as long as the process; not thread-safe. */
const char *sandbox_syscall_name(int nr);

#endif
