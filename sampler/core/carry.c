/*
 * carry.c: what a restarted sampler needs to go on with each process's
 * rates where the one before left off: the counters and time of its last
 * row (the baseline of the next), kept at each poll's end in
 * <runtime>/sampler.carry.{0,1}, keyed by (tgid, start time).  Processes
 * do not outlive a boot, so the runtime dir is enough.  croft-sampler,
 * croft user (the files are opened before the drop).
 *
 * The two files take turns, each written whole with a checksum: a kill
 * mid-write leaves the other one.  A file is used only when it is of the
 * batch the spool holds last (epoch and seq) and of this boot: else the
 * rows of a later batch, already spooled, would be counted again.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "handover.h"
#include "log.h"
#include "host.h"

#define CARRY_FILE    "sampler.carry"
#define CARRY_MAGIC   0x43524359u /* "CRCY" */
#define CARRY_VERSION 1u
#define CARRY_BASE_IO 1u /* the baseline has io counters */
#define CARRY_ROWS    2u /* rows started: the next row's span runs from the baseline */

struct carry_head {
	uint32_t magic, version;
	uint64_t generation; /* the newer valid file wins */
	uint64_t epoch, seq; /* the spool's last batch when written */
	uint64_t boot_unix_ms, poll_gen, count, checksum;
};

struct carry_rec {
	int32_t tgid;
	uint32_t flags;
	uint64_t start_ticks, base_unix_ms, base_boot_ns, base_cpu_ns;
	uint64_t base_read_bytes, base_write_bytes, last_gpu_ioctl_boot_ns;
};
_Static_assert(sizeof(struct carry_rec) == 64, "carry_rec is 64 bytes");

struct carry {
	int fds[2];
	uint64_t generation;
	struct carry_rec *recs; /* loaded: by tgid, for the first poll */
	size_t count;
};

/* FNV-1a over the head (its checksum 0) and the records. */
static uint64_t carry_checksum(struct carry_head head, const struct carry_rec *recs)
{
	head.checksum = 0;
	return fnv1a(fnv1a(FNV1A_BASIS, &head, sizeof(head)), recs, head.count * sizeof(*recs));
}

int carry_open(const char *dir, uid_t uid, gid_t gid, struct carry **ret_carry)
{
	struct carry *c = calloc(1, sizeof(*c));
	char path[PATH_MAX];

	if (!c)
		return -ENOMEM;
	for (int i = 0; i < 2; i++) {
		c->fds[i] = -1;
		if (snprintf(path, sizeof(path), "%s/%s.%d", dir, CARRY_FILE, i) >=
			(int)sizeof(path))
			continue;
		c->fds[i] = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		int r = c->fds[i] < 0 || uid == (uid_t)-1 ? 0 : handover_file(c->fds[i], uid, gid);
		if (r < 0) {
			log_warnx("%s: not handed over (%s): not used", path, handover_strerror(r));
			close(c->fds[i]);
			c->fds[i] = -1;
		}
	}
	if (c->fds[0] < 0 || c->fds[1] < 0)
		log_warn("%s/%s.{0,1}: a restart starts every rate over", dir, CARRY_FILE);
	*ret_carry = c;
	return 0;
}

/* One file's records when it is whole; NULL otherwise. */
static struct carry_rec *carry_read(int fd, struct carry_head *ret_head)
{
	struct carry_rec *recs;

	if (fd < 0 || pread(fd, ret_head, sizeof(*ret_head), 0) != (ssize_t)sizeof(*ret_head) ||
		ret_head->magic != CARRY_MAGIC || ret_head->version != CARRY_VERSION ||
		ret_head->count > SAMPLER_PROCS_MAX)
		return NULL;
	recs = malloc(ret_head->count ? ret_head->count * sizeof(*recs) : 1);
	if (recs && (pread(fd, recs, ret_head->count * sizeof(*recs), sizeof(*ret_head)) !=
				    (ssize_t)(ret_head->count * sizeof(*recs)) ||
			    carry_checksum(*ret_head, recs) != ret_head->checksum)) {
		free(recs);
		recs = NULL;
	}
	return recs;
}

static int cmp_rec(const void *a, const void *b)
{
	const struct carry_rec *x = a, *y = b;

	return x->tgid != y->tgid ? (x->tgid < y->tgid ? -1 : 1) : 0;
}

uint64_t carry_load(struct carry *c, uint64_t epoch, uint64_t seq, uint64_t boot_unix_ms)
{
	struct carry_head heads[2] = { { 0 }, { 0 } };
	struct carry_rec *recs[2];
	int best;

	for (int i = 0; i < 2; i++)
		recs[i] = carry_read(c->fds[i], &heads[i]);
	best = !recs[0] || (recs[1] && heads[1].generation > heads[0].generation);
	free(recs[!best]);
	if (!recs[best]) {
		if (heads[0].magic == CARRY_MAGIC || heads[1].magic == CARRY_MAGIC)
			log_warnx("%s: torn or corrupt: every rate starts over", CARRY_FILE);
		return 0;
	}
	c->generation = heads[best].generation;
	if (heads[best].epoch != epoch || heads[best].seq != seq ||
		heads[best].boot_unix_ms != boot_unix_ms) {
		log_notice("%s: of batch %llu, the spool's last is %llu (or another boot): every "
			   "rate starts over",
			CARRY_FILE, (unsigned long long)heads[best].seq, (unsigned long long)seq);
		free(recs[best]);
		return 0;
	}
	qsort(recs[best], heads[best].count, sizeof(*recs[best]), cmp_rec);
	c->recs = recs[best];
	c->count = heads[best].count;
	log_info("%s: %zu processes' counters carried on from before the restart", CARRY_FILE,
		c->count);
	return heads[best].poll_gen;
}

/* A tracked process's record: the same tgid and start. */
static bool carry_find(const struct carry *c, const struct proc *p, struct carry_rec *ret)
{
	struct carry_rec key = { .tgid = p->tgid };
	const struct carry_rec *r;

	if (!c || !c->count)
		return false;
	r = bsearch(&key, c->recs, c->count, sizeof(key), cmp_rec);
	if (!r || r->start_ticks != p->ident.start_ticks)
		return false; /* gone, or the tgid names another process now */
	*ret = *r;
	return true;
}

bool carry_restore(const struct carry *c, struct proc *p)
{
	struct proc_cadence *cad = &p->cadence;
	struct carry_rec r;

	if (!carry_find(c, p, &r))
		return false;
	cad->have_base = true;
	cad->base_poll = (struct poll_clock){ r.base_unix_ms, r.base_boot_ns };
	cad->base_cpu_ns = r.base_cpu_ns;
	cad->base_read_bytes = r.base_read_bytes;
	cad->base_write_bytes = r.base_write_bytes;
	cad->base_io = r.flags & CARRY_BASE_IO;
	cad->rows_started = r.flags & CARRY_ROWS;
	cad->sample_boot_ns = r.base_boot_ns;
	p->counters.probe.last_gpu_ioctl_boot_ns = r.last_gpu_ioctl_boot_ns;
	return true;
}

void carry_forget(struct carry *c)
{
	free(c->recs);
	c->recs = NULL;
	c->count = 0;
}

static size_t carry_fill(const struct proc_table *table, struct carry_rec *recs)
{
	size_t n = 0;

	for (const struct proc *p = table->list_head; p; p = p->list_next) {
		const struct proc_cadence *cad = &p->cadence;

		if (p->ident.kthread || !cad->have_base)
			continue;
		recs[n++] = (struct carry_rec){
			.tgid = p->tgid,
			.flags = (cad->base_io ? CARRY_BASE_IO : 0) |
				 (cad->rows_started ? CARRY_ROWS : 0),
			.start_ticks = p->ident.start_ticks,
			.base_unix_ms = cad->base_poll.unix_ms,
			.base_boot_ns = cad->base_poll.boot_ns,
			.base_cpu_ns = cad->base_cpu_ns,
			.base_read_bytes = cad->base_read_bytes,
			.base_write_bytes = cad->base_write_bytes,
			.last_gpu_ioctl_boot_ns = p->counters.probe.last_gpu_ioctl_boot_ns,
		};
	}
	return n;
}

void carry_save(struct carry *c, const struct proc_table *table, uint64_t epoch, uint64_t seq,
	uint64_t boot_unix_ms, uint64_t poll_gen)
{
	int fd = c->fds[(c->generation + 1) % 2];
	struct carry_rec *recs = malloc((table->count ? table->count : 1) * sizeof(*recs));
	struct carry_head head = { CARRY_MAGIC, CARRY_VERSION, c->generation + 1, epoch, seq,
		boot_unix_ms, poll_gen, 0, 0 };
	size_t bytes;

	if (fd < 0 || !recs) {
		free(recs);
		return;
	}
	head.count = carry_fill(table, recs);
	head.checksum = carry_checksum(head, recs);
	bytes = head.count * sizeof(*recs);
	if (pwrite(fd, &head, sizeof(head), 0) == (ssize_t)sizeof(head) &&
		pwrite(fd, recs, bytes, sizeof(head)) == (ssize_t)bytes &&
		ftruncate(fd, (off_t)(sizeof(head) + bytes)) == 0)
		c->generation++;
	free(recs);
}

void carry_free(struct carry *c)
{
	if (!c)
		return;
	for (int i = 0; i < 2; i++)
		if (c->fds[i] >= 0)
			close(c->fds[i]);
	free(c->recs);
	free(c);
}
