/*
 * fuzz_kubelet.c: libFuzzer harness for what the sampler reads of a
 * Kubernetes GPU node.  The first byte picks the input: the kubelet's
 * device-plugin checkpoint (kubelet_parse), a GPU's information file
 * (nv_parse_information) or nvidia-caps' mig-minors (nv_parse_mig_minors).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzzlib.h"
#include "host.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_checkpoint(const uint8_t *data, size_t size)
{
	char *text = fuzz_memdup(data, size), err[200];
	struct kubelet_device *d;
	size_t n;

	if (kubelet_parse(text, size, &d, &n, err, sizeof(err)) == 0) {
		for (size_t i = 0; i < n; i++)
			if (strlen(d[i].pod_uid) > POD_UID_LEN ||
				strlen(d[i].id) > KUBELET_DEVICE_ID_MAX ||
				(i && strcmp(d[i - 1].pod_uid, d[i].pod_uid) > 0))
				abort(); /* bounded, and sorted for the lookup's bsearch */
		free(d);
	} else if (!err[0]) {
		abort(); /* a refusal says why */
	}
	free(text);
}

static void fuzz_information(const uint8_t *data, size_t size)
{
	char *text = fuzz_strndup(data, size);
	struct nv_gpu g;

	if (nv_parse_information(text, &g) == 0 &&
		(g.index < 0 || g.index >= GPU_INDEX_MAX || strlen(g.uuid) > NV_UUID_MAX))
		abort();
	free(text);
}

static void fuzz_mig_minors(const uint8_t *data, size_t size)
{
	static struct nv_mig mig[NV_MIG_MAX];
	char *text = fuzz_strndup(data, size);
	size_t n = nv_parse_mig_minors(text, mig, NV_MIG_MAX);

	for (size_t i = 1; i < n; i++)
		if (mig[i - 1].minor > mig[i].minor)
			abort(); /* sorted for nv_mig_of_minor */
	free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	if (data[0] == 'C')
		fuzz_checkpoint(data + 1, size - 1);
	else if (data[0] == 'I')
		fuzz_information(data + 1, size - 1);
	else
		fuzz_mig_minors(data + 1, size - 1);
	return 0;
}
