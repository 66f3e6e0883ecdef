// SPDX-License-Identifier: MIT
/*
 * The agent's pure helpers: kernel names, PTX scans the splicer does not
 * do, `extra` launch buffers, monotonic waits.  No CUDA, no globals, so
 * tests/unit/test_agent_util.c checks them on any machine.
 */
#ifdef GT_AGENT_SO
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "runtime/agent/agent_priv.h"

void agent_cond_init_mono(pthread_cond_t *c)
{
	pthread_condattr_t a;

	pthread_condattr_init(&a);
	pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
	pthread_cond_init(c, &a);
	pthread_condattr_destroy(&a);
}

struct timespec agent_deadline(long ms)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += ms % 1000 * 1000000;
	if (t.tv_nsec >= 1000000000) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000;
	}
	return t;
}

/* CLOCK_MONOTONIC in ns: ktime for host clauses, the launch profile. */
uint64_t agent_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The same in ms: the agent's periods and bounded waits. */
uint64_t agent_now_ms(void)
{
	return agent_now_ns() / 1000000;
}

static bool is_id(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	       (c >= '0' && c <= '9') || c == '_' || c == '$';
}

char *agent_simple_name(const char *m)
{
	size_t n = 0;
	const char *p = m + 2;

	if (strncmp(m, "_Z", 2) || *p < '1' || *p > '9')
		return NULL;
	while (*p >= '0' && *p <= '9' && n < 4096)
		n = n * 10 + (size_t)(*p++ - '0');
	if (strnlen(p, n) < n)
		return NULL;
	/* a template's arguments follow as I...E: not a simple name */
	if (p[n] == 'I')
		return NULL;
	return strndup(p, n);
}

char *agent_base_name(const char *s)
{
	size_t n = strlen(s), start = 0;
	int depth = 0;

	/* the parameter list: the parenthesis group that ends the name */
	if (n && s[n - 1] == ')') {
		size_t i = n;

		while (i > 0) {
			char c = s[--i];

			if (c == ')')
				depth++;
			else if (c == '(' && --depth == 0)
				break;
		}
		if (depth == 0 && i > 0)
			n = i;
	}
	/* a return type: the last space outside <> and () */
	depth = 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (c == '<' || c == '(')
			depth++;
		else if ((c == '>' || c == ')') && depth > 0)
			depth--;
		else if (c == ' ' && depth == 0)
			start = i + 1;
	}
	return strndup(s + start, n - start);
}


const char *agent_ptx_next_entry(const char *p, const char *end,
				 size_t *idlen)
{
	while ((p = memmem(p, (size_t)(end - p), ".entry", 6))) {
		const char *q = p + 6, *id;

		while (q < end && (*q == ' ' || *q == '\t' || *q == '\n' ||
				   *q == '\r'))
			q++;
		for (id = q; q < end && is_id((unsigned char)*q); q++)
			;
		p = q;
		if (q > id) {
			*idlen = (size_t)(q - id);
			return id;
		}
	}
	return NULL;
}

bool agent_ptx_has_entry(const char *ptx, size_t len, const char *name)
{
	size_t nl = strlen(name), n;
	const char *p = ptx, *end = ptx + len;

	while ((p = agent_ptx_next_entry(p, end, &n))) {
		if (n == nl && !memcmp(p, name, nl))
			return true;
		p += n;
	}
	return false;
}

unsigned agent_ptx_target(const char *ptx, size_t len, char *variant)
{
	const char *p = memmem(ptx, len, ".target", 7), *end = ptx + len;
	unsigned sm = 0;

	*variant = 0;
	if (!p)
		return 0;
	p += 7;
	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	if (end - p < 4 || memcmp(p, "sm_", 3))
		return 0;
	for (p += 3; p < end && *p >= '0' && *p <= '9'; p++)
		sm = sm * 10 + (unsigned)(*p - '0');
	if (p < end && (*p == 'a' || *p == 'f'))
		*variant = *p;
	return sm;
}

/* ---- module-scope variables ---- */

struct names {
	char **v;
	size_t n, cap;
};

static int names_add(struct names *s, const char *p, size_t n)
{
	char *d;

	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 16;
		char **v = realloc(s->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		s->v = v;
		s->cap = cap;
	}
	d = strndup(p, n);
	if (!d)
		return -ENOMEM;
	s->v[s->n++] = d;
	return 0;
}

static const char *names_find(const struct names *s, const char *p, size_t n)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strncmp(s->v[i], p, n) && !s->v[i][n])
			return s->v[i];
	return NULL;
}

static void names_free(struct names *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
}

/*
 * Call FN on each identifier of TEXT[a, b) outside comments and strings
 * (not registers %x, not directives .x).  Stops when FN returns nonzero.
 */
static int scan_ids(const char *t, size_t a, size_t b,
		    int (*fn)(const char *p, size_t n, void *arg), void *arg)
{
	size_t i = a;

	while (i < b) {
		char c = t[i];

		if (c == '/' && i + 1 < b && t[i + 1] == '/') {
			while (i < b && t[i] != '\n')
				i++;
		} else if (c == '/' && i + 1 < b && t[i + 1] == '*') {
			i += 2;
			while (i + 1 < b && !(t[i] == '*' && t[i + 1] == '/'))
				i++;
			i += 2;
		} else if (c == '"') {
			i++;
			while (i < b && t[i] != '"')
				i += t[i] == '\\' ? 2 : 1;
			i++;
		} else if (c == '%' || c == '.' || (c >= '0' && c <= '9')) {
			/* a register, directive or number: skip it whole */
			i++;
			while (i < b && is_id((unsigned char)t[i]))
				i++;
		} else if (is_id((unsigned char)c)) {
			size_t s = i;
			int r;

			while (i < b && is_id((unsigned char)t[i]))
				i++;
			if ((r = fn(t + s, i - s, arg)))
				return r;
		} else {
			i++;
		}
	}
	return 0;
}

/* Module-scope statements: [a, b) ranges between functions. */
static int collect_vars(const struct ptx_module *m, struct names *vars)
{
	size_t pos = 0;

	for (int k = 0; k <= m->nfuncs; k++) {
		size_t end = k < m->nfuncs ? m->funcs[k].start : m->len;
		const char *t = m->text;
		size_t i = pos;

		while (i < end) {
			const char *d = memmem(t + i, end - i, ".global", 7);
			const char *c = memmem(t + i, end - i, ".const", 6);
			size_t j, stop;

			if (c && (!d || c < d))
				d = c;
			if (!d)
				break;
			j = (size_t)(d - t) + (d[1] == 'g' ? 7 : 6);
			if (j < end && is_id((unsigned char)t[j])) {
				i = j;	/* .globalXYZ: not the directive */
				continue;
			}
			stop = j;
			while (stop < end && t[stop] != ';')
				stop++;
			/* the name: first identifier after the directive */
			while (j < stop) {
				if (t[j] == '.' || (t[j] >= '0' && t[j] <= '9')) {
					j++;
					while (j < stop && is_id((unsigned char)t[j]))
						j++;
				} else if (is_id((unsigned char)t[j])) {
					size_t s = j;

					while (j < stop && is_id((unsigned char)t[j]))
						j++;
					if (names_add(vars, t + s, j - s))
						return -ENOMEM;
					break;
				} else {
					j++;
				}
			}
			i = stop + 1;
		}
		if (k < m->nfuncs)
			pos = m->funcs[k].end;
	}
	return 0;
}

struct use_scan {
	const struct ptx_module *m;
	const struct names *vars;
	bool *seen;		/* per function: queued */
	int *queue;
	int nq;
	const char *hit;
};

static int use_id(const char *p, size_t n, void *arg)
{
	struct use_scan *u = arg;
	const char *v;

	if (n >= 4 && !strncmp(p, "$str", 4))
		return 0;
	if ((v = names_find(u->vars, p, n))) {
		u->hit = v;
		return 1;
	}
	for (int k = 0; k < u->m->nfuncs; k++) {
		const struct ptx_func *f = &u->m->funcs[k];

		if (!u->seen[k] && f->is_def && !f->is_entry &&
		    !strncmp(f->name, p, n) && !f->name[n]) {
			u->seen[k] = true;
			u->queue[u->nq++] = k;
		}
	}
	return 0;
}

const char *agent_ptx_module_var(const struct ptx_module *m,
				 const struct ptx_func *f, char *name,
				 size_t namelen)
{
	struct names vars = { 0 };
	struct use_scan u = { .m = m, .vars = &vars };
	const char *ret = NULL;

	if (collect_vars(m, &vars) || !vars.n || !f->is_def)
		goto out;
	u.seen = calloc((size_t)m->nfuncs + 1, sizeof(*u.seen));
	u.queue = calloc((size_t)m->nfuncs + 1, sizeof(*u.queue));
	if (!u.seen || !u.queue)
		goto out;
	scan_ids(m->text, f->body_open, f->body_close, use_id, &u);
	for (int q = 0; !u.hit && q < u.nq; q++) {
		const struct ptx_func *g = &m->funcs[u.queue[q]];

		scan_ids(m->text, g->body_open, g->body_close, use_id, &u);
	}
	if (u.hit && namelen) {
		size_t n = strlen(u.hit);

		if (n >= namelen)
			n = namelen - 1;
		memcpy(name, u.hit, n);
		name[n] = '\0';
		ret = name;
	}
out:
	free(u.seen);
	free(u.queue);
	names_free(&vars);
	return ret;
}

/* ---- `extra` launches ---- */

#define XP_END		((void *)0)	/* CU_LAUNCH_PARAM_END */
#define XP_BUFFER	((void *)1)	/* CU_LAUNCH_PARAM_BUFFER_POINTER */
#define XP_SIZE		((void *)2)	/* CU_LAUNCH_PARAM_BUFFER_SIZE */

_Static_assert(sizeof(struct agent_launch_param) == PTX_CTX_BYTES &&
	       DEVRT_PWORDS * 8 == PTX_CTX_BYTES, "launch parameter size");

int agent_extra_build(void **extra, const void *param, size_t off,
		      void *buf, size_t cap, size_t *size, void *out[5])
{
	const void *src = NULL;
	const size_t *srcsize = NULL;
	size_t n;

	for (int i = 0; extra[i] != XP_END; i += 2) {
		if (i >= 16)
			return -EINVAL;
		if (extra[i] == XP_BUFFER)
			src = extra[i + 1];
		else if (extra[i] == XP_SIZE)
			srcsize = extra[i + 1];
		else
			return -EINVAL;
	}
	if (!src || !srcsize)
		return -EINVAL;
	if (off + sizeof(struct agent_launch_param) > cap)
		return -E2BIG;
	/* bytes past the last parameter are padding: ours go there */
	n = *srcsize < off ? *srcsize : off;
	memcpy(buf, src, n);
	memset((char *)buf + n, 0, off - n);
	memcpy((char *)buf + off, param, sizeof(struct agent_launch_param));
	*size = off + sizeof(struct agent_launch_param);
	out[0] = XP_BUFFER;
	out[1] = buf;
	out[2] = XP_SIZE;
	out[3] = size;
	out[4] = XP_END;
	return 0;
}

/* OPT is NAME or starts with NAME followed by '=' */
static bool nvrtc_opt_is(const char *opt, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(opt, name, n) && (!opt[n] || opt[n] == '=');
}

const char *agent_nvrtc_lineinfo_arch(int n, const char *const *opts)
{
	static const char *const keep[] = {
		"-lineinfo", "--generate-line-info", "-G", "--device-debug",
		"-dlto", "--dlink-time-opt", "-optix-ir", "--optix-ir",
	};
	const char *arch = NULL, *v;

	if (n < 0 || (n > 0 && !opts))
		return NULL;
	for (int i = 0; i < n; i++) {
		if (!opts[i])
			return NULL;
		for (size_t k = 0; k < sizeof(keep) / sizeof(keep[0]); k++)
			if (nvrtc_opt_is(opts[i], keep[k]))
				return NULL;
		v = NULL;
		if (!strncmp(opts[i], "-arch=", 6))
			v = opts[i] + 6;
		else if (!strncmp(opts[i], "--gpu-architecture=", 19))
			v = opts[i] + 19;
		else if ((!strcmp(opts[i], "-arch") ||
			  !strcmp(opts[i], "--gpu-architecture")) && i + 1 < n)
			v = opts[++i];
		if (v)
			arch = v;	/* the last one counts */
	}
	return arch && !strncmp(arch, "sm_", 3) ? arch : NULL;
}

#endif /* GT_AGENT_SO */
