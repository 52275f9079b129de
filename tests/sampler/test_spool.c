/*
 * test_spool.c: the sampler's spool: order, acks, the bound (oldest
 * dropped and counted), the spool files replayed after a restart with the
 * same epoch and sequence, and compaction that a kill cannot tear.  Test
 * process, any user.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "output.h"
#include "testlib.h"

static char dir[] = "/tmp/croft-spool-XXXXXX";

static void remove_dir(void)
{
	char path[PATH_MAX];

	for (int i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/sampler.spool.%d", dir, i);
		unlink(path);
	}
	ck_assert_int_eq(rmdir(dir), 0);
	strcpy(dir, "/tmp/croft-spool-XXXXXX");
}

static void add(struct spool *sp, int rows, size_t bytes)
{
	char *data = malloc(bytes);

	memset(data, 'x', bytes);
	for (size_t i = 99; i < bytes; i += 100)
		data[i] = '\n';
	ck_assert_int_eq(spool_add(sp, 1000, (uint32_t)rows, data, bytes), 0);
	free(data);
}

START_TEST(order_ack_bound)
{
	struct spool *sp;
	struct spool_stats st;
	struct spool_batch *b;

	ck_assert_int_eq(spool_open(NULL, 1000, &sp), 0);
	for (int i = 0; i < 5; i++)
		add(sp, 1, 300);
	/* 1 000 bytes hold three 300-byte batches: the two oldest were dropped */
	spool_stats(sp, &st);
	ck_assert_uint_eq(st.batches, 3);
	ck_assert_uint_eq(st.dropped_batches, 2);
	ck_assert_uint_eq(st.dropped_rows, 2);
	ck_assert(st.dropping);
	ck_assert(!st.persistent);
	b = spool_first(sp);
	ck_assert_uint_eq(b->seq, 3);
	ck_assert_uint_eq(b->next->seq, 4);
	/* an ack of another epoch changes nothing; ours drops up to seq */
	spool_ack(sp, spool_epoch(sp) + 1, 5);
	spool_stats(sp, &st);
	ck_assert_uint_eq(st.batches, 3);
	ck_assert_uint_eq(st.acked_batches, 0);
	spool_ack(sp, spool_epoch(sp), 4);
	spool_stats(sp, &st);
	ck_assert_uint_eq(st.batches, 1);
	ck_assert_uint_eq(st.acked_batches, 2); /* 3 and 4: what croft.prom calls written */
	ck_assert_uint_eq(st.acked_rows, 2);
	ck_assert_uint_eq(spool_first(sp)->seq, 5);
	add(sp, 1, 300);
	spool_stats(sp, &st);
	ck_assert(!st.dropping);
	ck_assert_uint_eq(st.next_seq, 7);
	spool_free(sp);
}
END_TEST

START_TEST(survives_restart)
{
	struct spool *sp, *again;
	struct spool_stats st;
	uint64_t epoch;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(spool_open(dir, 1 << 20, &sp), 0);
	epoch = spool_epoch(sp);
	for (int i = 0; i < 4; i++)
		add(sp, 2, 200);
	spool_ack(sp, epoch, 2);
	/* as after a SIGKILL: the process state is gone, the file is not */
	spool_free(sp);
	ck_assert_int_eq(spool_open(dir, 1 << 20, &again), 0);
	spool_stats(again, &st);
	ck_assert(st.persistent);
	ck_assert_uint_eq(spool_epoch(again), epoch);
	ck_assert_uint_eq(st.batches, 2);
	ck_assert_uint_eq(spool_first(again)->seq, 3);
	ck_assert_uint_eq(spool_first(again)->rows, 2);
	ck_assert_uint_eq(spool_first(again)->len, 200);
	ck_assert_uint_eq(st.next_seq, 5);
	/* everything acked: the next start resumes the sequence, nothing to resend */
	spool_ack(again, epoch, 4);
	spool_free(again);
	ck_assert_int_eq(spool_open(dir, 1 << 20, &again), 0);
	spool_stats(again, &st);
	ck_assert_uint_eq(spool_epoch(again), epoch);
	ck_assert_uint_eq(st.batches, 0);
	ck_assert_uint_eq(st.next_seq, 5);
	spool_free(again);
	remove_dir();
}
END_TEST

START_TEST(torn_tail)
{
	char path[PATH_MAX];
	struct spool *sp;
	struct spool_stats st;

	/* the first file written after start is .1 (both were empty) */
	snprintf(path, sizeof(path), "%s/sampler.spool.1", mkdtemp(dir));
	ck_assert_int_eq(spool_open(dir, 1 << 20, &sp), 0);
	add(sp, 1, 500);
	add(sp, 1, 500);
	spool_free(sp);
	/* killed in the middle of writing the second batch */
	ck_assert_int_eq(truncate(path, 40 + 40 + 500 + 40 + 100), 0);
	ck_assert_int_eq(spool_open(dir, 1 << 20, &sp), 0);
	spool_stats(sp, &st);
	ck_assert_uint_eq(st.batches, 1);
	ck_assert_uint_eq(spool_first(sp)->seq, 1);
	spool_free(sp);
	remove_dir();
}
END_TEST

/* Both files, the longer one first: the one a compaction would write next is the other. */
static void spool_files(char paths[2][PATH_MAX])
{
	struct stat st[2];

	for (int i = 0; i < 2; i++) {
		snprintf(paths[i], PATH_MAX, "%s/sampler.spool.%d", dir, i);
		ck_assert_int_eq(stat(paths[i], &st[i]), 0);
	}
	if (st[1].st_size > st[0].st_size) {
		char tmp[PATH_MAX];

		memcpy(tmp, paths[0], PATH_MAX);
		memcpy(paths[0], paths[1], PATH_MAX);
		memcpy(paths[1], tmp, PATH_MAX);
	}
}

START_TEST(compaction_untearable)
{
	char paths[2][PATH_MAX], junk[4096];
	struct spool *sp;
	struct spool_stats st;
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(spool_open(dir, 64 << 20, &sp), 0);
	for (int i = 0; i < 30; i++)
		add(sp, 1, 100 << 10);
	/* 2.7 MB acked out of 3 MB: the unacked three move to the other file */
	spool_ack(sp, spool_epoch(sp), 27);
	spool_free(sp);
	spool_files(paths);
	f = fopen(paths[0], "rb");
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	ck_assert_int_lt(ftell(f), 1 << 20); /* compacted: about 300 KB */
	fclose(f);
	/* the next compaction killed before its head was written: batches, no head */
	memset(junk, 0, 40);
	memset(junk + 40, 'j', sizeof(junk) - 40);
	f = fopen(paths[1], "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(junk, 1, sizeof(junk), f), sizeof(junk));
	fclose(f);
	ck_assert_int_eq(spool_open(dir, 64 << 20, &sp), 0);
	spool_stats(sp, &st);
	ck_assert_uint_eq(st.batches, 3);
	ck_assert_uint_eq(spool_first(sp)->seq, 28);
	ck_assert_uint_eq(spool_first(sp)->len, 100 << 10);
	ck_assert_uint_eq(st.next_seq, 31);
	spool_free(sp);
	remove_dir();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("spool");
	TCase *tc = tcase_create("spool");

	tcase_add_test(tc, order_ack_bound);
	tcase_add_test(tc, survives_restart);
	tcase_add_test(tc, torn_tail);
	tcase_add_test(tc, compaction_untearable);
	suite_add_tcase(s, tc);
	return tl_run(s);
}
