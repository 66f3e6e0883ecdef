// SPDX-License-Identifier: MIT
/*
 * Where the target's CUDA driver and kernels are.
 *
 * The driver: a running process (-p) may already have it mapped; if not
 * (the CUDA runtime dlopen()s it at its first call), or for a -c child
 * held before exec, or system-wide, we look where the dynamic loader
 * would: LD_LIBRARY_PATH (the target's own environment), the program's
 * RUNPATH, the loader's cache, then the usual directories.
 *
 * The kernels, for cuda:launch:GLOB: eBPF cannot demangle, so the
 * tracer lists the kernels of the target's fatbins before attaching
 * (every mapped file for -p; the command and the libraries it needs for
 * -c) and tells the kernel which GLOBs each mangled name matches.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wordexp.h>
#include <sys/stat.h>

#include "lang/ast.h"
#include "probes/cuda_priv.h"
#include "probes/elf_syms.h"
#include "probes/provider.h"
#include "gpucode/fatbin.h"

#define MAX_OBJS	256	/* files scanned for -c: the program and its libraries */

bool cuda_pid_is_held(int pid)
{
	struct stat a, b;
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	return pid > 0 && !stat(path, &a) && !stat("/proc/self/exe", &b) &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

/* DIR/NAME into OUT when it is a file; DIR may start with $ORIGIN. */
static int try_dir(const char *dir, size_t dlen, const char *origin,
		   const char *name, char *out, size_t outlen)
{
	if (!dlen)
		return -ENOENT;
	if (origin && dlen >= 7 && !strncmp(dir, "$ORIGIN", 7))
		snprintf(out, outlen, "%s%.*s/%s", origin, (int)(dlen - 7),
			 dir + 7, name);
	else
		snprintf(out, outlen, "%.*s/%s", (int)dlen, dir, name);
	return access(out, R_OK) ? -ENOENT : 0;
}

/* NAME in one of the ':'-separated DIRS. */
static int try_dirs(const char *dirs, const char *origin, const char *name,
		    char *out, size_t outlen)
{
	while (dirs && *dirs) {
		size_t n = strcspn(dirs, ":;");

		if (!try_dir(dirs, n, origin, name, out, outlen))
			return 0;
		dirs += n + (dirs[n] != 0);
	}
	return -ENOENT;
}

/*
 * The DT_NEEDED names (NUL-separated in *NEEDED, malloc'd) and the
 * RUNPATH (or RPATH) of PATH.
 */
static int read_dynamic(const char *path, char **needed, size_t *nlen,
			char *runpath, size_t rlen)
{
	Elf_Scn *scn = NULL;
	size_t cap = 0;
	int fd, ret = -ENOENT;
	Elf *e;

	*needed = NULL;
	*nlen = 0;
	runpath[0] = 0;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EINVAL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ, NULL);
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Dyn dyn;
			const char *s;

			if (!gelf_getdyn(d, i, &dyn))
				break;
			if (dyn.d_tag != DT_NEEDED && dyn.d_tag != DT_RUNPATH &&
			    dyn.d_tag != DT_RPATH)
				continue;
			s = elf_strptr(e, sh.sh_link, dyn.d_un.d_val);
			if (!s)
				continue;
			if (dyn.d_tag == DT_NEEDED) {
				size_t l = strlen(s) + 1;

				if (*nlen + l > cap) {
					char *n = realloc(*needed, cap = (*nlen + l) * 2);

					if (!n)
						break;
					*needed = n;
				}
				memcpy(*needed + *nlen, s, l);
				*nlen += l;
			} else if (dyn.d_tag == DT_RUNPATH || !runpath[0]) {
				snprintf(runpath, rlen, "%s", s);
			}
		}
		ret = 0;
		break;
	}
	if (e)
		elf_end(e);
	close(fd);
	return ret;
}

/* Library NAME as the loader would find it for object FROM. */
static int find_needed(const char *name, const char *ldpath, const char *from,
		       const char *runpath, char *out, size_t outlen)
{
	static const char *const dflt =
		"/lib/x86_64-linux-gnu:/usr/lib/x86_64-linux-gnu:/lib64:/usr/lib64:/lib:/usr/lib:/usr/lib/wsl/lib";
	char origin[PATH_MAX] = "", tmp[PATH_MAX], *slash;

	if (strchr(name, '/')) {
		snprintf(out, outlen, "%s", name);
		return access(out, R_OK) ? -ENOENT : 0;
	}
	if (from) {
		snprintf(origin, sizeof(origin), "%s", from);
		slash = strrchr(origin, '/');
		if (slash)
			*slash = 0;
	}
	if (!try_dirs(ldpath, origin, name, out, outlen) ||
	    !try_dirs(runpath, origin, name, out, outlen) ||
	    !syms_find_lib(name, 0, out, outlen) ||
	    !try_dirs(dflt, NULL, name, out, outlen))
		goto found;
	return -ENOENT;
found:
	if (realpath(out, tmp))
		snprintf(out, outlen, "%s", tmp);
	return 0;
}

/* Command CMD's program, as an absolute path. */
static int command_path(const char *cmd, char *out, size_t outlen)
{
	char tmp[PATH_MAX];
	wordexp_t we;
	int ret = -ENOENT;

	if (!cmd || wordexp(cmd, &we, WRDE_NOCMD))
		return -ENOENT;
	if (we.we_wordc && strchr(we.we_wordv[0], '/')) {
		snprintf(out, outlen, "%s", we.we_wordv[0]);
		ret = 0;
	} else if (we.we_wordc) {
		const char *path = getenv("PATH");

		for (const char *p = path ? path : "/usr/bin:/bin"; *p && ret;) {
			size_t n = strcspn(p, ":");

			snprintf(out, outlen, "%.*s/%s", (int)n, p, we.we_wordv[0]);
			if (n && !access(out, X_OK))
				ret = 0;
			p += n + (p[n] == ':');
		}
	}
	wordfree(&we);
	if (!ret && realpath(out, tmp))
		snprintf(out, outlen, "%s", tmp);
	return ret;
}

/* Variable NAME of /proc/PID/environ into OUT ("" when absent). */
static void proc_env(int pid, const char *name, char *out, size_t outlen)
{
	char path[64], buf[65536];
	size_t nl = strlen(name);
	ssize_t n;
	int fd;

	out[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	for (char *s = buf; s < buf + n; s += strlen(s) + 1)
		if (!strncmp(s, name, nl) && s[nl] == '=') {
			snprintf(out, outlen, "%s", s + nl + 1);
			return;
		}
}

int cuda_find_driver(int pid, char *out, size_t outlen, char *err,
		     size_t errlen)
{
	char ldpath[8192] = "", bin[PATH_MAX] = "", runpath[4096] = "";
	char *needed = NULL;
	size_t nlen;

	if (pid > 0 && !cuda_pid_is_held(pid)) {
		char exe[64];
		ssize_t n;

		if (!syms_find_mapped("libcuda", pid, out, outlen))
			return 0;
		proc_env(pid, "LD_LIBRARY_PATH", ldpath, sizeof(ldpath));
		snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
		n = readlink(exe, bin, sizeof(bin) - 1);
		bin[n > 0 ? n : 0] = 0;
	} else {
		const char *e = getenv("LD_LIBRARY_PATH");

		snprintf(ldpath, sizeof(ldpath), "%s", e ? e : "");
		if (command_path(provider_target_cmd, bin, sizeof(bin)))
			bin[0] = 0;
	}
	if (bin[0])
		read_dynamic(bin, &needed, &nlen, runpath, sizeof(runpath));
	free(needed);
	if (!find_needed(CUDA_DRIVER, ldpath, bin[0] ? bin : NULL, runpath,
			 out, outlen))
		return 0;
	snprintf(err, errlen,
		 "cannot find the CUDA driver library %s (not mapped by the target, not in LD_LIBRARY_PATH or the loader's cache)",
		 CUDA_DRIVER);
	return -ENOENT;
}

/* ------------------------------------------------------------ kernels -- */

struct scan {
	struct cuda_shared *sh;
	void (*on_file)(const char *path, void *arg);	/* or SH's kernels */
	void *arg;
	size_t cap;
	char (*files)[PATH_MAX];
	size_t nfiles;
};

static int add_kernel(struct scan *s, const char *name)
{
	struct cuda_shared *sh = s->sh;
	char *base;

	if (sh->nkernels == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		struct cuda_kernel *v = ast_alloc(cap * sizeof(*v));

		if (sh->nkernels)
			memcpy(v, sh->kernels, sh->nkernels * sizeof(*v));
		sh->kernels = v;
		s->cap = cap;
	}
	base = syms_demangle(name, true);
	sh->kernels[sh->nkernels].name =
		ast_strndup(name, strlen(name));
	sh->kernels[sh->nkernels].base =
		base ? ast_strndup(base, strlen(base)) : NULL;
	sh->nkernels++;
	free(base);
	return 0;
}

/* The kernels of PATH's fatbins, once per file. */
static void scan_file(struct scan *s, const char *path)
{
	struct fatbin_kernels k = { 0 };
	char err[256];

	for (size_t i = 0; i < s->nfiles; i++)
		if (!strcmp(s->files[i], path))
			return;
	if (s->nfiles == MAX_OBJS)
		return;
	snprintf(s->files[s->nfiles++], PATH_MAX, "%s", path);
	if (s->on_file) {
		s->on_file(path, s->arg);
		return;
	}
	if (fatbin_elf_kernels(path, &k, err, sizeof(err)) < 0)
		return;		/* no fatbin: host code only */
	for (size_t i = 0; i < k.n; i++)
		add_kernel(s, k.v[i].name);
	fatbin_kernels_free(&k);
}

/* A -c command: the program and, breadth first, the libraries it needs. */
static void scan_command(struct scan *s, const char *cmd)
{
	const char *ldpath = getenv("LD_LIBRARY_PATH");
	char bin[PATH_MAX];

	if (command_path(cmd, bin, sizeof(bin)))
		return;
	scan_file(s, bin);
	for (size_t i = 0; i < s->nfiles; i++) {
		char runpath[4096], lib[PATH_MAX], from[PATH_MAX], *needed;
		size_t nlen;

		snprintf(from, sizeof(from), "%s", s->files[i]);
		if (read_dynamic(from, &needed, &nlen, runpath, sizeof(runpath)))
			continue;
		for (size_t off = 0; off < nlen; off += strlen(needed + off) + 1) {
			/* the driver has no kernels of the program's */
			if (!strcmp(needed + off, CUDA_DRIVER))
				continue;
			if (!find_needed(needed + off, ldpath, from, runpath,
					 lib, sizeof(lib)))
				scan_file(s, lib);
		}
		free(needed);
	}
}

/* A running process: every file it maps. */
static void scan_process(struct scan *s, int pid)
{
	char path[64], line[PATH_MAX + 128], file[PATH_MAX + 64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		char *p = strchr(line, '/'), *base;

		if (!p)
			continue;
		p[strcspn(p, "\n")] = 0;
		base = strrchr(p, '/') + 1;
		if (strstr(p, " (deleted)") || !strncmp(p, "/dev/", 5) ||
		    !strncmp(base, "libcuda.so", 10))
			continue;
		if (access(p, R_OK))
			snprintf(file, sizeof(file), "/proc/%d/root%s", pid, p);
		else
			snprintf(file, sizeof(file), "%s", p);
		scan_file(s, file);
	}
	fclose(f);
}

int cuda_scan_kernels(struct cuda_shared *sh, int pid, char *err,
		      size_t errlen)
{
	struct scan s = { .sh = sh };

	if (sh->scanned)
		return 0;
	if (pid <= 0 && !provider_target_cmd) {
		snprintf(err, errlen,
			 "a kernel name GLOB needs -p PID or -c CMD: names are matched against the target's fatbins");
		return -EINVAL;
	}
	s.files = calloc(MAX_OBJS, sizeof(*s.files));
	if (!s.files)
		return -ENOMEM;
	if (pid > 0 && !cuda_pid_is_held(pid))
		scan_process(&s, pid);
	else
		scan_command(&s, provider_target_cmd);
	free(s.files);
	sh->scanned = true;
	return 0;
}

int cuda_target_files(int pid, const char *cmd,
		      void (*fn)(const char *path, void *arg), void *arg)
{
	struct scan s = { .on_file = fn, .arg = arg };

	s.files = calloc(MAX_OBJS, sizeof(*s.files));
	if (!s.files)
		return -ENOMEM;
	if (pid > 0)
		scan_process(&s, pid);
	else
		scan_command(&s, cmd);
	free(s.files);
	return 0;
}

uint64_t cuda_glob_bits(const struct cuda_shared *sh, const char *name,
			const char *base)
{
	uint64_t bits = 0;

	for (int i = 0; i < sh->nglobs; i++)
		if (!fnmatch(sh->globs[i], name, 0) ||
		    (base && !fnmatch(sh->globs[i], base, 0)))
			bits |= 1ull << i;
	return bits;
}
