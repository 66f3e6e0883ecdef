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
#include "compiler/ptx_lower.h"
#include "compiler/sema.h"

/* The device maps of U, indexed like the unit's maps (malloc'd). */
struct gt_dev_map *device_maps(const struct unit *u);

/*
 * Run the device verifier on every device program of OBJ; WALK (or NULL)
 * gets the -d verifier dump.  0, or -EACCES after reporting the first
 * rejection.
 */
int device_verify(const struct unit *u, const struct gt_object *obj, FILE *walk);

/* A lowered device program: one per gpu: attach point. */
struct device_probe {
	struct probe *probe;	/* glob in probe->func, warp, retprobe (exit) */
	struct pl_func func;	/* __gt_probe_<index> */
	char *call;		/* the splicer's entry/exit text */
};

struct device_set {
	struct device_probe *v;
	int n;
	char *decls;		/* runtime + every probe function */
};

/*
 * Lower every verified device program of OBJ to PTX (-d ptx prints the
 * functions).  0, or negative errno after reporting.
 */
int device_lower(const struct unit *u, const struct gt_object *obj,
		 struct device_set *out);
void device_set_free(struct device_set *s);

#endif
