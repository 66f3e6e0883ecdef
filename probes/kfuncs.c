// SPDX-License-Identifier: MIT
/*
 * The kernel's side of kernel probes: where tracefs is, which functions
 * can be probed, the vmlinux BTF, and whether kprobes exist at all.
 * Everything is read once and kept for the life of the process.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "probes/kfuncs.h"

static int tracefs_errno = ENOENT;

const char *tracefs_dir(void)
{
	static const char *const dirs[] = {
		"/sys/kernel/tracing", "/sys/kernel/debug/tracing",
	};
	char path[64];

	/* an unmounted mount point is an empty directory */
	tracefs_errno = ENOENT;
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/events", dirs[i]);
		if (!access(path, F_OK))
			return dirs[i];
		/* mounted 0700 and we are not root: not "not mounted" */
		if (errno == EACCES && tracefs_errno == ENOENT)
			tracefs_errno = EACCES;
	}
	return NULL;
}

int tracefs_error(void)
{
	return tracefs_dir() ? 0 : -tracefs_errno;
}

const char *tracefs_why(void)
{
	return tracefs_error() == -EACCES ?
	       "permission denied on tracefs (/sys/kernel/tracing): run as root" :
	       "tracefs is not mounted (mount -t tracefs nodev /sys/kernel/tracing)";
}

static char **names;
static size_t nnames;
static bool loaded;

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* One function name per line, first word; kallsyms: "ADDR TYPE NAME [mod]". */
static int read_names(const char *path, bool kallsyms)
{
	char line[512], name[256], type;
	size_t cap = 0;
	FILE *f = fopen(path, "re");

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (kallsyms) {
			if (sscanf(line, "%*s %c %255s", &type, name) != 2 ||
			    (type != 't' && type != 'T'))
				continue;
		} else if (sscanf(line, "%255s", name) != 1) {
			continue;
		}
		if (nnames == cap) {
			char **n = realloc(names, (cap = cap ? 2 * cap : 4096) *
					   sizeof(*n));

			if (!n) {
				fclose(f);
				return -ENOMEM;
			}
			names = n;
		}
		names[nnames] = strdup(name);
		if (!names[nnames]) {
			fclose(f);
			return -ENOMEM;
		}
		nnames++;
	}
	fclose(f);
	return nnames ? 0 : -ENOENT;
}

static void free_names(void)
{
	while (nnames)
		free(names[--nnames]);
	free(names);
	names = NULL;
}

const char *const *kfuncs_list(size_t *n)
{
	const char *tfs = tracefs_dir();
	char path[128];
	size_t i, j;

	if (!loaded) {
		loaded = true;
		atexit(free_names);
		if (tfs)
			snprintf(path, sizeof(path),
				 "%s/available_filter_functions", tfs);
		if (!tfs || read_names(path, false)) {
			free_names();
			if (read_names("/proc/kallsyms", true))
				free_names();
		}
		if (nnames)
			qsort(names, nnames, sizeof(*names), cmp_str);
		for (i = j = 0; i < nnames; i++) {
			if (j && !strcmp(names[j - 1], names[i]))
				free(names[i]);
			else
				names[j++] = names[i];
		}
		nnames = j;
	}
	*n = nnames;
	return (const char *const *)names;
}

bool kfuncs_has(const char *name)
{
	size_t n;
	const char *const *v = kfuncs_list(&n);

	return n && bsearch(&name, v, n, sizeof(*v), cmp_str);
}

static struct btf *vmlinux;

static void free_btf(void)
{
	btf__free(vmlinux);
	vmlinux = NULL;
}

const struct btf *kfuncs_btf(void)
{
	static bool tried;

	if (!tried) {
		tried = true;
		vmlinux = btf__load_vmlinux_btf();
		if (libbpf_get_error(vmlinux))
			vmlinux = NULL;
		else
			atexit(free_btf);
	}
	return vmlinux;
}

/* vmlinux's BTF functions sorted by name: a lookup per kernel function
 * (kprobe:* without kprobes, ~121k) was a linear search each (~80 s) */
struct btf_fn {
	const char *name;
	int id;
};
static struct btf_fn *fns;
static size_t nfns;

static int cmp_fn(const void *a, const void *b)
{
	return strcmp(((const struct btf_fn *)a)->name,
		      ((const struct btf_fn *)b)->name);
}

static void free_fns(void)
{
	free(fns);
	fns = NULL;
	nfns = 0;
}

static int index_fns(const struct btf *btf)
{
	unsigned int n = btf__type_cnt(btf);

	if (!(fns = calloc(n, sizeof(*fns))))
		return -ENOMEM;
	atexit(free_fns);
	for (unsigned int id = 1; id < n; id++) {
		const struct btf_type *t = btf__type_by_id(btf, id);
		const char *name = t && btf_is_func(t) ?
				   btf__name_by_offset(btf, t->name_off) : NULL;

		if (name)
			fns[nfns++] = (struct btf_fn){ name, id };
	}
	qsort(fns, nfns, sizeof(*fns), cmp_fn);
	return 0;
}

int kfuncs_btf_func(const char *name)
{
	static bool indexed;
	const struct btf *btf = kfuncs_btf();
	struct btf_fn key = { name, 0 }, *f;

	if (!btf)
		return -ENOENT;
	if (!indexed) {
		indexed = true;
		if (index_fns(btf))
			return -ENOMEM;
	}
	f = nfns ? bsearch(&key, fns, nfns, sizeof(*fns), cmp_fn) : NULL;
	return f ? f->id : -ENOENT;
}

static int sysfs_int(const char *path, const char *prefix, int *out)
{
	char buf[64];
	FILE *f = fopen(path, "re");
	bool ok;

	if (!f)
		return -errno;
	ok = fgets(buf, sizeof(buf), f) &&
	     !strncmp(buf, prefix, strlen(prefix));
	fclose(f);
	if (!ok)
		return -EINVAL;
	*out = atoi(buf + strlen(prefix));
	return 0;
}

bool kfuncs_kprobe_pmu(int *type, int *retbit)
{
	const char *dir = "/sys/bus/event_source/devices/kprobe";
	char path[128];

	snprintf(path, sizeof(path), "%s/type", dir);
	if (sysfs_int(path, "", type))
		return false;
	snprintf(path, sizeof(path), "%s/format/retprobe", dir);
	return !sysfs_int(path, "config:", retbit);
}
