// SPDX-License-Identifier: MIT
/*
 * ptxsplice: the PTX reader and splicer from the command line, to look at
 * what they do to a module (tests/ptx/run_gpu.sh uses it too).
 *
 *   ptxsplice -l IN.ptx                      list kernels, params, sites
 *   ptxsplice [-k NAME]... [-d DECLS] [-e ENTRY] [-x EXIT] [-t] [-m]
 *             [-V MAJ.MIN] IN.ptx > OUT.ptx   splice
 *
 * Build: gcc -std=gnu11 -I. tests/ptx/ptxsplice.c gpucode/ptx_*.c
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gpucode/ptx.h"

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *p = NULL;
	size_t n = 0, cap = 0, got;

	if (!f) {
		perror(path);
		exit(1);
	}
	do {
		if (n + 4096 + 1 > cap) {
			cap = (n + 4096 + 1) * 2;
			if (!(p = realloc(p, cap)))
				exit(1);
		}
		got = fread(p + n, 1, 4096, f);
		n += got;
	} while (got);
	fclose(f);
	p[n] = 0;
	if (len)
		*len = n;
	return p;
}

static void list(const struct ptx_module *m)
{
	static const char *kinds[] = { "ret", "exit", "end" };

	printf(".version %d.%d, .target %s\n", m->ver_major, m->ver_minor,
	       m->target);
	for (int i = 0; i < m->nfuncs; i++) {
		const struct ptx_func *f = &m->funcs[i];

		printf("%s %s%s%s\n", f->is_entry ? ".entry" : ".func",
		       f->name, f->is_def ? "" : " (declaration)",
		       f->referenced ? " (referenced)" : "");
		for (int j = 0; j < f->nparams; j++) {
			const struct ptx_param *p = &f->params[j];

			printf("  arg%d %s %s size %u align %u%s\n", j,
			       p->type, p->name, p->size, p->align,
			       p->kind == PTX_P_AGGREGATE ? " aggregate" :
			       p->is_ptr ? " .ptr" : "");
		}
		for (int j = 0; j < f->nsites; j++) {
			const struct ptx_site *s = &f->sites[j];
			int line = 1;

			for (size_t k = 0; k < s->op; k++)
				line += m->text[k] == '\n';
			printf("  %s at line %d%s\n", kinds[s->kind], line,
			       s->guard ? " (guarded)" : "");
		}
	}
}

int main(int argc, char **argv)
{
	struct ptx_splice_req req = { 0 };
	const char *names[64];
	int nnames = 0, opt, rc;
	bool do_list = false;
	struct ptx_module *m;
	char err[256], *text, *out;
	size_t len;

	while ((opt = getopt(argc, argv, "lk:d:e:x:tmV:")) != -1) {
		switch (opt) {
		case 'l': do_list = true; break;
		case 'k':
			if (nnames < 63)
				names[nnames++] = optarg;
			break;
		case 'd': req.decls = slurp(optarg, NULL); break;
		case 'e': req.entry = slurp(optarg, NULL); break;
		case 'x': req.exit = slurp(optarg, NULL); break;
		case 't': req.flags |= PTX_SPLICE_T0; break;
		case 'm': req.flags |= PTX_SPLICE_ONLY_MATCHED; break;
		case 'V':
			sscanf(optarg, "%d.%d", &req.min_major, &req.min_minor);
			break;
		default:
			fprintf(stderr, "usage: ptxsplice [-l] [-k NAME]... "
				"[-d F] [-e F] [-x F] [-t] [-m] [-V X.Y] IN\n");
			return 2;
		}
	}
	if (optind != argc - 1)
		return 2;
	names[nnames] = NULL;
	if (nnames)
		req.names = names;
	text = slurp(argv[optind], &len);
	if ((rc = ptx_parse(text, len, &m, err, sizeof(err)))) {
		fprintf(stderr, "%s: %s\n", argv[optind], err);
		return 1;
	}
	if (do_list) {
		list(m);
	} else if ((rc = ptx_splice(m, &req, &out, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s: %s\n", argv[optind], err);
		return 1;
	} else {
		fputs(out, stdout);
		fprintf(stderr, "%d kernels instrumented\n", rc);
		free(out);
	}
	ptx_free(m);
	free(text);
	free((char *)req.decls);
	free((char *)req.entry);
	free((char *)req.exit);
	return 0;
}
