// SPDX-License-Identifier: MIT
/* Opening Zydis at run time (runtime/zydis_load.h). */
#ifdef GT_HAVE_ZYDIS
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "runtime/zydis_load.h"

int zydis_load(struct zydis *z, const char *beside, const char *owner,
	       char *err, size_t errlen)
{
	const char *s = beside ? strrchr(beside, '/') : NULL;
	char path[4096];
	void *h = NULL;

	if (s) {
		snprintf(path, sizeof(path), "%.*s/libZydis.so.4.0",
			 (int)(s - beside), beside);
		h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	}
	if (!h)
		h = dlopen("libZydis.so.4.0", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libZydis.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		snprintf(err, errlen, "cannot open libZydis.so.4.0 (the x86 "
			 "decoder; Debian's libzydis4, or a copy next to %s)",
			 owner);
		return -ENOENT;
	}
	z->init = (ZyanStatus (*)(ZydisDecoder *, ZydisMachineMode,
				  ZydisStackWidth))dlsym(h, "ZydisDecoderInit");
	z->decode = (ZyanStatus (*)(const ZydisDecoder *, const void *,
				    ZyanUSize, ZydisDecodedInstruction *,
				    ZydisDecodedOperand *))
		dlsym(h, "ZydisDecoderDecodeFull");
	if (!z->init || !z->decode ||
	    ZYAN_FAILED(z->init(&z->dec, ZYDIS_MACHINE_MODE_LONG_64,
				ZYDIS_STACK_WIDTH_64))) {
		snprintf(err, errlen, "libZydis.so.4.0 is not Zydis 4");
		return -ENOSYS;
	}
	return 0;
}
#endif /* GT_HAVE_ZYDIS */
