/* SPDX-License-Identifier: MIT */
/* Helpers shared by the fatbin reader's files; not a public interface. */
#ifndef GT_FATBIN_PRIV_H
#define GT_FATBIN_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "gpucode/fatbin.h"

/* Format a message into ERR (may be NULL) and return -ERRNUM. */
int fatbin_fail(char *err, size_t errlen, int errnum, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));


/*
 * What one walk over LEN input bytes may decompress in all
 * (FATBIN_TOTAL_SLACK + FATBIN_TOTAL_RATIO * LEN): the per-entry limits
 * let eight 255 MiB entries through, 2 GB and 30 s for one dry run.
 */
uint64_t fatbin_budget(size_t len);

/* Walk exactly one fatbin at the start of BUF (entries of KIND, 0: all);
 * what it decompresses comes off *BUDGET. */
int fatbin_walk_single(const void *buf, size_t len, unsigned kind,
		       fatbin_entry_fn fn, void *arg, uint64_t *budget,
		       char *err, size_t errlen);

/* fatbin_foreach_kind() drawing on *BUDGET. */
int fatbin_foreach_budget(const void *buf, size_t len, unsigned kind,
			  fatbin_entry_fn fn, void *arg, uint64_t *budget,
			  char *err, size_t errlen);

/* Little-endian loads that need no alignment. */
static inline uint16_t fb_get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static inline uint32_t fb_get32(const uint8_t *p)
{
	return (uint32_t)fb_get16(p) | (uint32_t)fb_get16(p + 2) << 16;
}

static inline uint64_t fb_get64(const uint8_t *p)
{
	return (uint64_t)fb_get32(p) | (uint64_t)fb_get32(p + 4) << 32;
}

#endif
