/*
 * commit.c: croft-writer's commit record, croft-dataset.commit in the data
 * dir.  Two fixed 64-byte slots written alternately, each with a CRC, so a
 * crash in the middle of a store always leaves the previous record intact.
 * Writer process, croft user.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "writer.h"

#define COMMIT_MAGIC   0x43524643u /* "CFRC" little-endian */
#define COMMIT_VERSION 1u

struct commit_file {
	int fd;
	unsigned next_slot; /* the slot the next store overwrites */
};

uint32_t crc32_ieee(const void *data, size_t len)
{
	static uint32_t table[256];
	const uint8_t *p = data;
	uint32_t crc = 0xffffffffu;

	if (!table[1]) {
		for (uint32_t i = 0; i < 256; i++) {
			uint32_t c = i;

			for (int k = 0; k < 8; k++)
				c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
			table[i] = c;
		}
	}
	while (len--)
		crc = table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc ^ 0xffffffffu;
}

/* bytes of v at p, little-endian */
static void put_le(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;

	for (int i = bytes - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* Layout, little-endian: magic, version, generation, epoch, seq, inode,
 * offset, start_ms, reserved, crc32 of the 60 bytes before it. */
void commit_encode(const struct commit_rec *rec, uint8_t slot[COMMIT_SLOT_BYTES])
{
	memset(slot, 0, COMMIT_SLOT_BYTES);
	put_le(slot, COMMIT_MAGIC, 4);
	put_le(slot + 4, COMMIT_VERSION, 4);
	put_le(slot + 8, rec->generation, 8);
	put_le(slot + 16, rec->epoch, 8);
	put_le(slot + 24, rec->seq, 8);
	put_le(slot + 32, rec->live_inode, 8);
	put_le(slot + 40, rec->live_offset, 8);
	put_le(slot + 48, rec->live_start_ms, 8);
	put_le(slot + 60, crc32_ieee(slot, 60), 4);
}

int commit_decode(const uint8_t slot[COMMIT_SLOT_BYTES], struct commit_rec *ret_rec)
{
	if (get_le(slot, 4) != COMMIT_MAGIC || get_le(slot + 4, 4) != COMMIT_VERSION)
		return -EBADMSG;
	if (get_le(slot + 60, 4) != crc32_ieee(slot, 60) || get_le(slot + 8, 8) == 0)
		return -EBADMSG;
	ret_rec->generation = get_le(slot + 8, 8);
	ret_rec->epoch = get_le(slot + 16, 8);
	ret_rec->seq = get_le(slot + 24, 8);
	ret_rec->live_inode = get_le(slot + 32, 8);
	ret_rec->live_offset = get_le(slot + 40, 8);
	ret_rec->live_start_ms = get_le(slot + 48, 8);
	return 0;
}

/* Picks the valid slot with the highest generation; the other is next. */
static void commit_pick(struct commit_file *cf, const uint8_t *buf, size_t got,
	struct commit_rec *ret_rec, bool *ret_found)
{
	struct commit_rec slots[2];
	bool ok[2] = { false, false };

	for (unsigned i = 0; i < 2; i++)
		if (got >= (i + 1) * COMMIT_SLOT_BYTES)
			ok[i] = commit_decode(buf + i * COMMIT_SLOT_BYTES, &slots[i]) == 0;
	*ret_found = ok[0] || ok[1];
	if (!*ret_found) {
		cf->next_slot = 0;
		return;
	}
	unsigned best = ok[0] && (!ok[1] || slots[0].generation > slots[1].generation) ? 0 : 1;

	*ret_rec = slots[best];
	cf->next_slot = best ^ 1;
}

int commit_open(int dirfd, struct commit_file **ret_cf, struct commit_rec *ret_rec, bool *ret_found)
{
	uint8_t buf[2 * COMMIT_SLOT_BYTES];
	struct commit_file *cf;
	size_t got = 0;
	int ret;

	cf = calloc(1, sizeof(*cf));
	if (!cf)
		return -ENOMEM;
	cf->fd = openat(dirfd, COMMIT_NAME, O_RDWR | O_CREAT | O_CLOEXEC, 0640);
	if (cf->fd < 0) {
		ret = -errno;
		free(cf);
		return ret;
	}
	ret = file_read_at(cf->fd, buf, sizeof(buf), 0, &got);
	if (ret < 0) {
		commit_close(cf);
		return ret;
	}
	memset(ret_rec, 0, sizeof(*ret_rec));
	commit_pick(cf, buf, got, ret_rec, ret_found);
	*ret_cf = cf;
	return 0;
}

void commit_close(struct commit_file *cf)
{
	if (!cf)
		return;
	close(cf->fd);
	free(cf);
}

/*
 * Writes rec with the next generation into the older slot and makes it
 * durable.  rec->generation is set only on success, so a failed store is
 * simply retried into the same slot; the other slot stays valid meanwhile.
 */
int commit_store(struct commit_file *cf, struct commit_rec *rec)
{
	struct commit_rec next = *rec;
	uint8_t slot[COMMIT_SLOT_BYTES];
	int ret;

	next.generation = rec->generation + 1;
	commit_encode(&next, slot);
	ret = file_write_at(cf->fd, slot, sizeof(slot), (off_t)(cf->next_slot * COMMIT_SLOT_BYTES));
	if (ret == 0 && fdatasync(cf->fd) < 0)
		ret = -errno;
	if (ret < 0)
		return ret;
	rec->generation = next.generation;
	cf->next_slot ^= 1;
	return 0;
}
