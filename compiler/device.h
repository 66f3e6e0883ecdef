/* SPDX-License-Identifier: MIT */
/*
 * The device side of a compiled program: the device map table and the
 * verification of every device program (SPEC §4.1, step 1).
 */
#ifndef GT_DEVICE_H
#define GT_DEVICE_H

#include <stdio.h>

#include "compiler/dev_helpers.h"
#include "compiler/program.h"
#include "compiler/sema.h"

/* The device maps of U, indexed like the unit's maps (malloc'd). */
struct gt_dev_map *device_maps(const struct unit *u);

/*
 * Run the device verifier on every device program of OBJ; WALK (or NULL)
 * gets the -d verifier dump.  0, or -EACCES after reporting the first
 * rejection.
 */
int device_verify(const struct unit *u, const struct gt_object *obj, FILE *walk);

#endif
