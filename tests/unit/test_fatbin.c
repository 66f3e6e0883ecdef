// SPDX-License-Identifier: MIT
/*
 * The fatbin reader against what nvcc really produces: tests/fatbin/build.sh
 * compiles tests/cuda/fatbin_*.cu under several options into a fixture
 * directory, and each check reads those objects back.  The PTX found in a
 * fatbin must equal `nvcc -ptx` of the same source and options, after the
 * minification fatbinary applies (see ptx_minify).  Then a few thousand
 * mutated fatbins and objects go through the reader: errors, no crashes.
 * Without nvcc every check prints "SKIP name".
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "gpucode/fatbin.h"
#include "tests/unit/unit.h"

static char dir[200];

static char *path_of(const char *name)
{
	static char buf[300];

	snprintf(buf, sizeof(buf), "%s/%s", dir, name);
	return buf;
}

static uint8_t *read_all(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) > 0 &&
	    fseek(f, 0, SEEK_SET) == 0 && (buf = malloc(n + 1)) &&
	    fread(buf, 1, n, f) == (size_t)n) {
		buf[n] = 0;
		*len = n;
	} else {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

/*
 * fatbinary stores PTX minified: comments dropped, leading blanks dropped,
 * every other run of blanks cut to its first character; the lines stay.
 * Apply the same to nvcc -ptx output so that the two compare byte for byte.
 */
static char *ptx_minify(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;
	bool line_start = true, in_str = false;

	if (!out)
		return NULL;
	for (; *s; s++) {
		bool blank = *s == ' ' || *s == '\t';

		if (*s == '\n') {
			line_start = true;
			in_str = false;
		} else if (!in_str && s[0] == '/' && s[1] == '/') {
			while (s[1] && s[1] != '\n')
				s++;
			continue;
		} else if (in_str || !blank) {
			line_start = false;
			if (*s == '"')
				in_str = !in_str;
		} else if (line_start || o[-1] == ' ' || o[-1] == '\t') {
			continue;
		}
		*o++ = *s;
	}
	*o = 0;
	return out;
}

/* Entry statistics of one file. */
struct census {
	int n, nptx, nelf, nlto, comp[3], variant_a, bad_elf;
	int ptx_arch[4], elf_arch[4];
	size_t fatbins[16];
	int nfatbins;
	char name[64], options[128];
};

static int census_cb(const struct fatbin_entry *e, void *arg)
{
	struct census *c = arg;
	int i;

	c->n++;
	c->comp[e->comp]++;
	if (e->arch.variant == 'a')
		c->variant_a++;
	if (e->is_ptx) {
		if (c->nptx < 4)
			c->ptx_arch[c->nptx] = e->arch.sm;
		c->nptx++;
	} else if (e->kind == FATBIN_KIND_ELF) {
		if (c->nelf < 4)
			c->elf_arch[c->nelf] = e->arch.sm;
		c->nelf++;
		if (e->size < 4 || memcmp(e->data, "\177ELF", 4))
			c->bad_elf++;
	} else if (e->kind == FATBIN_KIND_LTO) {
		c->nlto++;
	}
	for (i = 0; i < c->nfatbins; i++)
		if (c->fatbins[i] == e->fatbin_off)
			break;
	if (i == c->nfatbins && i < 16)
		c->fatbins[c->nfatbins++] = e->fatbin_off;
	if (*e->name)
		snprintf(c->name, sizeof(c->name), "%s", e->name);
	if (*e->options)
		snprintf(c->options, sizeof(c->options), "%s", e->options);
	return 0;
}

static int census(const char *file, struct census *c)
{
	char err[256];
	int ret;

	memset(c, 0, sizeof(*c));
	ret = fatbin_elf_foreach(path_of(file), census_cb, c, err, sizeof(err));
	if (ret)
		printf("# %s: %s\n", file, err);
	return ret;
}

/* The object's PTX for SM equals `nvcc -ptx` output REF, minified. */
static bool ptx_matches(const char *obj, const char *ref, int sm)
{
	struct fatbin_ptx_list l;
	char err[256], *want = NULL;
	uint8_t *raw;
	size_t len;
	bool ok = false;

	if (fatbin_elf_ptx(path_of(obj), &l, err, sizeof(err))) {
		printf("# %s: %s\n", obj, err);
		return false;
	}
	raw = read_all(path_of(ref), &len);
	if (raw)
		want = ptx_minify((char *)raw);
	if (want && l.n == 1 && l.v[0].arch.sm == sm) {
		ok = l.v[0].len == strlen(want) && !strcmp(l.v[0].text, want);
		if (!ok)
			printf("# %s: PTX differs from %s (%zu vs %zu bytes)\n",
			       obj, ref, l.v[0].len, strlen(want));
	} else {
		printf("# %s: %zu PTX entries\n", obj, l.n);
	}
	free(raw);
	free(want);
	fatbin_ptx_list_free(&l);
	return ok;
}

static bool has_arch(const struct fatbin_arch *v, int n, int sm, char var)
{
	for (int i = 0; i < n; i++)
		if (v[i].sm == sm && v[i].variant == var)
			return true;
	return false;
}

/* Every name in NAMES is a kernel with PTX for PTX_SM (0: none) and SASS
 * for SASS_SM (0: none), and there are no others. */
static bool kernels_are(const char *obj, const char **names, int ptx_sm,
			int sass_sm)
{
	struct fatbin_kernels ks;
	const struct fatbin_kernel *k;
	char err[256];
	bool ok = true;
	int n = 0;

	if (fatbin_elf_kernels(path_of(obj), &ks, err, sizeof(err))) {
		printf("# %s: %s\n", obj, err);
		return false;
	}
	for (; *names; names++, n++) {
		k = fatbin_kernels_find(&ks, *names);
		if (!k || (ptx_sm ? !has_arch(k->ptx, k->nptx, ptx_sm, 0) :
				    k->nptx != 0) ||
		    (sass_sm ? !has_arch(k->sass, k->nsass, sass_sm, 0) :
			       k->nsass != 0)) {
			printf("# %s: kernel %s missing or wrong archs\n",
			       obj, *names);
			ok = false;
		}
	}
	if (ks.n != (size_t)n) {
		printf("# %s: %zu kernels, want %d\n", obj, ks.n, n);
		ok = false;
	}
	fatbin_kernels_free(&ks);
	return ok;
}

static const char *basic_kernels[] = {
	"_Z4vaddPfPKfi", "_Z12apply_helperPi", "c_kernel", NULL
};

static const char *tmpl_kernels[] = {
	"_ZN2ns4gemmIfLi16EEEvPT_PKS1_S4_",
	"_ZN2ns4gemmIdLi8EEEvPT_PKS1_S4_",
	"_Z4fillIiEvPT_S0_i", "_Z4fillIcEvPT_S0_i", NULL
};

static void test_objects(void)
{
	struct census c;

	CHECK(census("default.o", &c) == 0 && c.nptx == 1 && c.nelf == 1 &&
	      c.ptx_arch[0] == 75 && c.elf_arch[0] == 75 &&
	      c.comp[FATBIN_COMP_ZSTD] == 1 && !c.bad_elf,
	      "fatbin_default_entries");
	CHECK(ptx_matches("default.o", "default.ptx", 75),
	      "fatbin_default_ptx_equals_nvcc_ptx");
	CHECK(kernels_are("default.o", basic_kernels, 75, 75),
	      "fatbin_default_kernels");

	CHECK(census("multi.o", &c) == 0 && c.nptx == 1 && c.nelf == 2 &&
	      c.ptx_arch[0] == 90 && c.elf_arch[0] == 75 &&
	      c.elf_arch[1] == 90 && !c.bad_elf, "fatbin_multi_entries");
	CHECK(ptx_matches("multi.o", "multi.ptx", 90),
	      "fatbin_multi_ptx_equals_nvcc_ptx");

	CHECK(census("none.o", &c) == 0 && c.n == 3 &&
	      c.comp[FATBIN_COMP_NONE] == 3, "fatbin_none_uncompressed");
	CHECK(ptx_matches("none.o", "multi.ptx", 90), "fatbin_none_ptx");

	CHECK(census("speed.o", &c) == 0 && c.comp[FATBIN_COMP_LZ4] == 1,
	      "fatbin_speed_is_lz4");
	CHECK(ptx_matches("speed.o", "multi.ptx", 90), "fatbin_speed_ptx");

	CHECK(census("size.o", &c) == 0 && c.comp[FATBIN_COMP_ZSTD] == 3 &&
	      c.nelf == 2 && !c.bad_elf, "fatbin_size_compresses_cubins");
	CHECK(ptx_matches("size.o", "multi.ptx", 90), "fatbin_size_ptx");
	CHECK(kernels_are("size.o", basic_kernels, 90, 90),
	      "fatbin_size_kernels_from_compressed_cubins");

	CHECK(census("sass.o", &c) == 0 && c.nptx == 0 && c.nelf == 1 &&
	      c.elf_arch[0] == 90, "fatbin_sass_only_entries");
	CHECK(kernels_are("sass.o", basic_kernels, 0, 90),
	      "fatbin_sass_only_kernels");

	CHECK(ptx_matches("tmpl.o", "tmpl.ptx", 75), "fatbin_templates_ptx");
	CHECK(kernels_are("tmpl.o", tmpl_kernels, 75, 75),
	      "fatbin_templates_kernels");

	CHECK(census("lineinfo.o", &c) == 0 && c.nptx == 1 && c.nelf == 0 &&
	      strstr(c.name, "fatbin_templates.cu") &&
	      strstr(c.options, "--generate-line-info"),
	      "fatbin_lineinfo_name_and_options");
	CHECK(ptx_matches("lineinfo.o", "lineinfo.ptx", 90),
	      "fatbin_lineinfo_ptx");

	/* -rdc keeps the fatbin in __nv_relfatbin, with compressed cubins. */
	CHECK(census("rdc.o", &c) == 0 && c.nptx == 1 && c.nelf == 1 &&
	      c.comp[FATBIN_COMP_ZSTD] == 2 && !c.bad_elf,
	      "fatbin_rdc_entries");
	CHECK(kernels_are("rdc.o", basic_kernels, 90, 90), "fatbin_rdc_kernels");
	/* LTO IR is passed on undecoded, with its options. */
	CHECK(census("lto.o", &c) == 0 && c.n == 1 && c.nlto == 1 &&
	      strstr(c.options, "-fmad"), "fatbin_lto_entry_opaque");

	CHECK(census("archa.o", &c) == 0 && c.n == 2 && c.variant_a == 2,
	      "fatbin_arch_specific_variant");
	CHECK(ptx_matches("archa.o", "archa.ptx", 90), "fatbin_archa_ptx");
}

static void test_linked(void)
{
	static const char *all[] = {
		"_Z11main_kernelPi", "_Z4vaddPfPKfi", "_Z12apply_helperPi",
		"c_kernel", "_ZN2ns4gemmIfLi16EEEvPT_PKS1_S4_",
		"_ZN2ns4gemmIdLi8EEEvPT_PKS1_S4_", "_Z4fillIiEvPT_S0_i",
		"_Z4fillIcEvPT_S0_i", NULL
	};
	struct census c;

	/* One fatbin per translation unit (plus cudart's own). */
	CHECK(census("app", &c) == 0 && c.nfatbins >= 3 && c.nptx == 3,
	      "fatbin_linked_several_fatbins");
	CHECK(kernels_are("app", all, 90, 90), "fatbin_linked_kernels");

	/* With .nv_fatbin renamed, the wrappers still lead to every fatbin:
	 * by virtual address in an executable, by relocation in an object. */
	CHECK(census("hidden_app", &c) == 0 && c.nfatbins >= 3 &&
	      c.nptx == 3, "fatbin_wrappers_by_vaddr");
	CHECK(kernels_are("hidden_app", all, 90, 90),
	      "fatbin_wrappers_by_vaddr_kernels");
	CHECK(census("hidden_multi.o", &c) == 0 && c.nptx == 1 &&
	      c.nelf == 2, "fatbin_wrappers_by_relocation");
}

/* What __cudaRegisterFatBinary receives, from a library's constructor. */
static void test_memory(void)
{
	struct fatbin_ptx_list l = { 0 };
	const void *fb;
	void *lib, *shim;
	void **wrappers;
	int *count, ok = 0, i;
	char err[256], *want = NULL;
	uint8_t *raw;
	size_t len;

	lib = dlopen(path_of("libfb.so"), RTLD_NOW);
	shim = dlopen(path_of("libfbshim.so"), RTLD_NOW);
	if (!lib || !shim) {
		CHECK(0, "fatbin_memory_dlopen");
		printf("# %s\n", dlerror());
		goto out;
	}
	count = dlsym(shim, "fatbin_shim_count");
	wrappers = dlsym(shim, "fatbin_shim_wrappers");
	CHECK(count && wrappers && *count == 1, "fatbin_memory_registered");
	for (i = 0; count && wrappers && i < *count; i++) {
		if (fatbin_image_kind(wrappers[i], 24) != FATBIN_IMAGE_WRAPPER ||
		    fatbin_mem_locate(wrappers[i], &fb, &len, err, sizeof(err)) ||
		    fatbin_image_kind(fb, len) != FATBIN_IMAGE_FATBIN ||
		    fatbin_foreach(fb, len, fatbin_ptx_collect, &l, err,
				   sizeof(err)))
			break;
		ok++;
	}
	CHECK(count && ok == *count, "fatbin_memory_walk_wrapper");
	raw = read_all(path_of("default.ptx"), &len);
	if (raw)
		want = ptx_minify((char *)raw);
	CHECK(l.n == 1 && want && !strcmp(l.v[0].text, want),
	      "fatbin_memory_ptx_equals_nvcc_ptx");
	CHECK(l.n == 1 &&
	      fatbin_image_kind(l.v[0].text, l.v[0].len) == FATBIN_IMAGE_PTX,
	      "fatbin_image_kind_ptx");
	free(raw);
	free(want);
	fatbin_ptx_list_free(&l);
out:
	if (lib)
		dlclose(lib);
	if (shim)
		dlclose(shim);
}

static int never(const struct fatbin_entry *e, void *arg)
{
	return 0;
}

static void test_errors(void)
{
	static const uint8_t hdr[16] = {
		0x50, 0xed, 0x55, 0xba, 1, 0, 16, 0, 0x40, 0, 0, 0, 0, 0, 0, 0
	};
	uint8_t buf[200] = { 0 };
	char err[256] = "";
	size_t n;

	CHECK(fatbin_foreach(hdr, 8, never, NULL, err, sizeof(err)) ==
	      -EBADMSG && strstr(err, "truncated"), "fatbin_err_truncated");
	CHECK(fatbin_foreach(hdr, 16, never, NULL, err, sizeof(err)) ==
	      -EBADMSG && strstr(err, "exceeds"), "fatbin_err_size");
	CHECK(fatbin_foreach(buf, sizeof(buf), never, NULL, err,
			     sizeof(err)) == -ENOENT, "fatbin_err_only_zeros");
	memcpy(buf, hdr, 16);
	buf[16] = 1;	/* a PTX entry header claiming 0x40 bytes... */
	buf[20] = 0x40;
	buf[24] = 0x80;	/* ...and a 128-byte image past the end */
	CHECK(fatbin_foreach(buf, 16 + 0x40, never, NULL, err,
			     sizeof(err)) == -EBADMSG &&
	      strstr(err, "entry 0"), "fatbin_err_entry_image");
	buf[24] = 0;
	buf[16 + 40] = 0x00;	/* now valid: an empty PTX entry */
	CHECK(fatbin_foreach(buf, 16 + 0x40, never, NULL, err,
			     sizeof(err)) == 0, "fatbin_empty_entry_ok");
	buf[16 + 41] = 0xa0;	/* LZ4 | zstd */
	CHECK(fatbin_foreach(buf, 16 + 0x40, never, NULL, err,
			     sizeof(err)) == -EBADMSG, "fatbin_err_two_codecs");
	CHECK(fatbin_size(hdr, 16 + 0x40, &n, err, sizeof(err)) == 0 &&
	      n == 16 + 0x40, "fatbin_size");
	CHECK(fatbin_elf_foreach("/nonexistent", never, NULL, err,
				 sizeof(err)) == -ENOENT, "fatbin_err_nofile");
	CHECK(fatbin_elf_foreach("/proc/self/exe", never, NULL, err,
				 sizeof(err)) == -ENOENT &&
	      strstr(err, "no fatbin"), "fatbin_err_no_fatbin_in_elf");
	CHECK(fatbin_elf_foreach_mem(hdr, 16, never, NULL, err,
				     sizeof(err)) == -EBADMSG,
	      "fatbin_err_not_elf");
	CHECK(fatbin_image_kind("\177ELF", 4) == FATBIN_IMAGE_ELF &&
	      fatbin_image_kind(hdr, 16) == FATBIN_IMAGE_FATBIN &&
	      fatbin_image_kind("\x01\x02\x03\x04", 4) == FATBIN_IMAGE_UNKNOWN,
	      "fatbin_image_kind");
}

static void put32(uint8_t *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(uint8_t *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

static int count_cb(const struct fatbin_entry *e, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

/* Entries seen as stored (fatbin_foreach_stored): their count, and the
 * image fatbin_entry_image gives for the last. */
struct stored_seen {
	int n, rc;
	size_t stored, size;
	bool spaces;		/* the image is all spaces */
	char err[256];
};

static int stored_cb(const struct fatbin_entry *e, void *arg)
{
	struct stored_seen *r = arg;
	uint8_t *img = NULL;

	r->n++;
	r->stored = e->size;
	r->rc = fatbin_entry_image(e, &img, &r->size, r->err,
				   sizeof(r->err));
	r->spaces = r->rc == 0;
	for (size_t i = 0; r->spaces && i < r->size; i++)
		r->spaces = img[i] == ' ';
	free(img);
	return 0;
}

/*
 * Issue 17, defect 7: a few hundred bytes of zstd that inflate to USIZE
 * bytes of PTX-looking spaces are refused before anything is allocated
 * once the ratio is past FATBIN_MAX_RATIO; a modest image still reads.
 * With STORED, the walk is fatbin_foreach_stored's and *STORED is what
 * its callback saw (N is not touched).
 */
static int zstd_entry(size_t usize, unsigned kind, int *n,
		      struct stored_seen *stored, char *err, size_t errlen)
{
	size_t cap = ZSTD_compressBound(usize), clen;
	uint8_t *plain = malloc(usize), *buf = calloc(1, 16 + 64 + cap);
	int ret = -ENOMEM;

	if (!plain || !buf)
		goto out;
	memset(plain, ' ', usize);
	clen = ZSTD_compress(buf + 80, cap, plain, usize, 19);
	if (ZSTD_isError(clen))
		goto out;
	put32(buf + 16 + 16, (uint32_t)clen);
	clen = (clen + 7) & ~(size_t)7;
	put32(buf, FATBIN_MAGIC);
	buf[4] = 1;
	buf[6] = 16;
	put64(buf + 8, 64 + clen);
	buf[16] = FATBIN_KIND_PTX;
	put32(buf + 16 + 4, 64);
	put64(buf + 16 + 8, clen);
	put32(buf + 16 + 28, 90);
	put64(buf + 16 + 40, FATBIN_FLAG_64BIT | FATBIN_FLAG_ZSTD);
	put64(buf + 16 + 56, usize);
	if (stored) {
		ret = fatbin_foreach_stored(buf, 80 + clen, kind, stored_cb,
					    stored, err, errlen);
		goto out;
	}
	*n = 0;
	ret = fatbin_foreach_kind(buf, 80 + clen, kind, count_cb, n, err,
				  errlen);
out:
	free(plain);
	free(buf);
	return ret;
}

/*
 * Issue 31: COUNT zstd entries of 1 MiB of spaces each, every one within
 * the per-entry limits; the walk stops once the total passes
 * fatbin_budget() of the input.  *N: entries seen.
 */
static int zstd_many(int count, int *n, char *err, size_t errlen)
{
	size_t usize = 1 << 20, cap = ZSTD_compressBound(usize), clen, step;
	uint8_t *plain = malloc(usize), *z = malloc(cap), *buf = NULL;
	int ret = -ENOMEM;

	if (!plain || !z)
		goto out;
	memset(plain, ' ', usize);
	clen = ZSTD_compress(z, cap, plain, usize, 19);
	if (ZSTD_isError(clen))
		goto out;
	step = 64 + ((clen + 7) & ~(size_t)7);
	if (!(buf = calloc(1, 16 + step * count)))
		goto out;
	put32(buf, FATBIN_MAGIC);
	buf[4] = 1;
	buf[6] = 16;
	put64(buf + 8, step * count);
	for (int i = 0; i < count; i++) {
		uint8_t *e = buf + 16 + step * i;

		e[0] = FATBIN_KIND_PTX;
		put32(e + 4, 64);
		put64(e + 8, step - 64);
		put32(e + 16, (uint32_t)clen);
		put32(e + 28, 90);
		put64(e + 40, FATBIN_FLAG_64BIT | FATBIN_FLAG_ZSTD);
		put64(e + 56, usize);
		memcpy(e + 64, z, clen);
	}
	*n = 0;
	ret = fatbin_foreach_kind(buf, 16 + step * count, 0, count_cb, n, err,
				  errlen);
out:
	free(plain);
	free(z);
	free(buf);
	return ret;
}

static void test_bombs(void)
{
	char err[256] = "";
	int n;

	/* many entries each within the limits: a total holds them */
	CHECK(zstd_many(40, &n, err, sizeof(err)) == 0 && n == 40,
	      "zstd_many_within_total");
	CHECK(zstd_many(80, &n, err, sizeof(err)) == -EBADMSG &&
	      n == (int)(FATBIN_TOTAL_SLACK >> 20) &&
	      strstr(err, "entry 64") && strstr(err, "decompression bomb"),
	      "zstd_many_past_total_refused");

	CHECK(zstd_entry(64 << 10, 0, &n, NULL, err, sizeof(err)) == 0 && n == 1,
	      "zstd_small_ok");
	CHECK(zstd_entry(32 << 20, 0, &n, NULL, err, sizeof(err)) == -EBADMSG &&
	      strstr(err, "decompression bomb"), "zstd_bomb_refused");
	/* a walk for cubins leaves the PTX entry compressed and unseen */
	CHECK(zstd_entry(32 << 20, FATBIN_KIND_ELF, &n, NULL, err, sizeof(err)) == 0 &&
	      n == 0, "zstd_other_kind_not_decompressed");
	CHECK(zstd_entry(64 << 10, FATBIN_KIND_PTX, &n, NULL, err, sizeof(err)) == 0 &&
	      n == 1, "zstd_kind_ptx");

	/* seen as stored: compressed bytes, decompressed on request */
	struct stored_seen r = { 0 };

	CHECK(zstd_entry(64 << 10, FATBIN_KIND_PTX, &n, &r, err,
			 sizeof(err)) == 0 && r.n == 1 && r.rc == 0 &&
	      r.stored < 4096 && r.size == 64 << 10 && r.spaces,
	      "stored_walk_image_on_request");
	/* the bomb check holds on request too, and the walk goes on */
	memset(&r, 0, sizeof(r));
	CHECK(zstd_entry(32 << 20, 0, &n, &r, err, sizeof(err)) == 0 &&
	      r.n == 1 && r.rc == -EBADMSG &&
	      strstr(r.err, "decompression bomb"), "stored_walk_bomb_refused");
}

/* Fuzzing */

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static int fuzz_cb(const struct fatbin_entry *e, void *arg)
{
	struct fatbin_ptx_list *l = arg;
	struct fatbin_kernels ks = { 0 };
	int ret;

	/* Reach everything the agent would: copy PTX, parse cubins. */
	ret = fatbin_ptx_collect(e, l);
	if (!ret)
		ret = fatbin_kernels_collect(e, &ks);
	fatbin_kernels_free(&ks);
	return ret == -EBADMSG ? 0 : ret;
}

/* The offsets of size-like fields in the first fatbin of BUF. */
static size_t size_field(const uint8_t *buf, size_t len)
{
	static const int fields[] = { 6, 8, 16 + 4, 16 + 8, 16 + 16, 16 + 20,
				      16 + 32, 16 + 36, 16 + 56 };
	size_t off = fields[next() % 9];

	/* Sometimes hit the same fields of a later entry. */
	if (off >= 16 && len > 16 + 0x40 && next() % 2) {
		uint32_t ehs;
		uint64_t sz;

		memcpy(&ehs, buf + 16 + 4, 4);
		memcpy(&sz, buf + 16 + 8, 8);
		if (16 + (uint64_t)ehs + sz + off < len)
			off += ehs + sz;
	}
	return off;
}

static void mutate(uint8_t *b, size_t *len)
{
	static const uint64_t nasty[] = {
		0, 1, 0x3f, 0x40, 0x7fffffff, 0x80000000, 0xffffffff,
		0xffffffffffffffffull, 0x8000000000000000ull
	};
	size_t off;
	uint64_t v;
	int k;

	switch (next() % 4) {
	case 0:		/* bit flips */
		for (k = 1 + next() % 8; k; k--) {
			off = next() % *len;
			b[off] ^= 1 << (next() % 8);
		}
		break;
	case 1:		/* truncation */
		*len = next() % *len;
		break;
	case 2:		/* a size or offset field */
		off = size_field(b, *len);
		v = next() % 2 ? nasty[next() % 9] : next() >> (next() % 64);
		if (off + 8 <= *len)
			memcpy(b + off, &v, next() % 2 ? 8 : 4);
		break;
	default:	/* a run of random bytes */
		off = next() % *len;
		for (k = next() % 32; k && off < *len; k--)
			b[off++] = next();
		break;
	}
}

static int fatbin_off_cb(const struct fatbin_entry *e, void *arg)
{
	*(size_t *)arg = e->fatbin_off;
	return 1;
}

/* Mutate N copies of FILE's first fatbin (or the whole file) and read. */
static void fuzz(const char *file, bool whole, int n, int *errs, int *oks)
{
	uint8_t *img, *src, *b;
	size_t len, fb = 0, flen;
	char err[256];

	img = read_all(path_of(file), &len);
	if (!img || fatbin_elf_foreach_mem(img, len, fatbin_off_cb, &fb, NULL,
					   0) != 1 ||
	    fatbin_size(img + fb, len - fb, &flen, NULL, 0)) {
		(*errs) = -1000000;
		free(img);
		return;
	}
	src = whole ? img : img + fb;
	if (whole)
		flen = len;
	b = malloc(flen);
	for (int i = 0; b && i < n; i++) {
		struct fatbin_ptx_list l = { 0 };
		uint8_t *exact;
		size_t blen = flen;
		int ret;

		memcpy(b, src, flen);
		for (int m = 1 + next() % 3; m; m--)
			if (blen)
				mutate(b, &blen);
		/* A tight copy, so that ASan sees any read past the end. */
		exact = malloc(blen ? blen : 1);
		memcpy(exact, b, blen);
		if (whole)
			ret = fatbin_elf_foreach_mem(exact, blen, fuzz_cb, &l,
						     err, sizeof(err));
		else
			ret = fatbin_foreach(exact, blen, fuzz_cb, &l, err,
					     sizeof(err));
		if (ret < 0)
			(*errs)++;
		else if (ret == 0)
			(*oks)++;
		fatbin_ptx_list_free(&l);
		free(exact);
	}
	free(b);
	free(img);
}

static void test_fuzz(void)
{
	int errs = 0, oks = 0;

	if (getenv("FATBIN_SEED"))	/* to explore beyond the fixed seed */
		rng = strtoull(getenv("FATBIN_SEED"), NULL, 0) | 1;
	fuzz("size.o", false, 1500, &errs, &oks);	/* zstd cubins + PTX */
	fuzz("speed.o", false, 1000, &errs, &oks);	/* LZ4 PTX */
	fuzz("archa.o", false, 500, &errs, &oks);
	fuzz("none.o", false, 1000, &errs, &oks);	/* plain cubins */
	printf("# fuzz fatbins: %d errors, %d accepted\n", errs, oks);
	CHECK(errs > 2000 && oks > 0, "fatbin_fuzz_fatbins");
	errs = oks = 0;
	fuzz("multi.o", true, 1000, &errs, &oks);
	printf("# fuzz objects: %d errors, %d accepted\n", errs, oks);
	CHECK(errs > 100 && oks > 0, "fatbin_fuzz_objects");
}

static const char *skipped[] = {
	"fatbin_fixtures_build", "fatbin_objects", "fatbin_linked",
	"fatbin_memory", "fatbin_fuzz", NULL
};

static int have_nvcc(void)
{
	if (system("command -v nvcc >/dev/null 2>&1") == 0)
		return 1;
	if (access("/usr/local/cuda/bin/nvcc", X_OK) == 0)
		return setenv("NVCC", "/usr/local/cuda/bin/nvcc", 1) == 0;
	return 0;
}

/*
 * The fixtures are cached in /tmp/gt-fatbin-fixtures-UID, rebuilt when
 * the sources or nvcc change (build.sh keeps a stamp).  FATBIN_FIXTURES=DIR
 * uses DIR instead; FATBIN_SEED=N fuzzes with another seed.
 */
int main(void)
{
	const char *fixed = getenv("FATBIN_FIXTURES");
	char cmd[512];
	int rc;

	test_errors();
	test_bombs();
	if (!have_nvcc()) {
		for (const char **s = skipped; *s; s++)
			printf("SKIP %s: no nvcc\n", *s);
		UNIT_END();
	}
	if (fixed)
		snprintf(dir, sizeof(dir), "%s", fixed);
	else
		snprintf(dir, sizeof(dir), "/tmp/gt-fatbin-fixtures-%u",
			 (unsigned)getuid());
	snprintf(cmd, sizeof(cmd), "sh tests/fatbin/build.sh %s "
		 ">/tmp/gt-fatbin-build-%u.log 2>&1", dir, (unsigned)getpid());
	rc = system(cmd);
	CHECK(rc == 0, "fatbin_fixtures_build");
	if (rc == 0) {
		test_objects();
		test_linked();
		test_memory();
		test_fuzz();
	} else {
		snprintf(cmd, sizeof(cmd), "sed 's/^/# /' "
			 "/tmp/gt-fatbin-build-%u.log", (unsigned)getpid());
		if (system(cmd)) { }
	}
	snprintf(cmd, sizeof(cmd), "/tmp/gt-fatbin-build-%u.log",
		 (unsigned)getpid());
	unlink(cmd);
	UNIT_END();
}
