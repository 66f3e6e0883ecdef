/* SPDX-License-Identifier: MIT */
/*
 * printf-style formats as bpftrace 0.17 accepts and renders them: checked
 * at compile time against the argument types, rendered in user space from
 * the raw argument values that the probe sent.
 */
#ifndef GT_FMT_H
#define GT_FMT_H

#include <stddef.h>
#include <stdint.h>

enum fmt_argty {
	FMT_INT,	/* signed 64-bit integer */
	FMT_UINT,	/* unsigned 64-bit integer */
	FMT_STR,	/* NUL-terminated string (at most 64 bytes in a probe) */
	FMT_BUF,	/* buf(): s holds i bytes, printed by %r */
};

struct fmt_arg {
	enum fmt_argty type;
	int64_t i;
	const char *s;
};

/*
 * Check FMT for NARGS arguments of TYPES.  0 if fine; else -EINVAL with a
 * message in ERR (bpftrace's wording where it has one) and *ERR_OFF the
 * byte offset in FMT of the offending conversion (or -1 for a count
 * mismatch).
 */
int fmt_check(const char *fmt, const enum fmt_argty *types, int nargs,
	      char *err, size_t errlen, int *err_off);

/* Render FMT with ARGS into a malloc'd string (*OUT), returning its length. */
int fmt_render(const char *fmt, const struct fmt_arg *args, int nargs, char **out);

/*
 * time(FMT): strftime of the current local time, bpftrace's default
 * "%H:%M:%S\n" when FMT is NULL.  Caller frees.
 */
char *fmt_time(const char *fmt);

/*
 * strftime(FMT, NS) as bpftrace 0.17 shows it: NS is a bpf_ktime_get_ns()
 * time (nsecs), put on the wall clock by the boot time, local time.
 * Into BUF; "" when strftime gives nothing.
 */
void fmt_strftime(const char *fmt, uint64_t ns, char *buf, size_t len);

/* buf() contents as %r prints them: printable bytes, else \xNN.  Caller frees. */
char *fmt_buffer(const void *p, size_t n);

/*
 * Additions.  Widths and precisions above FMT_MAX_WIDTH are refused by
 * fmt_check (bpftrace would print a billion spaces) and clamped by
 * fmt_render.  time()'s output is at most FMT_TIME_MAX - 1 bytes, as in
 * bpftrace; fmt_time returns NULL (errno ERANGE) when strftime yields
 * nothing, which the caller reports as bpftrace does: "strftime
 * returned 0".
 */
#define FMT_MAX_WIDTH	4096
#define FMT_TIME_MAX	64

#endif
