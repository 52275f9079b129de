/*
 * clock.h: the clocks croft uses.  Rates and timers use the monotonic
 * clock, so a wall-clock jump never bends them; rows carry the wall clock.
 * Any process, any privilege.
 */
#ifndef CROFT_CLOCK_H
#define CROFT_CLOCK_H

#include <stdint.h>
#include <time.h>

uint64_t clock_ns(clockid_t id); /* any clock, ns */
uint64_t clock_mono_ms(void);    /* CLOCK_MONOTONIC, ms */
uint64_t clock_mono_ns(void);    /* CLOCK_MONOTONIC, ns */
uint64_t clock_boot_ns(void);    /* CLOCK_BOOTTIME, ns: what bpf_ktime_get_boot_ns gives */
uint64_t clock_real_ms(void);    /* CLOCK_REALTIME, ms since the epoch */

#endif
