/*
 * options.c: the options croft stats and croft profile share (filters,
 * --json, --threads, --config, paths), parsed into struct read_opts
 * (engine.h).  Runs as the invoking user, no privilege.
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "priv.h"
#include "readers.h"
#include "usage.h"

static void usage(FILE *out, bool profile)
{
	if (profile)
		fprintf(out,
			"usage: croft profile SELECTOR... [--since T] [--until T] [--host NAME]\n"
			"                     [--json] [--svg FILE] [PATH...]\n"
			"One process, container, pod, label or framework over time (SELECTOR:\n"
			"--tgid N, --container ID, --pod UID, --label L, --framework F; several\n"
			"select the rows that match them all); --svg draws CPU, RSS and GPU\n"
			"ioctls against time.\n");
	else
		fprintf(out,
			"usage: croft stats [--since T] [--until T] [--container ID] [--pod UID]\n"
			"                   [--label L] [--framework F] [--tgid N] [--host NAME]\n"
			"                   [--json] [PATH...]\n"
			"Figures over the dataset: processes, GPU-held and idle hours, "
			"frameworks,\n"
			"syscalls (the list: croft(1)).\n");
	fprintf(out, "\nPATH: .jsonl and .jsonl.zst files and directories of them (default: the\n"
		     "data_dir of the configuration; while that is not set, ./croft-data where it\n"
		     "exists and is yours; links below a PATH are not followed).  T: ISO 8601\n"
		     "UTC (2026-10-20T14:00:00Z), unix seconds (10 digits) or milliseconds (13\n"
		     "digits), or a time that long before now (-2h and 2h alike, 30m, 1d12h);\n"
		     "--since is inclusive, --until exclusive.\n"
		     "--container and --pod take an id (a pod's UID) or a prefix of one; --host\n"
		     "a row's host, exactly.  Other options: --config FILE, --threads N (default:\n"
		     "one per CPU), --jansson (the reference parser only).\n"
		     "Exit status: 0 healthy, 3 figures printed but damage skipped, 1 error,\n"
		     "2 usage (croft(1)).\n");
}

#define UNIX_S_DIGITS  10 /* 2001-09-09 .. 2286-11-20 */
#define UNIX_MS_DIGITS 13

/* Unix seconds or milliseconds, told apart by their length: any other
 * length could be either, so it is refused rather than guessed. */
static int parse_unix_time(const char *text, int64_t *ret_ms)
{
	size_t digits = strspn(text, "0123456789");
	long long v;

	if (text[digits] || (digits != UNIX_S_DIGITS && digits != UNIX_MS_DIGITS))
		return -EINVAL;
	v = strtoll(text, NULL, 10);
	*ret_ms = digits == UNIX_S_DIGITS ? (int64_t)v * 1000 : (int64_t)v;
	return 0;
}

/* "-2h" or "2h", "30m", "1d12h": that long before now. */
static int parse_relative_time(const char *text, int64_t *ret_ms)
{
	struct timespec now;
	uint64_t ago_ms;

	if (*text == '-')
		text++;
	if (*text < '0' || *text > '9' || strspn(text, "0123456789") == strlen(text) ||
		config_parse_duration_ms(text, &ago_ms) < 0)
		return -EINVAL;
	clock_gettime(CLOCK_REALTIME, &now);
	*ret_ms = (int64_t)now.tv_sec * 1000 + now.tv_nsec / 1000000 - (int64_t)ago_ms;
	return 0;
}

static int parse_time_ms(const char *text, int64_t *ret_ms)
{
	struct tm tm = { 0 };
	int ms = 0, n = 0;

	if (parse_unix_time(text, ret_ms) == 0 || parse_relative_time(text, ret_ms) == 0)
		return 0;
	if (sscanf(text, "%4d-%2d-%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &n) != 3)
		return -EINVAL;
	text += n;
	if (*text == 'T' || *text == ' ') {
		n = 0;
		if (sscanf(text + 1, "%2d:%2d%n", &tm.tm_hour, &tm.tm_min, &n) != 2)
			return -EINVAL;
		text += 1 + n;
		if (*text == ':') {
			n = 0;
			if (sscanf(text + 1, "%2d%n", &tm.tm_sec, &n) != 1)
				return -EINVAL;
			text += 1 + n;
			if (*text == '.') {
				int digits = 0;
				for (text++; *text >= '0' && *text <= '9'; text++, digits++)
					if (digits < 3)
						ms = ms * 10 + (*text - '0');
				for (; digits < 3; digits++)
					ms *= 10;
			}
		}
	}
	if (*text == 'Z')
		text++;
	else if (!strcmp(text, "+00:00"))
		text += 6;
	if (*text)
		return -EINVAL;
	if (tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
		tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60)
		return -EINVAL;
	tm.tm_year -= 1900;
	tm.tm_mon -= 1;
	*ret_ms = (int64_t)timegm(&tm) * 1000 + ms;
	return 0;
}

void format_time(int64_t ms, char *buf, size_t size)
{
	/* floored, as the clock's second before the epoch; no subtraction, which
	 * overflowed at INT64_MIN (a hostile row's unix_ms) */
	time_t s = (time_t)(ms / 1000 - (ms % 1000 < 0));
	int frac = (int)((ms % 1000 + 1000) % 1000);
	struct tm tm;
	char base[32];

	gmtime_r(&s, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	if (frac)
		snprintf(buf, size, "%s.%03dZ", base, frac);
	else
		snprintf(buf, size, "%sZ", base);
}

enum {
	OPT_SINCE = 256,
	OPT_UNTIL,
	OPT_CONTAINER,
	OPT_LABEL,
	OPT_FRAMEWORK,
	OPT_TGID,
	OPT_POD,
	OPT_JSON,
	OPT_THREADS,
	OPT_CONFIG,
	OPT_SVG,
	OPT_JANSSON,
	OPT_HOST,
};

static const struct option long_options[] = {
	{ "since", required_argument, NULL, OPT_SINCE },
	{ "until", required_argument, NULL, OPT_UNTIL },
	{ "container", required_argument, NULL, OPT_CONTAINER },
	{ "label", required_argument, NULL, OPT_LABEL },
	{ "framework", required_argument, NULL, OPT_FRAMEWORK },
	{ "tgid", required_argument, NULL, OPT_TGID },
	{ "pod", required_argument, NULL, OPT_POD },
	{ "json", no_argument, NULL, OPT_JSON },
	{ "threads", required_argument, NULL, OPT_THREADS },
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "svg", required_argument, NULL, OPT_SVG },
	{ "jansson", no_argument, NULL, OPT_JANSSON },
	{ "host", required_argument, NULL, OPT_HOST },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static int parse_time_opt(struct read_opts *o, const char *opt, const char *text, int64_t *ret_ms)
{
	if (parse_time_ms(text, ret_ms) == 0)
		return 0;
	return -usage_error(o->program,
		"%s '%.64s': not a time (ISO 8601 like 2026-10-20T14:00:00Z, "
		"unix seconds of 10 digits or milliseconds of 13, or a time before now like -2h "
		"or 30m)",
		opt, text);
}

/* One option; a bad one is said here (usage_error) and gives -USAGE_EXIT. */
static int parse_opt(struct read_opts *o, int c, char *const *argv, const char **config)
{
	struct filter *f = &o->filter;
	long long number;

	switch (c) {
	case OPT_SINCE:
		f->has_since = true;
		return parse_time_opt(o, "--since", optarg, &f->since_ms);
	case OPT_UNTIL:
		f->has_until = true;
		return parse_time_opt(o, "--until", optarg, &f->until_ms);
	case OPT_CONTAINER:
		f->container = (struct strv){ optarg, (uint32_t)strlen(optarg) };
		return 0;
	case OPT_LABEL:
		f->label = (struct strv){ optarg, (uint32_t)strlen(optarg) };
		return 0;
	case OPT_POD:
		f->pod = (struct strv){ optarg, (uint32_t)strlen(optarg) };
		return 0;
	case OPT_HOST:
		f->host = (struct strv){ optarg, (uint32_t)strlen(optarg) };
		return 0;
	case OPT_FRAMEWORK:
		f->framework = (struct strv){ optarg, (uint32_t)strlen(optarg) };
		return 0;
	case OPT_TGID:
		f->has_tgid = true;
		if (usage_number(optarg, 0, INT32_MAX, &number) < 0)
			return -usage_error(o->program, "--tgid '%.64s': not a process id (0..%d)",
				optarg, INT32_MAX);
		f->tgid = number;
		return 0;
	case OPT_JSON:
		o->json = true;
		return 0;
	case OPT_THREADS:
		if (usage_number(optarg, 1, DS_THREADS_MAX, &number) < 0)
			return -usage_error(o->program, "--threads '%.64s': expected 1..%d", optarg,
				DS_THREADS_MAX);
		o->threads = (int)number;
		return 0;
	case OPT_CONFIG:
		*config = optarg;
		return 0;
	case OPT_SVG:
		if (strcmp(o->cmd, "profile"))
			return -usage_error(o->program, "--svg is an option of croft profile");
		o->svg_path = optarg;
		return 0;
	case OPT_JANSSON:
		o->jansson_only = true;
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	default:
		return -usage_getopt(o->program, argv, c);
	}
}

static int load_config(struct read_opts *o, const char *path, bool explicit_path)
{
	static struct croft_config cfg;
	char *errors = NULL;

	config_defaults(&cfg);
	/* The default file may be readable by the croft group only: the
	 * readers then use the defaults (data_dir, poll_interval), and say so. */
	if (!explicit_path && access(path, R_OK) < 0 && errno == EACCES) {
		fprintf(stderr, "croft %s: %s: %s; using the defaults (or give --config)\n", o->cmd,
			path, strerror(errno));
	} else if (config_load(path,
			   explicit_path ? CONFIG_MISSING_REFUSED : CONFIG_MISSING_DEFAULTS, &cfg,
			   &errors) < 0) {
		fprintf(stderr, "croft %s: %s", o->cmd, errors ? errors : "bad configuration\n");
		free(errors);
		return -EINVAL;
	}
	o->poll_ms = cfg.poll_interval_ms; /* config.c's default, or 100 ms and more */
	o->gap_ms = o->poll_ms * cfg.idle_every * GAP_POLLS;
	o->default_path[0] = cfg.data_dir;
	holders_parse(o, cfg.gpu_system_holders);
	return 0;
}

/*
 * Whether ./croft-data may stand in for the default data_dir: a directory
 * no one but its owner may write, owned by whoever runs the reader or, for
 * root, by the user croft run drops to (croft, else nobody): a directory
 * anyone else made in the working directory (/tmp, a shared project) would
 * decide what root's report says.
 */
static bool local_dir_trusted(const struct stat *st)
{
	struct priv_user daemon_user;

	if (!S_ISDIR(st->st_mode) || (st->st_mode & (S_IWGRP | S_IWOTH)))
		return false;
	if (st->st_uid == geteuid())
		return true;
	return geteuid() == 0 && priv_lookup_user(NULL, &daemon_user) == 0 &&
	       st->st_uid == daemon_user.uid;
}

/*
 * No PATH given: the configured data_dir.  While that is the default one
 * and the working directory holds croft-data/ (where `make run` and the
 * README's `croft run --data-dir ./croft-data` write), that one, said on
 * stderr; one someone else could have made is said and not read.
 */
static void default_path(struct read_opts *o)
{
	static char local[] = READ_LOCAL_DATA_DIR;
	struct stat st;

	if (strcmp(o->default_path[0], CROFT_DATA_DIR) || lstat(local, &st) < 0)
		return;
	if (!local_dir_trusted(&st)) {
		fprintf(stderr,
			"croft %s: ./%s is here but not read: owned by uid %u, mode %o (not yours, "
			"nor croft's); give it as PATH to read it\n",
			o->cmd, local, (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777));
		return;
	}
	fprintf(stderr,
		"croft %s: reading ./%s, found here (data_dir is the default, " CROFT_DATA_DIR
		"); give a PATH for another\n",
		o->cmd, local);
	o->default_path[0] = local;
}

int read_opts_parse(int argc, char **argv, bool profile, struct read_opts *o)
{
	const char *config = NULL;
	int c;

	memset(o, 0, sizeof(*o));
	o->cmd = profile ? "profile" : "stats";
	o->program = profile ? "croft profile" : "croft stats";
	o->threads = ds_default_threads();
	optind = 1;
	opterr = 0; /* said by usage_getopt, naming the subcommand */
	while ((c = getopt_long(argc, argv, ":vh", long_options, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout, profile);
			return 1;
		}
		if (parse_opt(o, c, argv, &config) < 0)
			return -EINVAL;
	}
	if (profile && !o->filter.has_tgid && !o->filter.container.ptr && !o->filter.label.ptr &&
		!o->filter.framework.ptr && !o->filter.pod.ptr) {
		usage_error(o->program, "give --tgid, --container, --pod, --label or --framework");
		return -EINVAL;
	}
	if (!config && getenv(CONFIG_PATH_ENV) && *getenv(CONFIG_PATH_ENV))
		config = getenv(CONFIG_PATH_ENV);
	if (load_config(o, config ? config : CROFT_CONF_PATH, config != NULL) < 0)
		return -EINVAL;
	o->paths = argv + optind;
	o->paths_count = argc - optind;
	if (o->paths_count == 0) {
		default_path(o);
		o->paths = o->default_path;
		o->paths_count = 1;
	}
	return 0;
}
