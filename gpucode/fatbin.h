/* SPDX-License-Identifier: MIT */
/*
 * Reading CUDA fatbins: the containers that nvcc embeds in host objects
 * (section .nv_fatbin, wrapper in .nvFatBinSegment) and that programs hand
 * to __cudaRegisterFatBinary and cuModuleLoadData.  Each fatbin holds PTX
 * and cubin (ELF) images per GPU architecture, optionally compressed (LZ4
 * or zstd).  docs/fatbin.md describes the format.
 *
 * Every function that takes bytes checks all offsets and sizes against the
 * given length; bad input gives a negative errno and a message in ERR
 * (ERR may be NULL).  Nothing here prints.
 */
#ifndef GT_FATBIN_H
#define GT_FATBIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FATBIN_MAGIC		0xBA55ED50u	/* fatbin header */
#define FATBIN_WRAPPER_MAGIC	0x466243B1u	/* __fatBinC_Wrapper_t */

/* Entry header flags, as observed from CUDA 13's fatbinary. */
#define FATBIN_FLAG_64BIT	0x0000001ull
#define FATBIN_FLAG_DEBUG	0x0000002ull
#define FATBIN_FLAG_LINUX	0x0000010ull
#define FATBIN_FLAG_LZ4		0x0002000ull	/* --compress-mode=speed */
#define FATBIN_FLAG_ZSTD	0x0008000ull	/* default, size, balance */
#define FATBIN_FLAG_ARCH_A	0x0100000ull	/* sm_90a: arch-specific */
#define FATBIN_FLAG_ARCH_F	0x0200000ull	/* sm_100f: family */

/*
 * Largest decompressed image we accept, and the largest expansion past
 * FATBIN_RATIO_SLACK bytes: no PTX module or cubin comes near either, and
 * the agent runs inside the user's process (a 48 KB zstd frame inflating
 * to 1 GiB took 30 s and 3 GB).  docs/fatbin.md.
 */
#define FATBIN_MAX_IMAGE	(256ull << 20)
#define FATBIN_MAX_RATIO	1024u
#define FATBIN_RATIO_SLACK	(1ull << 20)
/* And in all, over one walk of N bytes: SLACK + RATIO * N (a bomb of many
 * entries, each within the limits above, is refused once past it). */
#define FATBIN_TOTAL_SLACK	(64ull << 20)
#define FATBIN_TOTAL_RATIO	32u

enum fatbin_kind {
	FATBIN_KIND_PTX = 1,
	FATBIN_KIND_ELF = 2,	/* cubin (SASS) */
	FATBIN_KIND_LTO = 8,	/* NVVM IR for -dlto; opaque (not decoded) */
	/* other values are passed through as found */
};

/*
 * Flags or-ed into a walk's KIND (kind = the low 16 bits, 0: all).
 * FATBIN_CUBIN_PTX: after each cubin entry that carries usable PTX in
 * .nv_debug_ptx_txt (ptxas -lineinfo: fatbin_cubin_ptx), FN also sees a
 * PTX entry made of it (from_cubin set, same offsets as the cubin's).
 * FATBIN_CUBIN_CHEAP: in stored walks, only cubins stored uncompressed
 * are looked into (a process's libraries hold gigabytes of cubins).
 */
#define FATBIN_KIND_MASK	0xffffu
#define FATBIN_CUBIN_PTX	0x10000u
#define FATBIN_CUBIN_CHEAP	0x20000u

enum fatbin_comp {
	FATBIN_COMP_NONE,
	FATBIN_COMP_LZ4,	/* raw LZ4 block */
	FATBIN_COMP_ZSTD,	/* one zstd frame */
};

/* A target: sm / compute 90 with variant 0, 'a' (90a) or 'f' (100f). */
struct fatbin_arch {
	uint16_t sm;
	char variant;
};

struct fatbin_entry {
	int index;		/* entry number within its fatbin */
	size_t fatbin_off;	/* offset of the fatbin in the walked buffer */
	size_t entry_off;	/* offset of this entry's header, same base */
	unsigned kind;		/* enum fatbin_kind or an unknown raw value */
	bool is_ptx;
	bool from_cubin;	/* PTX from a cubin's .nv_debug_ptx_txt */
	struct fatbin_arch arch;
	unsigned major, minor;	/* PTX ISA version; cubin format version */
	uint64_t flags;		/* FATBIN_FLAG_* */
	enum fatbin_comp comp;	/* as the flags say */
	uint32_t comp_size;	/* compressed bytes (0: all stored ones) */
	uint64_t plain_size;	/* decompressed bytes, as the header says */
	/* The image, valid during the call: decompressed for PTX and ELF,
	 * as stored for other kinds. */
	const uint8_t *data;
	size_t size;		/* its length (PTX: may end in NUL padding) */
	size_t stored_size;	/* bytes the image takes in the fatbin */
	const char *name;	/* identifier (fatbinary --ident) or "" */
	const char *options;	/* PTX, LTO: compiler options used, or "" */
};

/*
 * Called for each entry.  Return 0 to go on, anything else to stop the
 * walk, which then returns that value (a negative errno is reported in
 * ERR as "callback failed").
 */
typedef int (*fatbin_entry_fn)(const struct fatbin_entry *e, void *arg);

/*
 * Walk one fatbin at BUF (LEN bytes available) and return its total size
 * (header + payload) in *SIZE.  0 on success.
 */
int fatbin_size(const void *buf, size_t len, size_t *size,
		char *err, size_t errlen);

/*
 * Call FN for every entry of every fatbin in BUF: one fatbin, or several
 * laid end to end as in a linked .nv_fatbin section (zero padding between
 * them is skipped).  Compressed images are decompressed before FN sees
 * them.  Returns 0, FN's non-zero value, or a negative errno.
 */
int fatbin_foreach(const void *buf, size_t len, fatbin_entry_fn fn, void *arg,
		   char *err, size_t errlen);
/*
 * The same for the entries of one KIND (FATBIN_KIND_PTX, ...; 0: all):
 * the others are checked but neither decompressed nor passed to FN.
 */
int fatbin_foreach_kind(const void *buf, size_t len, unsigned kind,
			fatbin_entry_fn fn, void *arg, char *err, size_t errlen);
/*
 * The same, but FN sees the entries as stored (data and size are the
 * stored bytes, comp says how they are compressed) and calls
 * fatbin_entry_image for an image it wants: a caller that keeps images
 * decompresses each once.
 */
int fatbin_foreach_stored(const void *buf, size_t len, unsigned kind,
			  fatbin_entry_fn fn, void *arg, char *err,
			  size_t errlen);
/* The image of E, an entry seen as stored: a new buffer of *SIZE bytes,
 * decompressed if need be.  0 or a negative errno (ERR says why). */
int fatbin_entry_image(const struct fatbin_entry *e, uint8_t **out,
		       size_t *size, char *err, size_t errlen);

/* What a pointer handed to the driver points at. */
enum fatbin_image {
	FATBIN_IMAGE_UNKNOWN,
	FATBIN_IMAGE_FATBIN,	/* fatbin header */
	FATBIN_IMAGE_WRAPPER,	/* __fatBinC_Wrapper_t (__cudaRegisterFatBinary) */
	FATBIN_IMAGE_ELF,	/* a cubin */
	FATBIN_IMAGE_PTX,	/* NUL-terminated PTX text */
};

/* Classify IMAGE, of which at least AVAIL bytes are readable (>= 4). */
enum fatbin_image fatbin_image_kind(const void *image, size_t avail);

/*
 * In-process images: P points at a fatbin header or at a wrapper
 * {magic, version, const void *fatbin, ...}, in memory the caller trusts
 * to be mapped (a fatbin's size is only known from its own header).
 * Sets *FB and *LEN to the fatbin's bytes, ready for fatbin_foreach().
 */
int fatbin_mem_locate(const void *p, const void **fb, size_t *len,
		      char *err, size_t errlen);

/*
 * Host ELF files (executables, shared objects, relocatable objects): call
 * FN for every entry of every fatbin, found through the .nv_fatbin and
 * __nv_relfatbin sections and the wrappers in .nvFatBinSegment.
 * entry->fatbin_off is then an offset in the file.
 */
int fatbin_elf_foreach(const char *path, fatbin_entry_fn fn, void *arg,
		       char *err, size_t errlen);
int fatbin_elf_foreach_mem(const void *img, size_t len, fatbin_entry_fn fn,
			   void *arg, char *err, size_t errlen);
/* The same for the entries of one KIND, as fatbin_foreach_kind(). */
int fatbin_elf_foreach_kind(const char *path, unsigned kind,
			    fatbin_entry_fn fn, void *arg, char *err,
			    size_t errlen);
int fatbin_elf_foreach_mem_kind(const void *img, size_t len, unsigned kind,
				fatbin_entry_fn fn, void *arg, char *err,
				size_t errlen);

/*
 * Kernels (entry functions) of one image: the ".entry NAME" lines of PTX,
 * or the STO_CUDA_ENTRY function symbols of a cubin (.text.NAME sections
 * when it has no symbol table).  FN gets each mangled name, NUL-terminated.
 */
typedef int (*fatbin_name_fn)(const char *name, void *arg);
int fatbin_ptx_kernels(const char *ptx, size_t len, fatbin_name_fn fn,
		       void *arg);
int fatbin_cubin_kernels(const void *elf, size_t len, fatbin_name_fn fn,
			 void *arg, char *err, size_t errlen);

/*
 * Cubins (fatbin_cubin.c).  A standalone cubin file (e_machine EM_CUDA)
 * given to fatbin_elf_foreach* is walked as one cubin entry (index 0,
 * arch from e_flags) and, with FATBIN_CUBIN_PTX, its PTX.
 */
/* The SM a cubin's e_flags name (variant 0: the header has none). */
int fatbin_cubin_arch(const void *elf, size_t len, struct fatbin_arch *a);
/* The length of the cubin at ELF, from its headers, in memory the
 * caller trusts to be mapped (the driver has just read it). */
int fatbin_cubin_size(const void *elf, size_t *len);

struct fatbin_cubin_ptx {
	char *text;		/* NUL-terminated, malloc'd */
	size_t len;
	struct fatbin_arch arch;	/* its .target */
	unsigned major, minor;		/* its .version */
};

/*
 * The PTX in the cubin's .nv_debug_ptx_txt, as text, checked to belong
 * to it: each module (one section; a linked cubin has one per object,
 * .nv_debug_ptx_txt.HASH) one .version whose .target can give SASS for
 * SM (the cubin's; 0: unknown), and the modules' .entry kernels, all
 * together, the cubin's kernel symbols.  OUT: the module that defines
 * KERNEL (NULL or none: the first).  -ENODATA: no such section; other
 * errors: unusable, ERR says why.
 */
int fatbin_cubin_ptx(const void *elf, size_t len, unsigned sm,
		     const char *kernel, struct fatbin_cubin_ptx *out,
		     char *err, size_t errlen);
/* What a cubin says of one kernel's resources, as the driver reports
 * them (cuFuncGetAttribute): registers a thread (EIATTR_REGCOUNT in
 * .nv.info; older cubins: the top byte of .text.NAME's sh_info), its
 * stack frame (EIATTR_FRAME_SIZE), static shared memory (.nv.shared.NAME). */
struct fatbin_cubin_func {
	unsigned regs;
	unsigned frame;
	size_t shared;
};
/* 0 and *OUT when the cubin (bounds checked) has kernel symbol KERNEL and
 * its .text section; -ENOENT when it has not; -EBADMSG: not a cubin. */
int fatbin_cubin_func(const void *elf, size_t len, const char *kernel,
		      struct fatbin_cubin_func *out);
/* Call FN with a PTX entry for each module of the cubin entry CUBIN,
 * whose image is IMG (LEN bytes, decompressed), if they are usable. */
int fatbin_cubin_each_ptx(const struct fatbin_entry *cubin,
			  const uint8_t *img, size_t len, fatbin_entry_fn fn,
			  void *arg);

/* All PTX images, as NUL-terminated text without the trailing padding. */
struct fatbin_ptx {
	bool from_cubin;	/* a cubin's .nv_debug_ptx_txt */
	struct fatbin_arch arch;
	unsigned major, minor;
	char *name;
	char *text;
	size_t len;
};

struct fatbin_ptx_list {
	struct fatbin_ptx *v;
	size_t n, cap;
};

/* An entry callback that appends PTX entries to a fatbin_ptx_list. */
int fatbin_ptx_collect(const struct fatbin_entry *e, void *list);
int fatbin_elf_ptx(const char *path, struct fatbin_ptx_list *out,
		   char *err, size_t errlen);
void fatbin_ptx_list_free(struct fatbin_ptx_list *l);

/* Which architectures each kernel is available for, as PTX and as SASS. */
#define FATBIN_MAX_ARCHS 32

struct fatbin_kernel {
	char *name;		/* mangled */
	int nptx, nsass;
	struct fatbin_arch ptx[FATBIN_MAX_ARCHS];
	struct fatbin_arch sass[FATBIN_MAX_ARCHS];
	bool truncated;		/* more than FATBIN_MAX_ARCHS of a kind */
};

struct fatbin_kernels {
	struct fatbin_kernel *v;	/* in order of first sight */
	size_t n, cap;
	size_t *hash;			/* index + 1, 0 = empty */
	size_t hcap;
};

/* An entry callback that records the kernels of PTX and cubin entries. */
int fatbin_kernels_collect(const struct fatbin_entry *e, void *kernels);
int fatbin_elf_kernels(const char *path, struct fatbin_kernels *out,
		       char *err, size_t errlen);
const struct fatbin_kernel *fatbin_kernels_find(const struct fatbin_kernels *k,
						const char *name);
void fatbin_kernels_free(struct fatbin_kernels *k);

/* "sm_90a" / "compute_100f" into BUF; returns BUF. */
char *fatbin_arch_str(struct fatbin_arch a, bool ptx, char *buf, size_t len);

#endif
