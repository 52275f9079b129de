/*
 * files.c: which files to read (walking directories) and the worker
 * threads that read them, one file at a time each.  croft stats/profile,
 * invoking user, no privilege.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "engine.h"

#define WALK_DEPTH_MAX 16

struct collect {
	struct ds_files files;
	size_t cap;
	char *err;
	size_t err_size;
	int depth;            /* of the directory being walked, below its root */
	size_t links_skipped; /* symbolic links met below the roots, not followed */
};

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static int collect_add(struct collect *c, const char *path, const struct stat *st, bool named)
{
	char *copy;

	for (size_t i = 0; i < c->files.n; i++)
		if (c->files.v[i].dev == st->st_dev && c->files.v[i].ino == st->st_ino)
			return 0;
	if (c->files.n >= DS_FILES_MAX) {
		snprintf(c->err, c->err_size, "more than %d files", DS_FILES_MAX);
		return -E2BIG;
	}
	if (!VEC_ROOM(c->files.v, c->cap, c->files.n) || !(copy = strdup(path)))
		return -ENOMEM;
	c->files.v[c->files.n] = (struct ds_file){ .path = copy,
		.size_bytes = (uint64_t)st->st_size,
		.zst = has_suffix(path, ".zst"),
		.named = named,
		.dev = st->st_dev,
		.ino = st->st_ino };
	c->files.n++;
	return 0;
}

/* The directories from a root down to one being walked: a bind mount can make a loop. */
struct walk_chain {
	const struct walk_chain *up;
	dev_t dev;
	ino_t ino;
};

static bool in_chain(const struct walk_chain *chain, const struct stat *st)
{
	for (; chain; chain = chain->up)
		if (chain->dev == st->st_dev && chain->ino == st->st_ino)
			return true;
	return false;
}

/*
 * Below the paths given, entries are taken as they are: a symbolic link is
 * not followed (a link to ".", or to a file the reader was not asked to
 * read, in a directory someone else writes), only counted.
 */
static int collect_dir(struct collect *c, const char *dir, int dirfd, const struct walk_chain *up)
{
	struct walk_chain here = { .up = up };
	struct stat st;
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (fstat(dirfd, &st) < 0 || in_chain(up, &st)) {
		close(dirfd);
		return 0;
	}
	here.dev = st.st_dev;
	here.ino = st.st_ino;
	d = fdopendir(dirfd);
	if (!d) {
		close(dirfd);
		return -ENOMEM;
	}
	while (r == 0 && (de = readdir(d)) != NULL) {
		char path[PATH_MAX];
		int sub;

		if (de->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISLNK(st.st_mode)) {
			c->links_skipped++;
		} else if (S_ISDIR(st.st_mode) && c->depth < WALK_DEPTH_MAX) {
			sub = openat(dirfd, de->d_name,
				O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
			if (sub < 0) {
				/* e.g. a runtime dir inside the data dir: not ours to read */
				fputs("croft: ", stderr);
				put_text(stderr, path, 0, 0); /* a name anyone may have chosen */
				fprintf(stderr, ": %s (not read)\n", strerror(errno));
				continue;
			}
			c->depth++;
			r = collect_dir(c, path, sub, &here);
			c->depth--;
		} else if (S_ISREG(st.st_mode) && (has_suffix(de->d_name, ".jsonl") ||
							  has_suffix(de->d_name, ".jsonl.zst"))) {
			r = collect_add(c, path, &st, false);
		}
	}
	closedir(d);
	return r;
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(((const struct ds_file *)a)->path, ((const struct ds_file *)b)->path);
}

/*
 * The writer renames X.jsonl.zst.tmp to X.jsonl.zst before it removes
 * X.jsonl: a listing in between sees both.  Read the segment once (.zst).
 */
static void drop_compressed_twins(struct ds_files *files)
{
	size_t out = 0;

	for (size_t i = 0; i < files->n; i++) {
		const char *p = files->v[i].path;
		size_t n = strlen(p);
		bool twin = i + 1 < files->n && has_suffix(p, ".jsonl") &&
			    !strncmp(files->v[i + 1].path, p, n) &&
			    !strcmp(files->v[i + 1].path + n, ".zst");
		if (twin)
			free(files->v[i].path);
		else
			files->v[out++] = files->v[i];
	}
	files->n = out;
}

int ds_collect(
	char *const *paths, int count, struct ds_files *ret_files, char *err, size_t err_size)
{
	struct collect c = { .err = err, .err_size = err_size };
	int r = 0;

	for (int i = 0; r == 0 && i < count; i++) {
		struct stat st;
		int fd;
		/* a path given is the reader's choice: followed where it is a link */
		bool found = stat(paths[i], &st) == 0;

		if (found && !S_ISDIR(st.st_mode)) {
			r = collect_add(&c, paths[i], &st, true);
		} else if (found &&
			   (fd = open(paths[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC)) >= 0) {
			r = collect_dir(&c, paths[i], fd, NULL);
		} else {
			r = -errno; /* stat's or open's */
			snprintf(err, err_size, "%s: %s", paths[i], strerror(errno));
		}
	}
	if (c.links_skipped)
		fprintf(stderr, "croft: %zu symbolic link%s below the paths given not followed\n",
			c.links_skipped, c.links_skipped == 1 ? "" : "s");
	if (r < 0) {
		ds_files_free(&c.files);
		return r;
	}
	if (c.files.n)
		qsort(c.files.v, c.files.n, sizeof(*c.files.v), cmp_path);
	drop_compressed_twins(&c.files);
	*ret_files = c.files;
	return 0;
}

void ds_files_free(struct ds_files *files)
{
	for (size_t i = 0; i < files->n; i++)
		free(files->v[i].path);
	free(files->v);
	files->v = NULL;
	files->n = 0;
}

struct pool {
	const struct ds_files *files;
	const struct ds_sink *sink;
	struct ds_report *rep;
	bool jansson_only;
	pthread_mutex_t lock;
	size_t next;   /* next file to hand out */
	size_t *order; /* biggest files first: the last one ends soonest */
};

struct worker {
	struct pool *pool;
	void *ctx;
	pthread_t thread;
	int error;
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct pool *p = w->pool;
	struct file_reader *fr = NULL;

	w->error = file_reader_new(p->sink, w->ctx, p->rep, p->jansson_only, &fr);
	if (w->error < 0)
		return NULL;
	for (;;) {
		pthread_mutex_lock(&p->lock);
		size_t i = p->next < p->files->n ? p->order[p->next++] : SIZE_MAX;
		pthread_mutex_unlock(&p->lock);
		if (i == SIZE_MAX)
			break;
		file_reader_read(fr, &p->files->v[i], (uint32_t)i);
	}
	file_reader_free(fr);
	return NULL;
}

static int cmp_size_desc(const void *a, const void *b, void *files)
{
	const struct ds_file *x = &((const struct ds_files *)files)->v[*(const size_t *)a];
	const struct ds_file *y = &((const struct ds_files *)files)->v[*(const size_t *)b];

	if (x->size_bytes != y->size_bytes)
		return x->size_bytes > y->size_bytes ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

int ds_read(const struct ds_files *files, int threads, bool jansson_only,
	const struct ds_sink *sink, void *const *ctxs, struct ds_report *rep)
{
	struct pool p = { files, sink, rep, jansson_only, PTHREAD_MUTEX_INITIALIZER, 0, NULL };
	struct worker w[DS_THREADS_MAX];
	int started = 0, r = 0;

	if (threads < 1)
		threads = 1;
	if (threads > DS_THREADS_MAX)
		threads = DS_THREADS_MAX;
	if ((size_t)threads > files->n)
		threads = files->n ? (int)files->n : 1;
	p.order = calloc(files->n + 1, sizeof(*p.order));
	if (!p.order)
		return -ENOMEM;
	for (size_t i = 0; i < files->n; i++)
		p.order[i] = i;
	qsort_r(p.order, files->n, sizeof(*p.order), cmp_size_desc, (void *)files);
	for (int i = 0; i < threads; i++)
		w[i] = (struct worker){ &p, ctxs[i], 0, 0 };
	if (threads == 1) {
		worker_main(&w[0]);
		r = w[0].error;
	} else {
		for (; started < threads; started++)
			if (pthread_create(&w[started].thread, NULL, worker_main, &w[started]) != 0)
				break;
		if (started == 0)
			r = -EAGAIN;
	}
	for (int i = 0; i < started; i++) {
		pthread_join(w[i].thread, NULL);
		if (w[i].error < 0)
			r = w[i].error;
	}
	free(p.order);
	return r;
}

int ds_default_threads(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	long n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (int)n : 1;
}
