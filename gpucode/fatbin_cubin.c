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
#include <stdio.h>
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

/* FN for each kernel symbol (STT_FUNC with STO_CUDA_ENTRY); with NAME,
 * only for that one, with its index in the symbol table as *INDEX. */
static int cubin_entries(const struct cubin *c, fatbin_name_fn fn, void *arg,
			 const char *name, uint32_t *index)
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
			if (name) {
				if (strcmp((const char *)str + sym.st_name,
					   name))
					continue;
				*index = (uint32_t)(k / sizeof(Elf64_Sym));
				return 1;
			}
			ret = fn((const char *)str + sym.st_name, arg);
			if (ret)
				return ret;
		}
		return name ? -ENOENT : 0;
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

/* The PTX modules of a cubin: one section, or one per object linked
 * (nvlink names them .nv_debug_ptx_txt.HASH).  Fewer than an entry
 * header's 64 bytes: module I's entry is at the cubin's offset + I. */
#define MAX_MODULES	64

struct modules {
	struct fatbin_cubin_ptx v[MAX_MODULES];
	int n;
};

static void modules_free(struct modules *m)
{
	while (m->n)
		free(m->v[--m->n].text);
}

/* Which of a module's entries are kernels of K (marked in SEEN)? */
struct check {
	const struct names *k;
	bool *seen;
	int in, out;		/* entries of the module in K, not in K */
	char stranger[256];	/* the first not in K */
};

static int check_entry(const char *name, void *arg)
{
	struct check *c = arg;
	char **hit = bsearch(&name, c->k->v, c->k->n, sizeof(char *), cmp_name);

	if (!hit) {
		if (!c->out++)
			snprintf(c->stranger, sizeof(c->stranger), "%s", name);
		return 0;
	}
	c->in++;
	c->seen[hit - c->k->v] = true;
	return 0;
}

/* Section bytes S (N) as text: NUL line ends back to newlines. */
static char *as_text(const uint8_t *s, size_t n, size_t *len)
{
	char *t;

	while (n && !s[n - 1])
		n--;
	if (!n || !(t = malloc(n + 2)))
		return NULL;
	for (size_t i = 0; i < n; i++)
		t[i] = s[i] ? (char)s[i] : '\n';
	t[n] = '\n';
	t[n + 1] = 0;
	*len = n + 1;
	return t;
}

static bool is_ptx_section(const char *name)
{
	return !strncmp(name, ".nv_debug_ptx_txt", 17) &&
	       (!name[17] || name[17] == '.');
}

/* Read and check every module of C into M; 0 or -errno with ERR. */
static int read_modules(const struct cubin *c, unsigned sm,
			struct modules *m, char *err, size_t errlen)
{
	struct names k = { .v = calloc(MAX_KERNELS, sizeof(char *)) };
	struct check ck = { .k = &k };
	char tgt[32];
	int ret;

	if (!k.v)
		return fatbin_fail(err, errlen, ENOMEM, "out of memory");
	ret = cubin_entries(c, add_name, &k, NULL, NULL);
	if (ret < 0 || k.full) {
		ret = ret == -ENOMEM ? fatbin_fail(err, errlen, ENOMEM,
						   "out of memory") :
		      fatbin_fail(err, errlen, EBADMSG, k.full ?
				  "more than %d kernels" :
				  "the cubin's symbol table is unreadable",
				  MAX_KERNELS);
		goto out;
	}
	qsort(k.v, k.n, sizeof(*k.v), cmp_name);
	ck.seen = calloc(k.n + 1, sizeof(bool));
	if (!ck.seen) {
		ret = fatbin_fail(err, errlen, ENOMEM, "out of memory");
		goto out;
	}
	for (unsigned i = 0; i < c->eh.e_shnum; i++) {
		Elf64_Shdr s = shdr(c, i);
		struct fatbin_cubin_ptx *x;
		const uint8_t *d;
		size_t n = 0;

		if (s.sh_name >= c->shstrlen ||
		    !is_ptx_section(c->shstr + s.sh_name) ||
		    !(d = sec_data(c, i, &n)))
			continue;
		if (m->n == MAX_MODULES) {
			ret = fatbin_fail(err, errlen, E2BIG, "more than %d "
					  "PTX modules", MAX_MODULES);
			goto out;
		}
		x = &m->v[m->n];
		if (!(x->text = as_text(d, n, &x->len)))
			continue;	/* empty (or no memory: not used) */
		m->n++;
		if (count_version(x->text) != 1 ||
		    !parse_target(x->text, &x->arch)) {
			ret = fatbin_fail(err, errlen, EBADMSG, "its "
					  ".nv_debug_ptx_txt is not one PTX "
					  "module");
			goto out;
		}
		if (!target_fits(x->arch, sm)) {
			ret = fatbin_fail(err, errlen, EBADMSG, "its "
					  ".nv_debug_ptx_txt is for %s, the "
					  "cubin for sm_%u",
					  fatbin_arch_str(x->arch, false, tgt,
							  sizeof(tgt)), sm);
			goto out;
		}
		parse_version(x->text, &x->major, &x->minor);
		ck.in = ck.out = 0;
		ret = fatbin_ptx_kernels(x->text, x->len, check_entry, &ck);
		if (ret < 0)
			goto out;
		/* a linked object's (.nv_debug_ptx_txt.HASH) none of
		 * whose kernels were kept: not needed; some kept and
		 * some not, or a lone module: not this cubin's */
		if (ck.out && (ck.in || !c->shstr[s.sh_name + 17])) {
			ret = fatbin_fail(err, errlen, EBADMSG, "its "
					  ".nv_debug_ptx_txt: its kernels are "
					  "not the cubin's (PTX has %s)",
					  ck.stranger);
			goto out;
		}
		if (ck.out)
			free(m->v[--m->n].text);
	}
	ret = 0;
	if (!m->n) {
		ret = fatbin_fail(err, errlen, ENODATA,
				  "cubin without .nv_debug_ptx_txt");
		goto out;
	}
	for (size_t i = 0; i < k.n; i++)
		if (!ck.seen[i]) {
			ret = fatbin_fail(err, errlen, EBADMSG, "its "
					  ".nv_debug_ptx_txt: its kernels are "
					  "not the cubin's (cubin has %s)",
					  k.v[i]);
			break;
		}
out:
	free(ck.seen);
	names_free(&k);
	if (ret < 0)
		modules_free(m);
	return ret;
}

static int is_name(const char *name, void *arg)
{
	return !strcmp(name, arg);
}

static bool ptx_defines(const char *text, size_t len, const char *kernel)
{
	return fatbin_ptx_kernels(text, len, is_name, (void *)kernel) == 1;
}

int fatbin_cubin_ptx(const void *img, size_t len, unsigned sm,
		     const char *kernel, struct fatbin_cubin_ptx *out,
		     char *err, size_t errlen)
{
	struct modules *m;
	struct cubin c;
	int ret, pick = 0;

	memset(out, 0, sizeof(*out));
	if (cubin_open(&c, img, len) < 0)
		return fatbin_fail(err, errlen, EBADMSG, "not a cubin");
	m = calloc(1, sizeof(*m));
	if (!m)
		return fatbin_fail(err, errlen, ENOMEM, "out of memory");
	ret = read_modules(&c, sm, m, err, errlen);
	if (ret < 0)
		goto out;
	for (int i = 0; kernel && i < m->n; i++)
		if (ptx_defines(m->v[i].text, m->v[i].len, kernel))
			pick = i;
	*out = m->v[pick];
	m->v[pick].text = NULL;
out:
	if (m) {
		for (int i = 0; i < m->n; i++)
			free(m->v[i].text);
		free(m);
	}
	return ret;
}

#define EIFMT_SVAL		0x04
#define EIATTR_FRAME_SIZE	0x11
#define EIATTR_REGCOUNT		0x2f

/* The .nv.info attributes (format, attribute, 16 bits of value or size
 * + data) that give symbol SYM's registers and frame size. */
static void nv_info(const uint8_t *d, size_t n, uint32_t sym,
		    struct fatbin_cubin_func *out)
{
	for (size_t o = 0; o + 4 <= n;) {
		uint16_t v;
		uint32_t w[2];

		memcpy(&v, d + o + 2, 2);
		if (d[o] != EIFMT_SVAL) {
			o += 4;
			continue;
		}
		if (v > n - o - 4)
			return;
		if (v == 8 && (d[o + 1] == EIATTR_REGCOUNT ||
			       d[o + 1] == EIATTR_FRAME_SIZE)) {
			memcpy(w, d + o + 4, 8);
			if (w[0] == sym && d[o + 1] == EIATTR_REGCOUNT)
				out->regs = w[1];
			else if (w[0] == sym)
				out->frame = w[1];
		}
		o += 4 + (size_t)v;
	}
}

int fatbin_cubin_func(const void *img, size_t len, const char *kernel,
		      struct fatbin_cubin_func *out)
{
	struct cubin c;
	bool text = false;
	uint32_t sym = 0;
	int ret;

	memset(out, 0, sizeof(*out));
	if (cubin_open(&c, img, len) < 0)
		return -EBADMSG;
	ret = cubin_entries(&c, NULL, NULL, kernel, &sym);
	if (ret < 0)
		return ret;
	for (unsigned i = 0; i < c.eh.e_shnum; i++) {
		Elf64_Shdr s = shdr(&c, i);
		const uint8_t *d;
		const char *n;
		size_t dn;

		if (s.sh_name >= c.shstrlen)
			continue;
		n = c.shstr + s.sh_name;
		if (!strncmp(n, ".text.", 6) && !strcmp(n + 6, kernel)) {
			/* older cubins: the registers in sh_info's top
			 * byte; newer ones: in .nv.info (below) */
			if (!out->regs)
				out->regs = s.sh_info >> 24;
			text = true;
		} else if (!strncmp(n, ".nv.shared.", 11) &&
			   !strcmp(n + 11, kernel)) {
			out->shared = s.sh_size;
		} else if (!strcmp(n, ".nv.info") &&
			   (d = sec_data(&c, i, &dn))) {
			nv_info(d, dn, sym, out);
		}
	}
	return text ? 0 : -ENOENT;
}

int fatbin_cubin_each_ptx(const struct fatbin_entry *cubin,
			  const uint8_t *img, size_t len, fatbin_entry_fn fn,
			  void *arg)
{
	struct fatbin_entry e = *cubin;
	struct modules *m;
	struct cubin c;
	int ret;

	if (cubin_open(&c, img, len) < 0)
		return 0;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	ret = read_modules(&c, cubin->arch.sm, m, NULL, 0);
	if (ret < 0) {
		free(m);
		return ret == -ENOMEM ? ret : 0;
	}
	e.kind = FATBIN_KIND_PTX;
	e.is_ptx = true;
	e.from_cubin = true;
	e.flags &= ~(FATBIN_FLAG_LZ4 | FATBIN_FLAG_ZSTD);
	e.comp = FATBIN_COMP_NONE;
	e.comp_size = 0;
	e.options = "";
	for (int i = 0; i < m->n && !ret; i++) {
		e.arch = m->v[i].arch;
		e.major = m->v[i].major;
		e.minor = m->v[i].minor;
		e.data = (const uint8_t *)m->v[i].text;
		e.size = e.stored_size = e.plain_size = m->v[i].len;
		/* a distinct offset per module: the agent's memo keys */
		e.entry_off = cubin->entry_off + (size_t)i;
		ret = fn(&e, arg);
	}
	modules_free(m);
	free(m);
	return ret;
}
