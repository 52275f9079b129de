/*
 * kubelet.c: the GPUs the kubelet allocated to each pod, from its
 * device-plugin checkpoint (/var/lib/kubelet/device-plugins/
 * kubelet_internal_checkpoint), read again only when the file changes.
 * The pod's containers together: the checkpoint names containers, rows
 * know container ids.  Its Checksum (a hash of the kubelet's own printing
 * of the data) is not checked: a torn file fails to parse instead.
 * croft-sampler, croft user (CAP_DAC_READ_SEARCH reads the root-only file).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fileio.h"
#include "host.h"

struct devices {
	struct kubelet_device *v;
	size_t count;
};

static int add_device(struct devices *d, const char *uid, json_t *id, char *err, size_t err_size)
{
	const char *s = json_string_value(id);
	struct kubelet_device *more;

	if (!s || strlen(s) > KUBELET_DEVICE_ID_MAX) {
		snprintf(err, err_size, "a DeviceIDs entry is not a device id");
		return -EINVAL;
	}
	if (d->count == KUBELET_DEVICES_MAX) {
		snprintf(err, err_size, "more than %u GPU allocations", KUBELET_DEVICES_MAX);
		return -EINVAL;
	}
	more = realloc(d->v, (d->count + 1) * sizeof(*d->v));
	if (!more) {
		snprintf(err, err_size, "out of memory");
		return -ENOMEM;
	}
	d->v = more;
	snprintf(d->v[d->count].pod_uid, sizeof(d->v[d->count].pod_uid), "%s", uid);
	snprintf(d->v[d->count].id, sizeof(d->v[d->count].id), "%s", s);
	d->count++;
	return 0;
}

/* A list of ids (kubelets before 1.20), or a map of NUMA node to lists. */
static int add_ids(struct devices *d, const char *uid, json_t *ids, char *err, size_t err_size)
{
	const char *numa;
	json_t *list, *id;
	size_t i;
	int r;

	if (json_is_array(ids)) {
		json_array_foreach(
			ids, i, id) if ((r = add_device(d, uid, id, err, err_size))) return r;
		return 0;
	}
	if (!json_is_object(ids)) {
		snprintf(err, err_size, "DeviceIDs is neither a list nor a map of lists");
		return -EINVAL;
	}
	json_object_foreach(ids, numa, list)
	{
		if (!json_is_array(list)) {
			snprintf(err, err_size, "DeviceIDs of NUMA node %s is not a list", numa);
			return -EINVAL;
		}
		json_array_foreach(
			list, i, id) if ((r = add_device(d, uid, id, err, err_size))) return r;
	}
	return 0;
}

static int add_entry(struct devices *d, json_t *entry, char *err, size_t err_size)
{
	const char *uid = json_string_value(json_object_get(entry, "PodUID"));
	const char *resource = json_string_value(json_object_get(entry, "ResourceName"));

	if (!uid || !resource) {
		snprintf(err, err_size, "an entry without PodUID or ResourceName");
		return -EINVAL;
	}
	/* another device plugin's (RDMA, other vendors): not a GPU of this driver.  A
	 * MIG slice (mixed strategy) is kept: its "MIG-" id names no GPU here, so
	 * the pod's allocation is unknown rather than none. */
	if (strcmp(resource, KUBELET_RESOURCE_GPU) &&
		strncmp(resource, KUBELET_RESOURCE_MIG, strlen(KUBELET_RESOURCE_MIG)))
		return 0;
	if (strlen(uid) > POD_UID_LEN) {
		snprintf(err, err_size, "PodUID \"%.64s\" is not a pod UID", uid);
		return -EINVAL;
	}
	return add_ids(d, uid, json_object_get(entry, "DeviceIDs"), err, err_size);
}

static int cmp_device(const void *a, const void *b)
{
	return strcmp(((const struct kubelet_device *)a)->pod_uid,
		((const struct kubelet_device *)b)->pod_uid);
}

int kubelet_parse(const char *text, size_t len, struct kubelet_device **ret_devices,
	size_t *ret_count, char *err, size_t err_size)
{
	struct devices d = { NULL, 0 };
	json_error_t jerr;
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr), *entries, *entry;
	size_t i;
	int r = 0;

	if (!root) {
		/* never jansson's text: it quotes the file (root's) into status */
		snprintf(err, err_size, "not JSON: line %d column %d", jerr.line, jerr.column);
		return -EINVAL;
	}
	entries = json_object_get(json_object_get(root, "Data"), "PodDeviceEntries");
	if (!json_is_array(entries) && !json_is_null(entries)) {
		snprintf(err, err_size, "no Data.PodDeviceEntries list");
		r = -EINVAL;
	}
	json_array_foreach(entries, i, entry) if ((r = add_entry(&d, entry, err, err_size))) break;
	json_decref(root);
	if (r) {
		free(d.v);
		return r;
	}
	if (d.count)
		qsort(d.v, d.count, sizeof(*d.v), cmp_device);
	*ret_devices = d.v;
	*ret_count = d.count;
	return 0;
}

/* What the sampler says of the file: one line per change (poll.c logs it). */
static void note(struct kubelet *k, const char *problem, bool absent)
{
	if (k->said && !strcmp(k->problem, problem))
		return;
	snprintf(k->problem, sizeof(k->problem), "%s", problem);
	k->absent = absent;
	k->said = false;
}

static void load(struct kubelet *k, const char *path)
{
	char err[200], problem[sizeof(k->problem)];
	struct kubelet_device *devices;
	size_t len, count;
	char *text;
	int r = file_read_bounded(path, KUBELET_CHECKPOINT_MAX, &text, &len);

	kubelet_free(k);
	if (r) {
		snprintf(problem, sizeof(problem), "kubelet checkpoint %.100s: %s", path,
			file_read_strerror(r));
		note(k, problem, r == -ENOENT);
		return;
	}
	r = kubelet_parse(text, len, &devices, &count, err, sizeof(err));
	free(text);
	if (r) {
		snprintf(problem, sizeof(problem), "kubelet checkpoint %.100s: %.200s", path, err);
		note(k, problem, false);
		return;
	}
	k->devices = devices;
	k->devices_count = count;
	k->loaded = true;
	note(k, "", false);
}

static bool same_file(const struct kubelet_file *a, const struct kubelet_file *b)
{
	return a->looked == b->looked && a->exists == b->exists && a->dev == b->dev &&
	       a->ino == b->ino && a->size == b->size && a->mtime_ns == b->mtime_ns;
}

bool kubelet_refresh(struct kubelet *k, const char *path)
{
	struct kubelet_file now = { .looked = true };
	struct stat st;

	if (path[0] && stat(path, &st) == 0)
		now = (struct kubelet_file){ true, true, (uint64_t)st.st_dev, (uint64_t)st.st_ino,
			(uint64_t)st.st_size,
			(uint64_t)st.st_mtim.tv_sec * 1000000000u + (uint64_t)st.st_mtim.tv_nsec };
	if (same_file(&now, &k->file) && !strcmp(path, k->path))
		return false; /* the same file as at the last look: nothing to read */
	k->file = now;
	snprintf(k->path, sizeof(k->path), "%s", path);
	if (path[0]) {
		load(k, path);
	} else {
		kubelet_free(k);
		note(k, "kubelet_checkpoint is empty", true);
	}
	if (k->said)
		return false;
	k->said = true;
	return true;
}

void kubelet_free(struct kubelet *k)
{
	free(k->devices);
	k->devices = NULL;
	k->devices_count = 0;
	k->loaded = false;
}

bool kubelet_allocated(const struct kubelet *k, const struct nv_driver *nv, const char *pod_uid,
	struct gpu_mask *ret)
{
	struct kubelet_device key;
	const struct kubelet_device *at;
	struct gpu_mask gpus = { { 0 } };

	if (!k->loaded)
		return false;
	snprintf(key.pod_uid, sizeof(key.pod_uid), "%s", pod_uid);
	at = k->devices_count ? bsearch(&key, k->devices, k->devices_count, sizeof(key), cmp_device)
			      : NULL;
	while (at && at > k->devices && !strcmp(at[-1].pod_uid, pod_uid))
		at--;
	for (; at && at < k->devices + k->devices_count && !strcmp(at->pod_uid, pod_uid); at++) {
		int index = nv_gpu_of_uuid(nv, at->id, strlen(at->id));

		if (index < 0)
			return false; /* a GPU the driver does not name: unknown, not none */
		gpu_mask_set(&gpus, index);
	}
	*ret = gpus;
	return true;
}
