// SPDX-License-Identifier: MIT
/*
 * The PTX a cubin carries.  `ptxas -lineinfo` (so nvcc and NVRTC with
 * -lineinfo, Triton, torch.compile's Inductor) writes the PTX it compiled
 * into the cubin's section .nv_debug_ptx_txt, for the SASS-to-PTX line
 * table: one PTX module, each line NUL-terminated, with comments, .loc and
 * .file lines and the contents of .section blocks blanked (the line
 * numbers stay those of the original).  Made back into text (NULs to
 * newlines), it assembles again.  docs/fatbin.md.
 *
 * It is used only when it belongs to its cubin: one module, its .entry
 * kernels exactly the cubin's kernel symbols, its .target one the cubin's
 * SASS can have come from.  The ELF is read by hand (bounds checked),
 * without libelf: the agent, which has none, reads cubins too.
 */
#include <ctype.h>
#include <elf.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/fatbin.h"
#include "gpucode/fatbin_priv.h"

#ifndef EM_CUDA
#define EM_CUDA		190
#endif
#define STO_CUDA_ENTRY	0x10	/* st_other bit of kernel symbols */
#define MAX_KERNELS	4096	/* per cubin, for the name check */

static bool is_name_char(int c)
{
	return isalnum(c) || c == '_' || c == '$' || c == '%' || c == '.';
}

int fatbin_ptx_kernels(const char *ptx, size_t len, fatbin_name_fn fn,
		       void *arg)
{
	const char *p = ptx, *end;
	char name[1024];
	int ret;

	end = memchr(ptx, 0, len);
	if (!end)
		end = ptx + len;
	while (p < end) {
		const char *eol = memchr(p, '\n', end - p), *q, *s;

		if (!eol)
			eol = end;
		/* ".entry" as a whole token, before any // comment. */
		for (q = p; q + 6 <= eol; q++) {
			if (q[0] == '/' && q + 1 < eol && q[1] == '/')
				break;
			if (memcmp(q, ".entry", 6) ||
			    (q > p && !isspace((unsigned char)q[-1])) ||
			    q + 6 == eol || !isspace((unsigned char)q[6]))
				continue;
			for (s = q + 6; s < eol && isspace((unsigned char)*s);)
				s++;
			for (q = s; q < eol && is_name_char((unsigned char)*q);)
				q++;
			if (q == s || q - s >= (long)sizeof(name))
				break;
			memcpy(name, s, q - s);
			name[q - s] = 0;
			ret = fn(name, arg);
			if (ret)
				return ret;
			break;
		}
		p = eol + 1;
	}
	return 0;
}

/* ---- a cubin's ELF, by hand ---- */

struct cubin {
	const uint8_t *p;
	size_t len;
	Elf64_Ehdr eh;
	const char *shstr;	/* section names, NUL-terminated in range */
	size_t shstrlen;
};

/* Section header I (< e_shnum, checked in range): the image may be
 * unaligned, so headers are read through copies. */
static Elf64_Shdr shdr(const struct cubin *c, unsigned i)
{
	Elf64_Shdr s;

	memcpy(&s, c->p + c->eh.e_shoff + (size_t)i * sizeof(s), sizeof(s));
	return s;
}

static bool ehdr_ok(const uint8_t *p, size_t len)
{
	return len >= sizeof(Elf64_Ehdr) && !memcmp(p, ELFMAG, SELFMAG) &&
	       p[EI_CLASS] == ELFCLASS64 && p[EI_DATA] == ELFDATA2LSB;
}

/* The bytes of section I, or NULL when they lie outside the image. */
static const uint8_t *sec_data(const struct cubin *c, unsigned i, size_t *n)
{
	Elf64_Shdr s = shdr(c, i);

	if (s.sh_type == SHT_NOBITS || s.sh_offset > c->len ||
	    s.sh_size > c->len - s.sh_offset)
		return NULL;
	*n = s.sh_size;
	return c->p + s.sh_offset;
}

static int cubin_open(struct cubin *c, const void *img, size_t len)
{
	const uint8_t *names;
	size_t n = 0;

	c->p = img;
	c->len = len;
	if (!ehdr_ok(img, len))
		return -EBADMSG;
	memcpy(&c->eh, img, sizeof(c->eh));
	if (c->eh.e_machine != EM_CUDA ||
	    c->eh.e_shentsize != sizeof(Elf64_Shdr) || !c->eh.e_shnum ||
	    c->eh.e_shstrndx >= c->eh.e_shnum || c->eh.e_shoff > len ||
	    (size_t)c->eh.e_shnum * sizeof(Elf64_Shdr) > len - c->eh.e_shoff)
		return -EBADMSG;
	names = sec_data(c, c->eh.e_shstrndx, &n);
	if (!names || !n || names[n - 1])
		return -EBADMSG;
	c->shstr = (const char *)names;
	c->shstrlen = n;
	return 0;
}

static const uint8_t *sec_named(const struct cubin *c, const char *name,
				size_t *n)
{
	for (unsigned i = 0; i < c->eh.e_shnum; i++) {
		Elf64_Shdr s = shdr(c, i);

		if (s.sh_name < c->shstrlen &&
		    !strcmp(c->shstr + s.sh_name, name))
			return sec_data(c, i, n);
	}
	return NULL;
}

/* FN for each kernel symbol (STT_FUNC with STO_CUDA_ENTRY). */
static int cubin_entries(const struct cubin *c, fatbin_name_fn fn, void *arg)
{
	for (unsigned i = 0; i < c->eh.e_shnum; i++) {
		Elf64_Shdr s = shdr(c, i);
		const uint8_t *syms, *str;
		size_t n, sn;

		if (s.sh_type != SHT_SYMTAB)
			continue;
		if (s.sh_entsize != sizeof(Elf64_Sym) ||
		    s.sh_link >= c->eh.e_shnum ||
		    !(syms = sec_data(c, i, &n)) ||
		    !(str = sec_data(c, s.sh_link, &sn)) || !sn ||
		    str[sn - 1])
			return -EBADMSG;
		for (size_t k = 0; k + sizeof(Elf64_Sym) <= n;
		     k += sizeof(Elf64_Sym)) {
			Elf64_Sym sym;
			int ret;

			memcpy(&sym, syms + k, sizeof(sym));
			if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC ||
			    !(sym.st_other & STO_CUDA_ENTRY) ||
			    sym.st_name >= sn || !str[sym.st_name])
				continue;
			ret = fn((const char *)str + sym.st_name, arg);
			if (ret)
				return ret;
		}
		return 0;
	}
	return -EBADMSG;	/* no symbol table: names unknown */
}

int fatbin_cubin_arch(const void *img, size_t len, struct fatbin_arch *a)
{
	Elf64_Ehdr eh;
	unsigned sm;

	if (!ehdr_ok(img, len))
		return -EBADMSG;
	memcpy(&eh, img, sizeof(eh));
	if (eh.e_machine != EM_CUDA)
		return -EBADMSG;
	/* ABI 8 (CUDA 12.8 on) keeps the SM in bits 8-15, older in 0-7;
	 * 'a' and 'f' are not in the header (docs/fatbin.md). */
	sm = eh.e_ident[EI_ABIVERSION] >= 8 ? (eh.e_flags >> 8) & 0xff :
	     eh.e_flags & 0xff;
	if (sm < 10)
		return -EBADMSG;
	a->sm = (uint16_t)sm;
	a->variant = 0;
	return 0;
}

int fatbin_cubin_size(const void *img, size_t *len)
{
	Elf64_Ehdr eh;
	size_t end;

	if (!ehdr_ok(img, sizeof(eh)))
		return -EBADMSG;
	memcpy(&eh, img, sizeof(eh));
	if (eh.e_machine != EM_CUDA || eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    eh.e_shoff > FATBIN_MAX_IMAGE || eh.e_phoff > FATBIN_MAX_IMAGE)
		return -EBADMSG;
	end = eh.e_shoff + (size_t)eh.e_shnum * sizeof(Elf64_Shdr);
	if (eh.e_phoff + (size_t)eh.e_phnum * eh.e_phentsize > end)
		end = eh.e_phoff + (size_t)eh.e_phnum * eh.e_phentsize;
	/* the section headers come last, but check every section */
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		Elf64_Shdr s;

		memcpy(&s, (const uint8_t *)img + eh.e_shoff + i * sizeof(s),
		       sizeof(s));
		if (s.sh_type == SHT_NOBITS)
			continue;
		if (s.sh_offset > FATBIN_MAX_IMAGE ||
		    s.sh_size > FATBIN_MAX_IMAGE)
			return -EBADMSG;
		if (s.sh_offset + s.sh_size > end)
			end = s.sh_offset + s.sh_size;
	}
	*len = end;
	return 0;
}

/* ---- the PTX of .nv_debug_ptx_txt ---- */

/* The argument of the first line starting with DIRECTIVE, or NULL. */
static const char *directive(const char *t, const char *dir)
{
	size_t n = strlen(dir);

	for (const char *p = t; p; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		while (*p == ' ' || *p == '\t')
			p++;
		if (!strncmp(p, dir, n) && (p[n] == ' ' || p[n] == '\t'))
			return p + n;
	}
	return NULL;
}

static int count_version(const char *t)
{
	int n = 0;

	for (const char *p = t; (p = directive(p, ".version")); n++)
		;
	return n;
}

/* ".target sm_90a[, ...]" */
static bool parse_target(const char *t, struct fatbin_arch *a)
{
	const char *p = directive(t, ".target");
	unsigned sm = 0;

	if (!p)
		return false;
	while (*p == ' ' || *p == '\t')
		p++;
	if (strncmp(p, "sm_", 3) || !isdigit((unsigned char)p[3]))
		return false;
	for (p += 3; isdigit((unsigned char)*p) && sm < 10000; p++)
		sm = sm * 10 + (unsigned)(*p - '0');
	a->sm = (uint16_t)sm;
	a->variant = *p == 'a' || *p == 'f' ? *p : 0;
	return sm >= 10 && sm < 10000;
}

static void parse_version(const char *t, unsigned *major, unsigned *minor)
{
	const char *p = directive(t, ".version");

	*major = *minor = 0;
	if (!p)
		return;
	*major = (unsigned)strtoul(p, (char **)&p, 10);
	if (*p == '.')
		*minor = (unsigned)strtoul(p + 1, NULL, 10);
}

/* Could SASS for SM come from PTX for A? */
static bool target_fits(struct fatbin_arch a, unsigned sm)
{
	if (!sm)
		return true;
	if (a.variant == 'a')
		return a.sm == sm;
	if (a.variant == 'f')
		return a.sm / 10 == sm / 10 && a.sm <= sm;
	return a.sm <= sm;
}

struct names {
	char **v;
	size_t n;
	bool full;
};

static int add_name(const char *name, void *arg)
{
	struct names *s = arg;

	if (s->n == MAX_KERNELS) {
		s->full = true;
		return 1;
	}
	if (!(s->v[s->n] = strdup(name)))
		return -ENOMEM;
	s->n++;
	return 0;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_free(struct names *s)
{
	while (s->n)
		free(s->v[--s->n]);
	free(s->v);
}

/* Are TEXT's kernels the cubin's?  0, or a negative errno with ERR. */
static int same_kernels(const struct cubin *c, const char *text,
			char *err, size_t errlen)
{
	struct names k = { .v = calloc(MAX_KERNELS, sizeof(char *)) };
	struct names p = { .v = calloc(MAX_KERNELS, sizeof(char *)) };
	size_t i;
	int ret;

	if (!k.v || !p.v) {
		ret = fatbin_fail(err, errlen, ENOMEM, "out of memory");
		goto out;
	}
	ret = cubin_entries(c, add_name, &k);
	if (ret < 0) {
		if (ret != -ENOMEM)
			ret = fatbin_fail(err, errlen, EBADMSG,
					  "the cubin's symbol table is "
					  "unreadable");
		goto out;
	}
	ret = fatbin_ptx_kernels(text, strlen(text), add_name, &p);
	if (ret < 0)
		goto out;
	if (k.full || p.full) {
		ret = fatbin_fail(err, errlen, E2BIG, "more than %d kernels",
				  MAX_KERNELS);
		goto out;
	}
	qsort(k.v, k.n, sizeof(*k.v), cmp_name);
	qsort(p.v, p.n, sizeof(*p.v), cmp_name);
	for (i = 0; i < k.n && i < p.n && !strcmp(k.v[i], p.v[i]); i++)
		;
	ret = 0;
	if (i < k.n || i < p.n)
		ret = fatbin_fail(err, errlen, EBADMSG, "its kernels are not "
				  "the cubin's (%s %s)",
				  i < p.n ? "PTX has" : "cubin has",
				  i < p.n ? p.v[i] : k.v[i]);
	else if (!k.n)
		ret = fatbin_fail(err, errlen, ENODATA, "no kernel");
out:
	names_free(&k);
	names_free(&p);
	return ret;
}

int fatbin_cubin_ptx(const void *img, size_t len, unsigned sm,
		     struct fatbin_cubin_ptx *out, char *err, size_t errlen)
{
	struct cubin c;
	const uint8_t *s;
	char *t, tgt[32], why[192];
	size_t n, i;
	int ret;

	memset(out, 0, sizeof(*out));
	if (cubin_open(&c, img, len) < 0)
		return fatbin_fail(err, errlen, EBADMSG, "not a cubin");
	s = sec_named(&c, ".nv_debug_ptx_txt", &n);
	while (s && n && !s[n - 1])
		n--;
	if (!s || !n)
		return fatbin_fail(err, errlen, ENODATA,
				   "cubin without .nv_debug_ptx_txt");
	t = malloc(n + 2);
	if (!t)
		return fatbin_fail(err, errlen, ENOMEM, "out of memory");
	for (i = 0; i < n; i++)
		t[i] = s[i] ? (char)s[i] : '\n';
	t[n] = '\n';
	t[n + 1] = 0;
	if (count_version(t) != 1 || !parse_target(t, &out->arch)) {
		ret = fatbin_fail(err, errlen, EBADMSG, "its .nv_debug_ptx_txt "
				  "is not one PTX module");
		goto fail;
	}
	if (!target_fits(out->arch, sm)) {
		ret = fatbin_fail(err, errlen, EBADMSG, "its .nv_debug_ptx_txt "
				  "is for %s, the cubin for sm_%u",
				  fatbin_arch_str(out->arch, false, tgt,
						  sizeof(tgt)), sm);
		goto fail;
	}
	ret = same_kernels(&c, t, why, sizeof(why));
	if (ret < 0) {
		ret = fatbin_fail(err, errlen, -ret, "its .nv_debug_ptx_txt: "
				  "%s", why);
		goto fail;
	}
	parse_version(t, &out->major, &out->minor);
	out->text = t;
	out->len = n + 1;
	return 0;
fail:
	free(t);
	return ret;
}

int fatbin_cubin_each_ptx(const struct fatbin_entry *cubin,
			  const uint8_t *img, size_t len, fatbin_entry_fn fn,
			  void *arg)
{
	struct fatbin_entry e = *cubin;
	struct fatbin_cubin_ptx x;
	int ret;

	ret = fatbin_cubin_ptx(img, len, cubin->arch.sm, &x, NULL, 0);
	if (ret < 0)
		return ret == -ENOMEM ? ret : 0;
	e.kind = FATBIN_KIND_PTX;
	e.is_ptx = true;
	e.from_cubin = true;
	e.arch = x.arch;
	e.major = x.major;
	e.minor = x.minor;
	e.flags &= ~(FATBIN_FLAG_LZ4 | FATBIN_FLAG_ZSTD);
	e.comp = FATBIN_COMP_NONE;
	e.comp_size = 0;
	e.data = (const uint8_t *)x.text;
	e.size = e.stored_size = e.plain_size = x.len;
	e.options = "";
	ret = fn(&e, arg);
	free(x.text);
	return ret;
}
