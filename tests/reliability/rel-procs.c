/*
 * rel-procs.c: the processes the reliability tests watch.  `spawn N M
 * PIDFILE [NAME]`: N long-lived idle children across M cgroups (as root),
 * pids written once all are placed, kept until SIGTERM.  `churn RATE SECS`:
 * RATE short-lived fork+exec+exit per second.  `hold COMM`: sets its comm
 * to COMM's bytes and waits (exec'd by the hostile-input test).
 * Test process; the cgroup part needs root.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Hierarchies a cgroup is made in: v2 (pure or hybrid) and v1 memory/cpu. */
static const char *const roots[] = {
	"/sys/fs/cgroup",
	"/sys/fs/cgroup/unified",
	"/sys/fs/cgroup/memory",
	"/sys/fs/cgroup/cpu",
};
#define NROOTS (sizeof(roots) / sizeof(roots[0]))

static volatile sig_atomic_t stop;

static void on_term(int sig)
{
	stop = 1;
}

static int write_pid(const char *path, pid_t pid)
{
	char buf[32];
	int fd = open(path, O_WRONLY | O_CLOEXEC), n, r = 0;

	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%d\n", (int)pid);
	if (write(fd, buf, (size_t)n) != n)
		r = -errno;
	close(fd);
	return r;
}

/* Moves pid into cgroup NAME-i of every hierarchy that takes it; 1 if any did. */
static int place(const char *name, unsigned i, pid_t pid, int create)
{
	char path[512];
	int placed = 0;

	for (size_t k = 0; k < NROOTS; k++) {
		snprintf(path, sizeof(path), "%s/cgroup.procs", roots[k]);
		if (access(path, W_OK))
			continue;
		snprintf(path, sizeof(path), "%s/%s-%u", roots[k], name, i);
		if (create)
			mkdir(path, 0755);
		strncat(path, "/cgroup.procs", sizeof(path) - strlen(path) - 1);
		if (write_pid(path, pid) == 0)
			placed = 1;
	}
	return placed;
}

static void unplace(const char *name, unsigned m)
{
	char path[512];

	for (unsigned i = 0; i < m; i++)
		for (size_t k = 0; k < NROOTS; k++) {
			snprintf(path, sizeof(path), "%s/%s-%u", roots[k], name, i);
			rmdir(path);
		}
}

static int cmd_spawn(unsigned n, unsigned m, const char *pidfile, const char *name)
{
	pid_t *pids = calloc(n, sizeof(*pids));
	unsigned placed = 0;
	char tmp[4096];
	FILE *f;

	signal(SIGTERM, on_term);
	signal(SIGINT, on_term);
	for (unsigned i = 0; i < n && pids; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			signal(SIGTERM, SIG_DFL);
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			for (;;)
				pause();
		}
		if (pids[i] < 0) {
			fprintf(stderr, "rel-procs: fork %u: %s\n", i, strerror(errno));
			n = i;
			break;
		}
		if (m)
			placed += (unsigned)place(name, i % m, pids[i], i < m);
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", pidfile);
	f = fopen(tmp, "w");
	for (unsigned i = 0; f && i < n; i++)
		fprintf(f, "%d\n", (int)pids[i]);
	if (!f || fclose(f) || rename(tmp, pidfile)) {
		perror(pidfile);
		return 1;
	}
	printf("spawned=%u placed_in_cgroups=%u cgroups=%u\n", n, placed, m);
	fflush(stdout);
	while (!stop)
		pause();
	for (unsigned i = 0; i < n; i++)
		kill(pids[i], SIGKILL);
	for (unsigned i = 0; i < n; i++)
		waitpid(pids[i], NULL, 0);
	if (m)
		unplace(name, m);
	free(pids);
	return 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/*
 * RATE fork+exec("exit") per second for SECS seconds, paced in 10 ms steps.
 * At most CHURN_LIVE children are unreaped at once: short-lived processes
 * come and go, they do not pile up as zombies when forks fall behind.
 */
#define CHURN_LIVE 64

static int cmd_churn(const char *self, unsigned rate, unsigned secs)
{
	double t0 = now_s(), t;
	unsigned long started = 0, reaped = 0;

	while ((t = now_s() - t0) < secs) {
		unsigned long due = (unsigned long)(t * rate);

		/* behind the rate (a slow host): catch up, but only until the time is up */
		while (started < due && now_s() - t0 < secs) {
			pid_t pid;

			while (waitpid(-1, NULL, started - reaped < CHURN_LIVE ? WNOHANG : 0) > 0)
				reaped++;
			pid = fork();
			if (pid == 0) {
				execl(self, self, "exit", (char *)NULL);
				_exit(127);
			}
			if (pid < 0)
				break;
			started++;
		}
		while (waitpid(-1, NULL, WNOHANG) > 0)
			reaped++;
		usleep(10000);
	}
	while (reaped < started && waitpid(-1, NULL, 0) > 0)
		reaped++;
	printf("churned=%lu seconds=%u rate=%.0f\n", started, secs, started / (now_s() - t0));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "exit"))
		return 0;
	if (argc >= 5 && !strcmp(argv[1], "spawn"))
		return cmd_spawn((unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]), argv[4],
			argc > 5 ? argv[5] : "croft-rel");
	if (argc == 4 && !strcmp(argv[1], "churn"))
		return cmd_churn(
			"/proc/self/exe", (unsigned)atoi(argv[2]), (unsigned)atoi(argv[3]));
	if (argc >= 3 && !strcmp(argv[1], "hold")) {
		prctl(PR_SET_NAME, argv[2]);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;)
			pause();
	}
	fprintf(stderr,
		"usage: rel-procs spawn N M PIDFILE [NAME] | churn RATE SECS | hold COMM ...\n");
	return 2;
}
