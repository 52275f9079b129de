/*
 * fuzzlib.h: scaffolding the libFuzzer harnesses share: a private scratch
 * directory for the parsers that read files (croft.conf, a fake /proc, a
 * fake cgroupfs), removed when the fuzzer exits.  Fuzzer process only.
 */
#ifndef CROFT_FUZZLIB_H
#define CROFT_FUZZLIB_H

#include <stddef.h>
#include <stdint.h>

/* The scratch directory (created on first use; aborts if it cannot be). */
const char *fuzz_dir(void);
/* An fd of fuzz_dir(), for the readers that work relative to a directory. */
int fuzz_dir_fd(void);
/*
 * Replaces fuzz_dir()/name (parent directories created) with data; returns
 * its full path, valid until the next call.  Aborts on failure.
 */
const char *fuzz_write(const char *name, const uint8_t *data, size_t size);
/* data as a NUL-terminated malloc'd copy (the readers' buffers always are). */
char *fuzz_strndup(const uint8_t *data, size_t size);
/* data as a malloc'd copy of exactly size bytes: a parser given a length must not read past it. */
char *fuzz_memdup(const uint8_t *data, size_t size);

#endif
