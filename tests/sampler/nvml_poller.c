/*
 * nvml_poller.c: built as "nvidia-smi": a monitor that polls NVML five
 * times a second (through whatever libnvidia-ml.so.1 LD_LIBRARY_PATH
 * finds, the stand-in in the tests), holding the GPU's files open and
 * making NVML's ioctls while computing nothing.  Says "ready" once NVML is
 * up.  Test process, any user.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int main(void)
{
	void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
	int (*init)(void), (*count)(unsigned int *);
	void *sym_init, *sym_count;
	struct timespec tick = { 0, 200 * 1000000 };
	unsigned int n;

	if (!lib) {
		fprintf(stderr, "nvidia-smi (test poller): %s\n", dlerror());
		return 1;
	}
	sym_init = dlsym(lib, "nvmlInit");
	sym_count = dlsym(lib, "nvmlDeviceGetCount");
	if (!sym_init || !sym_count)
		return 1;
	memcpy(&init, &sym_init, sizeof(init));
	memcpy(&count, &sym_count, sizeof(count));
	if (init() != 0)
		return 1;
	printf("ready\n");
	fflush(stdout);
	for (;;) {
		count(&n);
		nanosleep(&tick, NULL);
	}
}
