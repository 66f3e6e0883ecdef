// SPDX-License-Identifier: MIT
/*
 * gpu:sample[:GLOB[:PERIOD]]: CUPTI's PC sampling, collected by the agent
 * inside the target (runtime/agent/agent_sample.c), which calls its
 * exported gputrace_sample(rec, stall) once per (kernel, instruction,
 * stall reason) with the samples counted since the last hand-over.  A
 * host probe: a uprobe on that function, like cuda:complete's, though it
 * is spelt under gpu: (it samples what the GPU runs).  GLOBs are matched
 * by the agent, which demangles; the record's `match` bit i says whether
 * sample GLOB i matched.  PERIOD is log2 of the cycles between samples
 * (5..31), one for the whole process.  docs/gpu-sample.md.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <asm/ptrace.h>

#include "compiler/program.h"
#include "gpucode/agent_proto.h"
#include "lang/ast.h"
#include "probes/elf_syms.h"
#include "probes/provider.h"
#include "runtime/agentctl.h"

#define R(f)	((int)offsetof(struct pt_regs, f))
#define SREC(f)	((int)offsetof(struct agent_sample_rec, f))
#define MAX_GLOBS 30	/* as cuda:complete's */

/* The sample GLOBs of one object, in the order of their bits. */
struct gs_shared {
	const char *globs[MAX_GLOBS];
	int nglobs;
	uint32_t period;	/* 0: not given */
};

struct gs_priv {
	const char *glob;	/* "*" for none */
	uint32_t period;	/* 0: the default */
	int bit;
	struct gs_shared *sh;
};

bool gpu_sample_probe(const char *text)
{
	return !strncmp(text, "gpu:sample", 10) &&
	       (!text[10] || text[10] == ':');
}

/* "GLOB[:PERIOD]": a last part after a single ':' that is a number. */
static int split(const char *rest, char **glob, uint32_t *period, char *err,
		 size_t errlen)
{
	const char *last = strrchr(rest, ':'), *s;
	size_t len = strlen(rest);
	char *end;
	long v;

	*period = 0;
	if (last && last > rest && last[-1] != ':' && last[1]) {
		for (s = last + 1; *s >= '0' && *s <= '9'; s++)
			;
		if (!*s) {
			v = strtol(last + 1, &end, 10);
			if (v < AGENT_SAMPLE_PERIOD_MIN ||
			    v > AGENT_SAMPLE_PERIOD_MAX)
				return provider_fail(err, errlen, NULL, 0,
						     "gpu:sample: PERIOD is log2 of the cycles between samples, %d to %d, not %s",
						     AGENT_SAMPLE_PERIOD_MIN,
						     AGENT_SAMPLE_PERIOD_MAX,
						     last + 1);
			*period = (uint32_t)v;
			len = last - rest;
		}
	}
	if (!len)
		return provider_fail(err, errlen, NULL, 0,
				     "gpu:sample: empty kernel name GLOB (gpu:sample, gpu:sample:GLOB or gpu:sample:GLOB:PERIOD)");
	*glob = ast_strndup(rest, len);
	return 0;
}

static int gs_parse(struct probe *p, char *err, size_t errlen, int *arg)
{
	const char *rest = p->name + 10;
	const struct syms_func *f;
	const struct syms *s;
	struct gs_priv *pv;
	bool ambiguous;
	char *glob = NULL, *found = NULL;
	const char *lib = provider_agent_lib;
	uint32_t period = 0;
	int ret;

	*arg = -1;
	if (*rest == ':') {
		*arg = p->nargs - 1;
		if (split(rest + 1, &glob, &period, err, errlen))
			return -EINVAL;
		*arg = -1;
	}
	/* the prompt after attach: the agent is injected once compiled */
	if (!lib && p->target_pid > 0)
		lib = found = agentctl_find_lib(NULL);
	if (!lib && (provider_target_cmd || p->target_pid > 0))
		return provider_fail(err, errlen, NULL, 0,
				     "gpu:sample: cannot find gputrace's agent library (libgputrace-agent.so next to the gputrace binary, or $GPUTRACE_AGENT_LIB)");
	if (!lib)
		return provider_fail(err, errlen, NULL, 0,
				     "gpu:sample needs a target (-c CMD, -p PID, or attach PID at the prompt): the samples are collected by gputrace's agent inside it");
	ret = syms_load(lib, &s, err, errlen) ? -EINVAL : 0;
	f = ret ? NULL : syms_lookup(s, AGENT_SAMPLE_SYM, &ambiguous);
	if (!ret && !f)
		ret = provider_fail(err, errlen, NULL, 0, "%s has no %s", lib,
				    AGENT_SAMPLE_SYM);
	if (ret) {
		free(found);
		return ret;
	}
	pv = ast_alloc(sizeof(*pv));
	memset(pv, 0, sizeof(*pv));
	pv->glob = glob ? glob : "*";
	pv->period = period;
	pv->bit = -1;
	p->priv = pv;
	p->path = ast_strndup(lib, strlen(lib));
	free(found);
	p->func = (char *)AGENT_SAMPLE_SYM;
	p->offset = f->offset;
	return 0;
}

/* The builtins read from the record (the first argument). */
static const struct {
	const char *name;
	int off;
	enum bsrc_kind kind;
} fields[] = {
	{ "kernel", SREC(kernel), BSRC_PTR_KEY },
	{ "pc", SREC(pc), BSRC_PTR_U64 },
	{ "samples", SREC(samples), BSRC_PTR_U64 },
	{ "gpu", SREC(gpu), BSRC_PTR_U32 },
};

static bool gs_has_builtin(const struct probe *p, const char *name)
{
	if (provider_host_builtin(name) || !strcmp(name, "stall"))
		return true;
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (!strcmp(name, fields[i].name))
			return true;
	return false;
}

static int gs_builtin_src(const struct probe *p, const char *name,
			  struct builtin_src *src)
{
	memset(src, 0, sizeof(*src));
	if (!strcmp(name, "stall")) {	/* the second argument */
		src->kind = BSRC_CTX_STR;
		src->off = R(rsi);
		return 0;
	}
	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
		if (strcmp(name, fields[i].name))
			continue;
		src->kind = fields[i].kind;
		src->off = R(rdi);
		src->ptr_off = fields[i].off;
		return 0;
	}
	return -ENOENT;
}

/* Only records whose kernel the clause's GLOB matched. */
static int gs_filter(const struct probe *p, struct probe_filter *f)
{
	const struct gs_priv *pv = p->priv;

	if (!pv || pv->bit < 0)
		return 0;
	f->user = true;
	f->off = R(rdi);
	f->val_off = SREC(match);
	f->bit = pv->bit;
	f->skip = -1;
	return 1;
}

static struct gs_shared *shared_of(struct gt_object *obj)
{
	struct gs_shared *sh;

	for (int i = 0; i < obj->nprogs; i++) {
		const struct probe *q = obj->progs[i].probe;
		const struct gs_priv *pv = q ? q->priv : NULL;

		if (q && q->prov == &provider_gpu_sample && pv && pv->sh)
			return pv->sh;
	}
	sh = ast_alloc(sizeof(*sh));
	memset(sh, 0, sizeof(*sh));
	return sh;
}

/* The clause's bit; one period for the process. */
static int gs_extras(struct probe *p, void *o, char *err, size_t errlen)
{
	struct gs_priv *pv = p->priv;
	struct gs_shared *sh = shared_of(o);
	int i;

	pv->sh = sh;
	if (pv->period && sh->period && pv->period != sh->period)
		return provider_fail(err, errlen, NULL, 0,
				     "one sampling period per process (%u and %u given)",
				     sh->period, pv->period);
	if (pv->period)
		sh->period = pv->period;
	for (i = 0; i < sh->nglobs; i++)
		if (!strcmp(sh->globs[i], pv->glob))
			break;
	if (i == sh->nglobs) {
		if (i == MAX_GLOBS)
			return provider_fail(err, errlen, NULL, 0,
					     "more than %d different gpu:sample GLOBs",
					     MAX_GLOBS);
		sh->globs[sh->nglobs++] = pv->glob;
	}
	pv->bit = i;
	return 0;
}

int gpu_sample_globs(const struct gt_object *obj, const char *const **globs,
		     uint32_t *period)
{
	for (int i = 0; i < obj->nprogs; i++) {
		const struct probe *q = obj->progs[i].probe;
		const struct gs_priv *pv = q ? q->priv : NULL;

		if (q && q->prov == &provider_gpu_sample && pv && pv->sh) {
			*globs = pv->sh->globs;
			*period = pv->sh->period ? pv->sh->period :
				  AGENT_SAMPLE_PERIOD_DEF;
			return pv->sh->nglobs;
		}
	}
	*globs = NULL;
	*period = 0;
	return 0;
}

const struct provider provider_gpu_sample = {
	.name = "gpu:sample",	/* found through gpu's name, by sema */
	.prog_type = BPF_PROG_TYPE_KPROBE,
	.parse = gs_parse,
	.has_builtin = gs_has_builtin,
	.builtin_src = gs_builtin_src,
	.extras = gs_extras,
	.filter = gs_filter,
	.pid_filter = false,
	.attach = uprobe_attach,
	.detach = uprobe_detach,
};
