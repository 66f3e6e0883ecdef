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
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "probes/insn_check.h"
#include "runtime/zydis_load.h"

#ifndef GT_HAVE_ZYDIS
int insn_boundary(const char *path, uint64_t foff, uint64_t size,
		  uint64_t off, char *err, size_t errlen)
{
	snprintf(err, errlen, "built without Zydis (libzydis-dev)");
	return -ENOSYS;
}
#else
#include <Zydis/Zydis.h>

static struct zydis zy;
static int zy_state;		/* 0 not tried, 1 ready, <0 failed */
static char zy_err[160];

static int zydis_ready(char *err, size_t errlen)
{
	char exe[PATH_MAX];
	ssize_t n;

	if (!zy_state) {
		/* a copy next to the binary first */
		n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
		if (n > 0)
			exe[n] = 0;
		zy_state = zydis_load(&zy, n > 0 ? exe : NULL, "gputrace",
				      zy_err, sizeof(zy_err));
		if (!zy_state)
			zy_state = 1;
	}
	if (zy_state < 0)
		snprintf(err, errlen, "%s", zy_err);
	return zy_state < 0 ? zy_state : 0;
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
