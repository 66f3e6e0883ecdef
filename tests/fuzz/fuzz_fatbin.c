// SPDX-License-Identifier: MIT
/*
 * libFuzzer harness: fatbin bytes, as a fatbin (or several end to end), as
 * one fatbin walked alone and as a host ELF file holding fatbins, through
 * the kernel table (PTX and cubin kernel names) and the PTX collection.
 */
#include <stdint.h>
#include <string.h>

#include "gpucode/fatbin.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fatbin_kernels ks;
	struct fatbin_ptx_list pl;
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
	return 0;
}
