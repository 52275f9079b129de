/*
 * kubepods.c: the pod a cgroup path belongs to (UID and QoS class), from
 * the layouts the kubelet makes under its systemd and cgroupfs drivers,
 * whatever the runtime.  Pure parsing; croft-sampler, croft user.
 */
#include <string.h>

#include "sampler.h"

#define POD_UID_HEX_LEN 32 /* a static pod's UID: the config hash, no dashes */

static const char *const qos_names[] = {
	[POD_QOS_GUARANTEED] = "guaranteed",
	[POD_QOS_BURSTABLE] = "burstable",
	[POD_QOS_BESTEFFORT] = "besteffort",
};

const char *pod_qos_name(enum pod_qos qos)
{
	return qos < sizeof(qos_names) / sizeof(qos_names[0]) ? qos_names[qos] : "?";
}

static bool is_lower_hex(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
}

/*
 * A pod UID as the kubelet writes it into cgroup names: a UUID, its dashes
 * as sep ('-' under cgroupfs, '_' in systemd slice names), or a static
 * pod's 32 hex digits.  Copied out with dashes, as the API shows it.
 */
static bool parse_uid(const char *s, size_t n, char sep, char ret[POD_UID_LEN + 1])
{
	if (n == POD_UID_HEX_LEN) {
		for (size_t i = 0; i < n; i++)
			if (!is_lower_hex(s[i]))
				return false;
	} else if (n == POD_UID_LEN) {
		for (size_t i = 0; i < n; i++) {
			bool dash_place = i == 8 || i == 13 || i == 18 || i == 23;

			if (dash_place ? s[i] != sep : !is_lower_hex(s[i]))
				return false;
		}
	} else {
		return false;
	}
	for (size_t i = 0; i < n; i++)
		ret[i] = s[i] == sep ? '-' : s[i];
	ret[n] = '\0';
	return true;
}

static bool starts(const char *s, size_t n, const char *prefix)
{
	size_t pl = strlen(prefix);

	return n >= pl && memcmp(s, prefix, pl) == 0;
}

static bool is(const char *s, size_t n, const char *word)
{
	return n == strlen(word) && memcmp(s, word, n) == 0;
}

/*
 * The systemd driver's pod slice: "kubepods-<qos>-pod<uid>.slice", or
 * "kubepods-pod<uid>.slice" for a guaranteed pod (a kubelet run in a
 * container prefixes its own unit's name: "kubelet-kubepods-...").
 */
static bool systemd_pod(const char *c, size_t n, struct pod_identity *ret)
{
	const char *at = memmem(c, n, "kubepods-", 9), *end, *uid;
	enum pod_qos qos = POD_QOS_GUARANTEED;

	if (!at || (at != c && at[-1] != '-') || n < 6 || memcmp(c + n - 6, ".slice", 6))
		return false;
	end = c + n - 6;
	at += 9;
	if (starts(at, (size_t)(end - at), "burstable-"))
		qos = POD_QOS_BURSTABLE, at += 10;
	else if (starts(at, (size_t)(end - at), "besteffort-"))
		qos = POD_QOS_BESTEFFORT, at += 11;
	if (!starts(at, (size_t)(end - at), "pod"))
		return false;
	uid = at + 3;
	if (!parse_uid(uid, (size_t)(end - uid), '_', ret->uid))
		return false;
	ret->qos = qos;
	return true;
}

/*
 * The cgroupfs driver's pod directory: "pod<uid>" under "kubepods" (a
 * guaranteed pod) or under "kubepods/<qos>".
 */
static bool cgroupfs_pod(const char *c, size_t n, const char *parent, size_t parent_len,
	bool grandparent_kubepods, struct pod_identity *ret)
{
	enum pod_qos qos;

	if (!starts(c, n, "pod") || !parent)
		return false;
	if (is(parent, parent_len, "kubepods"))
		qos = POD_QOS_GUARANTEED;
	else if (grandparent_kubepods && is(parent, parent_len, "burstable"))
		qos = POD_QOS_BURSTABLE;
	else if (grandparent_kubepods && is(parent, parent_len, "besteffort"))
		qos = POD_QOS_BESTEFFORT;
	else
		return false;
	if (!parse_uid(c + 3, n - 3, '-', ret->uid))
		return false;
	ret->qos = qos;
	return true;
}

bool cgroup_pod(const char *path, size_t len, struct pod_identity *ret)
{
	const char *p = path, *end = path + len, *parent = NULL;
	size_t parent_len = 0;
	bool grandparent_kubepods = false, found = false;

	while (p < end) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		size_t n = slash ? (size_t)(slash - p) : (size_t)(end - p);
		struct pod_identity pod;

		if (systemd_pod(p, n, &pod) ||
			cgroupfs_pod(p, n, parent, parent_len, grandparent_kubepods, &pod)) {
			*ret = pod;
			found = true;
		}
		grandparent_kubepods = parent && is(parent, parent_len, "kubepods");
		parent = p;
		parent_len = n;
		p += n + 1;
	}
	return found;
}
