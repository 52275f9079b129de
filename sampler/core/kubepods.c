/*
 * kubepods.c: the pod a cgroup path belongs to (UID and QoS class), from
 * the layouts the kubelet makes under its systemd and cgroupfs drivers,
 * whatever the runtime.  Pure parsing; croft-sampler, croft user.
 */
#include <string.h>

#include "host.h"

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

size_t cgroup_path_split(const char *path, size_t len, struct path_part *ret, size_t max)
{
	const char *p = path, *end = path + len;
	size_t n = 0;

	while (p < end && n < max) {
		const char *slash = memchr(p, '/', (size_t)(end - p));
		size_t w = slash ? (size_t)(slash - p) : (size_t)(end - p);

		if (w)
			ret[n++] = (struct path_part){ p, w };
		p += w + 1;
	}
	return n;
}

bool path_part_is(struct path_part c, const char *word)
{
	return c.len == strlen(word) && memcmp(c.at, word, c.len) == 0;
}

static bool ends(struct path_part c, const char *suffix)
{
	size_t sl = strlen(suffix);

	return c.len >= sl && memcmp(c.at + c.len - sl, suffix, sl) == 0;
}

/*
 * The systemd driver's pod slice: "kubepods-<qos>-pod<uid>.slice", or
 * "kubepods-pod<uid>.slice" for a guaranteed pod (a kubelet run in a
 * container prefixes its own unit's name: "kubelet-kubepods-...").
 */
static bool systemd_pod(struct path_part part, struct pod_identity *ret)
{
	const char *c = part.at, *at = memmem(c, part.len, "kubepods-", 9), *end, *uid;
	enum pod_qos qos = POD_QOS_GUARANTEED;

	if (!at || (at != c && at[-1] != '-') || !ends(part, ".slice"))
		return false;
	end = c + part.len - 6;
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
 * Whether parts[0..last] are the chain of slices systemd makes for a
 * nested slice ("a.slice/a-b.slice/a-b-c.slice"), from the root, under the
 * kubelet's kubepods.slice (or a containerised kubelet's kubelet.slice).
 */
static bool slice_chain(const struct path_part *parts, size_t last)
{
	if (!path_part_is(parts[0], "kubepods.slice") && !path_part_is(parts[0], "kubelet.slice"))
		return false;
	for (size_t i = 1; i <= last; i++) {
		size_t stem = parts[i - 1].len - 6; /* the parent's name less ".slice" */

		if (!ends(parts[i], ".slice") || parts[i].len <= stem + 1 ||
			memcmp(parts[i].at, parts[i - 1].at, stem) || parts[i].at[stem] != '-')
			return false;
	}
	return true;
}

/*
 * The cgroupfs driver's pod directory: "pod<uid>" right under the root's
 * "kubepods" (a guaranteed pod) or under "kubepods/<qos>"; "kubelet/" may
 * come first (a kubelet whose --cgroup-root is /kubelet).
 */
static bool cgroupfs_pod(const struct path_part *parts, size_t k, struct pod_identity *ret)
{
	size_t base = path_part_is(parts[0], "kubelet") ? 1 : 0;
	enum pod_qos qos;

	if (k <= base || !path_part_is(parts[base], "kubepods") ||
		!starts(parts[k].at, parts[k].len, "pod"))
		return false;
	if (k == base + 1)
		qos = POD_QOS_GUARANTEED;
	else if (k == base + 2 && path_part_is(parts[k - 1], "burstable"))
		qos = POD_QOS_BURSTABLE;
	else if (k == base + 2 && path_part_is(parts[k - 1], "besteffort"))
		qos = POD_QOS_BESTEFFORT;
	else
		return false;
	if (!parse_uid(parts[k].at + 3, parts[k].len - 3, '-', ret->uid))
		return false;
	ret->qos = qos;
	return true;
}

/*
 * Only where the kubelet makes pods: a look-alike name anywhere else (a
 * user's delegated cgroup, a container's own subtree) names no pod.
 */
size_t cgroup_pod(const char *path, size_t len, struct pod_identity *ret)
{
	struct path_part parts[POD_DEPTH_MAX];
	size_t n = cgroup_path_split(path, len, parts, POD_DEPTH_MAX);

	for (size_t k = 0; k < n; k++) {
		struct pod_identity pod;

		if ((systemd_pod(parts[k], &pod) && slice_chain(parts, k)) ||
			cgroupfs_pod(parts, k, &pod)) {
			*ret = pod;
			return k + 1;
		}
	}
	return 0;
}
