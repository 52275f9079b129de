/*
 * wire-facts.c: the wire as the C headers define it (contract/wire.h,
 * contract/probe_wire.h): numbers, each payload's size and its fields'
 * offsets, printed as JSON for tests/unit/test-wire.py to hold the Python
 * tests' copy to.  Test process, any user.
 */
#include <linux/types.h>
#include <stddef.h>
#include <stdio.h>

#include "probe.h"
#include "probe_wire.h"
#include "wire.h"

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
	NUMBER(PROBE_END_GPUFILE),
	NUMBER(PROBE_WIRE_DROPS),
	NUMBER(PROBE_DROP_REASONS),
};

/* A field: where it is, its element's size, how many; a char array is one. */
struct field {
	const char *struct_name, *name;
	size_t struct_size, offset, size, count;
};

#define MEMBER(s, m) (((struct s *)0)->m)
#define FIELD(s, m)                                                                                \
	{                                                                                          \
#s, #m, sizeof(struct s), offsetof(struct s, m), sizeof(MEMBER(s, m)), 1           \
	}
#define ARRAY(s, m)                                                                                \
	{                                                                                          \
#s, #m, sizeof(struct s), offsetof(struct s, m), sizeof(MEMBER(s, m)[0]),          \
			sizeof(MEMBER(s, m)) / sizeof(MEMBER(s, m)[0])                             \
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
	FIELD(probe_exit, comm), /* char[16]: one field of 16 bytes */
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
	FIELD(probe_final, comm),
	FIELD(probe_final, cgroup),
	FIELD(probe_final, exe),
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

int main(void)
{
	const char *sep = "";

	printf("{\"numbers\":{");
	for (size_t i = 0; i < sizeof(numbers) / sizeof(numbers[0]); i++, sep = ",")
		printf("%s\"%s\":%lld", sep, numbers[i].name, numbers[i].value);
	printf("},\"fields\":[");
	sep = "";
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++, sep = ",") {
		const struct field *f = &fields[i];

		printf("%s{\"struct\":\"%s\",\"struct_size\":%zu,\"name\":\"%s\",\"offset\":%zu,"
		       "\"size\":%zu,\"count\":%zu}",
			sep, f->struct_name, f->struct_size, f->name, f->offset, f->size, f->count);
	}
	printf("]}\n");
	return 0;
}
