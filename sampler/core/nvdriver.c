/*
 * nvdriver.c: what NVIDIA's driver says of its GPUs under /proc/driver:
 * each GPU's UUID and minor (nvidia/gpus/<pci>/information), to name the
 * GPUs the kubelet allocated by UUID, and which MIG compute instance each
 * capability minor opens (nvidia-caps/mig-minors).  croft-sampler, croft
 * user (the files are world-readable).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fileio.h"
#include "host.h"

/* The value after "key:" on a line of its own, blanks trimmed; NULL if none. */
static const char *field(const char *text, const char *key, size_t *ret_len)
{
	size_t klen = strlen(key);

	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		const char *end = nl ? nl : line + strlen(line);

		if ((size_t)(end - line) > klen && !strncmp(line, key, klen) && line[klen] == ':') {
			const char *v = line + klen + 1;

			while (v < end && (*v == ' ' || *v == '\t'))
				v++;
			while (end > v && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
				end--;
			*ret_len = (size_t)(end - v);
			return v;
		}
		line = nl ? nl + 1 : NULL;
	}
	return NULL;
}

int nv_parse_information(const char *text, struct nv_gpu *ret_gpu)
{
	size_t uuid_len, minor_len;
	const char *uuid = field(text, "GPU UUID", &uuid_len);
	const char *minor = field(text, "Device Minor", &minor_len);
	char digits[8];
	char *endp;
	long v;

	if (!uuid || !minor || !uuid_len || uuid_len > NV_UUID_MAX || !minor_len ||
		minor_len >= sizeof(digits))
		return -EINVAL;
	memcpy(digits, minor, minor_len);
	digits[minor_len] = '\0';
	v = strtol(digits, &endp, 10);
	if (*endp || v < 0 || v >= GPU_INDEX_MAX)
		return -EINVAL;
	memcpy(ret_gpu->uuid, uuid, uuid_len);
	ret_gpu->uuid[uuid_len] = '\0';
	ret_gpu->index = (int)v;
	return 0;
}

static int cmp_mig(const void *a, const void *b)
{
	const struct nv_mig *x = a, *y = b;

	return (x->minor > y->minor) - (x->minor < y->minor);
}

size_t nv_parse_mig_minors(const char *text, struct nv_mig *ret, size_t max)
{
	size_t n = 0;

	for (const char *line = text; line && *line && n < max;) {
		const char *nl = strchr(line, '\n');
		unsigned gpu, gi, ci, minor;
		int used = 0;

		/* gi-level "gpu0/gi1/access 12", "config 1" and "monitor 2" open no compute
		 * instance */
		if (sscanf(line, "gpu%u/gi%u/ci%u/access %u%n", &gpu, &gi, &ci, &minor, &used) ==
				4 &&
			(line[used] == '\n' || line[used] == '\0') && gpu <= UINT8_MAX &&
			gi <= UINT8_MAX && ci <= UINT8_MAX)
			ret[n++] = (struct nv_mig){ minor, (uint8_t)gpu, (uint8_t)gi, (uint8_t)ci };
		line = nl ? nl + 1 : NULL;
	}
	qsort(ret, n, sizeof(*ret), cmp_mig);
	return n;
}

static void load_gpus(struct nv_driver *nv, const char *driver_dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *dir;

	if (snprintf(path, sizeof(path), "%s/nvidia/gpus", driver_dir) >= (int)sizeof(path) ||
		!(dir = opendir(path)))
		return; /* no NVIDIA driver loaded */
	while ((de = readdir(dir)) && nv->gpus_count < NV_GPUS_MAX) {
		char *text;
		size_t len;

		if (de->d_name[0] == '.' ||
			snprintf(path, sizeof(path), "%s/nvidia/gpus/%s/information", driver_dir,
				de->d_name) >= (int)sizeof(path) ||
			file_read_bounded(path, NV_DRIVER_MAX, &text, &len))
			continue;
		if (nv_parse_information(text, &nv->gpus[nv->gpus_count]) == 0)
			nv->gpus_count++;
		free(text);
	}
	closedir(dir);
}

void nv_driver_load(struct nv_driver *nv, const char *driver_dir)
{
	char path[PATH_MAX], *text;
	size_t len;

	nv->gpus_count = nv->mig_count = 0;
	load_gpus(nv, driver_dir);
	if (snprintf(path, sizeof(path), "%s/nvidia-caps/mig-minors", driver_dir) <
			(int)sizeof(path) &&
		file_read_bounded(path, NV_DRIVER_MAX, &text, &len) == 0) {
		nv->mig_count = nv_parse_mig_minors(text, nv->mig, NV_MIG_MAX);
		free(text);
	}
}

int nv_gpu_of_uuid(const struct nv_driver *nv, const char *uuid, size_t len)
{
	const char *replica = memmem(uuid, len, "::", 2);

	if (replica) /* the device plugin's time-slicing names a GPU's shares "<uuid>::<n>" */
		len = (size_t)(replica - uuid);
	for (size_t i = 0; i < nv->gpus_count; i++)
		if (strlen(nv->gpus[i].uuid) == len && !memcmp(nv->gpus[i].uuid, uuid, len))
			return nv->gpus[i].index;
	return -1;
}

const struct nv_mig *nv_mig_of_minor(const struct nv_driver *nv, uint32_t minor)
{
	const struct nv_mig key = { .minor = minor };

	return nv->mig_count ? bsearch(&key, nv->mig, nv->mig_count, sizeof(key), cmp_mig) : NULL;
}
