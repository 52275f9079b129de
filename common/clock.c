/*
 * clock.c: the monotonic, boot and wall clocks in the units croft uses.
 * Any process, any privilege.
 */
#include <time.h>

#include "clock.h"

uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t clock_mono_ns(void)
{
	return clock_ns(CLOCK_MONOTONIC);
}

uint64_t clock_mono_ms(void)
{
	return clock_ns(CLOCK_MONOTONIC) / 1000000u;
}

uint64_t clock_boot_ns(void)
{
	return clock_ns(CLOCK_BOOTTIME);
}

uint64_t clock_real_ms(void)
{
	return clock_ns(CLOCK_REALTIME) / 1000000u;
}
