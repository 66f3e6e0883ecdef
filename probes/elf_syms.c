// SPDX-License-Identifier: MIT
/*
 * Function symbols of ELF files and the files behind uprobe BINs.
 *
 * Symbols come from .symtab and .dynsym (a stripped library keeps only
 * the second).  The uprobe PMU wants a file offset, not an address: the
 * PT_LOAD segment holding the address gives it (vaddr - p_vaddr +
 * p_offset), which is right for executables, PIEs and libraries alike.
 * Library names are looked up in the target's /proc/PID/maps first (the
 * copy it really mapped), then in /etc/ld.so.cache, which we read
 * ourselves rather than spawning `ldconfig -p`.
 */
#define _GNU_SOURCE	/* asprintf, memmem */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>
#include <libiberty/demangle.h>

#include "probes/elf_syms.h"

/* ------------------------------------------------------------ names -- */

char *syms_demangle(const char *name, bool base)
{
	/* Without DMGL_PARAMS libiberty prints just the qualified name. */
	int opts = base ? DMGL_ANSI | DMGL_RET_DROP : DMGL_ANSI | DMGL_PARAMS;

	if (name[0] != '_' || name[1] != 'Z')
		return NULL;
	return cplus_demangle(name, opts);
}

bool syms_match(const struct syms_func *f, const char *pattern)
{
	if (!fnmatch(pattern, f->name, 0))
		return true;
	return f->demangled && (!fnmatch(pattern, f->demangled, 0) ||
				!fnmatch(pattern, f->base, 0));
}

const struct syms_func *syms_lookup(const struct syms *s, const char *name,
				    bool *ambiguous)
{
	const struct syms_func *best = NULL, *f;
	int pass, nbase = 0;

	*ambiguous = false;
	/* a binary without symbols: no table (NULL + 0 is undefined) */
	if (!s->n)
		return NULL;
	for (pass = 0; pass < 3 && !best; pass++) {
		for (f = s->funcs; f < s->funcs + s->n; f++) {
			const char *n = pass == 0 ? f->name :
					pass == 1 ? f->demangled : f->base;

			if (!n || strcmp(n, name))
				continue;
			/* overloads share a base name: count distinct ones */
			if (pass == 2 && (!best || strcmp(best->name, f->name)))
				nbase++;
			if (!best || (!best->size && f->size))
				best = f;
		}
	}
	if (nbase > 1) {
		*ambiguous = true;
		return NULL;
	}
	return best;
}

/* ---------------------------------------------------------- loading -- */

static int cmp_func(const void *a, const void *b)
{
	const struct syms_func *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	if (c)
		return c;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void free_funcs(struct syms *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->funcs[i].name);
		free(s->funcs[i].demangled);
		free(s->funcs[i].base);
	}
	free(s->funcs);
	free(s->path);
	s->funcs = NULL;
	s->path = NULL;
	s->n = 0;
}

/* File offset of VADDR: the PT_LOAD segment's file part holding it. */
static int vaddr_offset(Elf *e, size_t nphdr, uint64_t vaddr, uint64_t *off)
{
	GElf_Phdr ph;

	for (size_t i = 0; i < nphdr; i++) {
		if (!gelf_getphdr(e, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (vaddr >= ph.p_vaddr && vaddr < ph.p_vaddr + ph.p_filesz) {
			*off = vaddr - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

static int add_func(struct syms *s, size_t *cap, const char *name,
		    const GElf_Sym *sym, uint64_t off)
{
	struct syms_func *f;

	if (s->n == *cap) {
		size_t ncap = *cap ? *cap * 2 : 256;
		struct syms_func *nf = realloc(s->funcs, ncap * sizeof(*nf));

		if (!nf)
			return -ENOMEM;
		s->funcs = nf;
		*cap = ncap;
	}
	f = &s->funcs[s->n];
	memset(f, 0, sizeof(*f));
	f->name = strdup(name);
	if (!f->name)
		return -ENOMEM;
	s->n++;
	f->addr = sym->st_value;
	f->size = sym->st_size;
	f->offset = off;
	f->demangled = syms_demangle(name, false);
	if (f->demangled) {
		f->base = syms_demangle(name, true);
		if (!f->base)
			f->base = strdup(f->demangled);
		if (!f->base)
			return -ENOMEM;
	}
	return 0;
}

/*
 * The defined functions (and with SYMS_OBJECTS, data objects) of one
 * symbol table section.  File offsets come from the phdrs of PH, the
 * file the symbols describe (a debug file's own phdrs may not map).
 */
static int read_symtab(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh,
		       Elf *ph, size_t nphdr, unsigned flags, struct syms *s,
		       size_t *cap)
{
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t n, i;

	if (!d || !sh->sh_entsize)
		return 0;
	n = sh->sh_size / sh->sh_entsize;
	for (i = 1; i < n; i++) {
		GElf_Sym sym;
		const char *name;
		uint64_t off = 0;
		bool obj;
		int t, ret;

		if (!gelf_getsym(d, i, &sym))
			continue;
		t = GELF_ST_TYPE(sym.st_info);
		obj = t == STT_OBJECT && (flags & SYMS_OBJECTS);
		if ((t != STT_FUNC && t != STT_GNU_IFUNC && !obj) ||
		    sym.st_shndx == SHN_UNDEF || !sym.st_value)
			continue;
		name = elf_strptr(e, sh->sh_link, sym.st_name);
		if (!name || !*name)
			continue;
		/* data in .bss has no file bytes: its offset is unused */
		if (vaddr_offset(ph, nphdr, sym.st_value, &off) && !obj)
			continue;
		ret = add_func(s, cap, name, &sym, off);
		if (ret)
			return ret;
		s->funcs[s->n - 1].object = obj;
	}
	return 0;
}

/* Every symbol table of E into S (see read_symtab). */
static int read_symtabs(Elf *e, Elf *ph, size_t nphdr, unsigned flags,
			struct syms *s, size_t *cap)
{
	Elf_Scn *scn = NULL;
	int ret = 0;

	while ((scn = elf_nextscn(e, scn)) && !ret) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			continue;
		if (sh.sh_type == SHT_SYMTAB || sh.sh_type == SHT_DYNSYM)
			ret = read_symtab(e, scn, &sh, ph, nphdr, flags, s, cap);
	}
	return ret;
}

/*
 * The symbols of PATH's separate debug file, if it has one, added to S
 * with offsets in E (PATH's ELF).  A debug file that cannot be read is
 * no error: the symbols are then only PATH's own.
 */
static int read_debug_file(Elf *e, size_t nphdr, const char *path,
			   unsigned flags, struct syms *s, size_t *cap)
{
	char dbg[PATH_MAX];
	Elf *de;
	int fd, ret;

	if (syms_debug_file(e, path, dbg, sizeof(dbg)))
		return 0;
	fd = open(dbg, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	de = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	ret = de && elf_kind(de) == ELF_K_ELF ?
	      read_symtabs(de, e, nphdr, flags, s, cap) : 0;
	elf_end(de);
	close(fd);
	return ret;
}

/* Sort, and keep one entry per (name, address): the one with a size. */
static void sort_unique(struct syms *s)
{
	size_t i, j = 0;

	if (!s->n)
		return;
	qsort(s->funcs, s->n, sizeof(*s->funcs), cmp_func);
	for (i = 1; i < s->n; i++) {
		struct syms_func *a = &s->funcs[j], *b = &s->funcs[i];

		if (!strcmp(a->name, b->name) && a->addr == b->addr) {
			if (b->size > a->size)
				a->size = b->size;
			free(b->name);
			free(b->demangled);
			free(b->base);
			continue;
		}
		s->funcs[++j] = *b;
	}
	s->n = j + 1;
}

static int load(const char *path, unsigned flags, struct syms *s, char *err,
		size_t errlen)
{
	size_t nphdr, cap = 0;
	Elf *e;
	int fd, ret = 0;

	if (elf_version(EV_CURRENT) == EV_NONE) {
		snprintf(err, errlen, "libelf: %s", elf_errmsg(-1));
		return -EINVAL;
	}
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(-ret));
		return ret;
	}
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || elf_getphdrnum(e, &nphdr)) {
		snprintf(err, errlen, "%s is not an ELF file", path);
		ret = -ENOEXEC;
		goto out;
	}
	s->path = strdup(path);
	if (!s->path) {
		ret = -ENOMEM;
		goto out;
	}
	ret = read_symtabs(e, e, nphdr, flags, s, &cap);
	if (!ret && (flags & SYMS_DEBUG))
		ret = read_debug_file(e, nphdr, path, flags, s, &cap);
	if (ret)
		snprintf(err, errlen, "%s: out of memory", path);
	else
		sort_unique(s);
out:
	if (ret)
		free_funcs(s);
	elf_end(e);
	close(fd);
	return ret;
}

int syms_read(const char *path, unsigned flags, struct syms *s, char *err,
	      size_t errlen)
{
	memset(s, 0, sizeof(*s));
	return load(path, flags, s, err, errlen);
}

void syms_free(struct syms *s)
{
	free_funcs(s);
}

/*
 * One cached table: a wildcard over N functions parses the same file N
 * + 1 times, and libc has thousands.  Keyed by the file's identity so a
 * rebuilt binary is read again.
 */
static struct {
	struct syms s;
	dev_t dev;
	ino_t ino;
	struct timespec mtime;
	off_t size;
} cache;

void syms_cache_drop(void)
{
	free_funcs(&cache.s);
}

int syms_load(const char *path, const struct syms **out, char *err,
	      size_t errlen)
{
	struct stat st;
	struct syms s = { 0 };
	int ret;

	if (stat(path, &st)) {
		ret = -errno;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(-ret));
		return ret;
	}
	if (cache.s.path && !strcmp(cache.s.path, path) &&
	    cache.dev == st.st_dev && cache.ino == st.st_ino &&
	    cache.size == st.st_size &&
	    cache.mtime.tv_sec == st.st_mtim.tv_sec &&
	    cache.mtime.tv_nsec == st.st_mtim.tv_nsec) {
		*out = &cache.s;
		return 0;
	}
	/* the separate debug file's symbols too, as bcc (bpftrace) reads
	 * them for uprobes and -l */
	ret = load(path, SYMS_DEBUG, &s, err, errlen);
	if (ret)
		return ret;
	syms_cache_drop();
	cache.s = s;
	cache.dev = st.st_dev;
	cache.ino = st.st_ino;
	cache.size = st.st_size;
	cache.mtime = st.st_mtim;
	*out = &cache.s;
	return 0;
}

/* -------------------------------------------------------- libraries -- */

/*
 * Does file name BASE stand for library NAME?  "libc" names
 * "libc.so.6" and "libc-2.31.so"; a NAME with ".so" must match exactly.
 */
static bool lib_matches(const char *base, const char *name)
{
	size_t n = strlen(name);

	if (strstr(name, ".so"))
		return !strcmp(base, name);
	if (strncmp(base, name, n))
		return false;
	base += n;
	return !strncmp(base, ".so", 3) ||
	       (base[0] == '-' && base[1] >= '0' && base[1] <= '9');
}

bool syms_other_mntns(int pid)
{
	char theirs[64];
	struct stat a, b;

	snprintf(theirs, sizeof(theirs), "/proc/%d/ns/mnt", pid);
	if (pid <= 0 || stat("/proc/self/ns/mnt", &a) || stat(theirs, &b))
		return false;
	return a.st_dev != b.st_dev || a.st_ino != b.st_ino;
}

/* The first file in /proc/PID/maps that is library NAME. */
int syms_find_mapped(const char *name, int pid, char *out, size_t outlen)
{
	char path[64], line[PATH_MAX + 128];
	int ret = -ENOENT;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f)) {
		char *file = strchr(line, '/'), *base;

		if (!file)
			continue;
		file[strcspn(file, "\n")] = 0;
		if (strstr(file, " (deleted)"))
			continue;
		base = strrchr(file, '/') + 1;
		if (!lib_matches(base, name))
			continue;
		/* the target may live in another mount namespace */
		if (syms_other_mntns(pid))
			snprintf(out, outlen, "/proc/%d/root%s", pid, file);
		else
			snprintf(out, outlen, "%s", file);
		ret = 0;
	}
	fclose(f);
	return ret;
}

/*
 * /etc/ld.so.cache, format "glibc-ld.so.cache1.1" (glibc >= 2.32 writes
 * only it; older ones put it after an "ld.so-1.7.0" table): a header,
 * NLIBS entries, then strings; string offsets count from the header.
 */
#define LDC_MAGIC	"glibc-ld.so.cache1.1"
#define LDC_HDR		48	/* magic[20] nlibs len_strings flags pad[3] ext unused[3] */
#define LDC_ENTRY	24	/* flags key value osversion hwcap(u64) */
#define LDC_ELF_LIBC6	0x0003
#define LDC_X8664	0x0300

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static int find_in_ldcache(const char *name, char *out, size_t outlen)
{
	unsigned char *buf = NULL, *h;
	const size_t mlen = sizeof(LDC_MAGIC) - 1;
	size_t len = 0, off, nlibs, i;
	struct stat st;
	int fd, ret = -ENOENT;

	fd = open("/etc/ld.so.cache", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || st.st_size < LDC_HDR || st.st_size > (64 << 20))
		goto out;
	buf = malloc(st.st_size);
	if (!buf || read(fd, buf, st.st_size) != st.st_size)
		goto out;
	len = st.st_size;
	/* the new header, at 0 or after the old format's table */
	h = memmem(buf, len, LDC_MAGIC, mlen);
	if (!h || (size_t)(h - buf) + LDC_HDR > len)
		goto out;
	off = h - buf;
	nlibs = get32(h + mlen);
	if (nlibs > (len - off - LDC_HDR) / LDC_ENTRY)
		goto out;
	for (i = 0; i < nlibs && ret; i++) {
		const unsigned char *ent = h + LDC_HDR + i * LDC_ENTRY;
		uint32_t flags = get32(ent), key = get32(ent + 4);
		uint32_t val = get32(ent + 8);
		const char *k = (const char *)h + key, *v = (const char *)h + val;

		if ((flags & 0xff) != LDC_ELF_LIBC6 ||
		    (flags & 0xff00) != LDC_X8664)
			continue;
		if (key >= len - off || val >= len - off ||
		    !memchr(k, 0, len - off - key) ||
		    !memchr(v, 0, len - off - val))
			continue;
		if (!lib_matches(k, name))
			continue;
		snprintf(out, outlen, "%s", v);
		ret = 0;
	}
out:
	free(buf);
	close(fd);
	return ret;
}

/*
 * -c's child is held before its exec: its maps are still ours and say
 * nothing of the program's libraries; the loader's cache does (and
 * bpftrace -c shows those paths).
 */
static bool before_exec(int pid)
{
	char exe[64];
	struct stat a, b;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	return !stat(exe, &a) && !stat("/proc/self/exe", &b) &&
	       a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

int syms_find_lib(const char *name, int pid, char *out, size_t outlen)
{
	if (pid > 0 && !before_exec(pid) &&
	    !syms_find_mapped(name, pid, out, outlen))
		return 0;
	return find_in_ldcache(name, out, outlen);
}

/* NAME as a program in $PATH. */
static int find_in_path(const char *name, char *out, size_t outlen)
{
	const char *p = getenv("PATH");

	if (!p)
		p = "/usr/local/bin:/usr/bin:/bin";
	while (*p) {
		size_t n = strcspn(p, ":");

		snprintf(out, outlen, "%.*s/%s", (int)n, p, name);
		if (n && !access(out, X_OK))
			return 0;
		p += n + (p[n] == ':');
	}
	return -ENOENT;
}

int syms_resolve_shown(const char *bin, int pid, char *out, size_t outlen,
		       char *shown, size_t shownlen, char *err, size_t errlen)
{
	char found[PATH_MAX + 32], real[PATH_MAX + 32];
	int ret;

	if (strchr(bin, '/')) {
		ret = 0;
		if (syms_other_mntns(pid))
			snprintf(found, sizeof(found), "/proc/%d/root%s%s", pid,
				 bin[0] == '/' ? "" : "/", bin);
		else
			snprintf(found, sizeof(found), "%s", bin);
	} else if (!syms_find_lib(bin, pid, found, sizeof(found))) {
		ret = 0;
	} else {
		ret = find_in_path(bin, found, sizeof(found));
	}
	if (ret) {
		if (!strncmp(bin, "lib", 3))
			snprintf(err, errlen, "cannot find library '%s'", bin);
		else
			snprintf(err, errlen,
				 "cannot find '%s' (not a path, a library or a program in $PATH)",
				 bin);
		return -ENOENT;
	}
	/* a library or program is shown as found, a path as written, one
	 * in the target's mount namespace through /proc/PID/root (bpftrace) */
	if (shown)
		snprintf(shown, shownlen, "%s",
			 strchr(bin, '/') && strncmp(found, "/proc/", 6) ? bin : found);
	/* /proc/PID/root is a link to "/" in another namespace: realpath
	 * would leave it */
	if (!strncmp(found, "/proc/", 6)) {
		if (access(found, R_OK)) {
			ret = -errno;
			snprintf(err, errlen, "%s: %s", found, strerror(-ret));
			return ret;
		}
		snprintf(real, sizeof(real), "%s", found);
	} else if (!realpath(found, real)) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", found, strerror(-ret));
		return ret;
	}
	if (strlen(real) >= outlen) {
		snprintf(err, errlen, "%s: path too long", real);
		return -ENAMETOOLONG;
	}
	strcpy(out, real);
	return 0;
}

int syms_resolve(const char *bin, int pid, char *out, size_t outlen,
		 char *err, size_t errlen)
{
	return syms_resolve_shown(bin, pid, out, outlen, NULL, 0, err, errlen);
}
