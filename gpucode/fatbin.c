// SPDX-License-Identifier: MIT
/*
 * Fatbin walking and decompression.  Layout (little endian, docs/fatbin.md):
 *
 *   fatbin header (16 bytes): u32 magic, u16 version, u16 header size,
 *                             u64 size of the entries that follow
 *   entry header (>= 64 bytes, then name/options strings):
 *     0 u16 kind        4 u32 header size    8 u64 stored image size
 *    16 u32 compressed size                 20 u32 offset of {off, len}
 *                                              of options/extra data
 *    24 u16 minor  26 u16 major  28 u32 arch
 *    32 u32 name offset  36 u32 name length  40 u64 flags
 *    48 u64 reserved     56 u64 decompressed size
 *   image: stored size bytes right after the entry header.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>
#include <zstd.h>

#include "gpucode/fatbin.h"
#include "gpucode/fatbin_priv.h"

#define FB_HDR_SIZE	16
#define FB_ENTRY_MIN	64

int fatbin_fail(char *err, size_t errlen, int errnum, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return -errnum;
}

/* Check the fatbin header at BUF; sets *HSIZE and *TOTAL. */
static int parse_header(const uint8_t *buf, size_t len, size_t *hsize,
			size_t *total, char *err, size_t errlen)
{
	uint64_t payload;

	if (len < FB_HDR_SIZE)
		return fatbin_fail(err, errlen, EBADMSG,
				   "truncated fatbin header (%zu bytes)", len);
	if (fb_get32(buf) != FATBIN_MAGIC)
		return fatbin_fail(err, errlen, EBADMSG,
				   "bad fatbin magic 0x%08x", fb_get32(buf));
	if (fb_get16(buf + 4) != 1)
		return fatbin_fail(err, errlen, EPROTO,
				   "unsupported fatbin version %u",
				   fb_get16(buf + 4));
	*hsize = fb_get16(buf + 6);
	payload = fb_get64(buf + 8);
	if (*hsize < FB_HDR_SIZE || *hsize > len ||
	    payload > len - *hsize)
		return fatbin_fail(err, errlen, EBADMSG,
				   "fatbin size %llu (header %zu) exceeds the "
				   "%zu bytes available",
				   (unsigned long long)payload, *hsize, len);
	*total = *hsize + payload;
	return 0;
}

int fatbin_size(const void *buf, size_t len, size_t *size,
		char *err, size_t errlen)
{
	size_t hsize;

	return parse_header(buf, len, &hsize, size, err, errlen);
}

static char *dup_field(const uint8_t *p, size_t n)
{
	const uint8_t *nul = memchr(p, 0, n);

	return strndup((const char *)p, nul ? (size_t)(nul - p) : n);
}

/* Decompress E's image from SRC (STORED bytes) into a new buffer. */
static int decompress(const struct fatbin_entry *e, const uint8_t *src,
		      size_t stored, uint32_t csize, uint64_t usize,
		      uint8_t **out, char *err, size_t errlen)
{
	unsigned long long fcs;
	uint8_t *dst;
	size_t n;

	if (csize == 0)
		csize = stored;
	if (csize > stored)
		return fatbin_fail(err, errlen, EBADMSG,
				   "compressed size %u exceeds stored size %zu",
				   csize, stored);
	if (usize == 0 || usize > FATBIN_MAX_IMAGE)
		return fatbin_fail(err, errlen, EBADMSG,
				   "bad decompressed size %llu",
				   (unsigned long long)usize);
	if (usize > (uint64_t)csize * FATBIN_MAX_RATIO + FATBIN_RATIO_SLACK)
		return fatbin_fail(err, errlen, EBADMSG,
				   "%u bytes would decompress to %llu: more "
				   "than %u:1, refused as a decompression bomb",
				   csize, (unsigned long long)usize,
				   FATBIN_MAX_RATIO);
	if (e->comp == FATBIN_COMP_ZSTD) {
		fcs = ZSTD_getFrameContentSize(src, csize);
		if (fcs == ZSTD_CONTENTSIZE_ERROR)
			return fatbin_fail(err, errlen, EBADMSG,
					   "not a zstd frame");
		if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != usize)
			return fatbin_fail(err, errlen, EBADMSG,
					   "zstd frame holds %llu bytes, "
					   "header says %llu", fcs,
					   (unsigned long long)usize);
	} else if (usize > (uint64_t)csize * 255 + 16) {
		/* LZ4 cannot expand more than 255:1. */
		return fatbin_fail(err, errlen, EBADMSG,
				   "decompressed size %llu impossible for "
				   "%u LZ4 bytes", (unsigned long long)usize,
				   csize);
	}
	dst = malloc(usize);
	if (!dst)
		return fatbin_fail(err, errlen, ENOMEM, "out of memory");
	if (e->comp == FATBIN_COMP_ZSTD) {
		n = ZSTD_decompress(dst, usize, src, csize);
		if (ZSTD_isError(n) || n != usize) {
			free(dst);
			return fatbin_fail(err, errlen, EBADMSG,
					   "zstd: %s", ZSTD_isError(n) ?
					   ZSTD_getErrorName(n) :
					   "short output");
		}
	} else {
		int r = LZ4_decompress_safe((const char *)src, (char *)dst,
					    (int)csize, (int)usize);
		if (r < 0 || (uint64_t)r != usize) {
			free(dst);
			return fatbin_fail(err, errlen, EBADMSG,
					   "lz4: corrupt block");
		}
	}
	*out = dst;
	return 0;
}

/* Fill E from the entry header at P (AVAIL bytes up to the fatbin's end). */
static int parse_entry(struct fatbin_entry *e, const uint8_t *p, size_t avail,
		       size_t *ehs, uint64_t *stored, char *err, size_t errlen)
{
	uint32_t name_off, name_len, xoff;
	uint64_t flags;

	if (avail < FB_ENTRY_MIN)
		return fatbin_fail(err, errlen, EBADMSG,
				   "truncated entry header (%zu bytes)", avail);
	*ehs = fb_get32(p + 4);
	*stored = fb_get64(p + 8);
	if (*ehs < FB_ENTRY_MIN || *ehs > avail)
		return fatbin_fail(err, errlen, EBADMSG,
				   "bad entry header size %zu", *ehs);
	if (*stored > avail - *ehs)
		return fatbin_fail(err, errlen, EBADMSG,
				   "image size %llu exceeds the fatbin",
				   (unsigned long long)*stored);
	e->kind = fb_get16(p);
	e->is_ptx = e->kind == FATBIN_KIND_PTX;
	e->minor = fb_get16(p + 24);
	e->major = fb_get16(p + 26);
	if (fb_get32(p + 28) > UINT16_MAX)
		return fatbin_fail(err, errlen, EBADMSG, "bad arch %u",
				   fb_get32(p + 28));
	e->arch.sm = (uint16_t)fb_get32(p + 28);
	flags = fb_get64(p + 40);
	e->flags = flags;
	e->arch.variant = flags & FATBIN_FLAG_ARCH_A ? 'a' :
			  flags & FATBIN_FLAG_ARCH_F ? 'f' : 0;
	if ((flags & FATBIN_FLAG_LZ4) && (flags & FATBIN_FLAG_ZSTD))
		return fatbin_fail(err, errlen, EBADMSG,
				   "both LZ4 and zstd flags set");
	e->comp = flags & FATBIN_FLAG_LZ4 ? FATBIN_COMP_LZ4 :
		  flags & FATBIN_FLAG_ZSTD ? FATBIN_COMP_ZSTD :
		  FATBIN_COMP_NONE;
	e->comp_size = fb_get32(p + 16);
	e->plain_size = fb_get64(p + 56);

	name_off = fb_get32(p + 32);
	name_len = fb_get32(p + 36);
	if (name_len && (name_off > *ehs || name_len > *ehs - name_off))
		return fatbin_fail(err, errlen, EBADMSG,
				   "name (%u+%u) outside the entry header",
				   name_off, name_len);
	if (name_len && !(e->name = dup_field(p + name_off, name_len)))
		return fatbin_fail(err, errlen, ENOMEM, "out of memory");

	/* {u32 offset, u32 length} of the compiler options (PTX, LTO IR)
	 * or opaque target data (newer cubins), inside the entry header. */
	xoff = fb_get32(p + 20);
	if (xoff) {
		uint32_t o, n;

		if (xoff > *ehs - 8)
			return fatbin_fail(err, errlen, EBADMSG,
					   "options descriptor at %u outside "
					   "the entry header", xoff);
		o = fb_get32(p + xoff);
		n = fb_get32(p + xoff + 4);
		if (n && (o > *ehs || n > *ehs - o))
			return fatbin_fail(err, errlen, EBADMSG,
					   "options (%u+%u) outside the entry "
					   "header", o, n);
		if (n && e->kind != FATBIN_KIND_ELF &&
		    !(e->options = dup_field(p + o, n)))
			return fatbin_fail(err, errlen, ENOMEM,
					   "out of memory");
	}
	return 0;
}

/* Decode the entry at FB+OFF into E; decompress it into *PLAIN only if
 * KIND (0: any) wants it, else *SKIP, and not at all when STORED. */
static int load_entry(struct fatbin_entry *e, const uint8_t *fb, size_t off,
		      size_t total, unsigned kind, bool stored_only,
		      uint64_t *budget, size_t *next, bool *skip,
		      uint8_t **plain, char *why, size_t whylen)
{
	const uint8_t *p = fb + off;
	uint64_t stored = 0;
	size_t ehs = 0;
	int ret;

	ret = parse_entry(e, p, total - off, &ehs, &stored, why, whylen);
	if (ret < 0)
		return ret;
	*next = off + ehs + stored;
	e->data = p + ehs;
	e->size = e->stored_size = stored;
	*skip = (kind & FATBIN_KIND_MASK) &&
		e->kind != (kind & FATBIN_KIND_MASK);
	if (*skip)
		return 0;
	/* Other kinds (LTO IR) are opaque: passed on as stored. */
	if (stored_only || e->comp == FATBIN_COMP_NONE ||
	    (e->kind != FATBIN_KIND_PTX && e->kind != FATBIN_KIND_ELF))
		return 0;
	if (e->plain_size > *budget)
		return fatbin_fail(why, whylen, EBADMSG,
				   "decompressing %llu more bytes passes the "
				   "total for this file (%llu bytes left): "
				   "refused as a decompression bomb",
				   (unsigned long long)e->plain_size,
				   (unsigned long long)*budget);
	ret = decompress(e, e->data, stored, e->comp_size, e->plain_size,
			 plain, why, whylen);
	if (ret < 0)
		return ret;
	e->data = *plain;
	e->size = e->plain_size;
	return 0;
}

int fatbin_entry_image(const struct fatbin_entry *e, uint8_t **out,
		       size_t *size, char *err, size_t errlen)
{
	int ret;

	if (e->comp == FATBIN_COMP_NONE ||
	    (e->kind != FATBIN_KIND_PTX && e->kind != FATBIN_KIND_ELF)) {
		*out = malloc(e->size ? e->size : 1);
		if (!*out)
			return fatbin_fail(err, errlen, ENOMEM,
					   "out of memory");
		memcpy(*out, e->data, e->size);
		*size = e->size;
		return 0;
	}
	ret = decompress(e, e->data, e->stored_size, e->comp_size,
			 e->plain_size, out, err, errlen);
	if (ret < 0)
		return ret;
	*size = e->plain_size;
	return 0;
}

/*
 * With FATBIN_CUBIN_PTX: the PTX the cubin entry E carries, for a walk
 * that wants PTX.  PLAIN: its image when decompressed already.  A cubin
 * that cannot be read or has no usable PTX yields nothing (its entry
 * stands for it).
 */
static int cubin_ptx(const struct fatbin_entry *e, const uint8_t *plain,
		     unsigned kind, bool stored_only, fatbin_entry_fn fn,
		     void *arg)
{
	unsigned want = kind & FATBIN_KIND_MASK;
	uint8_t *img = NULL;
	size_t len;
	int ret;

	if (!(kind & FATBIN_CUBIN_PTX) || e->kind != FATBIN_KIND_ELF ||
	    (want && want != FATBIN_KIND_PTX))
		return 0;
	if (e->comp == FATBIN_COMP_NONE || plain)
		return fatbin_cubin_each_ptx(e, e->data, e->size, fn, arg);
	if (stored_only && (kind & FATBIN_CUBIN_CHEAP))
		return 0;
	ret = fatbin_entry_image(e, &img, &len, NULL, 0);
	if (ret < 0)
		return ret == -ENOMEM ? ret : 0;
	ret = fatbin_cubin_each_ptx(e, img, len, fn, arg);
	free(img);
	return ret;
}

uint64_t fatbin_budget(size_t len)
{
	return FATBIN_TOTAL_SLACK + (uint64_t)FATBIN_TOTAL_RATIO * len;
}

/* Walk the entries of the fatbin at BUF+BASE. */
static int walk_one(const uint8_t *buf, size_t base, size_t hsize,
		    size_t total, unsigned kind, bool stored_only,
		    uint64_t *budget, fatbin_entry_fn fn, void *arg,
		    char *err, size_t errlen)
{
	const uint8_t *fb = buf + base;
	size_t off = hsize, next = 0;
	int idx = 0, ret = 0;

	while (off < total && ret == 0) {
		struct fatbin_entry e = { .index = idx };
		uint8_t *plain = NULL;
		bool skip = false;
		char why[160];

		/* Zero padding may follow the last entry. */
		if (total - off < FB_ENTRY_MIN &&
		    !memcmp(fb + off, (uint8_t[FB_ENTRY_MIN]){ 0 },
			    total - off))
			break;
		e.fatbin_off = base;
		e.entry_off = base + off;
		ret = load_entry(&e, fb, off, total, kind, stored_only, budget,
				 &next, &skip, &plain, why, sizeof(why));
		if (ret >= 0 && plain)
			*budget -= e.plain_size;
		if (ret < 0) {
			fatbin_fail(err, errlen, -ret,
				    "fatbin at 0x%zx: entry %d at 0x%zx: %s",
				    base, idx, base + off, why);
		} else if (!skip) {
			const char *name = e.name, *opts = e.options;

			e.name = name ? name : "";
			e.options = opts ? opts : "";
			ret = fn(&e, arg);
			if (ret < 0)
				fatbin_fail(err, errlen, -ret,
					    "fatbin at 0x%zx: entry %d: "
					    "callback failed: %s", base, idx,
					    strerror(-ret));
			e.name = name;
			e.options = opts;
		}
		if (ret == 0) {
			const char *name = e.name;

			e.name = name ? name : "";
			ret = cubin_ptx(&e, plain, kind, stored_only, fn, arg);
			e.name = name;
			if (ret < 0)
				fatbin_fail(err, errlen, -ret,
					    "fatbin at 0x%zx: entry %d: the "
					    "PTX of its cubin: %s", base, idx,
					    strerror(-ret));
		}
		free(plain);
		free((char *)e.name);
		free((char *)e.options);
		off = next;
		idx++;
	}
	return ret;
}

int fatbin_foreach(const void *buf, size_t len, fatbin_entry_fn fn, void *arg,
		   char *err, size_t errlen)
{
	return fatbin_foreach_kind(buf, len, 0, fn, arg, err, errlen);
}

static int foreach(const void *buf, size_t len, unsigned kind,
		   bool stored_only, uint64_t *budget, fatbin_entry_fn fn,
		   void *arg, char *err, size_t errlen)
{
	const uint8_t *p = buf;
	size_t off = 0, hsize, total;
	int found = 0, ret;
	char why[160];

	for (;;) {
		/* Linked sections pad fatbins with zeros to their alignment. */
		while (off < len && p[off] == 0)
			off++;
		if (off >= len)
			break;
		ret = parse_header(p + off, len - off, &hsize, &total,
				   why, sizeof(why));
		if (ret < 0)
			return fatbin_fail(err, errlen, -ret,
					   "fatbin at 0x%zx: %s", off, why);
		ret = walk_one(p, off, hsize, total, kind, stored_only, budget,
			       fn, arg, err, errlen);
		if (ret)
			return ret;
		found++;
		off += total;
	}
	if (!found)
		return fatbin_fail(err, errlen, ENOENT, "no fatbin found");
	return 0;
}

int fatbin_foreach_budget(const void *buf, size_t len, unsigned kind,
			  fatbin_entry_fn fn, void *arg, uint64_t *budget,
			  char *err, size_t errlen)
{
	return foreach(buf, len, kind, false, budget, fn, arg, err, errlen);
}

int fatbin_foreach_kind(const void *buf, size_t len, unsigned kind,
			fatbin_entry_fn fn, void *arg, char *err, size_t errlen)
{
	uint64_t budget = fatbin_budget(len);

	return foreach(buf, len, kind, false, &budget, fn, arg, err, errlen);
}

int fatbin_foreach_stored(const void *buf, size_t len, unsigned kind,
			  fatbin_entry_fn fn, void *arg, char *err,
			  size_t errlen)
{
	uint64_t budget = 0;	/* nothing is decompressed */

	return foreach(buf, len, kind, true, &budget, fn, arg, err, errlen);
}

int fatbin_walk_single(const void *buf, size_t len, unsigned kind,
		       fatbin_entry_fn fn, void *arg, uint64_t *budget,
		       char *err, size_t errlen)
{
	size_t hsize, total;
	int ret;

	ret = parse_header(buf, len, &hsize, &total, err, errlen);
	if (ret < 0)
		return ret;
	return walk_one(buf, 0, hsize, total, kind, false, budget, fn, arg,
			err, errlen);
}

enum fatbin_image fatbin_image_kind(const void *image, size_t avail)
{
	const uint8_t *p = image;

	if (!p || avail < 4)
		return FATBIN_IMAGE_UNKNOWN;
	if (fb_get32(p) == FATBIN_MAGIC)
		return FATBIN_IMAGE_FATBIN;
	if (fb_get32(p) == FATBIN_WRAPPER_MAGIC)
		return FATBIN_IMAGE_WRAPPER;
	if (!memcmp(p, "\177ELF", 4))
		return FATBIN_IMAGE_ELF;
	/* PTX is text: comments, blank lines or directives first. */
	if (p[0] == '/' || p[0] == '.' || p[0] == '\n' || p[0] == '\t' ||
	    p[0] == ' ' || p[0] == '\r')
		return FATBIN_IMAGE_PTX;
	return FATBIN_IMAGE_UNKNOWN;
}

int fatbin_mem_locate(const void *p, const void **fb, size_t *len,
		      char *err, size_t errlen)
{
	const uint8_t *h = p;
	uint64_t payload;
	uint16_t hsize;

	if (!h)
		return fatbin_fail(err, errlen, EINVAL, "NULL image");
	if (fb_get32(h) == FATBIN_WRAPPER_MAGIC) {
		uint32_t ver = fb_get32(h + 4);

		/* version 1: plain; 2: with a prelinked-fatbin list. */
		if (ver != 1 && ver != 2)
			return fatbin_fail(err, errlen, EPROTO,
					   "unsupported wrapper version %u",
					   ver);
		memcpy(&h, h + 8, sizeof(h));
		if (!h)
			return fatbin_fail(err, errlen, EBADMSG,
					   "wrapper has no fatbin pointer");
	}
	if (fb_get32(h) != FATBIN_MAGIC)
		return fatbin_fail(err, errlen, EBADMSG,
				   "no fatbin magic at %p", (const void *)h);
	hsize = fb_get16(h + 6);
	payload = fb_get64(h + 8);
	if (fb_get16(h + 4) != 1 || hsize < FB_HDR_SIZE ||
	    payload > FATBIN_MAX_IMAGE * 4)
		return fatbin_fail(err, errlen, EBADMSG,
				   "implausible fatbin header at %p",
				   (const void *)h);
	*fb = h;
	*len = hsize + payload;
	return 0;
}

char *fatbin_arch_str(struct fatbin_arch a, bool ptx, char *buf, size_t len)
{
	if (a.variant)
		snprintf(buf, len, "%s_%u%c", ptx ? "compute" : "sm", a.sm,
			 a.variant);
	else
		snprintf(buf, len, "%s_%u", ptx ? "compute" : "sm", a.sm);
	return buf;
}
