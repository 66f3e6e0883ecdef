// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: fatbin bytes, as a fatbin (or several end to end), as
 * one fatbin walked alone and as a host ELF file holding fatbins, through
 * the kernel table (PTX and cubin kernel names) and the PTX collection,
 * and as a cubin: the PTX of its .nv_debug_ptx_txt, alone and as the
 * walks yield it (FATBIN_CUBIN_PTX).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "gpucode/fatbin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fatbin_kernels ks;
	struct fatbin_ptx_list pl;
	struct fatbin_cubin_ptx x;
	struct fatbin_cubin_func f;
	struct fatbin_arch a;
	char err[256];

	memset(&ks, 0, sizeof(ks));
	fatbin_foreach(data, size, fatbin_kernels_collect, &ks, err, sizeof(err));
	fatbin_kernels_free(&ks);
	memset(&pl, 0, sizeof(pl));
	fatbin_foreach(data, size, fatbin_ptx_collect, &pl, err, sizeof(err));
	fatbin_ptx_list_free(&pl);
	if (size >= 4)
		fatbin_image_kind(data, size);
	memset(&ks, 0, sizeof(ks));
	fatbin_elf_foreach_mem(data, size, fatbin_kernels_collect, &ks, err,
			       sizeof(err));
	fatbin_kernels_free(&ks);
	memset(&ks, 0, sizeof(ks));
	fatbin_elf_foreach_mem_kind(data, size, FATBIN_CUBIN_PTX,
				    fatbin_kernels_collect, &ks, err,
				    sizeof(err));
	fatbin_kernels_free(&ks);
	memset(&pl, 0, sizeof(pl));
	fatbin_foreach_kind(data, size, FATBIN_KIND_PTX | FATBIN_CUBIN_PTX,
			    fatbin_ptx_collect, &pl, err, sizeof(err));
	fatbin_ptx_list_free(&pl);
	if (fatbin_cubin_ptx(data, size, 90, "k", &x, err, sizeof(err)) == 0)
		free(x.text);
	fatbin_cubin_arch(data, size, &a);
	/* "memk": tests/cubin/memk.cu's kernel, for seeds made of it */
	fatbin_cubin_func(data, size, "k", &f);
	fatbin_cubin_func(data, size, "memk", &f);
	return 0;
}
