/* SPDX-License-Identifier: MIT */
/*
 * The driver's own entry point NAME, past any library that interposes
 * it (gputrace's agent exports the cu* launch functions and answers
 * dlsym and cuGetProcAddress with its wrappers): looked up in
 * libcuda.so.1's dynamic symbol table in memory, through its GNU hash
 * (dl_iterate_phdr, which nothing hooks).  NULL when libcuda is not
 * loaded or has no such symbol.  For bench/launch's in-process A/B.
 */
#ifndef GT_DRV_DIRECT_H
#define GT_DRV_DIRECT_H

#include <elf.h>
#include <link.h>
#include <stdint.h>
#include <string.h>

struct drv_direct_q {
	const char *name;
	void *addr;
};

static uint32_t drv_direct_hash(const char *s)
{
	uint32_t h = 5381;

	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

/* a d_ptr is relocated in place by glibc on x86-64; not everywhere */
static uintptr_t drv_direct_ptr(const struct dl_phdr_info *info, uintptr_t p)
{
	return p < info->dlpi_addr ? p + info->dlpi_addr : p;
}

static int drv_direct_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct drv_direct_q *q = (struct drv_direct_q *)arg;
	const uint32_t *gh = NULL;
	const Elf64_Sym *sym = NULL;
	const char *str = NULL;
	const ElfW(Dyn) *d = NULL;

	if (!info->dlpi_name || !strstr(info->dlpi_name, "libcuda.so"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
			d = (const ElfW(Dyn) *)(info->dlpi_addr +
						info->dlpi_phdr[i].p_vaddr);
	for (; d && d->d_tag != DT_NULL; d++) {
		uintptr_t p = drv_direct_ptr(info, d->d_un.d_ptr);

		if (d->d_tag == DT_GNU_HASH)
			gh = (const uint32_t *)p;
		else if (d->d_tag == DT_SYMTAB)
			sym = (const Elf64_Sym *)p;
		else if (d->d_tag == DT_STRTAB)
			str = (const char *)p;
	}
	if (!gh || !sym || !str)
		return 1;
	/* nbuckets, symoffset, bloom words, bloom shift; bloom; buckets;
	 * chains */
	uint32_t nb = gh[0], off = gh[1], nbloom = gh[2];
	const uint32_t *buckets = gh + 4 + nbloom * 2;	/* 64-bit bloom */
	const uint32_t *chain = buckets + nb;
	uint32_t h = drv_direct_hash(q->name), i = buckets[h % nb];

	for (; nb && i >= off; i++) {
		uint32_t h2 = chain[i - off];

		if ((h | 1) == (h2 | 1) && sym[i].st_value &&
		    !strcmp(str + sym[i].st_name, q->name)) {
			q->addr = (void *)(info->dlpi_addr + sym[i].st_value);
			break;
		}
		if (h2 & 1)
			break;
	}
	return 1;
}

static void *drv_direct(const char *name)
{
	struct drv_direct_q q = { name, NULL };

	dl_iterate_phdr(drv_direct_cb, &q);
	return q.addr;
}

#endif
