/*
 * rowcheck.c: whether the fast row scanner and jansson, the reference, agree
 * on one line: a line the scanner takes must give jansson's row exactly.
 * Test processes (unit test, fuzz harness), no privilege.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "rowcheck.h"

struct row rowcheck_fast, rowcheck_ref;

static bool strv_eq(struct strv a, struct strv b)
{
	if (!a.ptr || !b.ptr)
		return !a.ptr && !b.ptr;
	return a.len == b.len && !memcmp(a.ptr, b.ptr, a.len);
}

static bool rows_equal(const struct row *a, const struct row *b)
{
	if (a->unix_ms != b->unix_ms || a->tgid != b->tgid || a->workload != b->workload ||
		a->has != b->has || a->syscalls_count != b->syscalls_count)
		return false;
	if (!strv_eq(a->host, b->host) || !strv_eq(a->comm, b->comm) || !strv_eq(a->exe, b->exe) ||
		!strv_eq(a->container_id, b->container_id) || !strv_eq(a->pod_uid, b->pod_uid) ||
		!strv_eq(a->pod_qos, b->pod_qos) || !strv_eq(a->cwd, b->cwd) ||
		!strv_eq(a->framework, b->framework) || !strv_eq(a->label, b->label))
		return false;
#define SAME(f, bit) (!(a->has & (bit)) || a->f == b->f)
	if (!SAME(span_ms, HAS_SPAN) || !SAME(start_ms, HAS_START) ||
		!SAME(ioctl_count, HAS_IOCTL) || !SAME(cpu_x1e4, HAS_CPU) ||
		!SAME(rss_bytes, HAS_RSS) || !SAME(threads, HAS_THREADS) ||
		!SAME(read_x1e4, HAS_READ) || !SAME(write_x1e4, HAS_WRITE) ||
		!SAME(rx_x1e4, HAS_RX) || !SAME(tx_x1e4, HAS_TX))
		return false;
#undef SAME
	if (memcmp(a->gpus, b->gpus, sizeof(a->gpus)) ||
		memcmp(a->gpus_allocated, b->gpus_allocated, sizeof(a->gpus_allocated)))
		return false;
	for (uint32_t i = 0; i < a->syscalls_count; i++)
		if (!strv_eq(a->syscalls[i].name, b->syscalls[i].name) ||
			a->syscalls[i].rate_x1e4 != b->syscalls[i].rate_x1e4)
			return false;
	return true;
}

int rowcheck_line(const char *text, size_t len, char *why, size_t why_size)
{
	static char buf[1 << 16];
	const char *nl = NULL;
	json_t *tree = NULL;
	char err[160];
	bool same;

	if (len + 1 + ROWSCAN_PAD > sizeof(buf))
		return 0;
	memcpy(buf, text, len);
	buf[len] = '\n';
	memset(buf + len + 1, 0, ROWSCAN_PAD);
	if (!rowscan_fast(buf, buf + len + 1, &rowcheck_fast, &nl))
		return 0;
	if (nl != buf + len) {
		snprintf(why, why_size, "scanner ended at %td of %zu", nl - buf, len);
		return -1;
	}
	if (rowscan_jansson(buf, len, &rowcheck_ref, &tree, err, sizeof(err)) < 0) {
		snprintf(why, why_size, "scanner took a line jansson refuses: %s", err);
		return -1;
	}
	same = rows_equal(&rowcheck_fast, &rowcheck_ref);
	json_decref(tree);
	if (!same) {
		snprintf(why, why_size, "rows differ");
		return -1;
	}
	return 1;
}
