/*
 * test_spool.c: the sampler's spool: order, acks, the bound (oldest
 * dropped and counted), and the spool file replayed after a restart with
 * the same epoch and sequence.  Test process, any user.
 */
#include <errno.h>
#include <stdlib.h>

#include "sampler.h"
#include "testlib.h"

static char dir[] = "/tmp/croft-spool-XXXXXX";

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
	spool_ack(sp, spool_epoch(sp), 4);
	spool_stats(sp, &st);
	ck_assert_uint_eq(st.batches, 1);
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
	char path[PATH_MAX];
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
	snprintf(path, sizeof(path), "%s/sampler.spool", dir);
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(torn_tail)
{
	char path[PATH_MAX];
	struct spool *sp;
	struct spool_stats st;
	FILE *f;

	snprintf(path, sizeof(path), "%s/sampler.spool", mkdtemp(dir));
	ck_assert_int_eq(spool_open(dir, 1 << 20, &sp), 0);
	add(sp, 1, 500);
	add(sp, 1, 500);
	spool_free(sp);
	/* killed in the middle of writing the second batch */
	ck_assert_int_eq(truncate(path, 40 + 40 + 500 + 40 + 100), 0);
	f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	ck_assert_int_eq(spool_open(dir, 1 << 20, &sp), 0);
	spool_stats(sp, &st);
	ck_assert_uint_eq(st.batches, 1);
	ck_assert_uint_eq(spool_first(sp)->seq, 1);
	spool_free(sp);
	unlink(path);
	rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("spool");
	TCase *tc = tcase_create("spool");

	tcase_add_test(tc, order_ack_bound);
	tcase_add_test(tc, survives_restart);
	tcase_add_test(tc, torn_tail);
	suite_add_tcase(s, tc);
	return tl_run(s);
}
