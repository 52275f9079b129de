/*
 * fake_lib.c: an empty shared object the tests build under framework
 * library names (libtorch_cpu.so) to load with dlopen.  Test processes.
 */
int croft_fake_lib_marker(void);

int croft_fake_lib_marker(void)
{
	return 42;
}
