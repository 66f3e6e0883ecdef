// SPDX-License-Identifier: MIT
/*
 * fbdump FILE...: print the fatbin entries and kernels of host ELF files,
 * a debugging aid for the fatbin reader (not built by the Makefile):
 *   gcc -std=gnu11 -I. tests/fatbin/fbdump.c gpucode/fatbin*.c \
 *       -lelf -lzstd -llz4 -o /tmp/fbdump
 */
#include <stdio.h>

#include "gpucode/fatbin.h"

static const char *comp_name[] = { "none", "lz4", "zstd" };

static int show(const struct fatbin_entry *e, void *arg)
{
	char a[32];

	printf("fatbin 0x%zx entry %d: %s %s v%u.%u flags 0x%llx %s "
	       "%zu -> %zu%s%s%s%s\n", e->fatbin_off, e->index,
	       e->is_ptx ? "ptx" : e->kind == FATBIN_KIND_ELF ? "elf" :
	       e->kind == FATBIN_KIND_LTO ? "lto" : "?",
	       fatbin_arch_str(e->arch, e->is_ptx, a, sizeof(a)),
	       e->major, e->minor, (unsigned long long)e->flags,
	       comp_name[e->comp], e->stored_size, e->size,
	       *e->name ? " name=" : "", e->name,
	       *e->options ? " options=" : "", e->options);
	return 0;
}

int main(int argc, char **argv)
{
	struct fatbin_kernels ks;
	char err[256], a[32];
	int rc = 0;

	for (int i = 1; i < argc; i++) {
		if (fatbin_elf_foreach(argv[i], show, NULL, err, sizeof(err)) ||
		    fatbin_elf_kernels(argv[i], &ks, err, sizeof(err))) {
			fprintf(stderr, "%s: %s\n", argv[i], err);
			rc = 1;
			continue;
		}
		for (size_t k = 0; k < ks.n; k++) {
			printf("kernel %s: ptx", ks.v[k].name);
			for (int j = 0; j < ks.v[k].nptx; j++)
				printf(" %s", fatbin_arch_str(ks.v[k].ptx[j],
					true, a, sizeof(a)));
			printf("; sass");
			for (int j = 0; j < ks.v[k].nsass; j++)
				printf(" %s", fatbin_arch_str(ks.v[k].sass[j],
					false, a, sizeof(a)));
			printf("\n");
		}
		fatbin_kernels_free(&ks);
	}
	return rc;
}
