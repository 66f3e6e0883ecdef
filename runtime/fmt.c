// SPDX-License-Identifier: MIT
/*
 * printf formats, bpftrace 0.17 style.  A conversion is what bpftrace's
 * token regex accepts: '%', an optional '-', width digits (a leading 0 is
 * the zero flag), an optional '.' and precision digits, then one of
 * s, r, c or [hh|h|l|ll|j|z|t][d|u|o|x|X|p].  Anything else that looks
 * like a C conversion ("%i", "%+d", "%ls") is rejected by fmt_check,
 * which bpftrace does not do (it passes it on to the C library, where it
 * may read an argument that is not there).  See docs/printf.md.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/fmt.h"

enum spec_kind {
	SPEC_LITERAL,	/* a '%' that starts nothing: copied as is */
	SPEC_PERCENT,	/* "%%" */
	SPEC_CONV,	/* a conversion bpftrace accepts */
	SPEC_BAD,	/* looks like a C conversion, bpftrace has no such */
};

struct fmt_spec {
	enum spec_kind kind;
	size_t len;		/* bytes of FMT it spans, from the '%' */
	int left;		/* '-' */
	int zero;		/* width written with a leading 0 */
	int width;		/* -1: none */
	int prec;		/* -1: none */
	char lenmod[3];		/* "", "hh", "h", "l", "ll", "j", "z", "t" */
	char conv;
};

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* Digits at *P as an int, saturating so that "%99999999999d" is caught. */
static int parse_num(const char **p)
{
	long v = 0;

	while (is_digit(**p)) {
		if (v <= INT_MAX)
			v = v * 10 + (**p - '0');
		(*p)++;
	}
	return v > INT_MAX ? INT_MAX : (int)v;
}

static const char *parse_lenmod(const char *p, char *out)
{
	static const char *const mods[] = { "hh", "h", "ll", "l", "j", "z", "t" };
	size_t i, n;

	out[0] = '\0';
	for (i = 0; i < sizeof(mods) / sizeof(mods[0]); i++) {
		n = strlen(mods[i]);
		if (!strncmp(p, mods[i], n)) {
			memcpy(out, mods[i], n + 1);
			return p + n;
		}
	}
	return p;
}

/* Spell of a C conversion: flags, width, precision, length, a letter. */
static size_t c_conv_len(const char *f)
{
	const char *p = f + 1;

	while (*p && strchr("-+ #0", *p))
		p++;
	if (*p == '*')
		p++;
	while (is_digit(*p))
		p++;
	if (*p == '.') {
		p++;
		if (*p == '*')
			p++;
		while (is_digit(*p))
			p++;
	}
	while (*p && strchr("hlLqjzt", *p))
		p++;
	return is_alpha(*p) ? (size_t)(p + 1 - f) : 0;
}

/* Classify the '%' at F. */
static void parse_spec(const char *f, struct fmt_spec *sp)
{
	const char *p = f + 1;
	size_t n;

	memset(sp, 0, sizeof(*sp));
	sp->width = -1;
	sp->prec = -1;
	sp->kind = SPEC_LITERAL;
	sp->len = 1;

	if (*p == '%') {
		sp->kind = SPEC_PERCENT;
		sp->len = 2;
		return;
	}
	if (*p == '-') {
		sp->left = 1;
		p++;
	}
	if (*p == '0')
		sp->zero = 1;
	if (is_digit(*p))
		sp->width = parse_num(&p);
	if (*p == '.' && is_digit(p[1])) {
		p++;
		sp->prec = parse_num(&p);
	}
	p = parse_lenmod(p, sp->lenmod);
	if (*p && ((!sp->lenmod[0] && strchr("src", *p)) ||
		   strchr("duoxXp", *p))) {
		sp->conv = *p;
		sp->kind = SPEC_CONV;
		sp->len = p + 1 - f;
		return;
	}
	n = c_conv_len(f);
	if (n) {
		sp->kind = SPEC_BAD;
		sp->len = n;
	}
}

static const char *argty_name(enum fmt_argty t)
{
	return t == FMT_STR ? "string" : t == FMT_BUF ? "buffer" : "integer";
}

static const char *conv_want(char conv)
{
	if (conv == 's')
		return "string";
	if (conv == 'r')
		return "buffer";
	return "integer";
}

static int conv_accepts(char conv, enum fmt_argty t)
{
	if (conv == 's')
		return t == FMT_STR;
	if (conv == 'r')
		return t == FMT_BUF;
	return t == FMT_INT || t == FMT_UINT;
}

static int fail(char *err, size_t errlen, int *err_off, int off,
		const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int fail(char *err, size_t errlen, int *err_off, int off,
		const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	if (err_off)
		*err_off = off;
	return -EINVAL;
}

#define MAX_CONVS 64

int fmt_check(const char *fmt, const enum fmt_argty *types, int nargs,
	      char *err, size_t errlen, int *err_off)
{
	struct fmt_spec sp;
	int offs[MAX_CONVS];
	char tok[MAX_CONVS][4];
	int nconv = 0;
	size_t i;

	if (err && errlen)
		err[0] = '\0';
	if (err_off)
		*err_off = -1;
	/* Syntax first: "%i" is better reported as such than as a count. */
	for (i = 0; fmt[i]; i += sp.len) {
		if (fmt[i] != '%') {
			sp.len = 1;
			continue;
		}
		parse_spec(fmt + i, &sp);
		if (sp.kind == SPEC_BAD)
			return fail(err, errlen, err_off, (int)i,
				    "printf: Unknown format string token: %.*s",
				    (int)sp.len, fmt + i);
		if (sp.kind != SPEC_CONV)
			continue;
		if (sp.width > FMT_MAX_WIDTH || sp.prec > FMT_MAX_WIDTH)
			return fail(err, errlen, err_off, (int)i,
				    "printf: width or precision too large in %.*s (at most %d)",
				    (int)sp.len, fmt + i, FMT_MAX_WIDTH);
		if (nconv == MAX_CONVS)
			return fail(err, errlen, err_off, (int)i,
				    "printf: too many conversions (at most %d)",
				    MAX_CONVS);
		offs[nconv] = (int)i;
		snprintf(tok[nconv], sizeof(tok[0]), "%s%c", sp.lenmod,
			 sp.conv);
		nconv++;
	}
	if (nargs < nconv)
		return fail(err, errlen, err_off, -1,
			    "printf: Not enough arguments for format string (%d supplied, %d expected)",
			    nargs, nconv);
	if (nargs > nconv)
		return fail(err, errlen, err_off, -1,
			    "printf: Too many arguments for format string (%d supplied, %d expected)",
			    nargs, nconv);
	for (int a = 0; a < nargs; a++) {
		char conv = tok[a][strlen(tok[a]) - 1];

		if (!conv_accepts(conv, types[a]))
			return fail(err, errlen, err_off, offs[a],
				    "printf: %%%s specifier expects a value of type %s (%s supplied)",
				    tok[a], conv_want(conv),
				    argty_name(types[a]));
	}
	return 0;
}

/* A growing output string; ERR sticks once an allocation fails. */
struct sbuf {
	char *p;
	size_t len, cap;
	int err;
};

static int sb_grow(struct sbuf *sb, size_t more)
{
	size_t cap;
	char *p;

	if (sb->err)
		return -1;
	if (sb->len + more + 1 <= sb->cap)
		return 0;
	cap = sb->cap ? sb->cap : 64;
	while (cap < sb->len + more + 1)
		cap *= 2;
	p = realloc(sb->p, cap);
	if (!p) {
		sb->err = -ENOMEM;
		return -1;
	}
	sb->p = p;
	sb->cap = cap;
	return 0;
}

static void sb_put(struct sbuf *sb, const char *s, size_t n)
{
	if (sb_grow(sb, n))
		return;
	memcpy(sb->p + sb->len, s, n);
	sb->len += n;
	sb->p[sb->len] = '\0';
}

static void sb_printf(struct sbuf *sb, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void sb_printf(struct sbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		sb->err = -EINVAL;
		return;
	}
	if (sb_grow(sb, n))
		return;
	va_start(ap, fmt);
	vsnprintf(sb->p + sb->len, n + 1, fmt, ap);
	va_end(ap);
	sb->len += n;
}

static int clamp(int v)
{
	return v > FMT_MAX_WIDTH ? FMT_MAX_WIDTH : v;
}

/*
 * The C spec for SP with length modifier MOD and conversion CONV: only
 * the parts we parsed, so nothing of the user's text reaches snprintf.
 */
static void c_spec(const struct fmt_spec *sp, const char *mod, char conv,
		   char *out, size_t outlen)
{
	char w[16] = "", p[16] = "";

	if (sp->width >= 0)
		snprintf(w, sizeof(w), "%d", clamp(sp->width));
	if (sp->prec >= 0)
		snprintf(p, sizeof(p), ".%d", clamp(sp->prec));
	snprintf(out, outlen, "%%%s%s%s%s%s%c", sp->left ? "-" : "",
		 sp->zero ? "0" : "", w, p, mod, conv);
}

/*
 * bpftrace hands the 64-bit value to snprintf with the user's length
 * modifier, so "%d" and "%x" see the low 32 bits, "%hhd" a char.  Do
 * the same narrowing here, then print at 64 bits.
 */
static void render_int(struct sbuf *sb, const struct fmt_spec *sp,
		       int64_t v)
{
	const char *m = sp->lenmod;
	int is_signed = sp->conv == 'd';
	char cs[48];

	if (sp->conv == 'p') {
		c_spec(sp, "", 'p', cs, sizeof(cs));
		sb_printf(sb, cs, (void *)(uintptr_t)(uint64_t)v);
		return;
	}
	if (sp->conv == 'c') {
		size_t start = sb->len;

		c_spec(sp, "", 'c', cs, sizeof(cs));
		sb_printf(sb, cs, (int)(unsigned char)v);
		/* bpftrace keeps C strings: a NUL char ends this piece. */
		if (!sb->err)
			sb->len = start + strlen(sb->p + start);
		return;
	}
	if (!m[0])
		v = is_signed ? (int64_t)(int32_t)v : (int64_t)(uint32_t)v;
	else if (!strcmp(m, "h"))
		v = is_signed ? (int64_t)(int16_t)v : (int64_t)(uint16_t)v;
	else if (!strcmp(m, "hh"))
		v = is_signed ? (int64_t)(int8_t)v : (int64_t)(uint8_t)v;
	c_spec(sp, "ll", sp->conv, cs, sizeof(cs));
	if (is_signed)
		sb_printf(sb, cs, (long long)v);
	else
		sb_printf(sb, cs, (unsigned long long)(uint64_t)v);
}

static void render_conv(struct sbuf *sb, const struct fmt_spec *sp,
			const struct fmt_arg *a)
{
	char cs[48];

	if (a->type == FMT_BUF) {
		char *t = fmt_buffer(a->s, (size_t)a->i);

		c_spec(sp, "", 's', cs, sizeof(cs));
		sb_printf(sb, cs, t ? t : "");
		free(t);
		return;
	}
	/* Mismatches (fmt_check was not run) print the value as it is. */
	if (a->type == FMT_STR) {
		struct fmt_spec s = *sp;

		if (sp->conv != 's')
			s.prec = -1;
		c_spec(&s, "", 's', cs, sizeof(cs));
		sb_printf(sb, cs, a->s ? a->s : "");
	} else if (sp->conv == 's' || sp->conv == 'r') {
		c_spec(sp, "ll", 'd', cs, sizeof(cs));
		if (a->type == FMT_UINT)
			cs[strlen(cs) - 1] = 'u';
		sb_printf(sb, cs, (long long)a->i);
	} else {
		render_int(sb, sp, a->i);
	}
}

int fmt_render(const char *fmt, const struct fmt_arg *args, int nargs,
	       char **out)
{
	struct sbuf sb = { 0 };
	struct fmt_spec sp;
	size_t i = 0, lit;
	int next = 0;

	*out = NULL;
	sb_put(&sb, "", 0);
	while (fmt[i]) {
		lit = strcspn(fmt + i, "%");
		sb_put(&sb, fmt + i, lit);
		i += lit;
		if (!fmt[i])
			break;
		parse_spec(fmt + i, &sp);
		if (sp.kind == SPEC_PERCENT)
			sb_put(&sb, "%", 1);
		else if (sp.kind == SPEC_CONV && next < nargs)
			render_conv(&sb, &sp, &args[next++]);
		else
			sb_put(&sb, fmt + i, sp.len);
		i += sp.len;
	}
	if (sb.err || sb.len > INT_MAX) {
		free(sb.p);
		return sb.err ? sb.err : -EOVERFLOW;
	}
	*out = sb.p;
	return (int)sb.len;
}

char *fmt_time(const char *fmt)
{
	char buf[FMT_TIME_MAX];
	struct timespec ts;
	struct tm tm;
	size_t n;
	char *s;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (!localtime_r(&ts.tv_sec, &tm))
		return NULL;
	n = strftime(buf, sizeof(buf), fmt ? fmt : "%H:%M:%S\n", &tm);
	if (!n) {
		errno = ERANGE;
		return NULL;
	}
	s = malloc(n + 1);
	if (!s)
		return NULL;
	memcpy(s, buf, n + 1);
	return s;
}

void fmt_strftime(const char *fmt, uint64_t ns, char *buf, size_t len)
{
	static struct timespec boot;	/* wall clock at boot */
	struct timespec real, mono;
	struct tm tm;
	time_t secs;

	if (!boot.tv_sec) {
		/* nsecs is CLOCK_MONOTONIC; bpftrace 0.17 counts from boot */
		clock_gettime(CLOCK_REALTIME, &real);
		clock_gettime(CLOCK_MONOTONIC, &mono);
		boot.tv_sec = real.tv_sec - mono.tv_sec;
		boot.tv_nsec = real.tv_nsec - mono.tv_nsec;
		if (boot.tv_nsec < 0) {
			boot.tv_sec--;
			boot.tv_nsec += 1000000000L;
		}
	}
	secs = boot.tv_sec + (time_t)((ns + (uint64_t)boot.tv_nsec) / 1000000000ULL);
	buf[0] = 0;
	if (localtime_r(&secs, &tm) && !strftime(buf, len, fmt, &tm))
		buf[0] = 0;
}

char *fmt_buffer(const void *p, size_t n)
{
	const unsigned char *b = p;
	char *out = malloc(4 * n + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (b[i] >= 32 && b[i] <= 126)
			*o++ = (char)b[i];
		else
			o += sprintf(o, "\\x%02x", b[i]);
	}
	*o = 0;
	return out;
}
