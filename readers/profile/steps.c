/*
 * steps.c: croft profile's per-poll sums.  A process has a row
 * every poll only while busy (idle, every idle_every polls), so a poll's
 * rows alone would make its sums swing with that cadence.  Instead a row's
 * level figures (rss, threads) hold from its poll until its process's next
 * row, or its last; its rates cover the polls since its process's previous
 * row (a first row: its own poll); its ioctl count is its own poll's.
 * Workers turn rows into steps, what the sums gain at an instant; the join
 * adds them up in time order over every poll the files hold (the instants
 * rows were taken at) while a selected process is alive.  Invoking user,
 * no privilege.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile.h"

static void sample_acc(struct sample *to, const struct sample *from, int64_t k, unsigned kinds)
{
	if (kinds & FIG_LEVEL) {
		to->rss += k * from->rss;
		to->threads += k * from->threads;
	}
	if (kinds & FIG_COUNT)
		to->ioctls += k * from->ioctls;
	if (kinds & FIG_RATE) {
		to->cpu_x1e4 += k * from->cpu_x1e4;
		to->rx_x1e4 += k * from->rx_x1e4;
		to->tx_x1e4 += k * from->tx_x1e4;
		to->read_x1e4 += k * from->read_x1e4;
		to->write_x1e4 += k * from->write_x1e4;
		to->sm_x1e4 += k * from->sm_x1e4;
	}
}

void row_sample(const struct row *r, struct sample *ret)
{
	*ret = (struct sample){
		.ms = r->unix_ms,
		.cpu_x1e4 = (r->has & HAS_CPU) ? r->cpu_x1e4 : 0,
		.rss = (r->has & HAS_RSS) ? r->rss_bytes : 0,
		.threads = (r->has & HAS_THREADS) ? r->threads : 0,
		.ioctls = (r->has & HAS_IOCTL) ? r->ioctl_count : 0,
		.rx_x1e4 = (r->has & HAS_RX) ? r->rx_x1e4 : 0,
		.tx_x1e4 = (r->has & HAS_TX) ? r->tx_x1e4 : 0,
		.read_x1e4 = (r->has & HAS_READ) ? r->read_x1e4 : 0,
		.write_x1e4 = (r->has & HAS_WRITE) ? r->write_x1e4 : 0,
		.sm_x1e4 = (r->has & HAS_SM) ? r->sm_x1e4 : 0,
	};
}

static struct step *steps_push(struct steps *s, int64_t ms)
{
	if (!VEC_ROOM(s->v, s->cap, s->count))
		return NULL;
	s->v[s->count] = (struct step){ .d = { .ms = ms } };
	return &s->v[s->count++];
}

/* The instant after ms, where a row's rates and levels stop counting; a
 * hostile row at INT64_MAX has none after it and stops where it is. */
static int64_t after_ms(int64_t ms)
{
	return ms < INT64_MAX ? ms + 1 : ms;
}

/*
 * The worker's step at ms, made on first use.  A poll's rows come
 * together: most steps are at that poll or just after the one before, the
 * two instants cached (INT64_MIN: none yet).  NULL (and oom set) when
 * out of memory.
 */
static struct step *step_at(struct pworker *w, int64_t ms)
{
	struct i64_slot *slot;
	struct step *st;

	for (int c = 0; c < 2; c++)
		if (w->cached_ms[c] == ms)
			return &w->steps.v[w->cached_step[c]];
	slot = i64map_slot(&w->step_index, ms);
	if (!slot) {
		w->sw.oom = true;
		return NULL;
	}
	if (slot->epoch == w->step_index.epoch) {
		st = &w->steps.v[slot->value];
	} else if ((st = steps_push(&w->steps, ms))) {
		i64map_set(&w->step_index, slot, ms, (uint32_t)(w->steps.count - 1));
	} else {
		w->sw.oom = true;
		return NULL;
	}
	w->cached_ms[1] = w->cached_ms[0];
	w->cached_step[1] = w->cached_step[0];
	w->cached_ms[0] = ms;
	w->cached_step[0] = (uint32_t)(st - w->steps.v);
	return st;
}

void steps_poll(struct pworker *w, int64_t ms)
{
	struct step *st;

	if (ms == w->poll_ms || !filter_in_span(&w->sw.o->filter, ms))
		return;
	if ((st = step_at(w, ms))) {
		st->poll = true;
		w->poll_ms = ms;
	}
}

void steps_first(struct pworker *w, const struct sample *s)
{
	struct step *st = step_at(w, s->ms);

	if (st) {
		sample_acc(&st->d, s, 1, FIG_ALL);
		st->alive++;
	}
}

/* Levels change at s's poll; prev's rate and count give way to s's just after prev's. */
void steps_next(struct pworker *w, const struct sample *prev, const struct sample *s)
{
	struct step *st = step_at(w, s->ms);

	if (!st)
		return;
	sample_acc(&st->d, s, 1, FIG_LEVEL | FIG_COUNT);
	sample_acc(&st->d, prev, -1, FIG_LEVEL);
	if (!(st = step_at(w, after_ms(prev->ms))))
		return;
	sample_acc(&st->d, s, 1, FIG_RATE);
	sample_acc(&st->d, prev, -1, FIG_RATE | FIG_COUNT);
}

void steps_end(struct pworker *w, const struct sample *last)
{
	struct step *st = step_at(w, after_ms(last->ms));

	if (st) {
		sample_acc(&st->d, last, -1, FIG_ALL);
		st->alive--;
	}
}

/*
 * A process's rows go on in another file: a_last's levels hold on until
 * b_first's poll, b_first's rates cover the polls since a_last's, and the
 * process does not end in between.
 */
int steps_continue(struct steps *fix, const struct sample *a_last, const struct sample *b_first)
{
	struct step *st;

	if (b_first->ms <= a_last->ms)
		return 0; /* the same poll twice: nothing in between */
	if (!(st = steps_push(fix, after_ms(a_last->ms))))
		return -ENOMEM;
	sample_acc(&st->d, a_last, 1, FIG_LEVEL);
	sample_acc(&st->d, b_first, 1, FIG_RATE);
	st->alive = 1;
	if (!(st = steps_push(fix, b_first->ms)))
		return -ENOMEM;
	sample_acc(&st->d, a_last, -1, FIG_LEVEL);
	sample_acc(&st->d, b_first, -1, FIG_RATE);
	st->alive = -1;
	return 0;
}

static int cmp_step(const void *a, const void *b)
{
	const struct step *x = a, *y = b;

	return x->d.ms < y->d.ms ? -1 : x->d.ms > y->d.ms;
}

static int steps_gather(
	void *const *pw, int workers, const struct steps *fix, struct steps *ret_all)
{
	size_t n = fix->count;

	for (int k = 0; k < workers; k++)
		n += ((const struct pworker *)pw[k])->steps.count;
	ret_all->v = malloc((n + 1) * sizeof(*ret_all->v));
	if (!ret_all->v)
		return -ENOMEM;
	ret_all->count = 0;
	for (int k = 0; k <= workers; k++) {
		const struct steps *s = k < workers ? &((const struct pworker *)pw[k])->steps : fix;

		if (s->count)
			memcpy(ret_all->v + ret_all->count, s->v, s->count * sizeof(*s->v));
		ret_all->count += s->count;
	}
	if (ret_all->count)
		qsort(ret_all->v, ret_all->count, sizeof(*ret_all->v), cmp_step);
	return 0;
}

int steps_sum(void *const *pw, int workers, const struct steps *fix, struct profile_result *res)
{
	struct steps all;
	struct sample sum = { 0 };
	int64_t alive = 0;
	size_t out = 0;

	if (steps_gather(pw, workers, fix, &all) < 0)
		return -ENOMEM;
	res->samples_v = malloc((all.count + 1) * sizeof(*res->samples_v));
	if (!res->samples_v) {
		free(all.v);
		return -ENOMEM;
	}
	for (size_t i = 0; i < all.count;) {
		int64_t ms = all.v[i].d.ms;
		bool poll = false;

		for (; i < all.count && all.v[i].d.ms == ms; i++) {
			sample_acc(&sum, &all.v[i].d, 1, FIG_ALL);
			alive += all.v[i].alive;
			poll |= all.v[i].poll;
		}
		if (poll && alive > 0) {
			res->samples_v[out] = sum;
			res->samples_v[out++].ms = ms;
		}
	}
	res->samples = out;
	free(all.v);
	return 0;
}

void steps_free(struct steps *s)
{
	free(s->v);
	*s = (struct steps){ 0 };
}
