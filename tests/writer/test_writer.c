/*
 * test_writer.c: Check suite for croft-writer's modules on their own: the
 * commit record's slots, segment names and boundaries, batch line checks,
 * retention choice, the compressor's frames and start-up recovery on real
 * files in a temporary directory.  Test process, any user.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_getFrameHeader: is the checksum flag set */
#include <zstd.h>

#include "testlib.h"
#include "writer.h"

static char tmpdir[64];
static int dirfd_tmp = -1;

static void tmp_setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/croft-unit.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	dirfd_tmp = open(tmpdir, O_RDONLY | O_DIRECTORY);
	ck_assert_int_ge(dirfd_tmp, 0);
}

static void tmp_teardown(void)
{
	char cmd[128];

	close(dirfd_tmp);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	ck_assert_int_eq(system(cmd), 0);
}

static void put_file(const char *name, const char *text, size_t len)
{
	int fd = openat(dirfd_tmp, name, O_WRONLY | O_CREAT | O_TRUNC, 0644);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, len), (ssize_t)len);
	close(fd);
}

static char *get_file(const char *name, size_t *ret_len)
{
	int fd = openat(dirfd_tmp, name, O_RDONLY);
	struct stat st;
	char *buf;

	if (fd < 0)
		return NULL;
	ck_assert_int_eq(fstat(fd, &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	ck_assert_int_eq(read(fd, buf, (size_t)st.st_size), st.st_size);
	buf[st.st_size] = '\0';
	close(fd);
	*ret_len = (size_t)st.st_size;
	return buf;
}

START_TEST(test_crc32)
{
	ck_assert_uint_eq(crc32_ieee("123456789", 9), 0xcbf43926u);
}
END_TEST

START_TEST(test_commit_slot_roundtrip)
{
	struct commit_rec in = { 7, 0x1234, 99, 42, 4096, 1792504800000ull }, out;
	uint8_t slot[COMMIT_SLOT_BYTES];

	commit_encode(&in, slot);
	ck_assert_int_eq(commit_decode(slot, &out), 0);
	ck_assert_mem_eq(&in, &out, sizeof(in));
	for (size_t i = 0; i < COMMIT_SLOT_BYTES; i++) {
		slot[i] ^= 0x40;
		ck_assert_int_eq(commit_decode(slot, &out), -EBADMSG);
		slot[i] ^= 0x40;
	}
}
END_TEST

START_TEST(test_commit_newest_valid_slot)
{
	struct commit_file *cf;
	struct commit_rec rec = { 0 }, got;
	bool found;

	ck_assert_int_eq(commit_open(dirfd_tmp, &cf, &got, &found), 0);
	ck_assert(!found);
	for (uint64_t seq = 1; seq <= 3; seq++) {
		rec.seq = seq;
		ck_assert_int_eq(commit_store(cf, &rec), 0);
	}
	commit_close(cf);
	ck_assert_int_eq(commit_open(dirfd_tmp, &cf, &got, &found), 0);
	ck_assert(found);
	ck_assert_uint_eq(got.seq, 3);
	ck_assert_uint_eq(got.generation, 3);
	commit_close(cf);
	/* generation 3 went to slot 0 (1: slot 0, 2: slot 1, 3: slot 0); tear it */
	int fd = openat(dirfd_tmp, COMMIT_NAME, O_WRONLY);
	ck_assert_int_eq(pwrite(fd, "torn", 4, 20), 4);
	close(fd);
	ck_assert_int_eq(commit_open(dirfd_tmp, &cf, &got, &found), 0);
	ck_assert(found);
	ck_assert_uint_eq(got.seq, 2);
	/* the next store overwrites the torn slot, not the good one */
	rec = got;
	rec.seq = 4;
	ck_assert_int_eq(commit_store(cf, &rec), 0);
	commit_close(cf);
	ck_assert_int_eq(commit_open(dirfd_tmp, &cf, &got, &found), 0);
	ck_assert_uint_eq(got.seq, 4);
	commit_close(cf);
}
END_TEST

START_TEST(test_names)
{
	char buf[SEG_NAME_MAX];
	uint64_t start;
	enum seg_kind kind;

	ck_assert_int_eq(seg_format(buf, sizeof(buf), 1792504800, SEG_JSONL), 0);
	ck_assert_str_eq(buf, "croft-dataset-20261020T140000Z.jsonl");
	ck_assert_int_eq(seg_format(buf, sizeof(buf), 1792504801, SEG_ZST_TMP), 0);
	ck_assert_str_eq(buf, "croft-dataset-20261020T140001Z.jsonl.zst.tmp");
	ck_assert_int_eq(seg_parse(buf, &start, &kind), 0);
	ck_assert_uint_eq(start, 1792504801);
	ck_assert_int_eq(kind, SEG_ZST_TMP);
	ck_assert_int_eq(seg_parse("croft-dataset-20261020T140000Z.jsonl.zst", &start, &kind), 0);
	ck_assert_int_eq(kind, SEG_ZST);
	ck_assert_int_lt(seg_parse("croft-dataset.jsonl", &start, &kind), 0);
	ck_assert_int_lt(seg_parse("croft-dataset.commit", &start, &kind), 0);
	ck_assert_int_lt(seg_parse("croft-dataset-20261020T140000Z.jsonl.bak", &start, &kind), 0);
	ck_assert_int_lt(seg_parse("croft-dataset-20261320T140000Z.jsonl", &start, &kind), 0);
	ck_assert_int_lt(seg_parse("croft-dataset-2026102xT140000Z.jsonl", &start, &kind), 0);
}
END_TEST

START_TEST(test_boundaries)
{
	const uint64_t hour = 3600000, t = 1792504800000ull; /* 14:00:00Z */

	ck_assert_uint_eq(seg_boundary_floor_ms(t + 1234567, hour), t);
	ck_assert_uint_eq(seg_next_boundary_ms(t, hour), t + hour);
	ck_assert_uint_eq(seg_next_boundary_ms(t + 1, hour), t + hour);
	/* begun at the boundary (a timer a few ms late): named for it */
	ck_assert_uint_eq(seg_start_s(t + 37, hour), t / 1000);
	/* begun mid-hour: named for its second */
	ck_assert_uint_eq(seg_start_s(t + 754321, hour), (t + 754000) / 1000);
	/* a 2 s interval aligns on even seconds since the epoch */
	ck_assert_uint_eq(seg_boundary_floor_ms(t + 3500, 2000), t + 2000);
	ck_assert_uint_eq(seg_start_s(t + 2100, 2000), (t + 2000) / 1000);
}
END_TEST

START_TEST(test_lines)
{
	const uint8_t ok[] = "{\"a\":1}\n{\"b\":2}\n";

	ck_assert_int_eq(lines_check(ok, sizeof(ok) - 1, 2), 0);
	ck_assert_int_eq(lines_check(ok, sizeof(ok) - 1, 3), -EBADMSG);
	ck_assert_int_eq(lines_check(ok, sizeof(ok) - 2, 2), -EBADMSG); /* no final '\n' */
	ck_assert_int_eq(lines_check(ok, sizeof(ok) - 2, 1), -EBADMSG);
	ck_assert_int_eq(lines_check((const uint8_t *)"{}\n\n", 4, 2), -EBADMSG);
	ck_assert_int_eq(lines_check((const uint8_t *)"{\0}\n", 4, 1), -EBADMSG);
	ck_assert_int_eq(lines_check(ok, 0, 0), 0);
}
END_TEST

static void seg(struct seg_info *s, uint64_t start_s, uint64_t bytes, bool busy)
{
	memset(s, 0, sizeof(*s));
	snprintf(s->name, sizeof(s->name), "s%llu", (unsigned long long)start_s);
	s->start_s = start_s;
	s->bytes = bytes;
	s->busy = busy;
}

START_TEST(test_retention_select)
{
	const uint64_t day = 86400, now_s = 100 * day;
	struct seg_info s[5];

	/* by age: 40 and 31 days old go, 29 days stays */
	seg(&s[0], now_s - 40 * day, 10, false);
	seg(&s[1], now_s - 31 * day, 10, false);
	seg(&s[2], now_s - 29 * day, 10, false);
	seg(&s[3], now_s - 3600, 10, false);
	ck_assert_uint_eq(retention_select(s, 4, now_s * 1000, 30 * day * 1000, 1000), 2);
	ck_assert(s[0].doomed && s[1].doomed && !s[2].doomed && !s[3].doomed);
	/* by size: oldest first until the rest fit; a busy one (raw, in
	 * compression) is neither counted nor chosen */
	seg(&s[0], 1000, 100, false);
	seg(&s[1], 2000, 100000, true);
	seg(&s[2], 3000, 100, false);
	seg(&s[3], 4000, 100, false);
	seg(&s[4], 5000, 100, false);
	ck_assert_uint_eq(retention_select(s, 5, 6000 * 1000, 0, 250), 2);
	ck_assert(s[0].doomed && !s[1].doomed && s[2].doomed && !s[3].doomed && !s[4].doomed);
	/* age applies to every closed segment, the newest too, but not a busy one */
	seg(&s[0], 1000, 100, false);
	seg(&s[1], 2000, 100, true);
	ck_assert_uint_eq(retention_select(s, 2, 100 * day * 1000, 1000, 1u << 30), 1);
	ck_assert(s[0].doomed && !s[1].doomed);
	seg(&s[0], 1000, 100, false);
	ck_assert_uint_eq(retention_select(s, 1, 100 * day * 1000, 1000, 1u << 30), 1);
	ck_assert(s[0].doomed);
	/* size too: a newest segment alone over the limit goes */
	seg(&s[0], 1000, 100, false);
	ck_assert_uint_eq(retention_select(s, 1, 2000 * 1000, 0, 10), 1);
	ck_assert(s[0].doomed);
}
END_TEST

START_TEST(test_compress_file)
{
	static const char name[] = "croft-dataset-20261020T140000Z.jsonl";
	size_t len = 300000, zlen, out_len;
	char *text = malloc(len), *z, *back;
	uint64_t in_bytes, out_bytes;
	ZSTD_frameHeader fh;

	for (size_t i = 0; i < len; i++)
		text[i] = i % 97 == 96 ? '\n' : (char)('a' + (i * 7 + i / 1000) % 26);
	put_file(name, text, len);
	ck_assert_int_eq(compress_file(dirfd_tmp, name, 3, NULL, &in_bytes, &out_bytes), 0);
	ck_assert_uint_eq(in_bytes, len);
	ck_assert_int_lt(faccessat(dirfd_tmp, name, F_OK, 0), 0); /* source removed */
	ck_assert_int_lt(
		faccessat(dirfd_tmp, "croft-dataset-20261020T140000Z.jsonl.zst.tmp", F_OK, 0), 0);
	z = get_file("croft-dataset-20261020T140000Z.jsonl.zst", &zlen);
	ck_assert_ptr_nonnull(z);
	ck_assert_uint_eq(zlen, out_bytes);
	ck_assert_uint_eq(ZSTD_getFrameHeader(&fh, z, zlen), 0);
	ck_assert_int_eq(fh.checksumFlag, 1);
	ck_assert_uint_eq(fh.frameContentSize, len);
	back = malloc(len);
	out_len = ZSTD_decompress(back, len, z, zlen);
	ck_assert(!ZSTD_isError(out_len));
	ck_assert_uint_eq(out_len, len);
	ck_assert_mem_eq(back, text, len);
	free(text);
	free(z);
	free(back);
}
END_TEST

static void iov_of(struct iovec *iov, const char *s)
{
	iov->iov_base = (void *)s;
	iov->iov_len = strlen(s);
}

START_TEST(test_dataset_recovery)
{
	struct dataset *ds;
	char(*to_compress)[SEG_NAME_MAX] = NULL;
	size_t to_compress_count = 99, len;
	struct iovec iov[2];
	char *text;
	int fd;

	ck_assert_int_eq(
		dataset_open(dirfd_tmp, 3600000, &ds, &to_compress, &to_compress_count), 0);
	ck_assert_uint_eq(to_compress_count, 0);
	free(to_compress);
	iov_of(&iov[0], "{\"unix_ms\":1792504800000,\"a\":1}\n");
	iov_of(&iov[1], "{\"unix_ms\":1792504800000,\"a\":2}\n");
	ck_assert_int_eq(dataset_append(ds, iov, 2, 5, 1), 0);
	ck_assert(ds->rec.epoch == 5 && ds->rec.seq == 1); /* the commit record's last batch */
	dataset_close(ds);
	/* a crash mid-append: a torn tail past the commit */
	fd = openat(dirfd_tmp, LIVE_NAME, O_WRONLY | O_APPEND);
	ck_assert_int_eq(write(fd, "{\"unix_ms\":17925", 16), 16);
	close(fd);
	ck_assert_int_eq(
		dataset_open(dirfd_tmp, 3600000, &ds, &to_compress, &to_compress_count), 0);
	ck_assert(ds->rec.epoch == 5 && ds->rec.seq == 1);
	ck_assert_uint_eq(ds->live_bytes, 0);
	ck_assert_uint_eq(to_compress_count, 1);
	/* named for the start the commit recorded (now, mid-hour); content cut back */
	text = get_file(to_compress[0], &len);
	ck_assert_ptr_nonnull(text);
	ck_assert_str_eq(
		text, "{\"unix_ms\":1792504800000,\"a\":1}\n{\"unix_ms\":1792504800000,\"a\":2}\n");
	free(text);
	free(to_compress);
	dataset_close(ds);
}
END_TEST

START_TEST(test_dataset_foreign_live_file)
{
	static const char rows[] =
		"{\"unix_ms\":1792504800123,\"x\":1}\n{\"unix_ms\":1792504802123,\"x\":2}\n{\"unix";
	struct dataset *ds;
	char(*to_compress)[SEG_NAME_MAX] = NULL;
	size_t to_compress_count = 0, len;
	char *text;

	/* no commit record: an older collector's file, named for its first row */
	put_file(LIVE_NAME, rows, sizeof(rows) - 1);
	ck_assert_int_eq(
		dataset_open(dirfd_tmp, 3600000, &ds, &to_compress, &to_compress_count), 0);
	ck_assert_uint_eq(to_compress_count, 1);
	ck_assert_str_eq(to_compress[0], "croft-dataset-20261020T140000Z.jsonl");
	text = get_file(to_compress[0], &len);
	ck_assert_uint_eq(len, sizeof(rows) - 1 - 6);
	free(text);
	free(to_compress);
	dataset_close(ds);
}
END_TEST

/* What adopting a live file without a commit record left as its one segment. */
static char *adopted(const char *live, size_t len, const char *want_name, size_t *ret_len)
{
	struct dataset *ds;
	char(*to_compress)[SEG_NAME_MAX] = NULL;
	size_t to_compress_count = 0;
	char *text;

	unlinkat(dirfd_tmp, LIVE_NAME, 0); /* a data dir an older collector wrote */
	unlinkat(dirfd_tmp, COMMIT_NAME, 0);
	put_file(LIVE_NAME, live, len);
	ck_assert_int_eq(
		dataset_open(dirfd_tmp, 3600000, &ds, &to_compress, &to_compress_count), 0);
	ck_assert_uint_eq(to_compress_count, 1);
	ck_assert_str_eq(to_compress[0], want_name);
	text = get_file(to_compress[0], ret_len);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(unlinkat(dirfd_tmp, to_compress[0], 0), 0);
	ck_assert_int_lt(faccessat(dirfd_tmp, ADOPT_TMP_NAME, F_OK, 0), 0);
	free(to_compress);
	dataset_close(ds);
	return text;
}

/*
 * Files as other writers leave them keep every row they hold: the seed's
 * example row (pretty-printed, no final newline: one row, not cut to
 * nothing), rows spaced as Python's json.dumps writes them with the last
 * one unterminated, a row whose unix_ms comes after other keys; each is
 * named by its first row's time, and becomes compact lines.
 */
START_TEST(test_dataset_foreign_spacing)
{
	static const char spaced[] = "{\"unix_ms\": 1792504800123, \"x\": \"a b\"}\n"
				     "  {\"unix_ms\": 1792504802123, \"x\": [1, {\"y\": 2}]}";
	static const char later_key[] =
		"{\"tgid\":1,\"process\":{\"unix_ms\":5},\"unix_ms\":1792508400000}";
	const char *seed_path = getenv("SEED_ROW");
	char *seed, *text;
	size_t seed_len, len;
	FILE *f;

	ck_assert_ptr_nonnull(seed_path);
	f = fopen(seed_path, "r");
	ck_assert_ptr_nonnull(f);
	seed = malloc(1 << 16);
	seed_len = fread(seed, 1, 1 << 16, f);
	fclose(f);
	ck_assert_int_eq(seed[seed_len - 1], '}'); /* as the seed shows it: no newline */
	text = adopted(seed, seed_len, "croft-dataset-20261020T141910Z.jsonl", &len);
	ck_assert_uint_eq(adopt_row_unix_ms(text, len), 1792505950473ull);
	ck_assert_ptr_null(memchr(text, '\n', len - 1)); /* one line */
	ck_assert_int_eq(text[len - 1], '\n');
	ck_assert_ptr_nonnull(strstr(text, "\"exe\":\"/usr/local/bin/python3.12\""));
	ck_assert_ptr_nonnull(
		strstr(text, "\"syscalls\":[{\"name\":\"futex\",\"rate_per_sec\":282.0}]}"));
	free(text);
	free(seed);
	text = adopted(spaced, sizeof(spaced) - 1, "croft-dataset-20261020T140000Z.jsonl", &len);
	ck_assert_str_eq(text, "{\"unix_ms\":1792504800123,\"x\":\"a b\"}\n"
			       "{\"unix_ms\":1792504802123,\"x\":[1,{\"y\":2}]}\n");
	free(text);
	text = adopted(
		later_key, sizeof(later_key) - 1, "croft-dataset-20261020T150000Z.jsonl", &len);
	ck_assert_uint_eq(len, sizeof(later_key));
	free(text);
}
END_TEST

START_TEST(test_rotate_names_unique_ordered)
{
	struct dataset *ds;
	char(*to_compress)[SEG_NAME_MAX] = NULL;
	size_t to_compress_count = 0;
	char first[SEG_NAME_MAX], second[SEG_NAME_MAX];
	struct iovec iov;
	uint64_t now = 1792504800000ull + 1500;

	ck_assert_int_eq(
		dataset_open(dirfd_tmp, 3600000, &ds, &to_compress, &to_compress_count), 0);
	free(to_compress);
	ds->rec.live_start_ms = now;
	iov_of(&iov, "{\"unix_ms\":1}\n");
	ck_assert_int_eq(dataset_append(ds, &iov, 1, 1, 1), 0);
	ck_assert_int_eq(dataset_rotate(ds, now, 0, 3600000, first), 0);
	ck_assert_int_eq(dataset_append(ds, &iov, 1, 1, 2), 0);
	/* the same second again, then a clock that went back an hour */
	ck_assert_int_eq(dataset_rotate(ds, now - 3600000, 0, 3600000, second), 0);
	ck_assert_str_eq(first, "croft-dataset-20261020T140001Z.jsonl");
	ck_assert_str_eq(second, "croft-dataset-20261020T140002Z.jsonl");
	/* an empty live file is not closed as a segment */
	ck_assert_int_eq(dataset_rotate(ds, now + 5000, 0, 3600000, second), 0);
	ck_assert_str_eq(second, "");
	dataset_close(ds);
}
END_TEST

static Suite *writer_suite(void)
{
	Suite *s = suite_create("writer");
	TCase *pure = tcase_create("pure"), *files = tcase_create("files");

	tcase_add_test(pure, test_crc32);
	tcase_add_test(pure, test_commit_slot_roundtrip);
	tcase_add_test(pure, test_names);
	tcase_add_test(pure, test_boundaries);
	tcase_add_test(pure, test_lines);
	tcase_add_test(pure, test_retention_select);
	tcase_add_checked_fixture(files, tmp_setup, tmp_teardown);
	tcase_add_test(files, test_commit_newest_valid_slot);
	tcase_add_test(files, test_compress_file);
	tcase_add_test(files, test_dataset_recovery);
	tcase_add_test(files, test_dataset_foreign_spacing);
	tcase_add_test(files, test_dataset_foreign_live_file);
	tcase_add_test(files, test_rotate_names_unique_ordered);
	suite_add_tcase(s, pure);
	suite_add_tcase(s, files);
	return s;
}

int main(void)
{
	return tl_run(writer_suite());
}
