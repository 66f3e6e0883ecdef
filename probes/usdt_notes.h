/* SPDX-License-Identifier: MIT */
/*
 * USDT probes of an ELF file: its .note.stapsdt notes (what <sys/sdt.h>
 * leaves in the binary) and their x86-64 argument specs.
 */
#ifndef GT_USDT_NOTES_H
#define GT_USDT_NOTES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define USDT_MAX_ARGS	12

enum usdt_arg_kind {
	USDT_ARG_REG,		/* the register's value */
	USDT_ARG_MEM,		/* memory at register + disp */
	USDT_ARG_IMM,		/* a constant */
};

struct usdt_arg {
	enum usdt_arg_kind kind;
	int size;		/* 1, 2, 4, 8 */
	bool sign;
	int reg_off;		/* offset of the register in struct pt_regs */
	int64_t val;		/* IMM: the value; MEM: the displacement */
};

struct usdt_site {
	char *provider, *name, *args;	/* args: the spec text */
	uint64_t offset;		/* file offset of the probe's nop */
	uint64_t sem_offset;		/* file offset of its semaphore, 0: none */
};

struct usdt_sites {
	struct usdt_site *v;
	size_t n;
};

/* Read PATH's USDT sites into *OUT (free with usdt_sites_free). */
int usdt_read(const char *path, struct usdt_sites *out, char *err,
	      size_t errlen);
void usdt_sites_free(struct usdt_sites *s);

/*
 * Parse an argument spec ("-4@%eax 8@-16(%rbp) 4@$5") into ARGS;
 * the count, or -EINVAL with the bad part named in ERR.
 */
int usdt_parse_args(const char *spec, struct usdt_arg *args, int max,
		    char *err, size_t errlen);

#endif
