/* SPDX-License-Identifier: MIT */
/*
 * Kernel names as map keys (docs/cuda-provider.md, "Kernel names").
 *
 * `kernel` is a fixed-size string slot (GT_STRLEN bytes) in maps, events
 * and variables.  It holds a *key*, not text: KNAME_TAG in byte 0 and a
 * 64-bit FNV-1a hash of the mangled name at byte 8, zeros elsewhere.  The
 * hidden eBPF programs (host) and the agent (device) build the same key
 * for the same kernel; the tracer turns it back into the full demangled
 * name when printing, from the names it has learnt.  Shared by the
 * tracer, the agent and the hand-written eBPF (same constants).
 */
#ifndef GT_KNAME_H
#define GT_KNAME_H

#include <stdint.h>
#include <string.h>

#define KNAME_TAG	0x01	/* byte 0 of a key; no name starts with it */
#define KNAME_HASH_OFF	8
#define KNAME_MAX	4096	/* bytes of a mangled name read, NUL included */
#define KNAME_FNV_OFF	0xcbf29ce484222325ull
#define KNAME_FNV_PRIME	0x100000001b3ull
/* Kernels of the agent itself start with this; cuda:launch skips them. */
#define KNAME_AGENT_PREFIX "__gputrace"

/* FNV-1a of NAME's first KNAME_MAX - 1 bytes, as the eBPF reads it. */
static inline uint64_t kname_hash(const char *name)
{
	uint64_t h = KNAME_FNV_OFF;

	for (size_t i = 0; name[i] && i < KNAME_MAX - 1; i++) {
		h ^= (unsigned char)name[i];
		h *= KNAME_FNV_PRIME;
	}
	return h;
}

/* The key of mangled NAME into OUT (LEN >= 16 bytes, all written). */
static inline void kname_key(void *out, size_t len, const char *name)
{
	uint64_t h = kname_hash(name);

	memset(out, 0, len);
	((unsigned char *)out)[0] = KNAME_TAG;
	memcpy((char *)out + KNAME_HASH_OFF, &h, 8);
}

/* The hash in key P, or 0 (with *OK false) when P is plain text. */
static inline uint64_t kname_key_hash(const void *p, int *ok)
{
	uint64_t h = 0;

	*ok = ((const unsigned char *)p)[0] == KNAME_TAG;
	if (*ok)
		memcpy(&h, (const char *)p + KNAME_HASH_OFF, 8);
	return h;
}

#endif
