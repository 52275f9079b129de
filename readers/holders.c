/*
 * holders.c: gpu_system_holders, the driver daemons and monitors whose
 * GPU-held hours croft stats reports as "system": a row's exe basename
 * (without " (deleted)") or comm against the configured names.  croft
 * stats/profile, invoking user, no privilege.
 */
#include <stdio.h>
#include <string.h>

#include "readers.h"

#define DELETED      " (deleted)" /* readlink of an exe replaced on disk */
#define COMM_LEN_MAX 15           /* TASK_COMM_LEN - 1: comm is cut there */

/* Each name NUL-terminated in a copy: printed and compared as it is. */
void holders_parse(struct read_opts *o, const char *names)
{
	char *name, *rest;

	snprintf(o->holders_text, sizeof(o->holders_text), "%s", names);
	o->holders_count = 0;
	for (name = strtok_r(o->holders_text, ", \t", &rest);
		name && o->holders_count < HOLDERS_MAX; name = strtok_r(NULL, ", \t", &rest)) {
		o->holders[o->holders_count] = name;
		o->holders_len[o->holders_count++] = (uint32_t)strlen(name);
	}
}

static struct strv exe_basename(struct strv exe)
{
	size_t dl = strlen(DELETED);
	const char *slash;

	if (!exe.ptr)
		return exe;
	if (exe.len > dl && !memcmp(exe.ptr + exe.len - dl, DELETED, dl))
		exe.len -= (uint32_t)dl;
	slash = memrchr(exe.ptr, '/', exe.len);
	if (slash) {
		exe.len -= (uint32_t)(slash + 1 - exe.ptr);
		exe.ptr = slash + 1;
	}
	return exe;
}

int holder_of(const struct read_opts *o, const struct row *row)
{
	struct strv base;

	if (!o->holders_count)
		return -1;
	base = exe_basename(row->exe);
	for (size_t i = 0; i < o->holders_count; i++) {
		uint32_t len = o->holders_len[i];
		uint32_t comm_len = len < COMM_LEN_MAX ? len : COMM_LEN_MAX;

		if (base.ptr && base.len == len && !memcmp(base.ptr, o->holders[i], len))
			return (int)i;
		if (row->comm.ptr && row->comm.len == comm_len &&
			!memcmp(row->comm.ptr, o->holders[i], comm_len))
			return (int)i;
	}
	return -1;
}
