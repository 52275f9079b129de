/*
 * user.c: croft stats' GPU-held hours per user (process.uid), summed
 * by each worker and merged by the main thread, and the host's user names
 * read from /etc/passwd as a file.  Invoking user, no privilege.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "stats.h"

#define PASSWD_LINE_MAX  4096   /* a longer line is skipped */
#define PASSWD_USERS_MAX 100000 /* names kept; later ones show as numbers */

/* uid's entry, made when new; NULL when out of memory. */
static struct gpu_acc *user_acc(struct user_sums *u, int64_t uid)
{
	struct i64_slot *slot = i64map_slot(&u->index, uid);

	if (!slot)
		return NULL;
	if (slot->epoch != u->index.epoch) {
		if (!VEC_ROOM(u->v, u->cap, u->count))
			return NULL;
		u->v[u->count] = (struct user_acc){ .uid = uid };
		i64map_set(&u->index, slot, uid, (uint32_t)u->count++);
	}
	return &u->v[slot->value].acc;
}

bool user_sums_add(struct user_sums *u, int64_t uid, enum gpu_activity activity, uint64_t ms)
{
	struct gpu_acc *a = user_acc(u, uid);

	if (a)
		gpu_acc_add(a, activity, ms);
	return a != NULL;
}

bool user_sums_merge(struct user_sums *to, const struct user_sums *from)
{
	for (size_t i = 0; i < from->count; i++) {
		struct gpu_acc *a = user_acc(to, from->v[i].uid);

		if (!a)
			return false;
		gpu_acc_sum(a, &from->v[i].acc);
	}
	return true;
}

void user_sums_free(struct user_sums *u)
{
	i64map_free(&u->index);
	free(u->v);
	*u = (struct user_sums){ 0 };
}

/* "name:password:uid:..." -> name and uid; false for anything else. */
static bool passwd_entry(char *line, char **ret_name, int64_t *ret_uid)
{
	char *pw = strchr(line, ':'), *uid, *end;
	long long v;

	if (!pw || pw == line || !(uid = strchr(pw + 1, ':')))
		return false;
	*pw = '\0';
	errno = 0;
	v = strtoll(uid + 1, &end, 10);
	if (errno || end == uid + 1 || *end != ':' || v < 0)
		return false;
	*ret_name = line;
	*ret_uid = v;
	return true;
}

/* Duplicates are kept: user_name finds the first, as getpwuid would. */
static void user_names_add(struct user_names *n, int64_t uid, const char *name)
{
	char *copy;

	if (n->count >= PASSWD_USERS_MAX || !VEC_ROOM(n->v, n->cap, n->count) ||
		!(copy = strdup(name)))
		return;
	n->v[n->count++] = (struct user_name){ uid, copy };
}

void user_names_load(struct user_names *n, const char *passwd_path)
{
	/* O_NONBLOCK: a FIFO in its place reads as empty rather than hang */
	int fd = open(passwd_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	FILE *f = fd >= 0 ? fdopen(fd, "r") : NULL;
	char line[PASSWD_LINE_MAX], *name;
	int64_t uid;

	*n = (struct user_names){ 0 };
	if (!f) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while (fgets(line, sizeof(line), f))
		if (strchr(line, '\n') && passwd_entry(line, &name, &uid))
			user_names_add(n, uid, name);
	fclose(f);
}

const char *user_name(const struct user_names *n, int64_t uid)
{
	for (size_t i = 0; i < n->count; i++)
		if (n->v[i].uid == uid)
			return n->v[i].name;
	return NULL;
}

void user_names_free(struct user_names *n)
{
	for (size_t i = 0; i < n->count; i++)
		free(n->v[i].name);
	free(n->v);
	*n = (struct user_names){ 0 };
}
