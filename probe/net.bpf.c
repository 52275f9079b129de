/*
 * net.bpf.c: bytes each tgid sent and received on IPv4/IPv6 sockets, from
 * the sock_send_length / sock_recv_length tracepoints (Linux 6.3+; when the
 * kernel lacks them croft-probe does not load this and says so).  Kernel
 * side of croft-probe, loaded by root.
 */
#include "vmlinux.h"
#include "probe.bpf.h"

#define AF_INET_FAMILY  2
#define AF_INET6_FAMILY 10

#define NET_MAP(name)                                            \
	struct {                                                 \
		__uint(type, BPF_MAP_TYPE_PERCPU_HASH);          \
		__uint(max_entries, PROBE_TGID_ENTRIES);         \
		__type(key, __u32);                              \
		__type(value, struct probe_net_val);             \
	} name SEC(".maps")

NET_MAP(net_0);
NET_MAP(net_1);

static __always_inline int count_bytes(__u16 family, int ret, bool tx)
{
	static const struct probe_net_val zero;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct probe_net_val *v;

	if (ret <= 0 || (family != AF_INET_FAMILY && family != AF_INET6_FAMILY))
		return 0;
	if (gen)
		v = lookup_or_init(&net_1, 1, &tgid, &zero);
	else
		v = lookup_or_init(&net_0, 0, &tgid, &zero);
	if (!v) {
		count_drop(PROBE_DROP_NET_MAP_FULL);
		return 0;
	}
	if (tx)
		v->tx_bytes += ret;
	else
		v->rx_bytes += ret;
	return 0;
}

SEC("tp_btf/sock_send_length")
int BPF_PROG(send_btf, struct sock *sk, int ret, int flags)
{
	return count_bytes(sk->__sk_common.skc_family, ret, true);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(recv_btf, struct sock *sk, int ret, int flags)
{
	return count_bytes(sk->__sk_common.skc_family, ret, false);
}

SEC("raw_tp/sock_send_length")
int BPF_PROG(send_raw, struct sock *sk, int ret, int flags)
{
	return count_bytes(BPF_CORE_READ(sk, __sk_common.skc_family), ret, true);
}

SEC("raw_tp/sock_recv_length")
int BPF_PROG(recv_raw, struct sock *sk, int ret, int flags)
{
	return count_bytes(BPF_CORE_READ(sk, __sk_common.skc_family), ret, false);
}
