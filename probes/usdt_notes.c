// SPDX-License-Identifier: MIT
/*
 * Reading USDT probes: each <sys/sdt.h> probe leaves a note (owner
 * "stapsdt", type 3) holding its address, the .stapsdt.base address the
 * linker saw, its semaphore's address, then "provider\0name\0args\0".
 * Addresses become file offsets through the PT_LOAD segments, which is
 * what the uprobe PMU takes (and its ref_ctr_offset, for semaphores).
 */
#define _GNU_SOURCE	/* strndup */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <asm/ptrace.h>
#include <stddef.h>

#include "probes/usdt_notes.h"

#define NT_STAPSDT	3

static int vaddr_to_off(Elf *e, uint64_t va, uint64_t *off)
{
	size_t n;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &n))
		return -EINVAL;
	for (size_t i = 0; i < n; i++) {
		if (!gelf_getphdr(e, i, &ph) || ph.p_type != PT_LOAD)
			continue;
		if (va >= ph.p_vaddr && va < ph.p_vaddr + ph.p_memsz) {
			*off = va - ph.p_vaddr + ph.p_offset;
			return 0;
		}
	}
	return -ENOENT;
}

static int add_site(struct usdt_sites *s, Elf *e, const char *desc,
		    size_t len, uint64_t base_actual)
{
	uint64_t pc, base, sem;
	const char *prov, *name, *args, *end = desc + len;
	struct usdt_site *v, *site;

	if (len < 3 * 8 + 3)
		return -EINVAL;
	memcpy(&pc, desc, 8);
	memcpy(&base, desc + 8, 8);
	memcpy(&sem, desc + 16, 8);
	prov = desc + 24;
	name = memchr(prov, 0, end - prov);
	args = name ? memchr(name + 1, 0, end - name - 1) : NULL;
	if (!name || !args || !memchr(args + 1, 0, end - args - 1))
		return -EINVAL;
	name++;
	args++;
	/* prelinked or otherwise moved: the note says where base was */
	if (base_actual && base)
		pc += base_actual - base;
	v = realloc(s->v, (s->n + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	s->v = v;
	site = &v[s->n];
	memset(site, 0, sizeof(*site));
	if (vaddr_to_off(e, pc, &site->offset) ||
	    (sem && vaddr_to_off(e, sem, &site->sem_offset)))
		return -EINVAL;
	site->provider = strdup(prov);
	site->name = strdup(name);
	site->args = strdup(args);
	if (!site->provider || !site->name || !site->args) {
		free(site->provider);
		free(site->name);
		free(site->args);
		return -ENOMEM;
	}
	s->n++;
	return 0;
}

int usdt_read(const char *path, struct usdt_sites *out, char *err,
	      size_t errlen)
{
	Elf_Scn *scn = NULL;
	uint64_t base_actual = 0;
	size_t shstrndx;
	GElf_Shdr sh;
	Elf *e;
	int fd, ret = 0;

	memset(out, 0, sizeof(*out));
	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errlen, "%s: %s", path, strerror(-ret));
		return ret;
	}
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_kind(e) != ELF_K_ELF || gelf_getclass(e) != ELFCLASS64 ||
	    elf_getshdrstrndx(e, &shstrndx)) {
		snprintf(err, errlen, "%s: not a 64-bit ELF file", path);
		ret = -EINVAL;
		goto out;
	}
	while ((scn = elf_nextscn(e, scn)))
		if (gelf_getshdr(scn, &sh) &&
		    !strcmp(elf_strptr(e, shstrndx, sh.sh_name) ?: "", ".stapsdt.base"))
			base_actual = sh.sh_addr;
	while (!ret && (scn = elf_nextscn(e, scn))) {
		Elf_Data *d;
		GElf_Nhdr nh;
		size_t off = 0, noff, doff;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_NOTE)
			continue;
		d = elf_getdata(scn, NULL);
		while (d && !ret &&
		       (off = gelf_getnote(d, off, &nh, &noff, &doff)) > 0) {
			if (nh.n_type != NT_STAPSDT || nh.n_namesz != 8 ||
			    memcmp((char *)d->d_buf + noff, "stapsdt", 8))
				continue;
			ret = add_site(out, e, (char *)d->d_buf + doff,
				       nh.n_descsz, base_actual);
		}
	}
	if (ret)
		snprintf(err, errlen, "%s: a bad .note.stapsdt entry", path);
out:
	if (ret)
		usdt_sites_free(out);
	elf_end(e);
	close(fd);
	return ret;
}

void usdt_sites_free(struct usdt_sites *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].provider);
		free(s->v[i].name);
		free(s->v[i].args);
	}
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

/* Register NAME (without %) in any of its widths: its pt_regs offset. */
static int reg_offset(const char *name, size_t len)
{
	static const struct { const char *names[4]; int off; } regs[] = {
		{ { "rax", "eax", "ax", "al" }, offsetof(struct pt_regs, rax) },
		{ { "rbx", "ebx", "bx", "bl" }, offsetof(struct pt_regs, rbx) },
		{ { "rcx", "ecx", "cx", "cl" }, offsetof(struct pt_regs, rcx) },
		{ { "rdx", "edx", "dx", "dl" }, offsetof(struct pt_regs, rdx) },
		{ { "rsi", "esi", "si", "sil" }, offsetof(struct pt_regs, rsi) },
		{ { "rdi", "edi", "di", "dil" }, offsetof(struct pt_regs, rdi) },
		{ { "rbp", "ebp", "bp", "bpl" }, offsetof(struct pt_regs, rbp) },
		{ { "rsp", "esp", "sp", "spl" }, offsetof(struct pt_regs, rsp) },
		{ { "r8", "r8d", "r8w", "r8b" }, offsetof(struct pt_regs, r8) },
		{ { "r9", "r9d", "r9w", "r9b" }, offsetof(struct pt_regs, r9) },
		{ { "r10", "r10d", "r10w", "r10b" }, offsetof(struct pt_regs, r10) },
		{ { "r11", "r11d", "r11w", "r11b" }, offsetof(struct pt_regs, r11) },
		{ { "r12", "r12d", "r12w", "r12b" }, offsetof(struct pt_regs, r12) },
		{ { "r13", "r13d", "r13w", "r13b" }, offsetof(struct pt_regs, r13) },
		{ { "r14", "r14d", "r14w", "r14b" }, offsetof(struct pt_regs, r14) },
		{ { "r15", "r15d", "r15w", "r15b" }, offsetof(struct pt_regs, r15) },
		{ { "rip", "eip", NULL, NULL }, offsetof(struct pt_regs, rip) },
	};

	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++)
		for (int j = 0; j < 4; j++)
			if (regs[i].names[j] && strlen(regs[i].names[j]) == len &&
			    !memcmp(regs[i].names[j], name, len))
				return regs[i].off;
	return -1;
}

static int parse_one(const char *s, size_t len, struct usdt_arg *a)
{
	const char *at = memchr(s, '@', len), *end = s + len, *p;
	char *e;
	long size = 8;

	memset(a, 0, sizeof(*a));
	if (at) {
		size = strtol(s, &e, 10);
		if (e != at)
			return -EINVAL;
		p = at + 1;
	} else {
		p = s;
	}
	a->sign = size < 0;
	a->size = size < 0 ? -size : size;
	if (a->size != 1 && a->size != 2 && a->size != 4 && a->size != 8)
		return -EINVAL;
	if (*p == '$') {
		a->kind = USDT_ARG_IMM;
		a->val = strtoll(p + 1, &e, 0);
		return e == end ? 0 : -EINVAL;
	}
	if (*p == '%') {
		a->kind = USDT_ARG_REG;
		a->reg_off = reg_offset(p + 1, end - p - 1);
		return a->reg_off < 0 ? -EINVAL : 0;
	}
	/* [disp](%reg): no index registers, no symbols */
	a->kind = USDT_ARG_MEM;
	a->val = *p == '(' ? 0 : strtoll(p, &e, 0);
	if (*p != '(' && (e == p || *e != '('))
		return -EINVAL;
	p = strchr(p, '(');
	if (p[1] != '%' || end[-1] != ')' || memchr(p, ',', end - p))
		return -EINVAL;
	a->reg_off = reg_offset(p + 2, end - p - 3);
	return a->reg_off < 0 ? -EINVAL : 0;
}

int usdt_parse_args(const char *spec, struct usdt_arg *args, int max,
		    char *err, size_t errlen)
{
	const char *s = spec;
	int n = 0;

	for (;;) {
		size_t len;

		while (*s == ' ')
			s++;
		if (!*s)
			return n;
		len = strcspn(s, " ");
		if (n == max) {
			snprintf(err, errlen, "more than %d arguments in '%s'",
				 max, spec);
			return -EINVAL;
		}
		if (parse_one(s, len, &args[n])) {
			snprintf(err, errlen, "argument %d: cannot read '%.*s'",
				 n, (int)len, s);
			return -EINVAL;
		}
		n++;
		s += len;
	}
}
