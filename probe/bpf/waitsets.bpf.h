/*
 * waitsets.bpf.h: whether a poll or select set (in the calling thread's
 * user memory) holds a GPU fd, for gpufile.bpf.c alone.  Global functions:
 * the verifier checks each once, not once per loop turn of its callers,
 * which keeps the entry program's verification short on every kernel.
 * Kernel side of croft-probe, loaded by root.
 */
#ifndef CROFT_WAITSETS_BPF_H
#define CROFT_WAITSETS_BPF_H

#define POLL_FDS_MAX   64   /* fds of a poll set checked; a longer set counts a drop */
#define SELECT_FDS_MAX 1024 /* fds of a select's sets checked: FD_SETSIZE */

struct pollfd_entry {
	int fd;
	short events, revents;
};

/* 1: fd is a GPU file of the calling thread. */
__noinline int gpu_fd(int fd)
{
	return gpu_file(current_fd_file(fd));
}

/* Global, as gpu_fd: 1 when one of the first POLL_FDS_MAX fds of the set is a GPU file. */
__noinline int poll_set_gpu(__u64 ufds, __u64 nfds)
{
	const struct pollfd_entry *set = (const void *)ufds;
	struct pollfd_entry p;

	for (__u32 i = 0; i < POLL_FDS_MAX && i < nfds; i++) {
		if (bpf_probe_read_user(&p, sizeof(p), &set[i])) {
			count_drop(PROBE_DROP_WAIT_UNCHECKED);
			return 0;
		}
		if (gpu_fd(p.fd))
			return 1;
	}
	if (nfds > POLL_FDS_MAX)
		count_drop(PROBE_DROP_WAIT_UNCHECKED);
	return 0;
}

/* Word k of a user fd_set: 0 for a NULL set, and for one that cannot be read (a drop). */
static __always_inline __u64 set_word(__u64 set, __u32 k)
{
	__u64 w = 0;

	if (set && bpf_probe_read_user(&w, sizeof(w), (const __u64 *)set + k)) {
		count_drop(PROBE_DROP_WAIT_UNCHECKED);
		return 0;
	}
	return w;
}

/* Global: 1 when an fd base + b, bit b set in w, is a GPU file. */
__noinline int set_word_gpu(__u64 w, __u32 base)
{
	for (__u32 b = 0; b < 64; b++)
		if ((w >> b) & 1 && gpu_fd((int)(base + b)))
			return 1;
	return 0;
}

/* Global: 1 when an fd of word k of a select's three sets, below n, is a GPU file. */
__noinline int select_word_gpu(__u64 n, __u64 in, __u64 out, __u64 ex, __u32 k)
{
	__u64 w = set_word(in, k) | set_word(out, k) | set_word(ex, k);

	if (n - (__u64)k * 64 < 64) /* the last word: only the bits below n count */
		w &= (1ull << (n - (__u64)k * 64)) - 1;
	return w && set_word_gpu(w, k * 64);
}

/*
 * Global: 1 when an fd set in any of a select's three sets is a GPU file;
 * every fd below n is looked at (FD_SETSIZE bounds n).  A function per
 * word, each verified once, keeps the verifier's walk short.
 */
__noinline int select_set_gpu(__u64 n, __u64 in, __u64 out, __u64 ex)
{
	for (__u32 k = 0; k < SELECT_FDS_MAX / 64 && (__u64)k * 64 < n; k++)
		if (select_word_gpu(n, in, out, ex, k))
			return 1;
	if (n > SELECT_FDS_MAX)
		count_drop(PROBE_DROP_WAIT_UNCHECKED);
	return 0;
}

#endif
