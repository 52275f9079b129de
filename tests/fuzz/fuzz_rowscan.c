/*
 * fuzz_rowscan.c: libFuzzer harness for the readers' dataset lines, as a
 * differential test: the input up to its first '\n' is one line; whenever
 * the fast scanner accepts it, jansson must accept it and give the same row
 * (tests/cli/rowcheck.c, the oracle the rowscan unit test uses).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rowcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t len = nl ? (size_t)(nl - data) : size;
	char why[200];

	if (rowcheck_line((const char *)data, len, why, sizeof(why)) < 0) {
		fprintf(stderr, "fuzz_rowscan: %s: %.*s\n", why, (int)len, (const char *)data);
		abort();
	}
	return 0;
}
