/*
 * gen-wire-py.c: writes the Python tests' wire module (wire.py, into the
 * build directory) from the C headers (contract/wire.h,
 * contract/probe_wire.h, probe/bpf/probe.h): the numbers, each payload's
 * struct format (sizes and signedness from the C types; a payload with a
 * hole fails the build, as the Python side packs without padding) and the
 * drop reasons, then the helpers of wire.py.in.  Build machine, any user.
 *
 * usage: gen-wire-py WIRE.PY.IN > WIRE.PY
 */
#include <linux/types.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "gentemplate.h"
#include "probe.h"
#include "probe_wire.h"
#include "wire.h"

#define FACTS_LINE "# @WIRE_FACTS@\n"

struct number {
	const char *name;
	long long value;
};

#define NUMBER(n)                                                                                  \
	{                                                                                          \
#n, n                                                                              \
	}

static const struct number numbers[] = {
	NUMBER(CROFT_PROTO_VERSION),
	NUMBER(MT_HELLO),
	NUMBER(MT_BATCH),
	NUMBER(MT_ACK),
	NUMBER(MT_PROBE_POLL),
	NUMBER(MT_PROBE_PROCS),
	NUMBER(MT_PROBE_EXITS),
	NUMBER(MT_PROBE_END),
	NUMBER(MT_PROBE_FINALS),
	NUMBER(MT_CTL_STATUS),
	NUMBER(MT_CTL_RELOAD),
	NUMBER(MT_CTL_LABEL),
	NUMBER(MT_CTL_REPLY),
	NUMBER(ROLE_SAMPLER),
	NUMBER(ROLE_WRITER),
	NUMBER(ROLE_PROBE),
	NUMBER(ROLE_CTL),
	NUMBER(PROBE_END_NET),
	NUMBER(PROBE_END_FIRST),
	NUMBER(PROBE_END_SYSCALLS),
	NUMBER(PROBE_END_IOCTL),
	NUMBER(PROBE_END_SCHED),
	NUMBER(PROBE_END_FINALS),
	NUMBER(PROBE_FINALS_MAX),
	NUMBER(PROBE_FINAL_ARGV_FLAG),
	NUMBER(PROBE_ARGV_BYTES),
	NUMBER(PROBE_END_GPUFILE),
	NUMBER(PROBE_WIRE_DROPS),
};

/* A payload's field: where it is, its element's size, how many, and its kind. */
struct field {
	const char *struct_name, *name;
	size_t struct_size, offset, size, count;
	char kind; /* 'u' unsigned, 'i' signed, 's' bytes (a char array: one field) */
};

#define MEMBER(s, m) (((struct s *)0)->m)
#define SIGNED_KIND(x)                                                                             \
	_Generic((x), signed char                                                                  \
		 : 'i', short                                                                      \
		 : 'i', int                                                                        \
		 : 'i', long                                                                       \
		 : 'i', long long                                                                  \
		 : 'i', default                                                                    \
		 : 'u')
#define FIELD(s, m)                                                                                \
	{                                                                                          \
#s, #m, sizeof(struct s), offsetof(struct s, m), sizeof(MEMBER(s, m)), 1,          \
			SIGNED_KIND(MEMBER(s, m))                                                  \
	}
#define ARRAY(s, m)                                                                                \
	{                                                                                          \
#s, #m, sizeof(struct s), offsetof(struct s, m), sizeof(MEMBER(s, m)[0]),          \
			sizeof(MEMBER(s, m)) / sizeof(MEMBER(s, m)[0]),                            \
			SIGNED_KIND(MEMBER(s, m)[0])                                               \
	}
#define STRING(s, m)                                                                               \
	{                                                                                          \
#s, #m, sizeof(struct s), offsetof(struct s, m), sizeof(MEMBER(s, m)), 1, 's'      \
	}

static const struct field fields[] = {
	FIELD(msg_hdr, type),
	FIELD(msg_hdr, len),
	FIELD(msg_hello, version),
	FIELD(msg_hello, role),
	FIELD(msg_hello, epoch),
	FIELD(msg_hello, seq),
	FIELD(msg_batch, epoch),
	FIELD(msg_batch, seq),
	FIELD(msg_batch, unix_ms),
	FIELD(msg_batch, rows),
	FIELD(msg_batch, reserved),
	FIELD(msg_ack, epoch),
	FIELD(msg_ack, seq),
	FIELD(msg_ctl_reply, status),
	FIELD(msg_ctl_reply, reserved),
	FIELD(probe_poll, reserved),
	FIELD(probe_batch, count),
	FIELD(probe_batch, reserved),
	FIELD(probe_proc, tgid),
	FIELD(probe_proc, syscalls_count),
	FIELD(probe_proc, start_boot_ns),
	FIELD(probe_proc, gpu_ioctls),
	FIELD(probe_proc, last_gpu_ioctl_boot_ns),
	FIELD(probe_proc, ctx_voluntary),
	FIELD(probe_proc, ctx_involuntary),
	FIELD(probe_proc, runqueue_ns),
	FIELD(probe_proc, net_rx_bytes),
	FIELD(probe_proc, net_tx_bytes),
	FIELD(probe_proc, gpu_waits),
	FIELD(probe_proc, gpu_mmaps),
	FIELD(probe_proc, gpu_blocked_threads),
	FIELD(probe_proc, reserved),
	FIELD(probe_syscall, nr),
	FIELD(probe_syscall, reserved),
	FIELD(probe_syscall, count),
	FIELD(probe_exit, tgid),
	FIELD(probe_exit, ppid),
	FIELD(probe_exit, exit_code),
	FIELD(probe_exit, reserved),
	FIELD(probe_exit, start_boot_ns),
	FIELD(probe_exit, exit_boot_ns),
	STRING(probe_exit, comm),
	FIELD(probe_final, tgid),
	FIELD(probe_final, uid),
	FIELD(probe_final, start_boot_ns),
	FIELD(probe_final, exit_boot_ns),
	FIELD(probe_final, cpu_ns),
	FIELD(probe_final, read_bytes),
	FIELD(probe_final, write_bytes),
	FIELD(probe_final, maxrss_bytes),
	FIELD(probe_final, wait_status),
	FIELD(probe_final, flags),
	STRING(probe_final, comm),
	STRING(probe_final, cgroup),
	STRING(probe_final, exe),
	FIELD(probe_final, argv_len),
	FIELD(probe_final, reserved),
	STRING(probe_final, argv),
	FIELD(probe_end, seq),
	FIELD(probe_end, since_boot_ns),
	FIELD(probe_end, until_boot_ns),
	FIELD(probe_end, procs),
	FIELD(probe_end, exits),
	FIELD(probe_end, flags),
	FIELD(probe_end, finals),
	ARRAY(probe_end, drops),
	ARRAY(probe_end, drops_total),
};

/* enum probe_drop's names, as croft-probe's status gives them (probe/concerns.c);
 * probe-lifecycle holds them to a running probe's */
static const char *const drop_names[PROBE_DROP_REASONS] = {
	[PROBE_DROP_SYSCALL_MAP_FULL] = "syscall_map_full",
	[PROBE_DROP_IOCTL_MAP_FULL] = "ioctl_map_full",
	[PROBE_DROP_SCHED_MAP_FULL] = "sched_map_full",
	[PROBE_DROP_RUNQ_MAP_FULL] = "runq_map_full",
	[PROBE_DROP_NET_MAP_FULL] = "net_map_full",
	[PROBE_DROP_EVENTS_FULL] = "ringbuf_full",
	[PROBE_DROP_GPUFILE_MAP_FULL] = "gpufile_map_full",
	[PROBE_DROP_INFLIGHT_MAP_FULL] = "inflight_map_full",
	[PROBE_DROP_WAIT_UNCHECKED] = "wait_unchecked",
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The struct module's code of an integer of size bytes, signed or not. */
static char int_code(size_t size, char kind)
{
	const char *codes = kind == 'i' ? "bhiq" : "BHIQ";

	switch (size) {
	case 1:
		return codes[0];
	case 2:
		return codes[1];
	case 4:
		return codes[2];
	case 8:
		return codes[3];
	default:
		return 0;
	}
}

/* One payload's format, from its first field (at *i) to its last; 0, or -1 with why said. */
static int put_layout(FILE *out, size_t *i)
{
	const struct field *first = &fields[*i];
	size_t at = 0;

	fprintf(out, "    '%s': struct.Struct('<", first->struct_name);
	for (; *i < COUNT(fields) && !strcmp(fields[*i].struct_name, first->struct_name); (*i)++) {
		const struct field *f = &fields[*i];
		char code = f->kind == 's' ? 's' : int_code(f->size, f->kind);

		if (f->offset != at || !code) {
			fprintf(stderr, "gen-wire-py: %s.%s: %s\n", f->struct_name, f->name,
				code ? "a hole before it (Python packs without padding)"
				     : "no struct code for its size");
			return -1;
		}
		if (f->kind == 's' || f->count > 1)
			fprintf(out, "%zu", f->kind == 's' ? f->size : f->count);
		fputc(code, out);
		at += f->size * f->count;
	}
	if (at != first->struct_size) {
		fprintf(stderr, "gen-wire-py: %s: %zu bytes of fields in %zu\n", first->struct_name,
			at, first->struct_size);
		return -1;
	}
	fputs("'),\n", out);
	return 0;
}

static int put_facts(FILE *out)
{
	for (size_t i = 0; i < COUNT(numbers); i++) {
		const char *name = numbers[i].name;

		if (!strcmp(name, "CROFT_PROTO_VERSION"))
			name = "VERSION";
		fprintf(out, strncmp(name, "MT_", 3) ? "%s = %lld\n" : "%s = 0x%04llx\n", name,
			numbers[i].value);
	}
	fputs("\n# the C struct each is, little-endian with no padding\nLAYOUTS = {\n", out);
	for (size_t i = 0; i < COUNT(fields);)
		if (put_layout(out, &i) < 0)
			return -1;
	fputs("}\n\n# enum probe_drop in order, by the names croft-probe's status gives them\n"
	      "DROPS = [\n",
		out);
	for (size_t i = 0; i < COUNT(drop_names); i++) {
		if (!drop_names[i]) {
			fprintf(stderr, "gen-wire-py: drop reason %zu has no name\n", i);
			return -1;
		}
		fprintf(out, "    '%s',\n", drop_names[i]);
	}
	fputs("]\n", out);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen-wire-py WIRE.PY.IN > WIRE.PY\n");
		return 2;
	}
	return gen_splice(argv[1], FACTS_LINE, put_facts, NULL);
}
