/*
 * wcheck.c: checks a dataset written from wclient's synthetic batches, read
 * on stdin in file order: every line parses as JSON, batches appear in
 * order, each exactly once and whole (rows 0..R-1), and every seq listed in
 * the acks file is present.  Test process, any user.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

static uint64_t max_acked(const char *path, uint64_t *ret_count)
{
	FILE *f = fopen(path, "r");
	uint64_t max = 0, v, count = 0;

	if (!f) {
		perror(path);
		exit(2);
	}
	while (fscanf(f, "%" SCNu64, &v) == 1) {
		if (v <= max) {
			fprintf(stderr,
				"wcheck: acks out of order: %" PRIu64 " after %" PRIu64 "\n", v,
				max);
			exit(1);
		}
		max = v;
		count++;
	}
	fclose(f);
	*ret_count = count;
	return max;
}

int main(int argc, char **argv)
{
	uint64_t want_rows, acked, acks, seq = 1, row = 0, lines = 0, expect_batches = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;

	if (argc < 3) {
		fprintf(stderr, "usage: wcheck ACKS_FILE ROWS_PER_BATCH [BATCHES] < dataset\n");
		return 2;
	}
	acked = max_acked(argv[1], &acks);
	want_rows = strtoull(argv[2], NULL, 10);
	if (argc > 3)
		expect_batches = strtoull(argv[3], NULL, 10);
	while ((len = getline(&line, &cap, stdin)) > 0) {
		json_error_t err;
		json_t *o = json_loadb(line, (size_t)len, 0, &err);
		json_int_t s, r;

		lines++;
		if (!o || json_unpack(o, "{s:I, s:I}", "seq", &s, "row", &r) < 0) {
			fprintf(stderr, "wcheck: line %" PRIu64 " does not parse: %s: %.80s\n",
				lines, err.text, line);
			return 1;
		}
		json_decref(o);
		if ((uint64_t)s != seq || (uint64_t)r != row) {
			fprintf(stderr,
				"wcheck: line %" PRIu64
				": batch %lld row %lld, expected batch %" PRIu64 " row %" PRIu64
				" (duplicate, gap or reorder)\n",
				lines, (long long)s, (long long)r, seq, row);
			return 1;
		}
		if (++row == want_rows) {
			seq++;
			row = 0;
		}
	}
	if (row != 0) {
		fprintf(stderr, "wcheck: batch %" PRIu64 " is cut short at %" PRIu64 " rows\n", seq,
			row);
		return 1;
	}
	seq--; /* the last whole batch */
	if (seq < acked) {
		fprintf(stderr,
			"wcheck: acked batch %" PRIu64 " is missing (dataset ends at %" PRIu64
			")\n",
			acked, seq);
		return 1;
	}
	if (expect_batches && seq != expect_batches) {
		fprintf(stderr, "wcheck: %" PRIu64 " batches, expected %" PRIu64 "\n", seq,
			expect_batches);
		return 1;
	}
	printf("wcheck: %" PRIu64 " lines, %" PRIu64 " batches in order, %" PRIu64
	       " acks (last %" PRIu64 ") all present\n",
		lines, seq, acks, acked);
	free(line);
	return 0;
}
