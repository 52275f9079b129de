/*
 * zstream.c: zstd frames decoded straight into the text the readers scan,
 * with zstd's bufferless API: ZSTD_decompressStream decodes into a window of
 * its own and copies every byte out (about a tenth of croft stats' time).
 * Calls end, and fail, where ZSTD_decompressStream's would, so a damaged
 * segment loses the same text as before.  Worker threads, no privilege.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define ZSTD_STATIC_LINKING_ONLY
#include <zstd.h>
#include <zstd_errors.h>

#include "engine.h"

/* The windows ZSTD_decompressStream takes: its ZSTD_MAXWINDOWSIZE_DEFAULT
 * (a larger one is refused), and the least it rounds up to. */
#define WINDOW_MAX ((1ull << ZSTD_WINDOWLOG_LIMIT_DEFAULT) + 1)
#define WINDOW_MIN (1u << 10)
#define ZERROR(e)  ((size_t) - (ZSTD_error_##e))

enum zs_stage {
	ZS_INIT,   /* the next byte starts a frame */
	ZS_HEADER, /* the frame header, maybe cut by the input's end */
	ZS_READ,   /* the next input unit (ZSTD_nextSrcSizeToDecompress) */
	ZS_LOAD,   /* a unit cut by the input's end, gathered in unit */
	ZS_FLUSH,  /* the decoded block, given to the caller as room allows */
};

/* What zstd may write past a block's start: the block, and its wild copies. */
#define BLOCK_REACH (ZSTD_BLOCKSIZE_MAX + 64)
/* Text carried this short is moved to buf's start as soon as zstd's history allows. */
#define CARRY_SHORT (64u << 10)

/*
 * One buffer: the caller's text, then zstd's output right after it, read in
 * place.  When the buffer's end nears, the text not yet read moves to its
 * start and zstd's output runs on from there: zstd keeps its previous run
 * of output as history, which must hold a window and must not be written
 * over while needed (start_over_allowed).  Text carried is moved early, when
 * it is short, so that little is ever moved.
 */
struct zstream {
	ZSTD_DCtx *dctx;
	size_t text_cap;
	char *buf;
	size_t buf_cap;            /* allocated, at least text_cap */
	size_t size;               /* the frame's part of buf: text_cap + window + 2 reaches */
	unsigned long long window; /* the frame's */
	size_t run_start;          /* where zstd's current run of output began */
	size_t out_start, out_end; /* given to the caller up to out_start; decoded to out_end */
	enum zs_stage stage;
	ZSTD_frameHeader fh;
	unsigned char header[ZSTD_FRAMEHEADERSIZE_MAX];
	size_t header_len;
	unsigned char unit[ZSTD_BLOCKSIZE_MAX];
	size_t unit_len;
	unsigned long long skip_left; /* a skippable frame's bytes still to pass */
	bool raw;                     /* the block is raw: taken as its bytes come */
	size_t zw_in, zw_out, zw_pos; /* ZSTD_decompressStream's window (zwin_frame) */
	unsigned zw_oversized;
	bool hostage; /* a frame decoded, its text not all given: its last byte held back */
};

static size_t buf_bytes(size_t size)
{
	return size + 2 * ROWSCAN_PAD;
}

int zstream_new(size_t text_cap, struct zstream **ret_zs)
{
	struct zstream *zs = calloc(1, sizeof(*zs));

	if (!zs)
		return -ENOMEM;
	zs->text_cap = zs->buf_cap = text_cap;
	zs->dctx = ZSTD_createDCtx();
	zs->buf = malloc(buf_bytes(text_cap));
	if (!zs->dctx || !zs->buf) {
		zstream_free(zs);
		return -ENOMEM;
	}
	*ret_zs = zs;
	return 0;
}

void zstream_free(struct zstream *zs)
{
	if (!zs)
		return;
	ZSTD_freeDCtx(zs->dctx);
	free(zs->buf);
	free(zs);
}

void zstream_reset(struct zstream *zs)
{
	zs->stage = ZS_INIT;
}

/* The text moves to buf's start; zstd's next output runs on after it. */
static void start_over(struct zstream *zs, char **text, size_t fill)
{
	memmove(zs->buf, *text, fill);
	*text = zs->buf;
	zs->run_start = zs->out_start = zs->out_end = fill;
}

/*
 * Whether zstd's output may start a new run after fill bytes of text: the
 * run so far is all the history it will keep, so it must hold a window,
 * and the next block (written from fill) must end before that window does.
 */
static bool start_over_allowed(const struct zstream *zs, size_t fill)
{
	return zs->out_start - zs->run_start >= zs->window &&
	       zs->out_start >= zs->window + BLOCK_REACH + fill;
}

/* Room for the next block: forced near the end (where it is always
 * allowed, by size), early when the text to move is short. */
static void make_room(struct zstream *zs, char **text, size_t fill)
{
	if (zs->out_start + BLOCK_REACH > zs->size ||
		(fill <= CARRY_SHORT && start_over_allowed(zs, fill)))
		start_over(zs, text, fill);
}

/* The frame's buffer (the text carried over with it); 0 or an error. */
static size_t frame_room(struct zstream *zs, char **text, size_t fill)
{
	zs->size = zs->text_cap + zs->window + 2 * BLOCK_REACH;
	if (zs->size > zs->buf_cap) {
		char *buf = malloc(buf_bytes(zs->size));
		if (!buf)
			return ZERROR(memory_allocation);
		memcpy(buf, *text, fill);
		free(zs->buf);
		zs->buf = buf;
		zs->buf_cap = zs->size;
		*text = buf;
	}
	start_over(zs, text, fill);
	return 0;
}

/* Gathers the frame header: 0 when whole, 1 when the input ended first, or an error. */
static size_t load_header(struct zstream *zs, const unsigned char **ip, const unsigned char *iend)
{
	for (;;) {
		size_t need = ZSTD_getFrameHeader(&zs->fh, zs->header, zs->header_len);
		if (ZSTD_isError(need) || need == 0)
			return need;
		size_t n = need - zs->header_len;
		if (n > (size_t)(iend - *ip))
			n = (size_t)(iend - *ip);
		memcpy(zs->header + zs->header_len, *ip, n);
		zs->header_len += n;
		*ip += n;
		if (zs->header_len < need) { /* its first bytes are checked now */
			need = ZSTD_getFrameHeader(&zs->fh, zs->header, zs->header_len);
			return ZSTD_isError(need) ? need : 1;
		}
	}
}

/*
 * ZSTD_decompressStream's own window, its size and where it writes only:
 * zstd is given the room for a block that window would leave, so that a
 * damaged block fails with the error it did.  Sized per frame as zstd does
 * (kept while big enough, unless three times too big for 128 frames).
 */
static void zwin_frame(struct zstream *zs)
{
	size_t in = zs->fh.blockSizeMax > 4 ? zs->fh.blockSizeMax : 4;
	size_t out = ZSTD_decodingBufferSize_min(zs->window, zs->fh.frameContentSize);

	zs->zw_oversized = zs->zw_in + zs->zw_out >= (in + out) * 3 ? zs->zw_oversized + 1 : 0;
	if (zs->zw_in < in || zs->zw_out < out || zs->zw_oversized >= 128) {
		zs->zw_in = in;
		zs->zw_out = out;
	}
	zs->zw_pos = 0;
}

static size_t zwin_room(struct zstream *zs)
{
	if (zs->zw_out < zs->fh.frameContentSize && zs->zw_pos + zs->fh.blockSizeMax > zs->zw_out)
		zs->zw_pos = 0; /* where zstd's window starts over */
	return zs->zw_out - zs->zw_pos;
}

/* The header read: the frame's decoder and window; 0 or an error. */
static size_t begin_frame(struct zstream *zs, char **text, size_t fill)
{
	bool skippable = zs->fh.frameType == ZSTD_skippableFrame;
	size_t at = 0, r;

	ZSTD_decompressBegin(zs->dctx);
	while (!skippable && ZSTD_nextInputType(zs->dctx) == ZSTDnit_frameHeader) {
		size_t n = ZSTD_nextSrcSizeToDecompress(zs->dctx);
		r = ZSTD_decompressContinue(zs->dctx, NULL, 0, zs->header + at, n);
		if (ZSTD_isError(r))
			return r;
		at += n;
	}
	zs->window = zs->fh.windowSize < WINDOW_MIN ? WINDOW_MIN : zs->fh.windowSize;
	if (zs->window > WINDOW_MAX)
		return ZERROR(frameParameter_windowTooLarge);
	zwin_frame(zs);
	zs->skip_left = zs->fh.frameContentSize; /* skippable: its length */
	return skippable ? 0 : frame_room(zs, text, fill);
}

/*
 * A frame wholly in the input and small enough for the caller's room is
 * decoded in one call, as ZSTD_decompressStream does (from where its call
 * began).  Returns its text's length, 0 if not taken, or an error.
 */
static size_t one_shot(struct zstream *zs, char **text, size_t fill, const unsigned char *istart,
	const unsigned char *iend, const unsigned char **ip, bool *taken)
{
	size_t csize, n;

	*taken = false;
	if (zs->fh.frameContentSize == ZSTD_CONTENTSIZE_UNKNOWN ||
		zs->fh.frameType == ZSTD_skippableFrame ||
		zs->text_cap - fill < zs->fh.frameContentSize)
		return 0;
	csize = ZSTD_findFrameCompressedSize(istart, (size_t)(iend - istart));
	if (csize > (size_t)(iend - istart))
		return 0;
	start_over(zs, text, fill);
	n = ZSTD_decompressDCtx(zs->dctx, zs->buf + fill, zs->text_cap - fill, istart, csize);
	if (!ZSTD_isError(n)) {
		*ip = istart + csize;
		*taken = true;
	}
	return n;
}

/* Input for the next unit: a raw block is taken as it comes. */
static size_t unit_size(const struct zstream *zs, size_t avail)
{
	size_t need = ZSTD_nextSrcSizeToDecompress(zs->dctx);
	ZSTD_nextInputType_e t = ZSTD_nextInputType(zs->dctx);

	if (zs->raw && (t == ZSTDnit_block || t == ZSTDnit_lastBlock) && avail < need)
		need = avail ? avail : 1;
	return need;
}

/* Decodes one unit after the text; 0 or an error. */
static size_t decode_unit(
	struct zstream *zs, char **text, size_t fill, const unsigned char *src, size_t n)
{
	bool block_header = ZSTD_nextInputType(zs->dctx) == ZSTDnit_blockHeader;

	make_room(zs, text, fill);
	size_t room = zs->size - zs->out_start, zroom = zwin_room(zs);
	size_t r = ZSTD_decompressContinue(
		zs->dctx, zs->buf + zs->out_start, room < zroom ? room : zroom, src, n);
	if (ZSTD_isError(r))
		return r;
	zs->zw_pos += r;
	if (block_header)
		zs->raw = (src[0] >> 1 & 3) == 0; /* Block_Type 0: raw */
	zs->out_end = zs->out_start + r;
	zs->stage = r ? ZS_FLUSH : ZS_READ;
	return 0;
}

/* A skippable frame's bytes: true when all are passed. */
static bool skip_bytes(struct zstream *zs, const unsigned char **ip, const unsigned char *iend)
{
	size_t n = (size_t)(iend - *ip);

	if (n > zs->skip_left)
		n = (size_t)zs->skip_left;
	*ip += n;
	zs->skip_left -= n;
	return zs->skip_left == 0;
}

enum zs_step { STEP_ON, STEP_MORE, STEP_FRAME_END };

/* One step of the stage machine; *err set on an error. */
static enum zs_step step(struct zstream *zs, char **text, size_t *fill, const unsigned char *istart,
	const unsigned char **ip, const unsigned char *iend, size_t *err)
{
	size_t need, n;
	bool taken;

	switch (zs->stage) {
	case ZS_INIT:
		zs->header_len = zs->unit_len = 0;
		zs->out_start = zs->out_end = 0;
		zs->hostage = zs->raw = false;
		zs->stage = ZS_HEADER;
		return STEP_ON;
	case ZS_HEADER:
		if ((*err = load_header(zs, ip, iend)) != 0)
			return STEP_MORE;
		n = one_shot(zs, text, *fill, istart, iend, ip, &taken);
		if (ZSTD_isError(n) || taken) {
			*err = ZSTD_isError(n) ? n : 0;
			*fill += taken ? n : 0;
			zs->stage = ZS_INIT;
			return STEP_FRAME_END;
		}
		*err = begin_frame(zs, text, *fill);
		zs->stage = ZS_READ;
		return STEP_ON;
	case ZS_READ:
		if (zs->fh.frameType == ZSTD_skippableFrame)
			return skip_bytes(zs, ip, iend) ? STEP_FRAME_END : STEP_MORE;
		need = unit_size(zs, (size_t)(iend - *ip));
		if (need == 0)
			return STEP_FRAME_END;
		if ((size_t)(iend - *ip) >= need) {
			*err = decode_unit(zs, text, *fill, *ip, need);
			*ip += need;
			return STEP_ON;
		}
		if (*ip == iend)
			return STEP_MORE;
		zs->stage = ZS_LOAD;
		return STEP_ON;
	case ZS_LOAD:
		need = ZSTD_nextSrcSizeToDecompress(zs->dctx);
		n = need - zs->unit_len;
		if (n > (size_t)(iend - *ip))
			n = (size_t)(iend - *ip);
		memcpy(zs->unit + zs->unit_len, *ip, n);
		zs->unit_len += n;
		*ip += n;
		if (zs->unit_len < need)
			return STEP_MORE;
		zs->unit_len = 0;
		*err = decode_unit(zs, text, *fill, zs->unit, need);
		return STEP_ON;
	case ZS_FLUSH:
		n = zs->out_end - zs->out_start;
		if (n > zs->text_cap - *fill)
			n = zs->text_cap - *fill;
		zs->out_start += n;
		*fill += n;
		if (zs->out_start < zs->out_end)
			return STEP_MORE; /* the caller's text is full */
		zs->stage = ZS_READ;
		return STEP_ON;
	}
	return STEP_MORE;
}

size_t zstream_decompress(
	struct zstream *zs, char **text, size_t *fill, const void *src, size_t size, size_t *pos)
{
	const unsigned char *istart = (const unsigned char *)src + *pos, *ip = istart;
	const unsigned char *iend = (const unsigned char *)src + size;
	size_t got = *fill, err = 0;
	enum zs_step s;

	while ((s = step(zs, text, &got, istart, &ip, iend, &err)) == STEP_ON && !err)
		;
	if (ZSTD_isError(err))
		return err; /* as zstd: nothing of this call is given */
	if (s == STEP_MORE && zs->stage == ZS_HEADER && err == 1) {
		*pos = size;
		return 1;
	}
	*fill = got;
	if (s == STEP_FRAME_END) {
		zs->stage = ZS_INIT;
		if (zs->hostage && ip == iend) {
			zs->stage = ZS_READ;
			*pos = (size_t)(ip - (const unsigned char *)src);
			return 1;
		}
		*pos = (size_t)(ip + zs->hostage - (const unsigned char *)src);
		return 0;
	}
	/* A frame decoded but not all given: zstd holds its last byte back. */
	if (zs->stage == ZS_FLUSH && !zs->hostage && ZSTD_nextSrcSizeToDecompress(zs->dctx) == 0) {
		zs->hostage = true;
		ip--;
	}
	*pos = (size_t)(ip - (const unsigned char *)src);
	return 1;
}
