/*
 * net-work.c: moves an exact number of bytes over loopback sockets within
 * one process, through one family of socket calls, so croft-probe's
 * net_tx_bytes and net_rx_bytes for this tgid must both equal it (zero for
 * AF_UNIX, which the probe does not count).  Runs as the test's user.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#define CHUNK_BYTES 16384 /* stream writes: within the loopback socket buffers */
#define DGRAM_BYTES 1000  /* datagram size; BYTES must be a multiple */
#define MMSG_COUNT  8     /* datagrams per sendmmsg / recvmmsg */

static char buf[CHUNK_BYTES * 2];

/* A connected pair (ret_fds[0] sends, ret_fds[1] receives) on family's loopback. */
static int pair(int family, int type, int ret_fds[2])
{
	struct sockaddr_storage a = { 0 };
	socklen_t len =
		family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6);
	int l = socket(family, type, 0), s = socket(family, type, 0);

	a.ss_family = (sa_family_t)family;
	if (family == AF_INET)
		((struct sockaddr_in *)&a)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	else
		((struct sockaddr_in6 *)&a)->sin6_addr = in6addr_loopback;
	if (l < 0 || s < 0 || bind(l, (struct sockaddr *)&a, len) < 0 ||
		getsockname(l, (struct sockaddr *)&a, &len) < 0)
		return -1;
	if (type == SOCK_STREAM && listen(l, 1) < 0)
		return -1;
	if (connect(s, (struct sockaddr *)&a, len) < 0)
		return -1;
	ret_fds[0] = s;
	ret_fds[1] = l;
	if (type == SOCK_STREAM && (ret_fds[1] = accept(l, NULL, NULL)) < 0)
		return -1;
	return 0;
}

/* Reads exactly n bytes from a stream (recv, or read when use_read). */
static int take(int fd, size_t n, int use_read)
{
	while (n > 0) {
		size_t want = n < sizeof(buf) ? n : sizeof(buf);
		ssize_t got = use_read ? read(fd, buf, want) : recv(fd, buf, want, 0);

		if (got <= 0)
			return -1;
		n -= (size_t)got;
	}
	return 0;
}

/* send/recv, or write/read when use_rw, in CHUNK_BYTES pieces. */
static int stream(int family, unsigned long bytes, int use_rw)
{
	int fds[2];

	if (pair(family, SOCK_STREAM, fds) < 0)
		return -1;
	while (bytes > 0) {
		size_t n = bytes < CHUNK_BYTES ? bytes : CHUNK_BYTES;
		ssize_t put = use_rw ? write(fds[0], buf, n) : send(fds[0], buf, n, 0);

		if (put <= 0 || take(fds[1], (size_t)put, use_rw) < 0)
			return -1;
		bytes -= (unsigned long)put;
	}
	return 0;
}

/* One datagram at a time: sendto / recvfrom. */
static int dgram(int family, unsigned long bytes)
{
	int fds[2];

	if (pair(family, SOCK_DGRAM, fds) < 0)
		return -1;
	for (; bytes >= DGRAM_BYTES; bytes -= DGRAM_BYTES)
		if (sendto(fds[0], buf, DGRAM_BYTES, 0, NULL, 0) != DGRAM_BYTES ||
			recvfrom(fds[1], buf, sizeof(buf), 0, NULL, NULL) != DGRAM_BYTES)
			return -1;
	return 0;
}

/*
 * MMSG_COUNT datagrams per call: sendmmsg / recvmmsg.  Every message names
 * the same address, so the kernel sends all but the first through
 * sock_sendmsg_nosec, as recvmmsg receives them: no sock_sendmsg there.
 */
static int mmsg(unsigned long bytes)
{
	struct sockaddr_in to;
	socklen_t to_len = sizeof(to);
	struct mmsghdr msgs[MMSG_COUNT];
	struct iovec iov[MMSG_COUNT];
	int fds[2];

	if (pair(AF_INET, SOCK_DGRAM, fds) < 0 ||
		getsockname(fds[1], (struct sockaddr *)&to, &to_len) < 0)
		return -1;
	for (; bytes >= DGRAM_BYTES * MMSG_COUNT; bytes -= DGRAM_BYTES * MMSG_COUNT) {
		memset(msgs, 0, sizeof(msgs));
		for (int i = 0; i < MMSG_COUNT; i++) {
			iov[i] = (struct iovec){ buf, DGRAM_BYTES };
			msgs[i].msg_hdr.msg_name = &to;
			msgs[i].msg_hdr.msg_namelen = to_len;
			msgs[i].msg_hdr.msg_iov = &iov[i];
			msgs[i].msg_hdr.msg_iovlen = 1;
		}
		if (sendmmsg(fds[0], msgs, MMSG_COUNT, 0) != MMSG_COUNT)
			return -1;
		for (int i = 0; i < MMSG_COUNT; i++)
			msgs[i].msg_hdr.msg_name = NULL;
		if (recvmmsg(fds[1], msgs, MMSG_COUNT, 0, NULL) != MMSG_COUNT)
			return -1;
	}
	return 0;
}

/* AF_UNIX: not counted by the probe. */
static int local(unsigned long bytes)
{
	int fds[2];

	if (socketpair(AF_UNIX, SOCK_STREAM, 0, fds) < 0)
		return -1;
	for (size_t n; bytes > 0; bytes -= n) {
		n = bytes < CHUNK_BYTES ? bytes : CHUNK_BYTES;
		if (send(fds[0], buf, n, 0) != (ssize_t)n || take(fds[1], n, 0) < 0)
			return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *kind = argc == 3 ? argv[1] : "";
	unsigned long bytes = argc == 3 ? strtoul(argv[2], NULL, 10) : 0;
	int r = -2;

	if (!strcmp(kind, "tcp4") || !strcmp(kind, "tcp6"))
		r = stream(kind[3] == '4' ? AF_INET : AF_INET6, bytes, 0);
	else if (!strcmp(kind, "rw4"))
		r = stream(AF_INET, bytes, 1);
	else if (!strcmp(kind, "udp4") || !strcmp(kind, "udp6"))
		r = dgram(kind[3] == '4' ? AF_INET : AF_INET6, bytes);
	else if (!strcmp(kind, "mmsg4"))
		r = mmsg(bytes);
	else if (!strcmp(kind, "unix"))
		r = local(bytes);
	if (r == -2) {
		fprintf(stderr, "usage: net-work tcp4|tcp6|rw4|udp4|udp6|mmsg4|unix BYTES\n");
		return 2;
	}
	if (r < 0)
		perror(kind);
	return r < 0;
}
