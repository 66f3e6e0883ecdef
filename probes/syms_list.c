// SPDX-License-Identifier: MIT
/*
 * -l for uprobes: the functions of one binary, of every binary a glob in
 * BIN names, or of a target process's program, printed as bpftrace 0.17
 * prints them: one sorted, unique set of "BIN:FUNC" over all the files,
 * each prefixed with the probe type, "*.part.N" clones left out (they
 * cannot be traced), and with -v the arguments from DWARF under each.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fnmatch.h>
#include <glob.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "probes/elf_syms.h"
#include "probes/provider.h"
#include "probes/syms_dwarf.h"

/* "SHOWN:FUNC", then with -v "\n    TYPE NAME" per argument: '\n' sorts
 * below every printable character, so the set sorts by "SHOWN:FUNC". */
static int add_line(struct provider_names *l, const char *shown,
		    const char *fn, const char *args)
{
	return provider_names_add(l, "%s:%s%s", shown, fn, args ? args : "");
}

/* The functions of PATH (shown as SHOWN) that GLOB (NULL: all) matches. */
static int list_file(const char *path, const char *shown, const char *glob,
		     bool verbose, struct provider_names *l)
{
	struct syms_dwarf *dw = NULL;
	const struct syms *s;
	char err[512];
	int ret;

	ret = syms_load(path, &s, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "gputrace: %s\n", err);
		return ret;
	}
	if (verbose)
		syms_dwarf_open(path, &dw);	/* none: names only */
	for (size_t i = 0; i < s->n && !ret; i++) {
		const struct syms_func *f = &s->funcs[i];

		if (strstr(f->name, ".part.") || (glob && !syms_match(f, glob)))
			continue;
		ret = add_line(l, shown, syms_display(f),
			       dw ? syms_dwarf_args(dw, f->name) : NULL);
	}
	syms_dwarf_close(dw);
	return ret;
}

static size_t key_len(const char *s)
{
	return strcspn(s, "\n");
}

static int cmp_line(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Print the set (OUT NULL: only free it); the number printed. */
static int print_lines(struct provider_names *l, const char *prov, FILE *out)
{
	size_t i, printed = 0;

	if (l->n)
		qsort(l->v, l->n, sizeof(*l->v), cmp_line);
	for (i = 0; i < l->n; i++) {
		const char *a = l->v[i], *b = i ? l->v[i - 1] : NULL;

		if (!out || (b && key_len(a) == key_len(b) &&
			     !strncmp(a, b, key_len(a))))
			continue;
		fprintf(out, "%s:%s\n", prov, a);
		printed++;
	}
	provider_names_free(l);
	return printed;
}

static bool is_exec_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode) && !access(path, X_OK);
}

/*
 * BIN with a wildcard: the files glob(3) finds (BIN with a '/'), or the
 * programs in $PATH whose names match, as bpftrace resolves it.  Files
 * that are not ELF are skipped quietly.
 */
static int list_glob(const char *bin, const char *fglob, bool verbose,
		     struct provider_names *l)
{
	const char *p = getenv("PATH");
	int ret = 0;

	if (!p)
		p = "/usr/local/bin:/usr/bin:/bin";
	while (*p && !ret) {
		size_t n = strchr(bin, '/') ? 0 : strcspn(p, ":");
		char pat[PATH_MAX];
		glob_t g;

		int len = strchr(bin, '/') ?
			  snprintf(pat, sizeof(pat), "%s", bin) :
			  snprintf(pat, sizeof(pat), "%.*s/%s", (int)n, p, bin);

		if (len < (int)sizeof(pat) && !glob(pat, 0, NULL, &g)) {
			for (size_t i = 0; i < g.gl_pathc && !ret; i++) {
				const struct syms *s;
				char err[512];

				if (!is_exec_file(g.gl_pathv[i]) ||
				    syms_load(g.gl_pathv[i], &s, err, sizeof(err)))
					continue;
				ret = list_file(g.gl_pathv[i], g.gl_pathv[i],
						fglob, verbose, l);
			}
			globfree(&g);
		}
		if (strchr(bin, '/'))
			break;
		p += n + (p[n] == ':');
	}
	return ret;
}

/*
 * The target's program: /proc/PID/root + the path /proc/PID/exe names
 * (bpftrace 0.17 shows it so, namespace or not), or -c's program.
 */
static int target_program(int pid, const char *cmd, char *path, size_t len)
{
	char exe[64], link[PATH_MAX], word[PATH_MAX], err[512];
	ssize_t n;

	if (pid > 0) {
		snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
		n = readlink(exe, link, sizeof(link) - 1);
		if (n < 0) {
			fprintf(stderr, "gputrace: %s: %s\n", exe, strerror(errno));
			return -errno;
		}
		link[n] = 0;
		if (snprintf(path, len, "/proc/%d/root%s", pid, link) >= (int)len)
			return -ENAMETOOLONG;
		return 0;
	}
	snprintf(word, sizeof(word), "%.*s", (int)strcspn(cmd, " \t"), cmd);
	if (syms_resolve(word, 0, path, len, err, sizeof(err))) {
		fprintf(stderr, "gputrace: %s\n", err);
		return -ENOENT;
	}
	return 0;
}

int syms_list_text(const char *text, int pid, const char *cmd, bool verbose,
		   FILE *out)
{
	const char *prov = "uprobe", *rest = text, *glob = NULL;
	char bin[PATH_MAX], path[PATH_MAX], shown[PATH_MAX], err[512];
	struct provider_names l = { 0 };
	const char *c = strchr(text, ':');
	size_t n;
	int ret;

	/* TYPE:BIN[:GLOB], or a bare BIN; a TYPE glob lists uprobes only,
	 * as bpftrace 0.17 does */
	if (c && (!strchr(text, '/') || c < strchr(text, '/'))) {
		char type[32];

		const struct provider *pv;

		snprintf(type, sizeof(type), "%.*s", (int)(c - text), text);
		pv = provider_find(type);	/* u:, ur: too */
		if (pv == &provider_uretprobe)
			prov = "uretprobe";
		else if (pv != &provider_uprobe && fnmatch(type, "uprobe", 0)) {
			fprintf(stderr, "gputrace: no probe type matched for %s\n",
				type);
			return -EINVAL;
		}
		rest = c + 1;
	}
	n = strcspn(rest, ":");
	if (rest[n] == ':' && rest[n + 1])
		glob = rest + n + 1;
	snprintf(bin, sizeof(bin), "%.*s", (int)n, rest);
	if ((pid > 0 || cmd) && (!strcmp(bin, "*") || !bin[0])) {
		ret = target_program(pid, cmd, path, sizeof(path));
		if (!ret)
			ret = list_file(path, path, glob, verbose, &l);
	} else if (strpbrk(bin, "*?[")) {
		ret = list_glob(bin, glob, verbose, &l);
	} else {
		ret = syms_resolve_shown(bin, pid, path, sizeof(path), shown,
					 sizeof(shown), err, sizeof(err));
		if (ret)
			fprintf(stderr, "gputrace: %s\n", err);
		else
			ret = list_file(path, shown, glob, verbose, &l);
	}
	if (ret) {
		print_lines(&l, prov, NULL);
		return ret;
	}
	return print_lines(&l, prov, out);
}
