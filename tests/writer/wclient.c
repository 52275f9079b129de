/*
 * wclient.c: a stand-in sampler for the writer's tests and benchmark.  It
 * connects to writer.sock, says HELLO, streams numbered batches (synthetic
 * rows, or a croft-gen-rows file split per poll), keeps every unacked batch
 * and resends after a reconnect, and appends each ack's seq to a file.
 * Test process, any user the writer accepts.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "msg.h"

struct batch {
	const char *lines; /* into rows_file, or malloc'd */
	size_t len;
	uint32_t rows;
	uint64_t unix_ms;
};

struct client {
	const char *socket_path;
	uint64_t epoch;
	size_t nbatches;
	struct batch *batches; /* index seq - 1 */
	size_t window;
	bool reconnect;
	int acks_fd;
	uint64_t acked;         /* highest acked seq */
	uint64_t first_unacked; /* resend from here after a reconnect */
	int timeout_s;
	const char *bad;     /* NULL, "rows", "partial" */
	uint32_t synth_rows; /* rows per synthetic batch (no --rows-file) */
	size_t synth_pad;
	unsigned pace_ms; /* pause between batches (a poll interval), 0 none */
	bool resend_all;  /* ignore the writer's HELLO: resend from seq 1 */
	double deadline;  /* monotonic seconds: give up, even mid-session */
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Synthetic batches are made when sent (a million of them cost nothing). */
static void synth_batch(struct client *c, uint64_t seq, struct batch *ret)
{
	static char *buf;
	static size_t cap;
	size_t need = c->synth_rows * (c->synth_pad + 160) + 1, len = 0;
	uint64_t ms = 1792504800000ull + (seq - 1) * 2000;

	if (need > cap) {
		free(buf);
		buf = malloc(need);
		cap = need;
	}
	for (uint32_t r = 0; r < c->synth_rows; r++)
		len += (size_t)snprintf(buf + len, cap - len,
			"{\"unix_ms\":%" PRIu64 ",\"tgid\":%u,\"epoch\":\"%016" PRIx64
			"\",\"seq\":%" PRIu64 ",\"row\":%u,\"pad\":\"%.*s\"}\n",
			ms, 1000 + r, c->epoch, seq, r, (int)c->synth_pad,
			"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx"
			"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
	*ret = (struct batch){ buf, len, c->synth_rows, ms };
}

static void get_batch(struct client *c, uint64_t seq, struct batch *ret)
{
	if (c->batches)
		*ret = c->batches[seq - 1];
	else
		synth_batch(c, seq, ret);
}

/* A croft-gen-rows file: one batch per run of lines with the same unix_ms. */
static void file_batches(struct client *c, const char *path)
{
	int fd = open(path, O_RDONLY);
	struct stat st;
	const char *data, *p, *end;
	size_t cap = 1024;

	if (fd < 0 || fstat(fd, &st) < 0 || st.st_size == 0) {
		perror(path);
		exit(2);
	}
	data = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (data == MAP_FAILED) {
		perror("mmap");
		exit(2);
	}
	c->batches = malloc(cap * sizeof(*c->batches));
	c->nbatches = 0;
	end = data + st.st_size;
	for (p = data; p < end;) {
		uint64_t ms = strtoull(p + 11, NULL, 10);
		struct batch b = { p, 0, 0, ms };

		while (p < end && strtoull(p + 11, NULL, 10) == ms) {
			const char *nl = memchr(p, '\n', (size_t)(end - p));

			p = nl ? nl + 1 : end;
			b.rows++;
		}
		b.len = (size_t)(p - b.lines);
		if (c->nbatches == cap)
			c->batches = realloc(c->batches, (cap *= 2) * sizeof(*c->batches));
		c->batches[c->nbatches++] = b;
	}
}

static int full_write(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			struct pollfd pfd = { fd, POLLOUT, 0 };

			poll(&pfd, 1, 1000);
			continue;
		}
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int full_read(int fd, void *buf, size_t len)
{
	char *p = buf;

	while (len) {
		ssize_t n = read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static int send_batch(struct client *c, int fd, uint64_t seq)
{
	struct batch bb, *b = &bb;
	struct msg_batch mb;
	size_t len;

	get_batch(c, seq, b);
	mb = (struct msg_batch){ c->epoch, seq, b->unix_ms, b->rows, 0 };
	len = b->len;
	struct msg_hdr hdr;

	if (c->bad && seq == c->nbatches) {
		if (!strcmp(c->bad, "rows"))
			mb.rows++;
		else
			len--; /* the last line loses its '\n' */
	}
	hdr.type = MT_BATCH;
	hdr.len = (uint32_t)(sizeof(mb) + len);
	if (full_write(fd, &hdr, sizeof(hdr)) < 0 || full_write(fd, &mb, sizeof(mb)) < 0 ||
		full_write(fd, b->lines, len) < 0)
		return -1;
	return 0;
}

static int hello(struct client *c, int fd)
{
	struct msg_hello h = { CROFT_PROTO_VERSION, ROLE_SAMPLER, c->epoch, 0 }, reply;
	struct msg_hdr hdr = { MT_HELLO, sizeof(h) };

	if (full_write(fd, &hdr, sizeof(hdr)) < 0 || full_write(fd, &h, sizeof(h)) < 0 ||
		full_read(fd, &hdr, sizeof(hdr)) < 0 || hdr.type != MT_HELLO ||
		hdr.len != sizeof(reply) || full_read(fd, &reply, sizeof(reply)) < 0)
		return -1;
	/* what the writer has committed is on disk: never sent again */
	if (!c->resend_all && reply.epoch == c->epoch && reply.seq >= c->first_unacked)
		c->first_unacked = reply.seq + 1;
	return 0;
}

static int record_ack(struct client *c, int fd)
{
	struct msg_hdr hdr;
	struct msg_ack ack;
	char line[32];

	if (full_read(fd, &hdr, sizeof(hdr)) < 0 || hdr.type != MT_ACK || hdr.len != sizeof(ack) ||
		full_read(fd, &ack, sizeof(ack)) < 0)
		return -1;
	if (ack.epoch != c->epoch || ack.seq <= c->acked) {
		fprintf(stderr, "wclient: unexpected ack %" PRIu64 " after %" PRIu64 "\n", ack.seq,
			c->acked);
		exit(1);
	}
	c->acked = ack.seq;
	if (c->first_unacked <= ack.seq)
		c->first_unacked = ack.seq + 1;
	if (c->acks_fd >= 0) {
		int n = snprintf(line, sizeof(line), "%" PRIu64 "\n", ack.seq);

		if (write(c->acks_fd, line, (size_t)n) != n)
			return -1;
	}
	return 0;
}

static int connect_writer(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

/* One connection: returns 0 when everything is acked, -1 when it broke. */
static int session(struct client *c, int fd)
{
	uint64_t next;

	if (hello(c, fd) < 0)
		return -1;
	next = c->first_unacked;
	while (c->first_unacked <= c->nbatches) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		bool can_send = next <= c->nbatches && next < c->first_unacked + c->window;

		if (can_send) {
			if (send_batch(c, fd, next) < 0)
				return -1;
			next++;
			if (c->pace_ms)
				usleep(c->pace_ms * 1000);
		}
		if (poll(&pfd, 1, can_send ? 0 : 1000) > 0 && record_ack(c, fd) < 0)
			return -1;
		if (!can_send && now_s() > c->deadline) {
			fprintf(stderr, "wclient: no ack for seq %" PRIu64 " before the deadline\n",
				c->first_unacked);
			exit(4);
		}
	}
	return 0;
}

/* Everything this client will send, in order: what the dataset must equal. */
static void dump_batches(const struct client *c, const char *path)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		perror(path);
		exit(2);
	}
	for (size_t i = 0; i < c->nbatches; i++) {
		struct batch b;

		get_batch((struct client *)c, i + 1, &b);
		fwrite(b.lines, 1, b.len, f);
	}
	if (fclose(f) != 0) {
		perror(path);
		exit(2);
	}
}

static void usage(void)
{
	fprintf(stderr,
		"usage: wclient --socket PATH [--epoch E] (--batches N [--rows R] [--pad B] |"
		" --rows-file FILE) [--window W] [--acks FILE] [--reconnect] [--timeout S]"
		" [--bad rows|partial] [--dump FILE] [--pace-ms MS] [--resend-all]\n");
	exit(2);
}

static void parse(struct client *c, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "socket", 1, NULL, 's' },
		{ "epoch", 1, NULL, 'e' },
		{ "batches", 1, NULL, 'n' },
		{ "rows", 1, NULL, 'r' },
		{ "pad", 1, NULL, 'p' },
		{ "rows-file", 1, NULL, 'f' },
		{ "window", 1, NULL, 'w' },
		{ "acks", 1, NULL, 'a' },
		{ "reconnect", 0, NULL, 'R' },
		{ "timeout", 1, NULL, 't' },
		{ "bad", 1, NULL, 'b' },
		{ "dump", 1, NULL, 'd' },
		{ "pace-ms", 1, NULL, 'P' },
		{ "resend-all", 0, NULL, 'A' },
		{ NULL, 0, NULL, 0 },
	};
	const char *rows_file = NULL, *dump = NULL;
	uint32_t rows = 10;
	size_t pad = 40;
	int o;

	while ((o = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (o) {
		case 's':
			c->socket_path = optarg;
			break;
		case 'e':
			c->epoch = strtoull(optarg, NULL, 0);
			break;
		case 'n':
			c->nbatches = strtoull(optarg, NULL, 10);
			break;
		case 'r':
			rows = (uint32_t)strtoul(optarg, NULL, 10);
			break;
		case 'p':
			pad = strtoul(optarg, NULL, 10);
			break;
		case 'f':
			rows_file = optarg;
			break;
		case 'w':
			c->window = strtoul(optarg, NULL, 10);
			break;
		case 'a':
			c->acks_fd = open(optarg, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
			if (c->acks_fd < 0) {
				perror(optarg);
				exit(2);
			}
			break;
		case 'R':
			c->reconnect = true;
			break;
		case 't':
			c->timeout_s = atoi(optarg);
			break;
		case 'b':
			c->bad = optarg;
			break;
		case 'd':
			dump = optarg;
			break;
		case 'A':
			c->resend_all = true;
			break;
		case 'P':
			c->pace_ms = (unsigned)strtoul(optarg, NULL, 10);
			break;
		default:
			usage();
		}
	}
	if (!c->socket_path || (!rows_file && !c->nbatches) || pad > 128 || !c->window)
		usage();
	if (rows_file)
		file_batches(c, rows_file);
	c->synth_rows = rows;
	c->synth_pad = pad;
	if (dump)
		dump_batches(c, dump);
}

int main(int argc, char **argv)
{
	struct client c = {
		.epoch = 0x5eed, .window = 8, .acks_fd = -1, .first_unacked = 1, .timeout_s = 120
	};
	uint64_t bytes = 0, rows = 0;
	double t0, deadline;

	signal(SIGPIPE, SIG_IGN); /* a killed writer is a broken connection, not our end */
	parse(&c, argc, argv);
	if (!c.batches)
		rows = c.nbatches * c.synth_rows;
	for (size_t i = 0; c.batches && i < c.nbatches; i++) {
		bytes += c.batches[i].len;
		rows += c.batches[i].rows;
	}
	t0 = now_s();
	deadline = t0 + c.timeout_s;
	c.deadline = deadline;
	for (;;) {
		int fd = connect_writer(c.socket_path);

		if (fd >= 0) {
			int ret = session(&c, fd);

			close(fd);
			if (ret == 0)
				break;
			if (!c.reconnect) {
				fprintf(stderr, "wclient: connection broken at seq %" PRIu64 "\n",
					c.first_unacked);
				return 3;
			}
		} else if (!c.reconnect) {
			perror(c.socket_path);
			return 3;
		}
		if (now_s() > deadline) {
			fprintf(stderr, "wclient: timed out with %" PRIu64 " acked\n", c.acked);
			return 4;
		}
		usleep(2000); /* the writer is restarting: retry the connect */
	}
	double secs = now_s() - t0;

	printf("batches %zu rows %" PRIu64 " bytes %" PRIu64
	       " seconds %.3f rows_per_s %.0f MB_per_s %.1f\n",
		c.nbatches, rows, bytes, secs, (double)rows / secs, (double)bytes / secs / 1e6);
	return 0;
}
