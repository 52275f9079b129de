/*
 * net.bpf.c: bytes each tgid sent and received on IPv4/IPv6 sockets.  One
 * source is loaded, chosen by croft-probe's feature probe: the
 * sock_send_length / sock_recv_length tracepoints (Linux 6.3), else fexit,
 * else kretprobe, on the IPv4/IPv6 functions those tracepoints report on.
 * Kernel side of croft-probe, loaded by root.
 */
#include "vmlinux.h"
#include "probe.bpf.h"

#define AF_INET_FAMILY  2
#define AF_INET6_FAMILY 10

COUNTED_MAP(net_0, PROBE_TGID_ENTRIES, __u32, struct probe_net_val);
COUNTED_MAP(net_1, PROBE_TGID_ENTRIES, __u32, struct probe_net_val);

/* ret: what the socket's sendmsg/recvmsg returned (bytes, or -errno). */
static __always_inline int count_bytes(int ret, bool tx)
{
	static const struct probe_net_val zero;
	__u32 tgid = bpf_get_current_pid_tgid() >> 32;
	struct probe_net_val *v;

	if (ret <= 0)
		return 0;
	if (epoch)
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

static __always_inline int count_inet(__u16 family, int ret, bool tx)
{
	if (family != AF_INET_FAMILY && family != AF_INET6_FAMILY)
		return 0;
	return count_bytes(ret, tx);
}

/*
 * The tracepoints (6e6eda44b939 "sock: add tracepoint for send recv
 * length", Linux 6.3) fire in sock_sendmsg_nosec / sock_recvmsg_nosec, for
 * every socket family, with what the family's sendmsg/recvmsg returned.
 */
SEC("tp_btf/sock_send_length")
int BPF_PROG(send_btf, struct sock *sk, int ret, int flags)
{
	return count_inet(sk->__sk_common.skc_family, ret, true);
}

SEC("tp_btf/sock_recv_length")
int BPF_PROG(recv_btf, struct sock *sk, int ret, int flags)
{
	return count_inet(sk->__sk_common.skc_family, ret, false);
}

SEC("raw_tp/sock_send_length")
int BPF_PROG(send_raw, struct sock *sk, int ret, int flags)
{
	return count_inet(BPF_CORE_READ(sk, __sk_common.skc_family), ret, true);
}

SEC("raw_tp/sock_recv_length")
int BPF_PROG(recv_raw, struct sock *sk, int ret, int flags)
{
	return count_inet(BPF_CORE_READ(sk, __sk_common.skc_family), ret, false);
}

/*
 * Before 6.3: the same return values one layer down.  For IPv4 and IPv6
 * sockets sock_sendmsg_nosec calls exactly one of inet_sendmsg and
 * inet6_sendmsg (recvmsg likewise), so each call the tracepoint would
 * report is counted once; tcp_sendmsg, udp_sendmsg and the rest run below
 * these and are not hooked, so nothing is counted twice.  send, sendto,
 * sendmsg, sendmmsg, write and io_uring all pass here; sendfile and splice
 * go through sendpage before Linux 6.5 and are counted by neither.  The
 * signatures (sock, msg, size[, flags]) date from Linux 4.1.
 */
SEC("fexit/inet_sendmsg")
int BPF_PROG(send4_fexit, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	return count_bytes(ret, true);
}

SEC("fexit/inet6_sendmsg")
int BPF_PROG(send6_fexit, struct socket *sock, struct msghdr *msg, size_t size, int ret)
{
	return count_bytes(ret, true);
}

SEC("fexit/inet_recvmsg")
int BPF_PROG(recv4_fexit, struct socket *sock, struct msghdr *msg, size_t size, int flags, int ret)
{
	return count_bytes(ret, false);
}

SEC("fexit/inet6_recvmsg")
int BPF_PROG(recv6_fexit, struct socket *sock, struct msghdr *msg, size_t size, int flags, int ret)
{
	return count_bytes(ret, false);
}

/*
 * Where fexit cannot attach: no BPF trampoline (arm64 has one since Linux
 * 6.0, efc9909fdce0).  A kretprobe tracks a bounded number of calls in
 * flight (by default 2 per CPU, at least 10): returns past that, as from many threads blocked in
 * recv at once, are missed.
 */
SEC("kretprobe/inet_sendmsg")
int BPF_KRETPROBE(send4_kret, int ret)
{
	return count_bytes(ret, true);
}

SEC("kretprobe/inet6_sendmsg")
int BPF_KRETPROBE(send6_kret, int ret)
{
	return count_bytes(ret, true);
}

SEC("kretprobe/inet_recvmsg")
int BPF_KRETPROBE(recv4_kret, int ret)
{
	return count_bytes(ret, false);
}

SEC("kretprobe/inet6_recvmsg")
int BPF_KRETPROBE(recv6_kret, int ret)
{
	return count_bytes(ret, false);
}
