/* SPDX-License-Identifier: MIT */
/*
 * kname(kernel): a kernel's short name, as Nsight's "base name"
 * (docs/cuda-provider.md, "Short names").
 */
#ifndef GT_KNAME_FOLD_H
#define GT_KNAME_FOLD_H

/* The short form of demangled NAME (malloc'd, NULL without memory):
 * template arguments folded to <...>, the parameter list and return
 * type dropped, a scope's parameter list to (...), lambdas to
 * {lambda#N}; namespaces, (anonymous namespace) and operator names
 * kept. */
char *kname_fold(const char *name);

#endif
