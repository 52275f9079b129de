/*
 * test_kubelet.c: the kubelet's device-plugin checkpoint in both formats
 * kubelets have written (DeviceIDs a list; a map of NUMA node to lists),
 * malformed ones refused with a reason, NVIDIA's information and
 * mig-minors files, and a pod's GPUs by UUID, read again when the file
 * changes.  Test process, any user.
 */
#include <errno.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "host.h"
#include "scratch.h"
#include "testlib.h"

#define POD_A "0d6f1a6e-4b3c-4c8e-9f0a-1d2e3f405162"
#define POD_B "7a8b9c0d-1e2f-4a3b-8c4d-5e6f70819203"
#define POD_C "c3d4e5f6-a7b8-4c9d-8e0f-1a2b3c4d5e6f"
#define GPU0  "GPU-4a1e2c9b-6f0d-7e3a-b5c8-91d2e3f4a5b6"
#define GPU1  "GPU-b7c8d9e0-f1a2-43b4-85c6-d7e8f9a0b1c2"

/* As kubelet 1.19 wrote it: DeviceIDs a list, AllocResp the plugin's answer in base64. */
static const char list_format[] =
	"{\"Data\":{\"PodDeviceEntries\":["
	"{\"PodUID\":\"" POD_A "\",\"ContainerName\":\"cuda\",\"ResourceName\":\"nvidia.com/gpu\","
	"\"DeviceIDs\":[\"" GPU1 "\"],\"AllocResp\":\"CiQKFk5WSURJQV9WSVNJQkxFX0RFVklDRVM=\"},"
	"{\"PodUID\":\"" POD_B "\",\"ContainerName\":\"nic\",\"ResourceName\":\"rdma/hca\","
	"\"DeviceIDs\":[\"mlx5_0\"],\"AllocResp\":\"\"},"
	"{\"PodUID\":\"" POD_C "\",\"ContainerName\":\"mig\",\"ResourceName\":"
	"\"nvidia.com/mig-1g.10gb\",\"DeviceIDs\":[\"MIG-5c9d3e1f-0a2b-5c4d-8e6f-7a8b9c0d1e2f\"],"
	"\"AllocResp\":\"\"}],"
	"\"RegisteredDevices\":{\"nvidia.com/gpu\":[\"" GPU0 "\",\"" GPU1 "\"]}},"
	"\"Checksum\":1788225347}";

/* As kubelets since 1.20 write it: DeviceIDs by NUMA node (-1: none). */
static const char numa_format[] =
	"{\"Data\":{\"PodDeviceEntries\":["
	"{\"PodUID\":\"" POD_A "\",\"ContainerName\":\"train\",\"ResourceName\":\"nvidia.com/gpu\","
	"\"DeviceIDs\":{\"1\":[\"" GPU1 "\"]},\"AllocResp\":\"\"},"
	"{\"PodUID\":\"" POD_A "\",\"ContainerName\":\"eval\",\"ResourceName\":\"nvidia.com/gpu\","
	"\"DeviceIDs\":{\"0\":[\"" GPU0 "\"]},\"AllocResp\":\"\"},"
	"{\"PodUID\":\"" POD_B "\",\"ContainerName\":\"c\",\"ResourceName\":\"nvidia.com/gpu\","
	"\"DeviceIDs\":{\"-1\":[\"" GPU0 "::3\"]},\"AllocResp\":\"\"}],"
	"\"RegisteredDevices\":{\"nvidia.com/gpu\":[\"" GPU0 "\",\"" GPU1 "\"]}},"
	"\"Checksum\":2938475610}";

static const char info0[] =
	"Model: \t\t NVIDIA A100-SXM4-40GB\nIRQ:   \t\t 180\n"
	"GPU UUID: \t " GPU0 "\nVideo BIOS: \t 92.00.36.00.01\n"
	"Bus Type: \t PCIe\nDMA Size: \t 47 bits\nDMA Mask: \t 0x7fffffffffff\n"
	"Bus Location: \t 0000:07:00.0\nDevice Minor: \t 0\nGPU Excluded:\t No\n";

static void setup(void)
{
	tl_scratch_new("kubelet");
}

/* "uid=id,..." of a parsed checkpoint, or "error: reason". */
static const char *parse(const char *text)
{
	static char out[1024];
	struct kubelet_device *d;
	char err[200];
	size_t n, len = 0;

	if (kubelet_parse(text, strlen(text), &d, &n, err, sizeof(err))) {
		snprintf(out, sizeof(out), "error: %s", err);
		return out;
	}
	out[0] = '\0';
	for (size_t i = 0; i < n; i++)
		len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%.8s=%s", i ? "," : "",
			d[i].pod_uid, d[i].id);
	free(d);
	return out;
}

START_TEST(checkpoint_formats)
{
	/* the RDMA entry is not a GPU; the MIG slice is kept, to name no GPU */
	ck_assert_str_eq(parse(list_format),
		"0d6f1a6e=" GPU1 ",c3d4e5f6=MIG-5c9d3e1f-0a2b-5c4d-8e6f-7a8b9c0d1e2f");
	ck_assert_str_eq(
		parse(numa_format), "0d6f1a6e=" GPU1 ",0d6f1a6e=" GPU0 ",7a8b9c0d=" GPU0 "::3");
	ck_assert_str_eq(parse("{\"Data\":{\"PodDeviceEntries\":null,\"RegisteredDevices\":{}},"
			       "\"Checksum\":0}"),
		"");
	/* malformed: a reason each, nothing kept */
	ck_assert_str_eq(parse("{\"Data\":{\"PodDeviceEntries\":[{\"PodUID\":\"" POD_A "\","
			       "\"ResourceName\":\"nvidia.com/gpu\",\"DeviceIDs\":7}]}}"),
		"error: DeviceIDs is neither a list nor a map of lists");
	ck_assert_str_eq(
		parse("{\"Data\":{\"PodDeviceEntries\":[{\"PodUID\":\"" POD_A "\","
		      "\"ResourceName\":\"nvidia.com/gpu\",\"DeviceIDs\":{\"0\":\"x\"}}]}}"),
		"error: DeviceIDs of NUMA node 0 is not a list");
	ck_assert_str_eq(parse("{\"Data\":{\"PodDeviceEntries\":[{\"ResourceName\":\"x\"}]}}"),
		"error: an entry without PodUID or ResourceName");
	ck_assert_str_eq(parse("{\"Data\":{\"PodDeviceEntries\":{}}}"),
		"error: no Data.PodDeviceEntries list");
	ck_assert_str_eq(parse("[]"), "error: no Data.PodDeviceEntries list");
	ck_assert_int_eq(strncmp(parse("{\"Data\":"), "error: not JSON: line 1", 23), 0);
	ck_assert_int_eq(strncmp(parse(""), "error: not JSON", 15), 0);
	/* the security review's 12: a root-only file named as the checkpoint is
	 * not quoted into status (jansson's "near 'topsecret'") */
	ck_assert_str_eq(parse("topsecret"), "error: not JSON: line 1 column 9");
}
END_TEST

START_TEST(driver_files)
{
	static const char minors[] =
		"config 1\nmonitor 2\ngpu0/gi0/access 3\ngpu0/gi0/ci0/access 4\n"
		"gpu1/gi1/access 12\ngpu1/gi1/ci0/access 21\n"
		"gpu1/gi1/ci0/access 22x\ngpu300/gi1/ci0/access 23\n";
	struct nv_driver nv = { .gpus_count = 0 };
	struct nv_gpu g;

	ck_assert_int_eq(nv_parse_information(info0, &g), 0);
	ck_assert_str_eq(g.uuid, GPU0);
	ck_assert_int_eq(g.index, 0);
	ck_assert_int_eq(nv_parse_information("GPU UUID: \t GPU-1\n", &g), -EINVAL);
	ck_assert_int_eq(nv_parse_information("GPU UUID: x\nDevice Minor: \t 9999\n", &g), -EINVAL);
	ck_assert_int_eq(nv_parse_information("GPU UUID: x\nDevice Minor: 3x\n", &g), -EINVAL);
	nv.mig_count = nv_parse_mig_minors(minors, nv.mig, NV_MIG_MAX);
	ck_assert_uint_eq(nv.mig_count, 2); /* compute instances only; junk and gpu300 refused */
	ck_assert_ptr_null(nv_mig_of_minor(&nv, 12));
	ck_assert_ptr_null(nv_mig_of_minor(&nv, 1));
	ck_assert_uint_eq(nv_mig_of_minor(&nv, 21)->gpu, 1);
	ck_assert_uint_eq(nv_mig_of_minor(&nv, 21)->gi, 1);
	ck_assert_uint_eq(nv_mig_of_minor(&nv, 21)->ci, 0);
	ck_assert_uint_eq(nv_mig_of_minor(&nv, 4)->gpu, 0);
}
END_TEST

/* A driver tree of a two-GPU node, read as gpu_index_load reads it. */
static void two_gpu_driver(struct nv_driver *nv)
{
	char info1[256];

	snprintf(info1, sizeof(info1),
		"GPU UUID: \t %s\nBus Location: \t 0000:0f:00.0\nDevice Minor: \t 1\n", GPU1);
	tl_scratch_mkdirs("nvidia/gpus/0000:07:00.0");
	tl_scratch_mkdirs("nvidia/gpus/0000:0f:00.0");
	tl_scratch_mkdirs("nvidia-caps");
	tl_scratch_write("nvidia/gpus/0000:07:00.0/information", info0);
	tl_scratch_write("nvidia/gpus/0000:0f:00.0/information", info1);
	tl_scratch_write("nvidia-caps/mig-minors", "config 1\nmonitor 2\ngpu0/gi2/ci1/access 30\n");
	nv_driver_load(nv, tl_scratch());
}

/* "0,1" of a pod's allocation, "-" when unknown. */
static const char *alloc(const struct kubelet *k, const struct nv_driver *nv, const char *uid)
{
	static char out[64];
	struct gpu_mask m;
	size_t len = 0;

	if (!kubelet_allocated(k, nv, uid, &m))
		return "-";
	out[0] = '\0';
	for (int i = 0; i < GPU_INDEX_MAX; i++)
		if (gpu_mask_has(&m, i))
			len += (size_t)snprintf(
				out + len, sizeof(out) - len, "%s%d", len ? "," : "", i);
	return out;
}

START_TEST(allocations_follow_the_file)
{
	static struct nv_driver nv;
	static struct kubelet k;
	char path[200], fresh[256];

	two_gpu_driver(&nv);
	ck_assert_uint_eq(nv.gpus_count, 2);
	ck_assert_uint_eq(nv.mig_count, 1);
	ck_assert_int_eq(nv_gpu_of_uuid(&nv, GPU1, strlen(GPU1)), 1);
	tl_scratch_path("kubelet_internal_checkpoint", path, sizeof(path));
	snprintf(fresh, sizeof(fresh), "%s.new", path);
	/* absent: said once, nothing known */
	ck_assert(kubelet_refresh(&k, path));
	ck_assert(k.absent);
	ck_assert(!kubelet_refresh(&k, path));
	ck_assert_str_eq(alloc(&k, &nv, POD_A), "-");
	tl_scratch_write("kubelet_internal_checkpoint", numa_format);
	ck_assert(kubelet_refresh(&k, path));
	ck_assert_str_eq(k.problem, "");
	ck_assert_str_eq(alloc(&k, &nv, POD_A), "0,1"); /* the pod's containers together */
	ck_assert_str_eq(alloc(&k, &nv, POD_B), "0");   /* a time-sliced share of GPU 0 */
	ck_assert_str_eq(alloc(&k, &nv, "ffffffff-0000-0000-0000-000000000000"), ""); /* none */
	ck_assert(!kubelet_refresh(&k, path)); /* unchanged: not read again */
	/* the kubelet rewrites it (a new inode, as its rename does): read again */
	tl_scratch_write("kubelet_internal_checkpoint.new", list_format);
	ck_assert_int_eq(rename(fresh, path), 0);
	ck_assert(!kubelet_refresh(&k, path)); /* read; nothing new to say */
	ck_assert_str_eq(alloc(&k, &nv, POD_A), "1");
	ck_assert_str_eq(alloc(&k, &nv, POD_B), "");
	ck_assert_str_eq(alloc(&k, &nv, POD_C), "-"); /* a MIG slice: which GPU is unknown */
	/* broken: one line, then nothing known; mended: known again */
	tl_scratch_write("kubelet_internal_checkpoint", "{\"Data\":{\"PodDeviceEntries\":[");
	ck_assert(kubelet_refresh(&k, path));
	ck_assert_int_eq(strncmp(k.problem, "kubelet checkpoint ", 19), 0);
	ck_assert(!k.absent);
	ck_assert_str_eq(alloc(&k, &nv, POD_A), "-");
	tl_scratch_write("kubelet_internal_checkpoint", list_format);
	ck_assert(kubelet_refresh(&k, path));
	ck_assert_str_eq(alloc(&k, &nv, POD_A), "1");
	/* a GPU the driver does not name: unknown, not "none" */
	nv.gpus_count = 1;
	ck_assert_str_eq(alloc(&k, &nv, POD_A), "-");
	kubelet_free(&k);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("kubelet");
	TCase *tc = tcase_create("kubelet");

	tcase_add_checked_fixture(tc, setup, tl_scratch_free);
	tcase_add_test(tc, checkpoint_formats);
	tcase_add_test(tc, driver_files);
	tcase_add_test(tc, allocations_follow_the_file);
	suite_add_tcase(s, tc);
	return tl_run(s);
}
