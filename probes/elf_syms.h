/* SPDX-License-Identifier: MIT */
/*
 * Function symbols of an ELF file, for uprobes: the .symtab and .dynsym
 * functions of a binary or library with their file offsets (what the
 * uprobe PMU takes), C++ names demangled, and how a probe's BIN (a path,
 * a library name such as "libc", a program in $PATH) becomes a file.
 */
#ifndef GT_ELF_SYMS_H
#define GT_ELF_SYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

struct syms_func {
	char *name;		/* as in the symbol table (mangled) */
	char *demangled;	/* C++: "ns::f(int)"; NULL for C names */
	char *base;		/* C++: "ns::f" (no parameters, no return type) */
	uint64_t addr;		/* st_value */
	uint64_t size;		/* st_size, 0 when unknown */
	uint64_t offset;	/* file offset of addr */
	bool object;		/* a data object (SYMS_OBJECTS), not code */
};

struct syms {
	char *path;
	struct syms_func *funcs;	/* sorted by name, unique (name, addr) */
	size_t n;
};

/*
 * Read the function symbols of PATH.  *OUT is shared with a one-entry
 * cache (wildcards parse the same file once per match): never free it,
 * it stays valid until the next syms_load() of another file or
 * syms_cache_drop().  Negative errno and ERR on failure.
 */
int syms_load(const char *path, const struct syms **out, char *err,
	      size_t errlen);
void syms_cache_drop(void);

/*
 * A table of PATH's own (*S, caller frees with syms_free), not the
 * cache's.  FLAGS: SYMS_OBJECTS adds data objects (f->object); SYMS_DEBUG
 * adds the symbols of PATH's separate debug file (syms_debug_file), with
 * offsets in PATH.  Negative errno and ERR on failure.
 */
#define SYMS_OBJECTS	1u
#define SYMS_DEBUG	2u
int syms_read(const char *path, unsigned flags, struct syms *s, char *err,
	      size_t errlen);
void syms_free(struct syms *s);

/*
 * probes/elf_debug.c: the separate debug file of E (the ELF of PATH), as
 * gdb finds it: /usr/lib/debug/.build-id/xx/yyyy.debug by its build id,
 * else its .gnu_debuglink name next to PATH, in PATH's .debug/, or under
 * /usr/lib/debug/ + PATH's directory, with a matching CRC.  0 and the
 * path in OUT, or -ENOENT.
 */
struct Elf;
int syms_debug_file(struct Elf *e, const char *path, char *out,
		    size_t outlen);

/* The name to show: demangled if C++, else the symbol name. */
static inline const char *syms_display(const struct syms_func *f)
{
	return f->demangled ? f->demangled : f->name;
}

/* Does glob PATTERN match F's mangled, demangled or base name? */
bool syms_match(const struct syms_func *f, const char *pattern);

/*
 * The function named NAME (exactly: mangled, demangled or base name, in
 * that order of preference; a defined size wins over size 0).  NULL and
 * *AMBIGUOUS = true when NAME is only a base name of several functions.
 */
const struct syms_func *syms_lookup(const struct syms *s, const char *name,
				    bool *ambiguous);

/* malloc'd demangled NAME (with parameters unless BASE), or NULL. */
char *syms_demangle(const char *name, bool base);

/*
 * The library NAME ("libc", "libc.so.6", "libpthread") as an absolute
 * path: from /proc/PID/maps of PID when PID != 0, else from the dynamic
 * loader's cache.  0, or -ENOENT.
 */
int syms_find_lib(const char *name, int pid, char *out, size_t outlen);
/* Library NAME as mapped by PID only (no cache look-up): 0 or -ENOENT. */
int syms_find_mapped(const char *name, int pid, char *out, size_t outlen);

/*
 * A probe's BIN as an absolute, symlink-free path: BIN itself when it
 * holds a '/', else a library (syms_find_lib) or a program in $PATH.
 * Negative errno and ERR ("cannot find library 'libfoo'") on failure.
 */
int syms_resolve(const char *bin, int pid, char *out, size_t outlen,
		 char *err, size_t errlen);
/*
 * The same, and in SHOWN how probe names show BIN, as bpftrace 0.17: a
 * path as the user wrote it (./prog), a library or program as found
 * (the loader's cache entry, the target's maps, $PATH), and every path
 * of a target in another mount namespace as /proc/PID/root/PATH, which
 * is also what is opened (no realpath through that link).
 */
int syms_resolve_shown(const char *bin, int pid, char *out, size_t outlen,
		       char *shown, size_t shownlen, char *err, size_t errlen);
/* Does process PID live in another mount namespace (a container)? */
bool syms_other_mntns(int pid);

/*
 * -l TEXT: "TYPE:BIN[:GLOB]" (TYPE uprobe, uretprobe, or a glob: then
 * uprobes) or a bare BIN.  BIN is resolved as a probe's (PID's maps
 * when PID != 0); a glob in BIN lists every file it names (no '/': the
 * programs in $PATH); "*" or nothing with a target (PID, or CMD's
 * program) is the target's program.  With VERBOSE each function's
 * arguments (DWARF) follow it.  Prints the sorted, unique set of
 * "TYPE:BIN:FUNC"; returns the number printed or negative errno
 * (message on stderr).  probes/syms_list.c.
 */
int syms_list_text(const char *text, int pid, const char *cmd, bool verbose,
		   FILE *out);

/*
 * probes/uprobe.c: attach PROG_FD at P->path + P->offset (a uretprobe
 * when P->retprobe), scoped to P->target_pid when set; the probe's fds
 * go to P->fds.  For providers built on uprobes (cuda:).
 */
struct probe;
int uprobe_attach(struct probe *p, int prog_fd, char *err, size_t errlen);
void uprobe_detach(struct probe *p);

#endif
