/* SPDX-License-Identifier: MIT */
/*
 * The device verifier: proves that an eBPF program compiled for a device
 * probe (gpu:*) is safe to lower to PTX and run inside someone else's CUDA
 * kernel.  It walks every path with an abstract state per path (see
 * docs/verifier.md) and rejects anything it cannot prove safe.
 */
#ifndef GT_VERIFIER_H
#define GT_VERIFIER_H

#include <linux/bpf.h>
#include <stddef.h>
#include <stdio.h>

#include "compiler/dev_helpers.h"

#define VF_MAX_INSNS	4096	/* instruction slots in one program */
/* instructions explored over all paths: also a bound on the instructions
 * one run of the program executes, loops included */
#define VF_MAX_VISITS	100000
#define VF_STACK_SIZE	512	/* bytes below r10 */

/*
 * Verify N instructions.  MAPS (NMAPS entries) are the device maps the
 * program may name by id.  CLAUSE names the program in messages
 * ("gpu:kernel:vadd"); NULL reads "program".  When WALK is non-NULL the
 * exploration is printed there (every instruction visited with the
 * abstract state after it), as `-d verifier` shows it.
 *
 * Returns 0 when the program is safe.  Otherwise -EINVAL for a malformed
 * program (bad encoding, jumps out of range, too many instructions) or -EACCES for an unsafe one, with
 * "CLAUSE: insn N: REASON" in ERR.
 */
int vf_verify(const struct bpf_insn *insns, size_t n,
	      const struct gt_dev_map *maps, int nmaps, const char *clause,
	      FILE *walk, char *err, size_t errlen);

/*
 * vf_verify(), then, when the program is safe, replace each instruction no
 * path reaches with "ja +0" in place, so that everything the lowering emits
 * is covered by the proof.  What pl_lower() is given must come from here.
 * When LOOP is not NULL it gets the first instruction of the loop a
 * refusal is about (one that may not end or runs too long), else -1, so
 * that the caller can point at the source.
 */
int vf_verify_drop(struct bpf_insn *insns, size_t n,
		   const struct gt_dev_map *maps, int nmaps, const char *clause,
		   FILE *walk, char *err, size_t errlen, int *loop);

#endif
