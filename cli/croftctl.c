/*
 * croftctl.c: the control client of the three daemons: status (a table or
 * JSON), reload, label.  One request per daemon over <runtime>/<daemon>.ctl
 * (common/ctl.h).  Runs as the invoking user; the daemons decide who may do
 * what (status: root and the croft group; reload, label: root).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "config.h"
#include "ctl.h"
#include "msg.h"
#include "probe_host.h"
#include "usage.h"

static const char *const daemons[] = { "croft-writer", "croft-sampler", "croft-probe" };
#define NDAEMONS (sizeof(daemons) / sizeof(daemons[0]))

static const char *runtime_dir = CROFT_RUNTIME_DIR;

struct answer {
	const char *daemon;
	int ret;    /* ctl_request: 0 or -errno (no answer) */
	int status; /* the daemon's: 0 or a positive errno */
	char *text;
	char path[PATH_MAX];
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: croftctl [--runtime-dir DIR] status [--json]\n"
		"       croftctl [--runtime-dir DIR] reload\n"
		"       croftctl [--runtime-dir DIR] label CONTAINER-ID TEXT\n"
		"       croftctl [--runtime-dir DIR] label --clear CONTAINER-ID\n"
		"       croftctl --help | --version\n"
		"The runtime dir defaults to $CROFT_RUNTIME_DIR, else %s; a daemon's\n"
		"control socket is RUNTIME/<daemon>/<daemon>.ctl, else RUNTIME/<daemon>.ctl.\n",
		CROFT_RUNTIME_DIR);
}

/*
 * "croft-writer" -> "<runtime>/writer.ctl" (croft run: one directory), else
 * "<runtime>/writer/writer.ctl" (the systemd units: one per unit).
 */
static int ctl_path(const char *daemon, char *buf, size_t len)
{
	const char *role = daemon + strlen("croft-");

	if (snprintf(buf, len, "%s/%s/%s.ctl", runtime_dir, role, role) >= (int)len)
		return -ENAMETOOLONG;
	if (access(buf, F_OK) == 0)
		return 0;
	if (snprintf(buf, len, "%s/%s.ctl", runtime_dir, role) >= (int)len)
		return -ENAMETOOLONG;
	return 0;
}

static void ask(
	struct answer *a, const char *daemon, uint32_t type, const void *payload, size_t len)
{
	memset(a, 0, sizeof(*a));
	a->daemon = daemon;
	a->ret = ctl_path(daemon, a->path, sizeof(a->path));
	if (a->ret == 0)
		a->ret = ctl_request(
			a->path, type, payload, len, CTL_TIMEOUT_MS, &a->status, &a->text);
}

/* Why there was no answer, in words a user can act on. */
static const char *no_answer_reason(const struct answer *a, const char *what, char *buf, size_t len)
{
	switch (a->ret) {
	case -ENOENT:
		snprintf(buf, len, "not running (no %s)", a->path);
		break;
	case -ECONNREFUSED:
		snprintf(buf, len, "not running (nobody listens on %s)", a->path);
		break;
	case -EACCES:
	case -EPERM:
		snprintf(buf, len, "permission denied on %s: %s", a->path, what);
		break;
	case -ETIMEDOUT:
	case -EAGAIN:
		snprintf(buf, len, "not answering (no reply within %d s)", CTL_TIMEOUT_MS / 1000);
		break;
	default:
		snprintf(buf, len, "no answer: %s", strerror(-a->ret));
		break;
	}
	return buf;
}

static bool refused(const struct answer *a)
{
	return a->ret == -EACCES || a->ret == -EPERM ||
	       (a->ret == 0 && (a->status == EACCES || a->status == EPERM));
}

static void format_uptime(json_int_t s, char *buf, size_t len)
{
	if (s >= 86400)
		snprintf(buf, len, "%lldd%02lldh", (long long)(s / 86400),
			(long long)(s % 86400 / 3600));
	else if (s >= 3600)
		snprintf(buf, len, "%lldh%02lldm", (long long)(s / 3600),
			(long long)(s % 3600 / 60));
	else
		snprintf(buf, len, "%lldm%02llds", (long long)(s / 60), (long long)(s % 60));
}

/* The daemon's figures, one "key: value" per line, objects as a.b. */
static void print_figures(json_t *obj, const char *prefix, int depth)
{
	const char *key;
	json_t *v;

	json_object_foreach(obj, key, v)
	{
		if (json_is_object(v) && depth < 2) {
			char sub[256];
			snprintf(sub, sizeof(sub), "%s%s.", prefix, key);
			print_figures(v, sub, depth + 1);
			continue;
		}
		if (json_is_real(v)) {
			printf("    %s%s: %.6g\n", prefix, key, json_real_value(v));
			continue;
		}
		char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
		printf("    %s%s: %s\n", prefix, key,
			json_is_string(v) ? json_string_value(v) : (text ? text : "?"));
		free(text);
	}
}

/* The probe not running: the host's reason it cannot, where the host shows one (the
 * check croft run makes before starting it and the sampler's status). */
static void add_host_reason(const struct answer *a, char *reason, size_t len)
{
	char host[PROBE_HOST_WHY_MAX];
	const char *blocker;
	size_t used = strlen(reason);

	if (strcmp(a->daemon, "croft-probe") || (a->ret != -ENOENT && a->ret != -ECONNREFUSED))
		return;
	if ((blocker = probe_host_blocker(false, host, sizeof(host))))
		snprintf(reason + used, len - used, "; this host cannot run it: %s", blocker);
}

/* No answer: the row says why; refused: whether it runs is not ours to know. */
static void status_down(const struct answer *a, bool table, json_t *row)
{
	char reason[PATH_MAX + 128 + PROBE_HOST_WHY_MAX];
	const char *why = reason;

	if (a->ret < 0) {
		no_answer_reason(a, "status needs root or the croft group", reason, sizeof(reason));
		add_host_reason(a, reason, sizeof(reason));
	} else {
		why = a->text ? a->text : strerror(a->status);
	}

	json_object_set_new(row, "up", json_false());
	json_object_set_new(row, "refused", json_boolean(refused(a)));
	json_object_set_new(row, "reason", json_string(why));
	if (table)
		printf("%-14s %-8s %-8s %-9s %-8s %s\n", a->daemon, refused(a) ? "?" : "down", "-",
			"-", "-", why);
}

/* The envelope's field, or NULL when it is missing or not of type. */
static json_t *envelope_get(json_t *st, const char *key, json_type type)
{
	json_t *v = json_object_get(st, key);

	return v && json_typeof(v) == type ? v : NULL;
}

/* An answer: the envelope {daemon, version, pid, uptime_s, state, why, figures}. */
static bool status_up(const struct answer *a, bool table, json_t *row)
{
	json_t *st = json_loads(a->text ? a->text : "", 0, NULL);
	json_t *pid = envelope_get(st, "pid", JSON_INTEGER);
	json_t *up = envelope_get(st, "uptime_s", JSON_REAL);
	json_t *version = envelope_get(st, "version", JSON_STRING);
	json_t *state = envelope_get(st, "state", JSON_STRING);
	json_t *why = envelope_get(st, "why", JSON_STRING);
	json_t *figures = envelope_get(st, "figures", JSON_OBJECT);
	char uptime[32] = "-", pid_text[16] = "-";

	if (!figures) {
		json_decref(st);
		status_down(&(struct answer){ .daemon = a->daemon,
				    .status = EBADMSG,
				    .text = "answered, but not a status envelope" },
			table, row);
		return false;
	}
	if (pid)
		snprintf(pid_text, sizeof(pid_text), "%lld", (long long)json_integer_value(pid));
	if (up)
		format_uptime((json_int_t)json_real_value(up), uptime, sizeof(uptime));
	if (table) {
		printf("%-14s %-8s %-8s %-9s %-8s %s\n", a->daemon,
			state ? json_string_value(state) : "up", pid_text, uptime,
			version ? json_string_value(version) : "-",
			why ? json_string_value(why) : "");
		print_figures(figures, "", 0);
	}
	json_object_set_new(row, "up", json_true());
	if (pid)
		json_object_set(row, "pid", pid);
	if (up)
		json_object_set_new(row, "uptime_s", json_integer((json_int_t)json_real_value(up)));
	json_object_set_new(row, "version", json_string(version ? json_string_value(version) : ""));
	json_object_set_new(row, "state", json_string(state ? json_string_value(state) : "up"));
	json_object_set_new(row, "why", why ? json_incref(why) : json_null());
	json_object_set(row, "status", figures);
	json_decref(st);
	return true;
}

static bool status_row(const struct answer *a, bool table, json_t *ret_array)
{
	json_t *row = json_pack("{s:s}", "daemon", a->daemon);
	bool up = a->ret == 0 && a->status == 0;

	if (up)
		up = status_up(a, table, row);
	else
		status_down(a, table, row);
	json_array_append_new(ret_array, row);
	return up;
}

static int cmd_status(int argc, char **argv)
{
	bool as_json = argc == 2 && !strcmp(argv[1], "--json");
	json_t *rows = json_array();
	bool all_up = true, any_refused = false;

	if (argc > 2 || (argc == 2 && !as_json)) {
		json_decref(rows);
		return usage_error("croftctl status",
			argv[1][0] == '-' ? "unrecognized option '%s'" : "unexpected argument '%s'",
			argv[1]);
	}
	if (!as_json)
		printf("%-14s %-8s %-8s %-9s %-8s %s\n", "DAEMON", "STATE", "PID", "UPTIME",
			"VERSION", "WHY");
	for (size_t i = 0; i < NDAEMONS; i++) {
		struct answer a;
		ask(&a, daemons[i], MT_CTL_STATUS, NULL, 0);
		any_refused |= refused(&a);
		all_up &= status_row(&a, !as_json, rows);
		free(a.text);
	}
	if (as_json) {
		json_t *doc = json_pack("{s:o,s:b}", "daemons", rows, "all_up", all_up);
		char *text = json_dumps(doc, JSON_INDENT(2));
		printf("%s\n", text ? text : "{}");
		free(text);
		json_decref(doc);
	} else {
		json_decref(rows);
	}
	if (any_refused)
		fprintf(stderr, "croftctl: status needs root or membership in the croft group\n");
	return all_up ? 0 : 1;
}

/* Every running daemon re-reads croft.conf (the sampler also its catalog);
 * one that refuses the new files keeps its old configuration. */
static int cmd_reload(int argc, char **argv)
{
	char reason[PATH_MAX + 128];
	int answered = 0, failed = 0;

	if (argc != 1)
		return usage_error("croftctl reload", "unexpected argument '%s'", argv[1]);
	for (size_t i = 0; i < NDAEMONS; i++) {
		struct answer a;
		ask(&a, daemons[i], MT_CTL_RELOAD, NULL, 0);
		if (a.ret == -ENOENT || a.ret == -ECONNREFUSED) {
			printf("%s: %s; skipped\n", a.daemon,
				no_answer_reason(&a, "", reason, sizeof(reason)));
		} else if (a.ret < 0) {
			fprintf(stderr, "%s: %s\n", a.daemon,
				no_answer_reason(&a, "reload needs root", reason, sizeof(reason)));
			failed++;
		} else if (a.status == EACCES || a.status == EPERM) {
			fprintf(stderr, "%s: %s\n", a.daemon,
				a.text ? a.text : "reload needs root");
			failed++;
		} else if (a.status != 0) {
			/* the daemon's text says it refused, and the file, line and reason */
			if (a.text && *a.text)
				fprintf(stderr, "%s: %s%s", a.daemon, a.text,
					a.text[strlen(a.text) - 1] == '\n' ? "" : "\n");
			else
				fprintf(stderr, "%s: reload refused: %s\n", a.daemon,
					strerror(a.status));
			answered++;
			failed++;
		} else {
			printf("%s: reloaded%s%s\n", a.daemon, a.text && *a.text ? ": " : "",
				a.text ? a.text : "");
			answered++;
		}
		free(a.text);
	}
	if (answered == 0 && failed == 0)
		fprintf(stderr, "croftctl: no daemon is running under %s\n", runtime_dir);
	return failed || answered == 0 ? 1 : 0;
}

/* label ID TEXT | label --clear ID: rows of that container carry TEXT. */
static int cmd_label(int argc, char **argv)
{
	char payload[CTL_ID_MAX + CTL_LABEL_MAX + 2], reason[PATH_MAX + 128];
	const char *id, *text;
	struct answer a;
	int len;

	if (argc == 3 && !strcmp(argv[1], "--clear")) {
		id = argv[2];
		text = "";
	} else if (argc == 3 && !strcmp(argv[2], "--clear")) {
		id = argv[1];
		text = "";
	} else if (argc == 3 && *argv[2]) {
		id = argv[1];
		text = argv[2];
	} else {
		return usage_error(
			"croftctl label", "give CONTAINER-ID TEXT, or --clear CONTAINER-ID");
	}
	if (strlen(id) != CTL_LABEL_ID_LEN || strspn(id, "0123456789abcdef") != CTL_LABEL_ID_LEN)
		return usage_error("croftctl label",
			"container id '%.*s%s': expected %d lowercase hex digits", 70, id,
			strlen(id) > 70 ? "..." : "", CTL_LABEL_ID_LEN);
	if (strlen(text) > CTL_LABEL_MAX)
		return usage_error("croftctl label", "a label is at most %d bytes (got %zu)",
			CTL_LABEL_MAX, strlen(text));
	len = snprintf(payload, sizeof(payload), "%s%c%s", id, '\0', text);
	ask(&a, "croft-sampler", MT_CTL_LABEL, payload, (size_t)len + 1);
	if (a.ret < 0) {
		fprintf(stderr, "croft-sampler: %s\n",
			no_answer_reason(&a, "label needs root", reason, sizeof(reason)));
	} else if (a.status != 0) {
		fprintf(stderr, "croft-sampler: label refused: %s\n",
			a.text ? a.text : strerror(a.status));
	} else if (*text) {
		printf("container %s: rows carry the label \"%s\"\n", id, text);
	} else {
		printf("container %s: label cleared\n", id);
	}
	free(a.text);
	return a.ret < 0 || a.status != 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "runtime-dir", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 },
	};
	const char *env = getenv("CROFT_RUNTIME_DIR");
	int c;

	if (env && *env)
		runtime_dir = env;
	/* "+": stop at the subcommand, whose own flags follow it */
	opterr = 0; /* said by usage_getopt */
	while ((c = getopt_long(argc, argv, "+:r:hV", longopts, NULL)) != -1) {
		switch (c) {
		case 'r':
			runtime_dir = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("croftctl %s\n", CROFT_VERSION);
			return 0;
		default:
			return usage_getopt("croftctl", argv, c);
		}
	}
	argc -= optind;
	argv += optind;
	if (argc < 1)
		return usage_error("croftctl", "give a command: status, reload or label");
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout); /* one text covers every command */
			return 0;
		}
	}
	if (!strcmp(argv[0], "status"))
		return cmd_status(argc, argv);
	if (!strcmp(argv[0], "reload"))
		return cmd_reload(argc, argv);
	if (!strcmp(argv[0], "label"))
		return cmd_label(argc, argv);
	return usage_error("croftctl", "unknown command '%s' (status, reload or label)", argv[0]);
}
