// SPDX-License-Identifier: MIT
/*
 * Cubins in the process's anonymous memory.  A kernel whose load the
 * agent did not see (-p: loaded before the attach) and that no ELF
 * object's .nv_fatbin has may come from a cubin the program keeps in
 * memory: Triton holds each kernel's cubin as a Python bytes object and
 * loads it with cuModuleLoadData.  Such a cubin carries its PTX in
 * .nv_debug_ptx_txt (ptxas -lineinfo).  docs/attach.md, docs/fatbin.md.
 *
 * Other threads free and unmap memory while we look, so the target's
 * memory is never dereferenced: it is copied with process_vm_readv on
 * ourselves (or pread of /proc/self/mem), which fail instead of
 * faulting, and what is parsed is our copy.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "runtime/agent/agent_priv.h"

#define CHUNK		(1u << 20)	/* copied at a time */
#define HDR		sizeof(Elf64_Ehdr)
#define BUDGET		(4ull << 30)	/* bytes scanned at most a scan */
#define MAX_CUBIN	(256u << 20)
#define MAX_FOUND	4096		/* cubins kept */
#define RETRY_S		5.0		/* a later miss rescans after */
#define EM_CUDA_	190

struct found {
	uint8_t *data;		/* our copy */
	size_t len;
};

static pthread_mutex_t scan_lock = PTHREAD_MUTEX_INITIALIZER;
static struct found *found;
static int nfound;
static bool scanned;
static double scanned_at;
static int memfd = -1;		/* /proc/self/mem where process_vm_readv is
				 * refused (seccomp) */

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + t.tv_nsec / 1e9;
}

/* Copy LEN bytes at ADDR: the number copied (short where a page is not
 * mapped any more), -1 when none. */
static ssize_t mem_read(uintptr_t addr, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)addr, len };
	ssize_t n;

	if (memfd < 0) {
		n = process_vm_readv(getpid(), &l, 1, &r, 1, 0);
		if (n >= 0 || (errno != ENOSYS && errno != EPERM))
			return n;
		memfd = open("/proc/self/mem", O_RDONLY | O_CLOEXEC);
		if (memfd < 0)
			return -1;
	}
	return pread(memfd, buf, len, (off_t)addr);
}

static bool read_all(uintptr_t addr, void *buf, size_t len)
{
	return mem_read(addr, buf, len) == (ssize_t)len;
}

static void forget_all(void)
{
	while (nfound)
		free(found[--nfound].data);
	free(found);
	found = NULL;
}

/* Keep the cubin copy D (LEN), unless an identical one is kept. */
static void keep(uint8_t *d, size_t len)
{
	struct found *v;

	for (int i = 0; i < nfound; i++)
		if (found[i].len == len && !memcmp(found[i].data, d, len)) {
			free(d);
			return;
		}
	if (nfound == MAX_FOUND ||
	    !(v = realloc(found, (size_t)(nfound + 1) * sizeof(*v)))) {
		free(d);
		return;
	}
	found = v;
	found[nfound++] = (struct found){ d, len };
}

/* Does the section name table at ADDR + SS have .nv_debug_ptx_txt*? */
static bool names_ptx(uintptr_t addr, const Elf64_Shdr *sh, unsigned n,
		      const Elf64_Shdr *ss)
{
	char *names;
	bool yes = false;

	if (!ss->sh_size || ss->sh_size > 1u << 20 ||
	    !(names = malloc(ss->sh_size + 1)))
		return false;
	if (read_all(addr + ss->sh_offset, names, ss->sh_size)) {
		names[ss->sh_size] = 0;
		for (unsigned i = 0; i < n && !yes; i++)
			yes = sh[i].sh_name < ss->sh_size &&
			      !strncmp(names + sh[i].sh_name,
				       ".nv_debug_ptx_txt", 17);
	}
	free(names);
	return yes;
}

/*
 * An ELF header (a copy, H) at ADDR, ROOM bytes readable from there: if
 * it heads a cubin, its length (0: not one), and the cubin kept when it
 * carries usable PTX.
 */
static size_t try_cubin(uintptr_t addr, size_t room, const uint8_t *h)
{
	Elf64_Ehdr eh;
	Elf64_Shdr *sh;
	struct fatbin_arch a;
	struct fatbin_cubin_ptx x;
	size_t len, shlen;
	uint8_t *d = NULL;
	char err[160];

	memcpy(&eh, h, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_CUDA_ ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || !eh.e_shnum ||
	    eh.e_shstrndx >= eh.e_shnum ||
	    eh.e_shoff < HDR || eh.e_shoff > MAX_CUBIN)
		return 0;
	shlen = (size_t)eh.e_shnum * sizeof(*sh);
	len = eh.e_shoff + shlen;
	if (len > room || !(sh = malloc(shlen)))
		return 0;
	if (!read_all(addr + eh.e_shoff, sh, shlen))
		goto no;
	if (eh.e_phnum) {
		size_t pe = eh.e_phoff + (size_t)eh.e_phnum * eh.e_phentsize;

		if (eh.e_phoff > MAX_CUBIN || pe > room)
			goto no;
		if (pe > len)
			len = pe;
	}
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		if (sh[i].sh_type == SHT_NOBITS)
			continue;
		if (sh[i].sh_offset > MAX_CUBIN || sh[i].sh_size > MAX_CUBIN ||
		    sh[i].sh_offset + sh[i].sh_size > room)
			goto no;
		if (sh[i].sh_offset + sh[i].sh_size > len)
			len = sh[i].sh_offset + sh[i].sh_size;
	}
	if (len > MAX_CUBIN)
		goto no;
	/* a cubin without the section: skipped whole, not copied */
	if (!names_ptx(addr, sh, eh.e_shnum, &sh[eh.e_shstrndx]))
		goto out;
	if (!(d = malloc(len)) || !read_all(addr, d, len) ||
	    fatbin_cubin_arch(d, len, &a) < 0 ||
	    fatbin_cubin_ptx(d, len, a.sm, NULL, &x, err, sizeof(err)) < 0) {
		free(d);
		goto out;
	}
	free(x.text);
	keep(d, len);
out:
	free(sh);
	return len;
no:
	free(sh);
	return 0;
}

struct scan {
	uint8_t *buf;		/* CHUNK + HDR, our own mapping */
	uint64_t bytes;		/* scanned so far */
	bool cut;		/* the budget ran out */
};

/* Look for cubins in [S, E), 8-byte aligned. */
static void scan_range(struct scan *sc, uintptr_t s, uintptr_t e)
{
	uintptr_t skip_to = s;

	for (uintptr_t a = s; a < e; a += CHUNK) {
		size_t want = e - a < CHUNK + HDR ? e - a : CHUNK + HDR;
		size_t lim;
		ssize_t got;

		if (sc->bytes >= BUDGET) {
			sc->cut = true;
			return;
		}
		got = mem_read(a, sc->buf, want);
		if (got < (ssize_t)HDR)
			return;		/* unmapped meanwhile */
		sc->bytes += (uint64_t)got;
		lim = (size_t)got - HDR + 1;
		if (lim > CHUNK)
			lim = CHUNK;
		for (size_t o = 0; o < lim; o += 8) {
			uint32_t m;
			size_t n;

			memcpy(&m, sc->buf + o, 4);
			if (m != 0x464c457fu || a + o < skip_to)
				continue;
			n = try_cubin(a + o, e - (a + o), sc->buf + o);
			if (n)
				skip_to = a + o + n;
		}
		if ((size_t)got < want)
			return;
	}
}

/* Which mappings of /proc/self/maps: private, anonymous, readable. */
static bool anonymous(const char *perms, unsigned long inode,
		      const char *path)
{
	if (perms[0] != 'r' || perms[3] != 'p' || inode)
		return false;
	return !*path || !strcmp(path, "[heap]") ||
	       !strncmp(path, "[anon:", 6);
}

static void scan(void)
{
	struct scan sc = { 0 };
	FILE *f = fopen("/proc/self/maps", "re");
	char *line = NULL;
	size_t cap = 0;
	double t0 = now_s();
	int nreg = 0;
	uint64_t total = 0;

	forget_all();
	scanned = true;
	scanned_at = t0;
	if (!f)
		return;
	sc.buf = mmap(NULL, CHUNK + HDR, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (sc.buf == MAP_FAILED) {
		fclose(f);
		return;
	}
	while (getline(&line, &cap, f) > 0) {
		unsigned long s, e, inode;
		char perms[8], path[512] = "";
		uintptr_t b = (uintptr_t)sc.buf, be = b + CHUNK + HDR;

		if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %511[^\n]", &s, &e,
			   perms, &inode, path) < 4 || strlen(perms) < 4 ||
		    !anonymous(perms, inode, path))
			continue;
		nreg++;
		total += e - s;
		/* not our own buffer */
		if (b < e && be > s) {
			if (s < b)
				scan_range(&sc, s, b);
			if (be < e)
				scan_range(&sc, be, e);
		} else {
			scan_range(&sc, s, e);
		}
	}
	free(line);
	fclose(f);
	munmap(sc.buf, CHUNK + HDR);
	agent_debug("memory scan: %d cubin%s with PTX in %llu MiB of %d "
		    "anonymous mappings, %.0f ms%s", nfound,
		    nfound == 1 ? "" : "s",
		    (unsigned long long)(sc.bytes >> 20), nreg,
		    (now_s() - t0) * 1e3, sc.cut ? "; stopped at the 4 GiB "
		    "budget" : "");
	if (sc.cut)
		agent_debug("memory scan: %llu MiB of anonymous memory not "
			    "scanned", (unsigned long long)
			    ((total - sc.bytes) >> 20));
}

static int each(const char *name, agent_memscan_fn fn, void *arg)
{
	struct fatbin_cubin_func f;
	int n = 0;

	for (int i = 0; i < nfound; i++)
		if (!fatbin_cubin_func(found[i].data, found[i].len, name,
				       &f)) {
			n++;
			if (fn)
				fn(found[i].data, found[i].len, arg);
		}
	return n;
}

int agent_memscan_each(const char *name, agent_memscan_fn fn, void *arg)
{
	int n;

	pthread_mutex_lock(&scan_lock);
	if (!each(name, NULL, NULL) &&
	    (!scanned || now_s() - scanned_at >= RETRY_S))
		scan();
	n = each(name, fn, arg);
	pthread_mutex_unlock(&scan_lock);
	return n;
}

void agent_memscan_reset(void)
{
	pthread_mutex_lock(&scan_lock);
	forget_all();
	scanned = false;
	pthread_mutex_unlock(&scan_lock);
}
#endif /* GT_AGENT_SO */
