/* SPDX-License-Identifier: MIT */
/* gpu: probes checked against -c's kernels (runtime/devcheck.c). */
#ifndef GT_DEVCHECK_H
#define GT_DEVCHECK_H

#include <stdbool.h>

#include "compiler/device.h"

/*
 * For each distinct GLOB of DS's probes: with NO_MATCH, a warning when
 * it matches none of the kernels of CMD's program and libraries (when
 * there are some); with SASS_ONLY,
 * a line for each matched kernel that has no PTX.  On stderr.
 */
void devcheck_target(const struct device_set *ds, const char *cmd,
		     bool no_match, bool sass_only);

#endif
