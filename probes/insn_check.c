// SPDX-License-Identifier: MIT
/*
 * uprobe:BIN:FUNC+OFF must land on an instruction boundary: an int3
 * written into the middle of an instruction corrupts the target.  The
 * function is decoded from its start with Zydis, as bpftrace decodes it
 * with its disassembler.  Debian ships no static libZydis and the tracer
 * is carried to machines without the package, so it is dlopen'd: first
 * the copy the build puts next to the binary, then the system's.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probes/insn_check.h"

#ifndef GT_HAVE_ZYDIS
int insn_boundary(const char *path, uint64_t foff, uint64_t size,
		  uint64_t off, char *err, size_t errlen)
{
	snprintf(err, errlen, "built without Zydis (libzydis-dev)");
	return -ENOSYS;
}
#else
#include <Zydis/Zydis.h>

static struct {
	ZyanStatus (*init)(ZydisDecoder *, ZydisMachineMode, ZydisStackWidth);
	ZyanStatus (*decode)(const ZydisDecoder *, const void *, ZyanUSize,
			     ZydisDecodedInstruction *, ZydisDecodedOperand *);
	ZydisDecoder dec;
	int state;		/* 0 not tried, 1 ready, <0 failed */
} zy;

static void *open_zydis(void)
{
	char exe[PATH_MAX], lib[PATH_MAX + 32];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	void *h = NULL;

	if (n > 0) {
		char *s;

		exe[n] = 0;
		s = strrchr(exe, '/');
		if (s) {
			snprintf(lib, sizeof(lib), "%.*s/libZydis.so.4.0",
				 (int)(s - exe), exe);
			h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		}
	}
	if (!h)
		h = dlopen("libZydis.so.4.0", RTLD_NOW | RTLD_LOCAL);
	if (!h)
		h = dlopen("libZydis.so.4", RTLD_NOW | RTLD_LOCAL);
	return h;
}

static int zydis_ready(char *err, size_t errlen)
{
	void *h;

	if (zy.state)
		goto out;
	zy.state = -ENOENT;
	h = open_zydis();
	if (!h)
		goto out;
	zy.init = (ZyanStatus (*)(ZydisDecoder *, ZydisMachineMode,
				  ZydisStackWidth))dlsym(h, "ZydisDecoderInit");
	zy.decode = (ZyanStatus (*)(const ZydisDecoder *, const void *,
				    ZyanUSize, ZydisDecodedInstruction *,
				    ZydisDecodedOperand *))
		dlsym(h, "ZydisDecoderDecodeFull");
	zy.state = zy.init && zy.decode &&
		   ZYAN_SUCCESS(zy.init(&zy.dec, ZYDIS_MACHINE_MODE_LONG_64,
					ZYDIS_STACK_WIDTH_64)) ? 1 : -ENOSYS;
	/* the handle stays open: the decoder lives in it */
out:
	if (zy.state < 0)
		snprintf(err, errlen, "%s",
			 zy.state == -ENOENT ?
			 "cannot open libZydis.so.4.0 (Debian's libzydis4, or a copy next to gputrace)" :
			 "libZydis.so.4.0 is not Zydis 4");
	return zy.state < 0 ? zy.state : 0;
}

int insn_boundary(const char *path, uint64_t foff, uint64_t size,
		  uint64_t off, char *err, size_t errlen)
{
	/* the instructions up to OFF, and one that may start there */
	size_t len = size ? size : off + ZYDIS_MAX_INSTRUCTION_LENGTH;
	unsigned char *code;
	uint64_t at = 0;
	ssize_t got;
	int fd, ret;

	if (!off)
		return 1;
	ret = zydis_ready(err, errlen);
	if (ret)
		return ret;
	if (len > off + ZYDIS_MAX_INSTRUCTION_LENGTH)
		len = off + ZYDIS_MAX_INSTRUCTION_LENGTH;
	code = malloc(len);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	got = code && fd >= 0 ? pread(fd, code, len, foff) : -1;
	if (fd >= 0)
		close(fd);
	if (got <= 0) {
		snprintf(err, errlen, "cannot read the code of %s", path);
		free(code);
		return -EIO;
	}
	while (at < off) {
		ZydisDecodedInstruction in;
		ZydisDecodedOperand ops[ZYDIS_MAX_OPERAND_COUNT];

		if (ZYAN_FAILED(zy.decode(&zy.dec, code + at, got - at, &in, ops))) {
			snprintf(err, errlen, "cannot decode the instruction at +%llu",
				 (unsigned long long)at);
			free(code);
			return -EILSEQ;
		}
		at += in.length;
	}
	free(code);
	return at == off;
}
#endif
