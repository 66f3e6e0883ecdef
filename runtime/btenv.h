/* SPDX-License-Identifier: MIT */
/*
 * The BPFTRACE_* environment variables of bpftrace's man page that have a
 * meaning here (docs/parity.md, "Environment"), read once at start.
 */
#ifndef GT_BTENV_H
#define GT_BTENV_H

#include <stdint.h>

struct btenv {
	uint64_t map_keys_max;	/* BPFTRACE_MAP_KEYS_MAX: host map entries */
	uint64_t max_probes;	/* BPFTRACE_MAX_PROBES: probes attached */
	uint64_t cat_bytes_max;	/* BPFTRACE_CAT_BYTES_MAX: cat() */
};

extern struct btenv btenv;

/* Read the variables into btenv; -EINVAL after bpftrace's message. */
int btenv_read(void);

#endif
