/*
 * nvml_thread.c: NVML's rounds off the poll loop.  NVML calls can take tens
 * of milliseconds and have hung whole hosts, so they run on a thread of
 * their own: the loop asks for a round (at most once a second), the thread
 * runs it and hands the result back through a slot and an eventfd the loop
 * watches; it never touches libevent.  A round that never comes back costs
 * no poll: the loop goes on with the last result, which ages into "stale".
 * The library is opened on the thread too (nvmlInit can take seconds).
 * croft-sampler, croft user, after the drop and the sandbox.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "gpu.h"

struct nvml {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	int efd;
	/* under lock */
	bool stop, asked, running, ready_full, hang_counted;
	uint64_t round_start_ns, last_start_ns;
	uint64_t rounds, hangs;
	struct nvml_result ready; /* the round done, not collected yet */
	/* the thread's own */
	struct nvml_result work;
	struct nvml_lib *lib;
	uint64_t next_open_ns;
	char problem[NVML_PROBLEM_MAX]; /* why the library is not open */
};

static void round_run(struct nvml *n)
{
	uint64_t now = clock_mono_ns();

	if (!n->lib && now >= n->next_open_ns) {
		n->lib = nvml_lib_open(n->problem, sizeof(n->problem));
		if (!n->lib)
			n->next_open_ns = now + NVML_RETRY_MS * 1000000ull;
	}
	if (n->lib) {
		nvml_lib_read(n->lib, &n->work);
	} else {
		n->work.loaded = false;
		n->work.gpus_count = n->work.procs_count = 0;
		memcpy(n->work.problem, n->problem, sizeof(n->problem));
	}
	n->work.taken_mono_ns = clock_mono_ns();
}

static void *nvml_main(void *arg)
{
	struct nvml *n = arg;
	uint64_t one = 1;

	pthread_mutex_lock(&n->lock);
	while (!n->stop) {
		struct nvml_result done;

		if (!n->asked) {
			pthread_cond_wait(&n->wake, &n->lock);
			continue;
		}
		n->asked = false;
		n->running = true;
		pthread_mutex_unlock(&n->lock);
		round_run(n);
		pthread_mutex_lock(&n->lock);
		done = n->ready; /* the slot's result, uncollected or old, is reused */
		n->ready = n->work;
		n->work = done;
		n->ready_full = true;
		n->running = false;
		n->hang_counted = false;
		n->rounds++;
		if (write(n->efd, &one, sizeof(one)) < 0) {
			/* EAGAIN only at a counter near 2^64: the loop reads the slot anyway */
		}
	}
	pthread_mutex_unlock(&n->lock);
	nvml_lib_close(n->lib);
	return NULL;
}

int nvml_new(struct nvml **ret)
{
	struct nvml *n = calloc(1, sizeof(*n));
	int r;

	if (!n)
		return -ENOMEM;
	pthread_mutex_init(&n->lock, NULL);
	pthread_cond_init(&n->wake, NULL);
	n->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r = n->efd < 0 ? -errno : -pthread_create(&n->thread, NULL, nvml_main, n);
	if (r < 0) {
		if (n->efd >= 0)
			close(n->efd);
		free(n);
		return r;
	}
	*ret = n;
	return 0;
}

void nvml_free(struct nvml *n)
{
	bool hung;

	if (!n)
		return;
	pthread_mutex_lock(&n->lock);
	hung = n->running && clock_mono_ns() - n->round_start_ns > NVML_DEADLINE_MS * 1000000ull;
	n->stop = true;
	pthread_cond_signal(&n->wake);
	pthread_mutex_unlock(&n->lock);
	if (hung) { /* a call that never returns: the thread and what it uses stay */
		pthread_detach(n->thread);
		return;
	}
	pthread_join(n->thread, NULL);
	close(n->efd);
	nvml_result_free(&n->ready);
	nvml_result_free(&n->work);
	pthread_mutex_destroy(&n->lock);
	pthread_cond_destroy(&n->wake);
	free(n);
}

int nvml_fd(const struct nvml *n)
{
	return n->efd;
}

void nvml_kick(struct nvml *n)
{
	uint64_t now = clock_mono_ns();

	pthread_mutex_lock(&n->lock);
	if (n->running && !n->hang_counted &&
		now - n->round_start_ns > NVML_DEADLINE_MS * 1000000ull) {
		n->hangs++;
		n->hang_counted = true;
	}
	if (!n->running && !n->asked &&
		(!n->last_start_ns || now - n->last_start_ns >= NVML_INTERVAL_MS * 1000000ull)) {
		n->asked = true;
		n->round_start_ns = n->last_start_ns = now;
		pthread_cond_signal(&n->wake);
	}
	pthread_mutex_unlock(&n->lock);
}

bool nvml_collect(struct nvml *n, struct nvml_result *last)
{
	struct nvml_result old;
	uint64_t count;
	bool got;

	if (read(n->efd, &count, sizeof(count)) < 0) {
		/* EAGAIN: nothing signalled since the last read; the slot decides */
	}
	pthread_mutex_lock(&n->lock);
	got = n->ready_full;
	if (got) {
		old = *last;
		*last = n->ready;
		n->ready = old; /* its procs buffer goes back to the thread */
		n->ready_full = false;
	}
	pthread_mutex_unlock(&n->lock);
	return got;
}

bool nvml_hung(struct nvml *n, uint64_t now_mono_ns)
{
	bool hung;

	pthread_mutex_lock(&n->lock);
	hung = n->running && now_mono_ns - n->round_start_ns > NVML_DEADLINE_MS * 1000000ull;
	pthread_mutex_unlock(&n->lock);
	return hung;
}

void nvml_counts(struct nvml *n, uint64_t *ret_rounds, uint64_t *ret_hangs)
{
	pthread_mutex_lock(&n->lock);
	*ret_rounds = n->rounds;
	*ret_hangs = n->hangs;
	pthread_mutex_unlock(&n->lock);
}
