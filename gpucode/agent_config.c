// SPDX-License-Identifier: MIT
/*
 * The agent's configuration file (gpucode/agent_proto.h): written
 * by the tracer, read by the agent's constructor inside the target.  Text
 * lines for the numbers, length-prefixed blobs for PTX and names, so the
 * file can be read with `less` and parsed without a tokenizer.  The
 * reader trusts nothing: every number is range-checked and every blob
 * bounded by the file's size.  docs/agent-protocol.md has the format.
 *
 * libc only: this file is linked into the agent as well as the tracer.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "gpucode/agent_proto.h"

#define CONFIG_MAGIC	"gputrace-agent-config"
#define CONFIG_VERSION	3
#define CONFIG_MAX	(256u << 20)	/* bytes: decls are the bulk */
#define MAX_MAPS	65536
#define MAX_CLAUSES	65536

/* ---------------------------------------------------------- writing -- */

static void put_blob(FILE *f, const char *name, const char *s)
{
	size_t n = s ? strlen(s) : 0;

	fprintf(f, "blob %s %zu\n", name, n);
	if (n)
		fwrite(s, 1, n, f);
	fputc('\n', f);
}

int agent_config_write(const struct agent_config *c, const char *path)
{
	FILE *f;
	int fd, err = 0;

	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	f = fdopen(fd, "w");
	if (!f) {
		err = -errno;
		close(fd);
		return err;
	}
	fprintf(f, "%s %d\n", CONFIG_MAGIC, CONFIG_VERSION);
	fprintf(f, "verbose %d\n", c->verbose ? 1 : 0);
	fprintf(f, "ptx %u %u\n", c->ptx_major, c->ptx_minor);
	fprintf(f, "rings %u %u\n", c->nrings, c->ring_bytes);
	fprintf(f, "maps %d\n", c->nmaps);
	for (int i = 0; i < c->nmaps; i++) {
		const struct devrt_map_desc *d = &c->maps[i];

		fprintf(f, "map %u %u %u %u %u %u %u %lld %lld %lld\n",
			d->kind, d->flags, d->key_size, d->value_size,
			d->nshards, d->capacity, d->nwords,
			(long long)d->lmin, (long long)d->lmax,
			(long long)d->lstep);
	}
	fprintf(f, "clauses %d\n", c->nclauses);
	for (int i = 0; i < c->nclauses; i++) {
		const struct agent_clause *cl = &c->clauses[i];

		fprintf(f, "clause %d %u %d\n", cl->id,
			(cl->warp ? 1u : 0u) | (cl->mem & 7u) << 1,
			cl->exit ? 1 : 0);
		put_blob(f, "glob", cl->glob);
		put_blob(f, "call", cl->call);
	}
	put_blob(f, "decls", c->decls);
	fprintf(f, "completes %d %d\n", c->ncompletes,
		c->complete_queued ? 1 : 0);
	for (int i = 0; i < c->ncompletes; i++)
		put_blob(f, "glob", c->completes[i]);
	fprintf(f, "samples %d %u\n", c->nsamples, c->sample_period);
	for (int i = 0; i < c->nsamples; i++)
		put_blob(f, "glob", c->samples[i]);
	fprintf(f, "reads %d\n", c->reads ? 1 : 0);
	put_blob(f, "timeline", c->timeline);
	if (c->nhprogs) {
		fprintf(f, "hmaps %d\n", c->nhmaps);
		for (int i = 0; i < c->nhmaps; i++) {
			const struct agent_hmap *m = &c->hmaps[i];

			fprintf(f, "hmap %u %u %u %u %d\n", m->role, m->devmap,
				m->key_size, m->value_size, m->bucket ? 1 : 0);
		}
		fprintf(f, "hprogs %d\n", c->nhprogs);
		for (int i = 0; i < c->nhprogs; i++) {
			const struct agent_hprog *p = &c->hprogs[i];

			fprintf(f, "hprog %u %u\n", p->entry, p->ninsns);
			for (uint32_t k = 0; k < p->ninsns; k++) {
				const struct bpf_insn *in = &p->insns[k];

				fprintf(f, "insn %u %u %u %d %d\n", in->code,
					in->dst_reg, in->src_reg, in->off,
					in->imm);
			}
		}
		fprintf(f, "hglobs %d\n", c->nhglobs);
		for (int i = 0; i < c->nhglobs; i++)
			put_blob(f, "glob", c->hglobs[i]);
	}
	fputs("end\n", f);
	if (fflush(f) || ferror(f))
		err = -(errno ? errno : EIO);
	if (fclose(f) && !err)
		err = -(errno ? errno : EIO);
	return err;
}

/* ---------------------------------------------------------- reading -- */

struct rd {
	const char *p, *end;
};

/* The next line, without its '\n', as [*S, *S + *N); -EINVAL at EOF. */
static int next_line(struct rd *r, const char **s, size_t *n)
{
	const char *nl = memchr(r->p, '\n', r->end - r->p);

	if (!nl)
		return -EINVAL;
	*s = r->p;
	*n = nl - r->p;
	r->p = nl + 1;
	return 0;
}

/*
 * Parse line "WORD n1 n2 ..." with exactly N signed numbers into V, each
 * within [LO, HI].  Only plain decimal, no spaces but single ones.
 */
static int numbers(struct rd *r, const char *word, int n, long long *v,
		   long long lo, long long hi)
{
	size_t len, wl = strlen(word);
	const char *s, *e;
	char buf[32];

	if (next_line(r, &s, &len))
		return -EINVAL;
	e = s + len;
	if (len < wl || memcmp(s, word, wl))
		return -EINVAL;
	s += wl;
	for (int i = 0; i < n; i++) {
		const char *t;
		size_t tl;
		char *stop;

		if (s == e || *s != ' ')
			return -EINVAL;
		t = ++s;
		while (s < e && *s != ' ')
			s++;
		tl = s - t;
		if (!tl || tl >= sizeof(buf))
			return -EINVAL;
		memcpy(buf, t, tl);
		buf[tl] = 0;
		if (!(buf[0] == '-' ? tl > 1 && buf[1] >= '0' && buf[1] <= '9' :
		      buf[0] >= '0' && buf[0] <= '9'))
			return -EINVAL;
		errno = 0;
		v[i] = strtoll(buf, &stop, 10);
		if (errno || *stop || v[i] < lo || v[i] > hi)
			return -EINVAL;
	}
	return s == e ? 0 : -EINVAL;
}

/* "blob NAME LEN\n" LEN bytes "\n" into a malloc'd string. */
static int blob(struct rd *r, const char *name, char **out)
{
	char word[64];
	long long n;
	char *s;

	snprintf(word, sizeof(word), "blob %s", name);
	if (numbers(r, word, 1, &n, 0, CONFIG_MAX))
		return -EINVAL;
	if ((size_t)(r->end - r->p) < (size_t)n + 1 || r->p[n] != '\n' ||
	    memchr(r->p, 0, n))
		return -EINVAL;
	s = malloc(n + 1);
	if (!s)
		return -ENOMEM;
	memcpy(s, r->p, n);
	s[n] = 0;
	r->p += n + 1;
	*out = s;
	return 0;
}

static int read_map(struct rd *r, struct devrt_map_desc *d)
{
	long long v[10];

	/* kind flags key value shards capacity nwords, then lhist bounds */
	if (numbers(r, "map", 10, v, LLONG_MIN, LLONG_MAX))
		return -EINVAL;
	for (int i = 0; i < 7; i++)
		if (v[i] < 0 || v[i] > 0xffffffffll)
			return -EINVAL;
	if (v[0] >= DEVRT_K_END_ || !v[4] || !v[5] || (v[5] & (v[5] - 1)))
		return -EINVAL;
	memset(d, 0, sizeof(*d));
	d->kind = v[0];
	d->flags = v[1];
	d->key_size = v[2];
	d->value_size = v[3];
	d->nshards = v[4];
	d->capacity = v[5];
	d->nwords = v[6];
	d->lmin = v[7];
	d->lmax = v[8];
	d->lstep = v[9];
	return 0;
}

/* The host programs and their maps (docs/hostpath.md). */
static int read_hprogs(struct rd *r, struct agent_config *c)
{
	long long v[5];

	if (numbers(r, "hmaps", 1, v, 1, MAX_MAPS))
		return -EINVAL;
	c->hmaps = calloc(v[0], sizeof(*c->hmaps));
	if (!c->hmaps)
		return -ENOMEM;
	for (long long n = v[0]; c->nhmaps < n; c->nhmaps++) {
		struct agent_hmap *m = &c->hmaps[c->nhmaps];

		if (numbers(r, "hmap", 5, v, 0, 0xffffffffll) ||
		    v[0] >= AGENT_HM_END_ || v[4] > 1 ||
		    (v[0] == AGENT_HM_AGG && v[1] >= c->nmaps) ||
		    v[2] > 4096 || v[3] > (1 << 20))
			return -EINVAL;
		m->role = v[0];
		m->devmap = v[1];
		m->key_size = v[2];
		m->value_size = v[3];
		m->bucket = v[4];
	}
	if (numbers(r, "hprogs", 1, v, 1, MAX_CLAUSES))
		return -EINVAL;
	c->hprogs = calloc(v[0], sizeof(*c->hprogs));
	if (!c->hprogs)
		return -ENOMEM;
	for (long long n = v[0]; c->nhprogs < n;) {
		struct agent_hprog *p = &c->hprogs[c->nhprogs];

		if (numbers(r, "hprog", 2, v, 0, AGENT_MAX_HINSNS) ||
		    v[0] >= AGENT_HE_END_ || !v[1])
			return -EINVAL;
		p->entry = v[0];
		p->insns = calloc(v[1], sizeof(*p->insns));
		if (!p->insns)
			return -ENOMEM;
		c->nhprogs++;	/* freed with the config from here on */
		for (long long k = 0; k < v[1]; k++) {
			long long w[5];
			struct bpf_insn *in = &p->insns[k];

			if (numbers(r, "insn", 5, w, INT32_MIN, INT32_MAX) ||
			    w[0] < 0 || w[0] > 255 || w[1] < 0 || w[1] > 15 ||
			    w[2] < 0 || w[2] > 15 || w[3] < INT16_MIN ||
			    w[3] > INT16_MAX)
				return -EINVAL;
			in->code = w[0];
			in->dst_reg = w[1];
			in->src_reg = w[2];
			in->off = w[3];
			in->imm = w[4];
			p->ninsns++;
		}
	}
	if (numbers(r, "hglobs", 1, v, 0, AGENT_MAX_HGLOBS))
		return -EINVAL;
	if (v[0] && !(c->hglobs = calloc(v[0], sizeof(*c->hglobs))))
		return -ENOMEM;
	for (long long n = v[0]; c->nhglobs < n; c->nhglobs++) {
		int err = blob(r, "glob", &c->hglobs[c->nhglobs]);

		if (err)
			return err;
	}
	return 0;
}

static int parse(struct rd *r, struct agent_config *c)
{
	long long v[10];
	int err;

	if (numbers(r, CONFIG_MAGIC, 1, v, 0, 1000) || v[0] != CONFIG_VERSION)
		return -EINVAL;
	if (numbers(r, "verbose", 1, v, 0, 1))
		return -EINVAL;
	c->verbose = v[0];
	if (numbers(r, "ptx", 2, v, 0, 99))
		return -EINVAL;
	c->ptx_major = v[0];
	c->ptx_minor = v[1];
	if (numbers(r, "rings", 2, v, 0, 1ll << 30))
		return -EINVAL;
	c->nrings = v[0];
	c->ring_bytes = v[1];
	if (c->ring_bytes & (c->ring_bytes - 1))
		return -EINVAL;		/* a power of two, or 0 */
	if (numbers(r, "maps", 1, v, 0, MAX_MAPS))
		return -EINVAL;
	if (v[0]) {
		c->maps = calloc(v[0], sizeof(*c->maps));
		if (!c->maps)
			return -ENOMEM;
	}
	for (c->nmaps = 0; c->nmaps < v[0]; c->nmaps++) {
		err = read_map(r, &c->maps[c->nmaps]);
		if (err)
			return err;
	}
	if (numbers(r, "clauses", 1, v, 0, MAX_CLAUSES))
		return -EINVAL;
	if (v[0]) {
		c->clauses = calloc(v[0], sizeof(*c->clauses));
		if (!c->clauses)
			return -ENOMEM;
	}
	for (long long n = v[0]; c->nclauses < n;) {
		struct agent_clause *cl = &c->clauses[c->nclauses];

		if (numbers(r, "clause", 3, v, 0, 0x7fffffff) || v[1] > 15 ||
		    v[2] > 1)
			return -EINVAL;
		cl->id = v[0];
		cl->warp = v[1] & 1;
		cl->mem = (unsigned)v[1] >> 1;
		cl->exit = v[2];
		c->nclauses++;	/* from here on, freed with the config */
		err = blob(r, "glob", &cl->glob);
		if (!err)
			err = blob(r, "call", &cl->call);
		if (err)
			return err;
	}
	err = blob(r, "decls", &c->decls);
	if (err)
		return err;
	if (numbers(r, "completes", 2, v, 0, AGENT_MAX_COMPLETES) || v[1] > 1)
		return -EINVAL;
	c->complete_queued = v[1];
	if (v[0] && !(c->completes = calloc(v[0], sizeof(*c->completes))))
		return -ENOMEM;
	for (long long n = v[0]; c->ncompletes < n; c->ncompletes++)
		if ((err = blob(r, "glob", &c->completes[c->ncompletes])))
			return err;
	if (numbers(r, "samples", 2, v, 0, AGENT_MAX_COMPLETES) ||
	    (v[0] && (v[1] < AGENT_SAMPLE_PERIOD_MIN ||
		      v[1] > AGENT_SAMPLE_PERIOD_MAX)) || (!v[0] && v[1]))
		return -EINVAL;
	c->sample_period = (uint32_t)v[1];
	if (v[0] && !(c->samples = calloc(v[0], sizeof(*c->samples))))
		return -ENOMEM;
	for (long long n = v[0]; c->nsamples < n; c->nsamples++)
		if ((err = blob(r, "glob", &c->samples[c->nsamples])))
			return err;
	if (numbers(r, "reads", 1, v, 0, 1))
		return -EINVAL;
	c->reads = v[0];
	if ((err = blob(r, "timeline", &c->timeline)))
		return err;
	if (!*c->timeline) {	/* none */
		free(c->timeline);
		c->timeline = NULL;
	}
	/* host programs: optional (a config without any ends here) */
	if (r->end - r->p > 6 && !memcmp(r->p, "hmaps ", 6)) {
		err = read_hprogs(r, c);
		if (err)
			return err;
	}
	return numbers(r, "end", 0, v, 0, 0) || r->p != r->end ? -EINVAL : 0;
}

int agent_config_read(const char *path, struct agent_config *c)
{
	struct stat st;
	struct rd r;
	char *buf;
	ssize_t got = 0;
	int fd, err;

	memset(c, 0, sizeof(*c));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > CONFIG_MAX) {
		close(fd);
		return -EINVAL;
	}
	buf = malloc(st.st_size + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (got < st.st_size) {
		ssize_t n = read(fd, buf + got, st.st_size - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += n;
	}
	close(fd);
	r.p = buf;
	r.end = buf + got;
	err = got == st.st_size ? parse(&r, c) : -EIO;
	free(buf);
	if (err)
		agent_config_free(c);
	return err;
}

void agent_config_free(struct agent_config *c)
{
	for (int i = 0; i < c->nclauses; i++) {
		free(c->clauses[i].glob);
		free(c->clauses[i].call);
	}
	free(c->clauses);
	for (int i = 0; i < c->ncompletes; i++)
		free(c->completes[i]);
	free(c->completes);
	for (int i = 0; i < c->nsamples; i++)
		free(c->samples[i]);
	free(c->samples);
	free(c->maps);
	free(c->decls);
	free(c->timeline);
	for (int i = 0; i < c->nhprogs; i++)
		free(c->hprogs[i].insns);
	free(c->hprogs);
	free(c->hmaps);
	for (int i = 0; i < c->nhglobs; i++)
		free(c->hglobs[i]);
	free(c->hglobs);
	memset(c, 0, sizeof(*c));
}
