/*
 * main.c: croft-writer.  Started as root it creates, locks and hands over the
 * data directory, binds writer.sock and writer.ctl, keeps croft.conf's
 * directory open for reloads, then drops to the croft user with no
 * capabilities under the seccomp sandbox; started unprivileged it runs as
 * its caller.  Then recovery, the compression thread and the loop.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <unistd.h>

#include <dirent.h>
#include <event2/event.h>

#include "ctl.h"
#include "daemon.h"
#include "handover.h"
#include "log.h"
#include "priv.h"
#include "writer.h"

static const char writer_usage[] =
	"  -d, --data-dir DIR      dataset directory (default from croft.conf, else " CROFT_DATA_DIR
	")\n";

static void parse_args(int argc, char **argv, struct daemon_opts *opts, const char **ret_data_dir)
{
	static const struct option longopts[] = {
		DAEMON_LONG_OPTIONS,
		{ "data-dir", required_argument, NULL, 'd' },
		{ NULL, 0, NULL, 0 },
	};
	int opt;

	*ret_data_dir = NULL;
	daemon_opts_init(opts, "croft-writer", writer_usage);
	while ((opt = getopt_long(argc, argv, DAEMON_SHORT_OPTIONS "d:", longopts, NULL)) != -1) {
		if (daemon_option(opts, opt, optarg))
			continue;
		if (opt == 'd')
			*ret_data_dir = optarg;
		else
			daemon_bad_option(opts, argv, opt);
	}
	daemon_args_done(opts, argc, argv);
}

static void load_config(struct writer *w, const struct daemon_opts *opts, const char *data_dir)
{
	daemon_load_config(opts, &w->cfg);
	if (data_dir)
		snprintf(w->cfg.data_dir, sizeof(w->cfg.data_dir), "%s", data_dir);
	w->config_path = opts->config_path;
	daemon_checked(opts, "%s: configuration OK", opts->config_path);
}

/* As root: the files an earlier run left may be root's; the croft user must own
 * them.  Each is opened without following a symlink and handed over only when
 * it is root's or croft's alone (handover_file: a hard link is refused). */
static void chown_dataset(int dirfd, const struct priv_user *user)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *dir = fd < 0 ? NULL : fdopendir(fd);
	struct dirent *de;

	if (!dir)
		fatal("data dir");
	while ((de = readdir(dir))) {
		if (strncmp(de->d_name, "croft-dataset", 13) != 0)
			continue;
		int file = openat(dirfd, de->d_name,
			O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		int r = file < 0 ? -errno : handover_file(file, user->uid, user->gid);
		if (r < 0)
			log_warnx("%s: not handed to %s: %s", de->d_name, user->name,
				handover_strerror(r));
		if (file >= 0)
			close(file);
	}
	closedir(dir);
}

/* A data_dir that cannot be written is refused at start, in one line: which
 * directory, why, and the two usual fixes (its owner; under systemd, the
 * sandbox, which croft-generator opens to data_dir at each daemon-reload). */
static void __attribute__((noreturn)) refuse_data_dir(const char *dir, int err)
{
	fatalx("data_dir %s: cannot write there (%s): make it a directory the croft user may "
	       "write (install -d -o croft -g croft -m 0750 %s) and, under systemd, run "
	       "'systemctl daemon-reload' after changing data_dir so that croft-writer.service "
	       "may write there",
		dir, strerror(err), dir);
}

/* The data dir's fd is opened before the drop: every file is reached through it,
 * whatever the permissions of the directories above.  Its lock, held until
 * exit, keeps a second writer (another croft run) out of the same dataset. */
static int open_data_dir(const struct writer *w, const struct priv_user *user, bool root)
{
	struct handover_want want = { .mode = 0750,
		.parents_mode = 0755,
		.owner = root ? user->uid : (uid_t)-1,
		.group = user->gid,
		.daemon_uid = user->uid };
	int dirfd, r = handover_dir(w->cfg.data_dir, &want, &dirfd);

	if (r == -ELOOP || r == -EPERM)
		fatalx("data_dir %s: refused: %s", w->cfg.data_dir, handover_strerror(r));
	if (r < 0)
		refuse_data_dir(w->cfg.data_dir, -r);
	if (faccessat(dirfd, ".", W_OK | X_OK, AT_EACCESS) < 0)
		refuse_data_dir(w->cfg.data_dir, errno);
	if (flock(dirfd, LOCK_EX | LOCK_NB) < 0) {
		if (errno == EWOULDBLOCK)
			fatalx("%s is in use by another croft-writer: stop that one, or give "
			       "this one another --data-dir",
				w->cfg.data_dir);
		fatal("lock %s", w->cfg.data_dir);
	}
	if (root)
		chown_dataset(dirfd, user);
	return dirfd;
}

/*
 * As root: the data dir made, locked and handed to the croft user, the
 * sockets bound (the croft group may read the status, also when the unit
 * starts us as croft: then user.gid is our own, nothing to chown), and
 * croft.conf's directory kept for reloads.  Returns the data dir's fd.
 */
static int acquire(struct writer *w, const struct daemon_opts *opts, struct priv_user *user)
{
	char path[PATH_MAX];
	int dirfd, ret;

	daemon_user(opts, user);
	w->peer_uid = user->uid;
	if (!(w->base = event_base_new()))
		fatalx("event_base_new");
	dirfd = open_data_dir(w, user, geteuid() == 0);
	if ((ret = daemon_runtime_dir(opts->runtime_dir, user->gid)) < 0)
		fatalx("%s: %s", opts->runtime_dir, handover_strerror(ret));
	snprintf(path, sizeof(path), "%s/writer.sock", opts->runtime_dir);
	if ((ret = peers_listen(w, path, user->gid)) < 0)
		fatalx("%s: cannot listen: %s", path, strerror(-ret));
	ret = daemon_control_new(
		w->base, opts->runtime_dir, "writer.ctl", user->gid, writer_ctl, w, &w->ctl, path);
	if (ret < 0)
		fatalx("%s: cannot listen: %s", path, strerror(-ret));
	daemon_keep_file(opts->config_path); /* reload reads it as the croft user */
	return dirfd;
}

/* No capabilities at all; said when it was a drop from root. */
static void drop(const struct priv_user *user)
{
	bool root = geteuid() == 0;

	daemon_drop(user, NULL, 0, NULL);
	if (root)
		log_info("running as %s (uid %u) with no capabilities", user->name,
			(unsigned)user->uid);
}

static void open_dataset(struct writer *w, int dirfd)
{
	char(*leftovers)[SEG_NAME_MAX] = NULL;
	size_t nleftovers = 0;
	int ret;

	ret = dataset_open(dirfd, w->cfg.rotate_interval_ms, &w->ds, &leftovers, &nleftovers);
	if (ret < 0)
		fatalx("%s: recovery: %s", w->cfg.data_dir, strerror(-ret));
	ret = writer_start(w, leftovers, nleftovers);
	free(leftovers);
	if (ret < 0)
		fatalx("%s: %s", w->cfg.data_dir, strerror(-ret));
	log_info("%s: committed epoch %016llx seq %llu, live file %llu bytes", w->cfg.data_dir,
		(unsigned long long)w->ds->rec.epoch, (unsigned long long)w->ds->rec.seq,
		(unsigned long long)w->ds->live_bytes);
}

static void tear_down(struct writer *w, int dirfd)
{
	peers_free(w);
	compress_stop(w->comp);
	ctl_server_free(w->ctl);
	dataset_close(w->ds);
	close(dirfd);
	event_base_free(w->base);
}

int main(int argc, char **argv)
{
	static struct writer w;
	struct daemon_opts opts;
	struct priv_user user;
	const char *data_dir;
	int dirfd;

	parse_args(argc, argv, &opts, &data_dir);
	load_config(&w, &opts, data_dir);
	dirfd = acquire(&w, &opts, &user);
	drop(&user);
	open_dataset(&w, dirfd);
	daemon_run(w.base, NULL, writer_reload, &w, "writing");
	tear_down(&w, dirfd);
	return 0;
}
