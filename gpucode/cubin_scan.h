/* SPDX-License-Identifier: MIT */
/*
 * Cubins in a process's anonymous memory (cubin_scan.c): what Triton
 * keeps of the kernels it loaded.  The agent scans its own process (a
 * kernel loaded before the attach); `-l -p PID` scans the target's.
 * docs/attach.md ("Cubins in memory").
 */
#ifndef GT_CUBIN_SCAN_H
#define GT_CUBIN_SCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CUBIN_SCAN_BUDGET	(4ull << 30)	/* bytes read at most */

struct cubin_scan {
	int pid;		/* 0: this process */
	bool ptx_only;		/* only cubins with a .nv_debug_ptx_txt* */
	uint64_t budget;	/* bytes; 0: CUBIN_SCAN_BUDGET */
	/* out */
	uint64_t scanned;	/* bytes read */
	uint64_t total;		/* bytes of the mappings looked at */
	int mappings;
	int huge;		/* mappings over 64 GiB (reservations): skipped */
	bool cut;		/* stopped at the budget */
	double ms;
};

/* FN owns COPY (malloc'd, LEN bytes): a cubin's headers checked to lie
 * within it, nothing more (check it before use). */
typedef void (*cubin_scan_fn)(uint8_t *copy, size_t len, void *arg);

/*
 * Call FN for each cubin (the ELF magic at an 8-byte boundary, EM_CUDA,
 * its sections inside its mapping) in the private, readable, anonymous
 * mappings of SC->pid, smallest first, until the budget is read; pages
 * never touched are not read, mappings over 64 GiB not at all.  The memory is only ever copied (process_vm_readv,
 * else pread of /proc/PID/mem): a mapping freed meanwhile ends its scan,
 * never a fault.  0, or -errno when the mappings cannot be read.
 */
int cubin_scan(struct cubin_scan *sc, cubin_scan_fn fn, void *arg);

#endif
