// SPDX-License-Identifier: MIT
/*
 * The ELF side of the fatbin reader, through libelf: finding fatbins in
 * host objects, and listing the kernels of a cubin.
 *
 * Host objects keep fatbins in .nv_fatbin (__nv_relfatbin for -rdc code
 * before nvlink) and one 24-byte wrapper per translation unit in
 * .nvFatBinSegment: {u32 magic, u32 version, u64 fatbin pointer, u64}.
 * The sections are walked whole; a wrapper pointing outside them (other
 * toolchains) is followed too.  Section data is read straight from the
 * image after checking its range, never through libelf's copies.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpucode/fatbin.h"
#include "gpucode/fatbin_priv.h"

#define WRAPPER_SIZE	24
#define STO_CUDA_ENTRY	0x10	/* st_other bit of kernel symbols */
#ifndef EM_CUDA
#define EM_CUDA		190
#endif
#define MAX_RANGES	64

struct range {
	size_t off, len;
};

/* Shifts entry offsets from the walked buffer to the file. */
struct rebase {
	fatbin_entry_fn fn;
	void *arg;
	size_t base;
	unsigned kind;		/* entries of this kind only; 0: all */
};

static int rebase_cb(const struct fatbin_entry *e, void *arg)
{
	struct rebase *rb = arg;
	struct fatbin_entry c = *e;

	c.fatbin_off += rb->base;
	c.entry_off += rb->base;
	return rb->fn(&c, rb->arg);
}

static Elf *open_mem(const void *img, size_t len, GElf_Ehdr *eh,
		     char *err, size_t errlen, int *ret)
{
	Elf *elf;

	*ret = 0;
	if (elf_version(EV_CURRENT) == EV_NONE) {
		*ret = fatbin_fail(err, errlen, EINVAL, "libelf: %s",
				   elf_errmsg(-1));
		return NULL;
	}
	/* libelf only reads a native-order image; the cast is its API's. */
	elf = elf_memory((char *)img, len);
	if (!elf || elf_kind(elf) != ELF_K_ELF || !gelf_getehdr(elf, eh)) {
		*ret = fatbin_fail(err, errlen, EBADMSG, "not an ELF image%s%s",
				   elf ? ": " : "", elf ? elf_errmsg(-1) : "");
		if (elf)
			elf_end(elf);
		return NULL;
	}
	return elf;
}

/* The file range of section SH, checked against the image. */
static int sec_range(const GElf_Shdr *sh, size_t len, struct range *r)
{
	if (sh->sh_type == SHT_NOBITS || sh->sh_offset > len ||
	    sh->sh_size > len - sh->sh_offset)
		return -1;
	r->off = sh->sh_offset;
	r->len = sh->sh_size;
	return 0;
}

/* Relocatable objects: the wrapper's pointer is a relocation's target. */
static int reloc_target(Elf *elf, size_t seg_ndx, uint64_t where,
			size_t len, size_t *out)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh, symsh, tsh;

	while ((scn = elf_nextscn(elf, scn))) {
		Elf_Data *rd, *sd;
		GElf_Rela rela;
		GElf_Sym sym;
		Elf_Scn *ss, *ts;
		int i, n;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_RELA ||
		    sh.sh_info != seg_ndx || !sh.sh_entsize)
			continue;
		rd = elf_getdata(scn, NULL);
		ss = elf_getscn(elf, sh.sh_link);
		if (!rd || !ss || !gelf_getshdr(ss, &symsh))
			continue;
		sd = elf_getdata(ss, NULL);
		n = sh.sh_size / sh.sh_entsize;
		for (i = 0; sd && i < n; i++) {
			uint64_t t;

			if (!gelf_getrela(rd, i, &rela) ||
			    rela.r_offset != where ||
			    !gelf_getsym(sd, GELF_R_SYM(rela.r_info), &sym))
				continue;
			ts = elf_getscn(elf, sym.st_shndx);
			if (!ts || !gelf_getshdr(ts, &tsh) ||
			    tsh.sh_type == SHT_NOBITS)
				return -1;
			t = sym.st_value + rela.r_addend;
			if (t >= tsh.sh_size || tsh.sh_offset > len)
				return -1;
			*out = tsh.sh_offset + t;
			return *out < len ? 0 : -1;
		}
	}
	return -1;
}

/* Linked objects: the pointer is a virtual address in some section. */
static int vaddr_target(Elf *elf, uint64_t va, size_t len, size_t *out)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;

	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || !(sh.sh_flags & SHF_ALLOC) ||
		    sh.sh_type == SHT_NOBITS || va < sh.sh_addr ||
		    va - sh.sh_addr >= sh.sh_size)
			continue;
		*out = sh.sh_offset + (va - sh.sh_addr);
		return *out < len && sh.sh_offset <= len ? 0 : -1;
	}
	return -1;
}

static bool in_ranges(const struct range *r, int n, size_t off)
{
	for (int i = 0; i < n; i++)
		if (off >= r[i].off && off - r[i].off < r[i].len)
			return true;
	return false;
}

/* Follow the wrappers in section SCN that point outside RANGES. */
static int walk_wrappers(Elf *elf, const uint8_t *img, size_t len,
			 Elf_Scn *scn, const GElf_Ehdr *eh,
			 struct range *ranges, int *nranges,
			 struct rebase *rb, uint64_t *budget, char *err,
			 size_t errlen)
{
	GElf_Shdr sh;
	struct range seg;
	size_t i, fb, nd = elf_ndxscn(scn);
	char why[200];
	int ret;

	if (!gelf_getshdr(scn, &sh) || sec_range(&sh, len, &seg) < 0)
		return 0;
	for (i = 0; i + WRAPPER_SIZE <= seg.len; i += 8) {
		const uint8_t *w = img + seg.off + i;
		int r;

		if (fb_get32(w) != FATBIN_WRAPPER_MAGIC)
			continue;
		if (eh->e_type == ET_REL)
			r = reloc_target(elf, nd, i + 8, len, &fb);
		else
			r = vaddr_target(elf, fb_get64(w + 8), len, &fb);
		if (r < 0 || in_ranges(ranges, *nranges, fb))
			continue;
		rb->base = fb;
		ret = fatbin_walk_single(img + fb, len - fb, rb->kind,
					 rebase_cb, rb, budget,
					 why, sizeof(why));
		if (ret < 0)
			fatbin_fail(err, errlen, -ret, "fatbin of wrapper %zu "
				    "at file offset 0x%zx: %s", i / WRAPPER_SIZE,
				    fb, why);
		if (ret)
			return ret;
		if (*nranges < MAX_RANGES) {
			size_t total;

			if (fatbin_size(img + fb, len - fb, &total, NULL, 0) == 0)
				ranges[(*nranges)++] = (struct range){ fb, total };
		}
	}
	return 0;
}

int fatbin_elf_foreach_mem(const void *img, size_t len, fatbin_entry_fn fn,
			   void *arg, char *err, size_t errlen)
{
	return fatbin_elf_foreach_mem_kind(img, len, 0, fn, arg, err, errlen);
}

/* A cubin file: one cubin entry, and its PTX with FATBIN_CUBIN_PTX. */
static int walk_cubin(const void *img, size_t len, unsigned kind,
		      fatbin_entry_fn fn, void *arg, char *err, size_t errlen)
{
	struct fatbin_entry e = {
		.kind = FATBIN_KIND_ELF, .data = img, .size = len,
		.stored_size = len, .plain_size = len, .name = "",
		.options = "",
	};
	unsigned want = kind & FATBIN_KIND_MASK;
	int ret = 0;

	/* the arch is 0 when e_flags are unknown: then not checked */
	fatbin_cubin_arch(img, len, &e.arch);
	if (!want || want == FATBIN_KIND_ELF)
		ret = fn(&e, arg);
	if (!ret && (kind & FATBIN_CUBIN_PTX) &&
	    (!want || want == FATBIN_KIND_PTX))
		ret = fatbin_cubin_each_ptx(&e, img, len, fn, arg);
	if (ret < 0)
		fatbin_fail(err, errlen, -ret, "cubin: callback failed: %s",
			    strerror(-ret));
	return ret;
}

int fatbin_elf_foreach_mem_kind(const void *img, size_t len, unsigned kind,
				fatbin_entry_fn fn, void *arg, char *err,
				size_t errlen)
{
	struct range ranges[MAX_RANGES];
	struct rebase rb = { fn, arg, 0, kind };
	Elf_Scn *scn = NULL;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	size_t shstrndx;
	int nranges = 0, ret = 0, walked = 0;
	uint64_t budget = fatbin_budget(len);	/* for the whole file */
	char why[200];
	Elf *elf;

	elf = open_mem(img, len, &eh, err, errlen, &ret);
	if (!elf)
		return ret;
	if (eh.e_machine == EM_CUDA) {
		elf_end(elf);
		return walk_cubin(img, len, kind, fn, arg, err, errlen);
	}
	if (elf_getshdrstrndx(elf, &shstrndx) < 0) {
		ret = fatbin_fail(err, errlen, EBADMSG, "ELF: %s",
				  elf_errmsg(-1));
		goto out;
	}
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;
		struct range r;

		if (!gelf_getshdr(scn, &sh) ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)))
			continue;
		if (strcmp(name, ".nv_fatbin") && strcmp(name, "__nv_relfatbin"))
			continue;
		if (sec_range(&sh, len, &r) < 0) {
			ret = fatbin_fail(err, errlen, EBADMSG,
					  "section %s outside the file", name);
			goto out;
		}
		rb.base = r.off;
		ret = fatbin_foreach_budget((const uint8_t *)img + r.off,
					    r.len, kind, rebase_cb, &rb,
					    &budget, why, sizeof(why));
		if (ret == -ENOENT)	/* only padding */
			ret = 0;
		if (ret < 0)
			fatbin_fail(err, errlen, -ret, "%s at file offset "
				    "0x%zx: %s", name, r.off, why);
		if (ret)
			goto out;
		if (nranges < MAX_RANGES)
			ranges[nranges++] = r;
		walked++;
	}
	scn = NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		const char *name;

		if (!gelf_getshdr(scn, &sh) ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strcmp(name, ".nvFatBinSegment"))
			continue;
		ret = walk_wrappers(elf, img, len, scn, &eh, ranges, &nranges,
				    &rb, &budget, err, errlen);
		if (ret)
			goto out;
		walked++;
	}
	if (!walked)
		ret = fatbin_fail(err, errlen, ENOENT, "no fatbin in this ELF");
out:
	elf_end(elf);
	return ret;
}

int fatbin_elf_foreach(const char *path, fatbin_entry_fn fn, void *arg,
		       char *err, size_t errlen)
{
	return fatbin_elf_foreach_kind(path, 0, fn, arg, err, errlen);
}

int fatbin_elf_foreach_kind(const char *path, unsigned kind,
			    fatbin_entry_fn fn, void *arg, char *err,
			    size_t errlen)
{
	struct stat st;
	void *img;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return fatbin_fail(err, errlen, errno, "%s: %s", path,
				   strerror(errno));
	if (fstat(fd, &st) < 0 || st.st_size == 0) {
		ret = fatbin_fail(err, errlen, st.st_size ? errno : EBADMSG,
				  "%s: empty or unreadable", path);
		close(fd);
		return ret;
	}
	/* Private and writable, so libelf may touch its view harmlessly. */
	img = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE,
		   fd, 0);
	close(fd);
	if (img == MAP_FAILED)
		return fatbin_fail(err, errlen, errno, "%s: mmap: %s", path,
				   strerror(errno));
	ret = fatbin_elf_foreach_mem_kind(img, st.st_size, kind, fn, arg, err,
					  errlen);
	munmap(img, st.st_size);
	return ret;
}

/* Kernels from .text.NAME section names, for cubins without a symtab. */
static int kernels_from_sections(Elf *elf, fatbin_name_fn fn, void *arg)
{
	Elf_Scn *scn = NULL;
	GElf_Shdr sh;
	size_t shstrndx;
	const char *name;
	int ret;

	if (elf_getshdrstrndx(elf, &shstrndx) < 0)
		return -EBADMSG;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS ||
		    !(sh.sh_flags & SHF_EXECINSTR) ||
		    !(name = elf_strptr(elf, shstrndx, sh.sh_name)) ||
		    strncmp(name, ".text.", 6) || !name[6])
			continue;
		ret = fn(name + 6, arg);
		if (ret)
			return ret;
	}
	return 0;
}

int fatbin_cubin_kernels(const void *img, size_t len, fatbin_name_fn fn,
			 void *arg, char *err, size_t errlen)
{
	Elf_Scn *scn = NULL, *symscn = NULL;
	GElf_Ehdr eh;
	GElf_Shdr sh;
	Elf_Data *d;
	GElf_Sym sym;
	const char *name;
	size_t i, n;
	int ret = 0;
	Elf *elf;

	if (len < EI_NIDENT || memcmp(img, ELFMAG, SELFMAG) ||
	    ((const uint8_t *)img)[EI_CLASS] != ELFCLASS64 ||
	    ((const uint8_t *)img)[EI_DATA] != ELFDATA2LSB)
		return fatbin_fail(err, errlen, EBADMSG,
				   "not a 64-bit little-endian cubin");
	elf = open_mem(img, len, &eh, err, errlen, &ret);
	if (!elf)
		return ret;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_SYMTAB) {
			symscn = scn;
			break;
		}
	if (!symscn) {
		ret = kernels_from_sections(elf, fn, arg);
		goto out;
	}
	d = elf_getdata(symscn, NULL);
	if (!d || !sh.sh_entsize) {
		ret = fatbin_fail(err, errlen, EBADMSG, "cubin: bad symtab");
		goto out;
	}
	n = sh.sh_size / sh.sh_entsize;
	for (i = 0; i < n && !ret; i++) {
		if (!gelf_getsym(d, i, &sym) ||
		    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    !(sym.st_other & STO_CUDA_ENTRY) ||
		    !(name = elf_strptr(elf, sh.sh_link, sym.st_name)) ||
		    !*name)
			continue;
		ret = fn(name, arg);
	}
out:
	elf_end(elf);
	return ret;
}
