/* SPDX-License-Identifier: MIT */
/*
 * Function arguments from DWARF, for -lv: "    TYPE NAME" lines as
 * bpftrace 0.17 prints them.  probes/syms_dwarf.c.
 */
#ifndef GT_SYMS_DWARF_H
#define GT_SYMS_DWARF_H

struct syms_dwarf;

/*
 * Index the functions described by PATH's DWARF (or its separate debug
 * file's).  0 and *OUT; -ENOENT (no DWARF: *OUT NULL) or other negative
 * errno.
 */
int syms_dwarf_open(const char *path, struct syms_dwarf **out);
/*
 * "\n    TYPE NAME" per argument of the function whose symbol is NAME (C:
 * its DW_AT_name; C++: its mangled linkage name), or NULL when DWARF has
 * none.
 */
const char *syms_dwarf_args(const struct syms_dwarf *d, const char *name);
void syms_dwarf_close(struct syms_dwarf *d);

#endif
