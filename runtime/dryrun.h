/* SPDX-License-Identifier: MIT */
/*
 * --dry-run -d ptx: what the agent would do to a binary's kernels, done
 * offline: every PTX image of BINARY's fatbins, spliced with the device
 * probes whose globs match its kernels, printed as complete modules that
 * ptxas accepts.  docs/agent-protocol.md.
 */
#ifndef GT_DRYRUN_H
#define GT_DRYRUN_H

#include <stdbool.h>
#include <stdio.h>

#include "compiler/device.h"

/* Whether kernel NAME (mangled) matches GLOB: its mangled name or its
 * demangled name without parameters, as gpu:kernel:GLOB means it. */
bool dryrun_match(const char *glob, const char *name);

/*
 * First each probe's PTX function and its call (the device runtime they
 * use too when ALL, -d ptx-all; else a line saying it is left out); with
 * a BINARY, once some kernel matched.  Then for each PTX image and set of
 * kernels that the same probes match, the spliced module (a
 * "// gputrace: ..." line, then the module from its .version line) and a
 * "// gputrace: KERNEL: no usable PTX (SASS only: sm_90)" line for each
 * matched kernel without PTX.  0 when some kernel matched; -ENOENT after
 * "gputrace: no kernel of BINARY matches GLOB" on stderr; other negative
 * errno after a message.
 */
int dryrun_ptx(const struct device_set *ds, const char *binary, bool all,
	       FILE *out);

#endif
