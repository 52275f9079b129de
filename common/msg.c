/*
 * msg.c: framing and bounded parsing of croft's messages, over libevent
 * evbuffers (stream sockets) and SOCK_SEQPACKET sockets.  Any process, any
 * privilege.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <event2/buffer.h>

#include "msg.h"

static const struct {
	uint32_t type;
	const char *name;
} msg_names[] = {
	{ MT_HELLO, "HELLO" },
	{ MT_BATCH, "BATCH" },
	{ MT_ACK, "ACK" },
	{ MT_PROBE_POLL, "PROBE_POLL" },
	{ MT_PROBE_PROCS, "PROBE_PROCS" },
	{ MT_PROBE_EXITS, "PROBE_EXITS" },
	{ MT_PROBE_FINALS, "PROBE_FINALS" },
	{ MT_PROBE_END, "PROBE_END" },
	{ MT_CTL_STATUS, "CTL_STATUS" },
	{ MT_CTL_RELOAD, "CTL_RELOAD" },
	{ MT_CTL_LABEL, "CTL_LABEL" },
	{ MT_CTL_REPLY, "CTL_REPLY" },
};

const char *msg_type_name(uint32_t type)
{
	for (size_t i = 0; i < sizeof(msg_names) / sizeof(msg_names[0]); i++)
		if (msg_names[i].type == type)
			return msg_names[i].name;
	return "UNKNOWN";
}

bool msg_type_known(uint32_t type)
{
	return strcmp(msg_type_name(type), "UNKNOWN") != 0;
}

void msg_cursor_init(struct msg_cursor *cur, const void *payload, size_t len)
{
	static const uint8_t empty[1];

	/* An empty payload arrives as NULL; pointer arithmetic on NULL is undefined. */
	cur->pos = payload ? payload : empty;
	cur->left = payload ? len : 0;
}

int msg_get(struct msg_cursor *cur, void *ret, size_t len)
{
	if (cur->left < len)
		return -EBADMSG;
	memcpy(ret, cur->pos, len);
	cur->pos += len;
	cur->left -= len;
	return 0;
}

int msg_get_str(struct msg_cursor *cur, const char **ret_str, size_t max)
{
	size_t scan = cur->left < max + 1 ? cur->left : max + 1;
	const uint8_t *nul = memchr(cur->pos, '\0', scan);

	if (nul == NULL)
		return -EBADMSG;
	*ret_str = (const char *)cur->pos;
	cur->left -= (size_t)(nul - cur->pos) + 1;
	cur->pos = nul + 1;
	return 0;
}

void msg_get_rest(struct msg_cursor *cur, const uint8_t **ret_tail, size_t *ret_len)
{
	*ret_tail = cur->pos;
	*ret_len = cur->left;
	cur->pos += cur->left;
	cur->left = 0;
}

int msg_end(const struct msg_cursor *cur)
{
	return cur->left == 0 ? 0 : -EBADMSG;
}

struct msg_hello msg_hello_make(uint32_t role, uint64_t epoch, uint64_t seq)
{
	return (struct msg_hello){
		.version = CROFT_PROTO_VERSION, .role = role, .epoch = epoch, .seq = seq
	};
}

int msg_hello_check(
	uint32_t type, struct msg_cursor *payload, uint32_t role, struct msg_hello *ret_hello)
{
	struct msg_hello hello;

	if (type != MT_HELLO)
		return -EPROTO;
	if (msg_get(payload, &hello, sizeof(hello)) < 0 || msg_end(payload) < 0)
		return -EBADMSG;
	if (hello.version != CROFT_PROTO_VERSION || hello.role != role)
		return -EPROTONOSUPPORT;
	*ret_hello = hello;
	return 0;
}

static int msg_header(uint32_t type, size_t fixed_len, size_t tail_len, struct msg_hdr *ret_hdr)
{
	if (fixed_len > MSG_PAYLOAD_MAX || tail_len > MSG_PAYLOAD_MAX - fixed_len)
		return -EMSGSIZE;
	ret_hdr->type = type;
	ret_hdr->len = (uint32_t)(fixed_len + tail_len);
	return 0;
}

int msg_compose(struct evbuffer *out, uint32_t type, const void *fixed, size_t fixed_len,
	const void *tail, size_t tail_len)
{
	struct msg_hdr hdr;
	int r = msg_header(type, fixed_len, tail_len, &hdr);

	if (r < 0)
		return r;
	if (evbuffer_add(out, &hdr, sizeof(hdr)) < 0 ||
		(fixed_len > 0 && evbuffer_add(out, fixed, fixed_len) < 0) ||
		(tail_len > 0 && evbuffer_add(out, tail, tail_len) < 0))
		return -ENOMEM;
	return 0;
}

int msg_pull(struct evbuffer *in, size_t max_len, struct msg_hdr *ret_hdr, uint8_t **ret_payload)
{
	struct msg_hdr hdr;
	uint8_t *payload = NULL;

	if (evbuffer_copyout(in, &hdr, sizeof(hdr)) < (ssize_t)sizeof(hdr))
		return 0;
	if (!msg_type_known(hdr.type))
		return -EPROTO;
	if (hdr.len > max_len || hdr.len > MSG_PAYLOAD_MAX)
		return -EMSGSIZE;
	if (evbuffer_get_length(in) < sizeof(hdr) + hdr.len)
		return 0;
	if (hdr.len > 0 && (payload = malloc(hdr.len)) == NULL)
		return -ENOMEM;
	evbuffer_drain(in, sizeof(hdr));
	if (hdr.len > 0)
		evbuffer_remove(in, payload, hdr.len);
	*ret_hdr = hdr;
	*ret_payload = payload;
	return 1;
}

int msg_send_packet(int fd, uint32_t type, const void *fixed, size_t fixed_len, const void *tail,
	size_t tail_len)
{
	struct msg_hdr hdr;
	struct iovec iov[3];
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 0 };
	int r = msg_header(type, fixed_len, tail_len, &hdr);

	if (r < 0)
		return r;
	if (sizeof(hdr) + hdr.len > MSG_PACKET_MAX)
		return -EMSGSIZE;
	iov[mh.msg_iovlen++] = (struct iovec){ &hdr, sizeof(hdr) };
	if (fixed_len > 0)
		iov[mh.msg_iovlen++] = (struct iovec){ (void *)fixed, fixed_len };
	if (tail_len > 0)
		iov[mh.msg_iovlen++] = (struct iovec){ (void *)tail, tail_len };
	if (sendmsg(fd, &mh, MSG_NOSIGNAL) < 0)
		return -errno;
	return 0;
}

int msg_recv_packet(int fd, void *buf, size_t buf_len, struct msg_hdr *ret_hdr)
{
	struct msg_hdr hdr;
	ssize_t n = recv(fd, buf, buf_len, MSG_TRUNC);

	if (n < 0)
		return -errno;
	if (n == 0)
		return 0;
	if ((size_t)n > buf_len || (size_t)n < sizeof(hdr))
		return -EBADMSG;
	memcpy(&hdr, buf, sizeof(hdr));
	if (!msg_type_known(hdr.type))
		return -EPROTO;
	if (hdr.len != (size_t)n - sizeof(hdr))
		return -EBADMSG;
	*ret_hdr = hdr;
	return 1;
}
