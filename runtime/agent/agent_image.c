// SPDX-License-Identifier: MIT
/*
 * Module images: a copy of what each cuModuleLoad or cuLibraryLoad call
 * loaded, keyed by the handle, and the choice of the PTX to instrument.
 * Kernels whose load we did not see (the CUDA runtime may register its
 * fatbins through paths we do not hook) are looked up by name in the
 * .nv_fatbin sections of the process's ELF objects, which stay mapped.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "runtime/agent/agent_priv.h"

static pthread_mutex_t img_lock = PTHREAD_MUTEX_INITIALIZER;
static struct agent_image *images;	/* live */
static struct agent_image *retired;	/* unloaded, kept: see agent.md */

static int read_file(const char *path, uint8_t **data, size_t *len)
{
	struct stat st;
	uint8_t *p;
	size_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), e;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || st.st_size <= 0 || st.st_size > 1ll << 31) {
		e = errno ? -errno : -EINVAL;
		close(fd);
		return e;
	}
	p = malloc((size_t)st.st_size + 1);
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, p + got, (size_t)st.st_size - got);

		if (n <= 0) {
			e = n < 0 ? -errno : -EIO;
			free(p);
			close(fd);
			return e;
		}
		got += (size_t)n;
	}
	close(fd);
	p[got] = '\0';		/* PTX files: a C string */
	*data = p;
	*len = got;
	return 0;
}

/* Copy the image at P (in memory we trust: the driver just read it;
 * AVAIL bytes of it, SIZE_MAX when unknown). */
static int copy_image(struct agent_image *im, const void *p, size_t avail)
{
	const void *fb;
	size_t len;
	char err[128];

	im->kind = fatbin_image_kind(p, 4);
	switch (im->kind) {
	case FATBIN_IMAGE_FATBIN:
	case FATBIN_IMAGE_WRAPPER:
		if (fatbin_mem_locate(p, &fb, &len, err, sizeof(err)) < 0) {
			agent_debug("module image: %s", err);
			im->kind = FATBIN_IMAGE_UNKNOWN;
			return 0;
		}
		im->kind = FATBIN_IMAGE_FATBIN;
		im->data = malloc(len);
		if (!im->data)
			return -ENOMEM;
		memcpy(im->data, fb, len);
		im->len = len;
		return 0;
	case FATBIN_IMAGE_PTX:
		im->data = (uint8_t *)strdup(p);
		if (!im->data)
			return -ENOMEM;
		im->len = strlen(p);
		return 0;
	case FATBIN_IMAGE_ELF:
		/* its .nv_debug_ptx_txt may hold its PTX (Triton's do) */
		if (fatbin_cubin_size(p, &len) < 0 || len > avail) {
			agent_debug("module image: a cubin of unknown size");
			return 0;
		}
		im->data = malloc(len);
		if (!im->data)
			return -ENOMEM;
		memcpy(im->data, p, len);
		im->len = len;
		return 0;
	default:
		return 0;
	}
}

void agent_image_add(uintptr_t handle, bool library, const void *p,
		     const char *path)
{
	struct agent_image *im = calloc(1, sizeof(*im));
	int e = 0;

	if (!im)
		return;
	im->handle = handle;
	im->library = library;
	if (path) {
		uint8_t *d = NULL;
		size_t n = 0;

		e = read_file(path, &d, &n);
		if (!e) {
			e = copy_image(im, d, n);
			free(d);
		}
	} else if (p) {
		e = copy_image(im, p, SIZE_MAX);
	}
	if (e < 0) {
		agent_report_once("cannot keep a copy of a loaded module%s%s: "
				  "%s", path ? " " : "", path ? path : "",
				  strerror(-e));
		free(im->data);
		free(im);
		return;
	}
	agent_debug("%s %#lx loaded: %s, %zu bytes", library ? "library" :
		    "module", (unsigned long)handle,
		    im->kind == FATBIN_IMAGE_FATBIN ? "fatbin" :
		    im->kind == FATBIN_IMAGE_PTX ? "PTX" :
		    im->kind == FATBIN_IMAGE_ELF ? "cubin" : "unknown", im->len);
	pthread_mutex_lock(&img_lock);
	im->next = images;
	images = im;
	pthread_mutex_unlock(&img_lock);
}

struct agent_image *agent_image_find(uintptr_t handle)
{
	struct agent_image *im;

	pthread_mutex_lock(&img_lock);
	for (im = images; im && im->handle != handle; im = im->next)
		;
	pthread_mutex_unlock(&img_lock);
	return im;
}

void agent_image_remove(uintptr_t handle)
{
	struct agent_image **pp, *im;

	pthread_mutex_lock(&img_lock);
	for (pp = &images; (im = *pp); pp = &im->next) {
		if (im->handle == handle) {
			*pp = im->next;
			/* a launch may still look at it: keep it till exit */
			im->next = retired;
			retired = im;
			break;
		}
	}
	pthread_mutex_unlock(&img_lock);
}

/* ---- picking the PTX ---- */

struct pick {
	const char *name;
	unsigned sm;		/* the device */
	const void *owner;	/* of the fatbins walked (agent_ptxmemo.c) */
	char *text;		/* best so far */
	unsigned arch;
	bool from_cubin;	/* text is a cubin's .nv_debug_ptx_txt */
	unsigned lowest;	/* lowest arch with the kernel, 0: none */
	char err[256];		/* the first entry that could not be read */
};

/* Can PTX for ARCH (variant V) be JIT-compiled for device SM? */
static bool arch_fits(unsigned arch, char v, unsigned sm)
{
	if (v == 'a')
		return arch == sm;
	if (v == 'f')
		return arch / 10 == sm / 10 && arch <= sm;
	return arch <= sm;
}

/*
 * Note that PTX for ARCH (variant V) has the kernel; is it the best?  A
 * higher target than the pick so far; at the same target, a fatbin's
 * PTX rather than a cubin's .nv_debug_ptx_txt, whose .loc lines are
 * blanked (gpu:mem's `line` read 0 from nvcc's default sm_75 cubin).
 */
static bool better(struct pick *pk, unsigned arch, char v, bool from_cubin)
{
	if (!pk->lowest || arch < pk->lowest)
		pk->lowest = arch;
	return arch_fits(arch, v, pk->sm) &&
	       (!pk->text || arch > pk->arch ||
		(arch == pk->arch && pk->from_cubin && !from_cubin));
}

static void take(struct pick *pk, char *text, unsigned arch, bool from_cubin)
{
	free(pk->text);
	pk->text = text;
	pk->arch = arch;
	pk->from_cubin = from_cubin;
}

/* PTX loaded as text (cuModuleLoadData of PTX) */
static void consider_text(struct pick *pk, const char *text, size_t len,
			  unsigned arch, char v, bool from_cubin)
{
	char *t;

	if (!agent_ptx_has_entry(text, len, pk->name) ||
	    !better(pk, arch, v, from_cubin))
		return;
	while (len && text[len - 1] == '\0')
		len--;
	if ((t = strndup(text, len)))
		take(pk, t, arch, from_cubin);
}

/* A fatbin's PTX entry, seen as stored: decompressed once (memo). */
static int pick_entry(const struct fatbin_entry *e, void *arg)
{
	struct pick *pk = arg;
	char *t = NULL, err[160];
	int has;

	if (!e->is_ptx)
		return 0;
	has = agent_ptxmemo_entry(pk->owner, e, pk->name, NULL, err,
				  sizeof(err));
	if (has < 0 && !pk->err[0])
		snprintf(pk->err, sizeof(pk->err), "entry %d: %s", e->index,
			 err);
	if (has > 0 && better(pk, e->arch.sm, e->arch.variant, e->from_cubin) &&
	    agent_ptxmemo_entry(pk->owner, e, pk->name, &t, err,
				sizeof(err)) > 0)
		take(pk, t, e->arch.sm, e->from_cubin);
	return 0;
}

/* A module loaded as a cubin: the PTX of its .nv_debug_ptx_txt. */
static void consider_cubin(struct pick *pk, const struct agent_image *img,
			   char *why, size_t whylen)
{
	struct fatbin_cubin_ptx x;
	struct fatbin_arch a = { 0 };
	char err[200];

	if (!img->data) {
		snprintf(why, whylen, "SASS only (a cubin we could not copy)");
		return;
	}
	fatbin_cubin_arch(img->data, img->len, &a);
	if (fatbin_cubin_ptx(img->data, img->len, a.sm, pk->name, &x, err,
			     sizeof(err)) < 0) {
		/* this process's NVRTC cubins have it: an older one */
		snprintf(why, whylen, "SASS only (%s)%s", err,
			 agent_nvrtc_added() && !strcmp(err, "cubin without "
							".nv_debug_ptx_txt") ?
			 "; not one of this process's NVRTC compiles, which "
			 "get -lineinfo: from a kernel cache? (CuPy: "
			 "CUPY_CACHE_DIR)" : "");
		return;
	}
	agent_debug("%s: PTX from its cubin's .nv_debug_ptx_txt (sm_%u%s, "
		    "PTX %u.%u)", pk->name, x.arch.sm,
		    x.arch.variant == 'a' ? "a" : x.arch.variant == 'f' ?
		    "f" : "", x.major, x.minor);
	consider_text(pk, x.text, x.len, x.arch.sm, x.arch.variant, true);
	free(x.text);
}

/* ---- fatbins of the process's ELF objects ---- */

struct region {
	const uint8_t *p;
	size_t len;
};

/* A loaded object, by load base and name, and its .nv_fatbin sections */
struct object {
	uintptr_t base;
	char *name;
	struct region *regions;
	int nregions;
	unsigned pass;		/* last seen loaded */
	struct object *next;
};

static struct object *objects;
static unsigned pass;

static bool in_load_segment(const struct dl_phdr_info *info, uint64_t a,
			    uint64_t n)
{
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && a >= ph->p_vaddr &&
		    a + n <= ph->p_vaddr + ph->p_memsz)
			return true;
	}
	return false;
}

static void add_region(struct object *o, const uint8_t *p, size_t len)
{
	struct region *v = realloc(o->regions,
				   (size_t)(o->nregions + 1) * sizeof(*v));

	if (!v)
		return;
	o->regions = v;
	v[o->nregions++] = (struct region){ p, len };
}

/* The .nv_fatbin sections of one loaded object, from its file. */
static void scan_object(const struct dl_phdr_info *info, struct object *o)
{
	const char *path = info->dlpi_name && *info->dlpi_name ?
			   info->dlpi_name : "/proc/self/exe";
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	char *names = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || !eh.e_shnum ||
	    eh.e_shstrndx >= eh.e_shnum)
		goto out;
	sh = calloc(eh.e_shnum, sizeof(*sh));
	if (!sh || pread(fd, sh, eh.e_shnum * sizeof(*sh), (off_t)eh.e_shoff) !=
	    (ssize_t)(eh.e_shnum * sizeof(*sh)))
		goto out;
	if (sh[eh.e_shstrndx].sh_size > 1 << 24)
		goto out;
	names = calloc(1, sh[eh.e_shstrndx].sh_size + 1);
	if (!names || pread(fd, names, sh[eh.e_shstrndx].sh_size,
			    (off_t)sh[eh.e_shstrndx].sh_offset) !=
	    (ssize_t)sh[eh.e_shstrndx].sh_size)
		goto out;
	for (int i = 0; i < eh.e_shnum; i++) {
		if (sh[i].sh_name >= sh[eh.e_shstrndx].sh_size ||
		    strcmp(names + sh[i].sh_name, ".nv_fatbin") ||
		    !(sh[i].sh_flags & SHF_ALLOC) || !sh[i].sh_size ||
		    !in_load_segment(info, sh[i].sh_addr, sh[i].sh_size))
			continue;
		add_region(o, (const uint8_t *)(info->dlpi_addr +
						sh[i].sh_addr),
			   sh[i].sh_size);
	}
out:
	free(names);
	free(sh);
	close(fd);
}

/* The record of a loaded object, made (and its file read) at first sight */
static struct object *object_of(const struct dl_phdr_info *info)
{
	const char *name = info->dlpi_name ? info->dlpi_name : "";
	struct object *o;

	for (o = objects; o; o = o->next)
		if (o->base == info->dlpi_addr && !strcmp(o->name, name))
			return o;
	o = calloc(1, sizeof(*o));
	if (!o || !(o->name = strdup(name))) {
		free(o);
		return NULL;
	}
	o->base = info->dlpi_addr;
	scan_object(info, o);
	o->next = objects;
	objects = o;
	return o;
}

/*
 * Search each loaded object's fatbins until one has the kernel.  This
 * runs under the loader's lock (dl_iterate_phdr), so no object is
 * unloaded while its fatbins are read.
 */
static int search_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct pick *pk = arg;
	struct object *o = object_of(info);
	char err[128];

	if (!o)
		return 0;
	o->pass = pass;
	pk->owner = o;
	for (int i = 0; i < o->nregions && !pk->text; i++)
		fatbin_foreach_stored(o->regions[i].p, o->regions[i].len,
				      FATBIN_KIND_PTX | FATBIN_CUBIN_PTX |
				      FATBIN_CUBIN_CHEAP, pick_entry, pk, err,
				      sizeof(err));
	return 0;
}

static void pick_from_elf(struct pick *pk)
{
	struct object **pp, *o;

	pthread_mutex_lock(&img_lock);
	pass++;
	dl_iterate_phdr(search_object, pk);
	/* forget objects unloaded since (not seen in this pass) */
	for (pp = &objects; (o = *pp);) {
		if (o->pass == pass) {
			pp = &o->next;
			continue;
		}
		*pp = o->next;
		agent_ptxmemo_forget(o);
		free(o->regions);
		free(o->name);
		free(o);
	}
	pthread_mutex_unlock(&img_lock);
}

/* ---- cubins in anonymous memory (agent_memscan.c) ---- */

#define MAX_CANDS	16

/* The threads a block of entry NAME in PTX TEXT may have, from its
 * .maxntid or .reqntid (Triton's num_warps x 32); 0: not declared. */
static unsigned ptx_max_threads(const char *text, const char *name)
{
	const char *p = text, *end = text + strlen(text), *q;
	size_t nl = strlen(name), n;
	unsigned prod = 0, v;

	while ((p = agent_ptx_next_entry(p, end, &n)) &&
	       !(n == nl && !memcmp(p, name, nl)))
		p += n;
	if (!p)
		return 0;
	for (p += n; p < end && *p != '{'; p++) {
		if (*p != '.' || (strncmp(p, ".maxntid", 8) &&
				  strncmp(p, ".reqntid", 8)))
			continue;
		q = p + 8;
		prod = 1;
		for (int i = 0; i < 3; i++) {
			while (q < end && (*q == ' ' || *q == '\t'))
				q++;
			if (*q < '0' || *q > '9')
				break;
			v = (unsigned)strtoul(q, (char **)&q, 10);
			prod *= v;
			while (q < end && (*q == ' ' || *q == '\t'))
				q++;
			if (*q != ',')
				break;
			q++;
		}
		return prod;
	}
	return 0;
}

struct cand {
	char *text;
	unsigned arch;
	struct fatbin_cubin_func f;
	unsigned threads;	/* .maxntid/.reqntid, 0: none */
};

struct mem_pick {
	const char *name;
	unsigned sm;
	struct cand v[MAX_CANDS];
	int n;			/* distinct PTX */
	int more;		/* distinct beyond MAX_CANDS */
	unsigned lowest;
	char why[200];		/* the first cubin's reason, when unusable */
};

static void mem_candidate(const uint8_t *cubin, size_t len, void *arg)
{
	struct mem_pick *mp = arg;
	struct agent_image tmp = { .kind = FATBIN_IMAGE_ELF,
				   .data = (uint8_t *)cubin, .len = len };
	struct pick one = { .name = mp->name, .sm = mp->sm };
	struct cand *c;
	char why[200] = "";

	consider_cubin(&one, &tmp, why, sizeof(why));
	if (!one.text) {
		if (one.lowest && (!mp->lowest || one.lowest < mp->lowest))
			mp->lowest = one.lowest;
		if (!mp->why[0])
			snprintf(mp->why, sizeof(mp->why), "%s", why);
		return;
	}
	for (int i = 0; i < mp->n; i++)
		if (!strcmp(mp->v[i].text, one.text)) {
			free(one.text);
			return;
		}
	if (mp->n == MAX_CANDS) {
		mp->more++;
		free(one.text);
		return;
	}
	c = &mp->v[mp->n++];
	c->text = one.text;
	c->arch = one.arch;
	fatbin_cubin_func(cubin, len, mp->name, &c->f);
	c->threads = ptx_max_threads(one.text, mp->name);
}

/* Does candidate C agree with the loaded function's attributes? */
static bool cand_fits(const struct cand *c, agent_attr_fn attr, void *arg,
		      char *how, size_t howlen)
{
	int regs = attr ? attr(arg, CU_FUNC_ATTRIBUTE_NUM_REGS) : -1;
	int thr = attr ? attr(arg, CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK) :
		  -1;
	int loc = attr ? attr(arg, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES) : -1;

	snprintf(how, howlen, "%d registers, %d threads a block; the "
		 "cubin's %u, %u", regs, thr, c->f.regs, c->threads);
	/* registers and .maxntid/.reqntid exactly, local memory at least
	 * the stack frame; static shared memory is not compared (ptxas
	 * gives an sm_90a kernel with an extern shared array a 1 KiB
	 * .nv.shared.NAME, and Triton's variants differ in dynamic shared
	 * memory only): docs/attach.md.  The H100's driver (580) reports
	 * 1024 threads for a Triton kernel whose PTX says .maxntid 128:
	 * 1024, the device's limit, tells nothing */
	return (regs <= 0 || (unsigned)regs == c->f.regs) &&
	       (thr <= 0 || thr >= 1024 || !c->threads ||
		(unsigned)thr == c->threads) &&
	       (loc < 0 || (unsigned)loc >= c->f.frame);
}

/*
 * The PTX of kernel NAME from the cubins in memory that define it: all
 * with the same PTX, or the one whose resources are those of the loaded
 * function (ATTR); else none, WHY says why.
 */
static void pick_from_memory(struct pick *pk, agent_attr_fn attr,
			     void *attr_arg, char *why, size_t whylen)
{
	struct mem_pick mp = { .name = pk->name, .sm = pk->sm };
	char how[160] = "";
	int found, fit = -1, nfit = 0;

	found = agent_memscan_each(pk->name, mem_candidate, &mp);
	if (!found)
		return;
	for (int i = 0; i < mp.n; i++)
		if (cand_fits(&mp.v[i], attr, attr_arg, how, sizeof(how))) {
			fit = i;
			nfit++;
		}
	if (!mp.n) {
		if (mp.lowest)
			snprintf(why, whylen, "no PTX for sm_%u (its PTX, in a "
				 "cubin in memory, is for compute_%u and up)",
				 pk->sm, mp.lowest);
		else
			snprintf(why, whylen, "%s (a cubin in memory)",
				 mp.why);
	} else if (mp.more || nfit > 1) {
		snprintf(why, whylen, "%d cubins in memory define it with "
			 "different code", mp.n + mp.more);
	} else if (!nfit) {
		snprintf(why, whylen, "the cubin%s in memory that define%s it "
			 "%s not match the loaded function (%s)",
			 mp.n == 1 ? "" : "s", mp.n == 1 ? "s" : "",
			 mp.n == 1 ? "does" : "do", how);
	} else {
		agent_debug("%s: PTX from a cubin in memory (%d cubin%s "
			    "define%s it, %d distinct)", pk->name, found,
			    found == 1 ? "" : "s", found == 1 ? "s" : "",
			    mp.n);
		take(pk, mp.v[fit].text, mp.v[fit].arch, true);
		mp.v[fit].text = NULL;
	}
	for (int i = 0; i < mp.n; i++)
		free(mp.v[i].text);
}

int agent_image_ptx(const struct agent_image *img, const char *name,
		    unsigned sm, agent_attr_fn attr, void *attr_arg,
		    char **text, unsigned *arch, char *why, size_t whylen)
{
	struct pick pk = { .name = name, .sm = sm };
	char err[128];
	char v;

	if (!img || img->kind == FATBIN_IMAGE_UNKNOWN) {
		pick_from_elf(&pk);
		/* a library's kernel (PTX for newer GPUs only): not one
		 * of a cubin in memory */
		if (!pk.text && !pk.lowest) {
			why[0] = 0;
			pick_from_memory(&pk, attr, attr_arg, why, whylen);
			if (!pk.text && why[0])
				return -ENOENT;
		}
	} else if (img->kind == FATBIN_IMAGE_ELF) {
		why[0] = 0;
		consider_cubin(&pk, img, why, whylen);
		if (!pk.text && why[0])
			return -ENOENT;
	} else if (img->kind == FATBIN_IMAGE_PTX) {
		unsigned a = agent_ptx_target((const char *)img->data,
					      img->len, &v);

		consider_text(&pk, (const char *)img->data, img->len, a, v,
			      false);
	} else {
		pk.owner = img;
		/* compressed cubins (PyTorch's -compress-all: SASS for
		 * every arch) would be inflated at each kernel's look-up */
		if (fatbin_foreach_stored(img->data, img->len, FATBIN_KIND_PTX |
					  FATBIN_CUBIN_PTX | FATBIN_CUBIN_CHEAP,
					  pick_entry, &pk, err,
					  sizeof(err)) < 0) {
			snprintf(why, whylen, "cannot read its fatbin: %s",
				 err);
			return -ENOENT;
		}
	}
	if (pk.text) {
		*text = pk.text;
		*arch = pk.arch;
		return 0;
	}
	if (pk.lowest)
		snprintf(why, whylen, "no PTX for sm_%u (its PTX is for "
			 "compute_%u and up)", sm, pk.lowest);
	else if (pk.err[0])
		snprintf(why, whylen, "cannot read its fatbin: %s", pk.err);
	else
		snprintf(why, whylen, "SASS only (no PTX for it in the "
			 "program's fatbins%s)", img && img->kind !=
			 FATBIN_IMAGE_UNKNOWN ? "" : " or in a cubin in memory");
	return -ENOENT;
}
/* fork(): the parent's modules are not loaded here. */
void agent_image_forked(void)
{
	pthread_mutex_init(&img_lock, NULL);
	images = NULL;
	retired = NULL;
}

#endif /* GT_AGENT_SO */
