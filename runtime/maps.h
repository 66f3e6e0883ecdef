/* SPDX-License-Identifier: MIT */
/*
 * Reading maps back: per-CPU parts merged, keys and values decoded into
 * the output module's `struct out_map`.  Also clear() and zero().
 */
#ifndef GT_MAPS_H
#define GT_MAPS_H

#include "compiler/codegen.h"
#include "runtime/output.h"

/* Read map IDX of OBJ into *OM (freed with maps_out_free). */
int maps_read(const struct gt_object *obj, int idx, struct out_map *om);
void maps_out_free(struct out_map *om);
/* Decode a value of type T stored at P (strings copied). */
void maps_decode(const struct type *t, const void *p, struct out_val *v);
void maps_val_free(struct out_val *v);
/* The unit's strftime() formats, which decoding a timestamp needs. */
void maps_set_tfmts(const char **fmts, int n);

/* maps_fold.c: whether type T holds kname(kernel); entries of OM whose
 * keys print alike made one (their values combined). */
bool type_has_base(const struct type *t);
/* Decoded values alike (the device half of a map is folded by them). */
bool maps_val_eq(const struct out_val *a, const struct out_val *b);
void maps_fold_alike(struct out_map *om);

int maps_clear(const struct gt_object *obj, int idx);
int maps_zero(const struct gt_object *obj, int idx);

#endif
