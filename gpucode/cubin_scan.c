// SPDX-License-Identifier: MIT
/*
 * Cubins in a process's anonymous memory (cubin_scan.h).  Other threads
 * of the process free and unmap memory while we look, so it is never
 * dereferenced: it is copied, a chunk at a time, with process_vm_readv
 * (or pread of /proc/PID/mem where a seccomp filter refuses that), which
 * return a short count or an error instead of faulting, and only our
 * copies are parsed.  Chunks of which no page was ever touched (pagemap)
 * are skipped: not read, nor counted against the budget.
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "gpucode/cubin_scan.h"

#define CHUNK		(1u << 20)	/* copied at a time */
#define HDR		sizeof(Elf64_Ehdr)
#define MAX_CUBIN	(256u << 20)
#define PM_BATCH	4096		/* pagemap entries read at a time */
#define MAX_MAPPING	(64ull << 30)	/* bigger: a reservation, skipped */
#define EM_CUDA_	190

struct scan {
	struct cubin_scan *sc;
	pid_t pid;
	int memfd;		/* /proc/PID/mem, once process_vm_readv fails */
	int pagemap;		/* /proc/PID/pagemap, -1: none */
	uint64_t pm[PM_BATCH];	/* its entries for [pm_lo, pm_hi) */
	uintptr_t pm_lo, pm_hi;
	uintptr_t end;		/* of the range being scanned */
	uint8_t *buf;		/* CHUNK + HDR, a mapping of our own */
	cubin_scan_fn fn;
	void *arg;
};

/* Copy LEN bytes at ADDR: the number copied (short where a page is not
 * mapped any more), -1 when none. */
static ssize_t mem_read(struct scan *s, uintptr_t addr, void *buf,
			size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)addr, len };
	char path[64];
	ssize_t n;

	if (s->memfd < 0) {
		n = process_vm_readv(s->pid, &l, 1, &r, 1, 0);
		if (n >= 0 || (errno != ENOSYS && errno != EPERM))
			return n;
		snprintf(path, sizeof(path), "/proc/%d/mem", (int)s->pid);
		s->memfd = open(path, O_RDONLY | O_CLOEXEC);
		if (s->memfd < 0)
			return -1;
	}
	return pread(s->memfd, buf, len, (off_t)addr);
}

static bool read_all(struct scan *s, uintptr_t addr, void *buf, size_t len)
{
	return mem_read(s, addr, buf, len) == (ssize_t)len;
}

/* Does the section name table SS of the cubin at ADDR name a
 * .nv_debug_ptx_txt* section among SH (N)? */
static bool names_ptx(struct scan *s, uintptr_t addr, const Elf64_Shdr *sh,
		      unsigned n, const Elf64_Shdr *ss)
{
	char *names;
	bool yes = false;

	if (!ss->sh_size || ss->sh_size > 1u << 20 ||
	    !(names = malloc(ss->sh_size + 1)))
		return false;
	if (read_all(s, addr + ss->sh_offset, names, ss->sh_size)) {
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
 * An ELF header (a copy, H) at ADDR, ROOM bytes of its mapping from
 * there: if it heads a cubin, its length (0: not one), and the cubin
 * copied and given to FN.
 */
static size_t try_cubin(struct scan *s, uintptr_t addr, size_t room,
			const uint8_t *h)
{
	Elf64_Ehdr eh;
	Elf64_Shdr *sh;
	size_t len, shlen;
	uint8_t *d;

	memcpy(&eh, h, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_machine != EM_CUDA_ ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || !eh.e_shnum ||
	    eh.e_shstrndx >= eh.e_shnum || eh.e_shoff < HDR ||
	    eh.e_shoff > MAX_CUBIN)
		return 0;
	shlen = (size_t)eh.e_shnum * sizeof(*sh);
	len = eh.e_shoff + shlen;
	if (len > room || !(sh = malloc(shlen)))
		return 0;
	if (!read_all(s, addr + eh.e_shoff, sh, shlen))
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
	/* one without the section, when not wanted: skipped, not copied */
	if (s->sc->ptx_only &&
	    !names_ptx(s, addr, sh, eh.e_shnum, &sh[eh.e_shstrndx]))
		goto out;
	d = malloc(len);
	if (d && read_all(s, addr, d, len))
		s->fn(d, len, s->arg);
	else
		free(d);
out:
	free(sh);
	return len;
no:
	free(sh);
	return 0;
}

/*
 * Was a page of [A, A + LEN) ever touched: in memory or swapped out
 * (pagemap bits 63, 62)?  Reading pages never touched would only map the
 * zero page into the process, for nothing.  The entries are read ahead
 * (S->pm covers S->pm_lo to S->pm_hi).  Unknown: yes.
 */
static bool touched(struct scan *s, uintptr_t a, size_t len)
{
	uintptr_t p = a & ~(uintptr_t)4095, e = a + len;

	if (s->pagemap < 0)
		return true;
	for (; p < e; p += 4096) {
		if (p < s->pm_lo || p >= s->pm_hi) {
			size_t n = PM_BATCH;
			ssize_t got;

			if (n > (s->end - p + 4095) / 4096)
				n = (s->end - p + 4095) / 4096;
			got = pread(s->pagemap, s->pm, n * 8,
				    (off_t)(p / 4096 * 8));
			if (got < 8)
				return true;
			s->pm_lo = p;
			s->pm_hi = p + (size_t)got / 8 * 4096;
		}
		if (s->pm[(p - s->pm_lo) / 4096] >> 62)
			return true;
	}
	return false;
}

/* Look for cubins in [START, END), 8-byte aligned. */
static void scan_range(struct scan *s, uintptr_t start, uintptr_t end)
{
	uintptr_t skip_to = start;

	s->end = end;
	s->pm_lo = s->pm_hi = 0;

	for (uintptr_t a = start; a < end; a += CHUNK) {
		size_t want = end - a < CHUNK + HDR ? end - a : CHUNK + HDR;
		size_t lim;
		ssize_t got;

		if (s->sc->scanned >= s->sc->budget) {
			s->sc->cut = true;
			return;
		}
		if (!touched(s, a, want))
			continue;
		got = mem_read(s, a, s->buf, want);
		if (got < (ssize_t)HDR)
			return;		/* unmapped meanwhile */
		s->sc->scanned += (uint64_t)got;
		lim = (size_t)got - HDR + 1;
		if (lim > CHUNK)
			lim = CHUNK;
		for (size_t o = 0; o < lim; o += 8) {
			uint32_t m;
			size_t n;

			memcpy(&m, s->buf + o, 4);
			if (m != 0x464c457fu || a + o < skip_to)
				continue;
			n = try_cubin(s, a + o, end - (a + o), s->buf + o);
			if (n)
				skip_to = a + o + n;
		}
		if ((size_t)got < want)
			return;
	}
}

/* Which mappings: private, readable, no file (nor a device's). */
static bool anonymous(const char *perms, unsigned long inode,
		      const char *path)
{
	if (perms[0] != 'r' || perms[3] != 'p' || inode)
		return false;
	return !*path || !strcmp(path, "[heap]") ||
	       !strncmp(path, "[anon:", 6);
}

struct range {
	uintptr_t lo, hi;
};

/* Smaller mappings first: cubins sit in malloc'ed buffers, and the
 * budget is best spent before the gigabytes of a program's data. */
static int by_size(const void *a, const void *b)
{
	const struct range *x = a, *y = b;
	uintptr_t nx = x->hi - x->lo, ny = y->hi - y->lo;

	if (nx != ny)
		return nx < ny ? -1 : 1;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The anonymous mappings of /proc/PID/maps into *V (malloc'd): their
 * number, or -errno. */
static int read_maps(pid_t pid, struct range **v)
{
	char path[64], *line = NULL;
	size_t cap = 0;
	int n = 0, e = 0;
	FILE *f;

	*v = NULL;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) > 0) {
		unsigned long lo, hi, inode;
		char perms[8], name[512] = "";
		struct range *r;

		if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %511[^\n]", &lo, &hi,
			   perms, &inode, name) < 4 || strlen(perms) < 4 ||
		    !anonymous(perms, inode, name))
			continue;
		if (!(r = realloc(*v, (size_t)(n + 1) * sizeof(*r)))) {
			e = -ENOMEM;
			break;
		}
		*v = r;
		r[n++] = (struct range){ lo, hi };
	}
	free(line);
	fclose(f);
	if (e < 0) {
		free(*v);
		*v = NULL;
		return e;
	}
	return n;
}

int cubin_scan(struct cubin_scan *sc, cubin_scan_fn fn, void *arg)
{
	struct scan *s = calloc(1, sizeof(*s));	/* pm: 32 KiB */
	struct timespec t0, t1;
	struct range *v = NULL;
	char path[64];
	int n, e = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (!sc->budget)
		sc->budget = CUBIN_SCAN_BUDGET;
	sc->scanned = sc->total = 0;
	sc->mappings = sc->huge = 0;
	sc->cut = false;
	if (!s)
		return -ENOMEM;
	*s = (struct scan){ .sc = sc, .pid = sc->pid ? sc->pid : getpid(),
			    .memfd = -1, .pagemap = -1, .fn = fn, .arg = arg };
	n = read_maps(s->pid, &v);
	if (n < 0) {
		e = n;
		goto out;
	}
	s->buf = mmap(NULL, CHUNK + HDR, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->buf == MAP_FAILED) {
		e = -errno;
		goto out;
	}
	snprintf(path, sizeof(path), "/proc/%d/pagemap", (int)s->pid);
	s->pagemap = open(path, O_RDONLY | O_CLOEXEC);
	qsort(v, (size_t)n, sizeof(*v), by_size);
	sc->mappings = n;
	for (int i = 0; i < n; i++) {
		uintptr_t lo = v[i].lo, hi = v[i].hi, b = (uintptr_t)s->buf;
		uintptr_t be = b + CHUNK + HDR;

		sc->total += hi - lo;
		if (hi - lo > MAX_MAPPING) {
			sc->huge++;
			continue;
		}
		/* our own buffer, in our own process: not scanned */
		if (s->pid == getpid() && b < hi && be > lo) {
			if (lo < b)
				scan_range(s, lo, b);
			if (be < hi)
				scan_range(s, be, hi);
		} else {
			scan_range(s, lo, hi);
		}
	}
	munmap(s->buf, CHUNK + HDR);
out:
	if (s->memfd >= 0)
		close(s->memfd);
	if (s->pagemap >= 0)
		close(s->pagemap);
	free(s);
	free(v);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	sc->ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
		 (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	return e;
}
