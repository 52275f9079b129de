/*
 * argvs.c: the arguments exec'd groups were given (exit.bpf.c sends them
 * at each exec), kept by tgid until the group's final takes them into its
 * record, or until a poll must have read the group from /proc: only a
 * group born and gone between two polls needs them.  croft-probe (croft
 * user, no capabilities).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "probed.h"

struct kept_argv {
	uint64_t start_boot_ns;
	uint32_t len;
	char bytes[];
};

static struct kept_argv *kept_of(const struct argvs *a, uint32_t tgid)
{
	uint64_t *v = tgidmap_get(&a->by_tgid, tgid);

	return v ? (struct kept_argv *)(uintptr_t)*v : NULL;
}

static void forget(struct argvs *a, uint32_t tgid)
{
	free(kept_of(a, tgid));
	tgidmap_del(&a->by_tgid, tgid);
}

/* A record of len bytes from the ring buffer: an exec's arguments, replacing the tgid's last. */
int argvs_put(struct argvs *a, const struct probe_exec_argv *rec, size_t len)
{
	size_t argv_len = len - offsetof(struct probe_exec_argv, argv);
	struct kept_argv *k;

	if (len < offsetof(struct probe_exec_argv, argv) || argv_len != rec->argv_len ||
		argv_len > sizeof(rec->argv))
		return -EBADMSG;
	forget(a, rec->tgid);
	if (!(k = malloc(sizeof(*k) + argv_len)))
		return -ENOMEM;
	k->start_boot_ns = rec->start_boot_ns;
	k->len = (uint32_t)argv_len;
	memcpy(k->bytes, rec->argv, argv_len);
	if (tgidmap_put(&a->by_tgid, rec->tgid, (uint64_t)(uintptr_t)k) < 0) {
		free(k);
		return -ENOSPC;
	}
	return 0;
}

/* The final's group's arguments, where its exec was seen: into f, no longer kept. */
void argvs_take(struct argvs *a, struct probe_final *f)
{
	struct kept_argv *k = kept_of(a, f->tgid);

	if (!k || k->start_boot_ns != f->start_boot_ns)
		return;
	memcpy(f->argv, k->bytes, k->len);
	f->argv_len = k->len;
	f->flags |= PROBE_FINAL_ARGV_FLAG;
	forget(a, f->tgid);
}

/* Forgets the groups started before before_boot_ns (a poll has read those still there). */
void argvs_prune(struct argvs *a, uint64_t before_boot_ns)
{
	const struct tgidmap *m = &a->by_tgid;
	uint32_t *old = malloc((m->count ? m->count : 1) * sizeof(*old));
	size_t n = 0;

	if (!old)
		return; /* the next answer prunes */
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i] &&
			((struct kept_argv *)(uintptr_t)m->vals[i])->start_boot_ns < before_boot_ns)
			old[n++] = m->keys[i];
	for (size_t i = 0; i < n; i++)
		forget(a, old[i]);
	free(old);
}

void argvs_free(struct argvs *a)
{
	argvs_prune(a, UINT64_MAX);
	tgidmap_free(&a->by_tgid);
}
