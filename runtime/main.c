// SPDX-License-Identifier: MIT
/* gputrace: the command line. */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <langinfo.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/capability.h>
#include <sys/syscall.h>

#include "compiler/bpf_disasm.h"
#include "compiler/codegen.h"
#include "compiler/device.h"
#include "compiler/sema.h"
#include "lang/ast.h"
#include "probes/provider.h"
#include "lang/diag.h"
#include "runtime/info.h"
#include "runtime/btenv.h"
#include "runtime/knames.h"
#include "runtime/agentctl.h"
#include "runtime/inject.h"
#include "runtime/child.h"
#include "runtime/devcheck.h"
#include "runtime/dryrun.h"
#include "runtime/hostpath.h"
#include "runtime/list.h"
#include "runtime/metrics.h"
#include "runtime/prompt.h"
#include "runtime/session.h"

#define GT_VERSION "0.1.0"

enum {
	D_AST = 1, D_TYPES = 2, D_EBPF = 4, D_PTX = 8, D_VERIFIER = 16,
	D_PTX_ALL = 32,	/* -d ptx with the device runtime */
};

static void usage(FILE *f)
{
	fputs("usage: gputrace [OPTIONS] FILE [ARGS...]\n"
	      "       gputrace [OPTIONS] -e 'PROGRAM' [ARGS...]\n"
	      "       gputrace [OPTIONS] -            (program from stdin)\n"
	      "       gputrace [-p PID]          (a terminal: the prompt)\n"
	      "       gputrace -l [PATTERN]\n"
	      "\n"
	      "options:\n"
	      "  -e PROGRAM     the program text\n"
	      "  -p PID         trace a running process\n"
	      "  -c 'CMD ARGS'  start CMD, trace it, exit when it exits\n"
	      "  -l [PATTERN]   list probes\n"
	      "  -f text|json   output format (default text)\n"
	      "  -o FILE        write output to FILE\n"
	      "  -q             quiet: no \"Attaching N probes\" line\n"
	      "  -v             verbose\n"
	      "  -d STAGE       dump ast, types, ebpf, ptx, ptx-all, verifier or all\n"
	      "  --dry-run      compile and verify, attach nothing\n"
	      "  --timeline FILE  with -c or -p: write a Chrome trace of the\n"
	      "                 CUDA calls, kernels and copies to FILE\n"
	      "  --unsafe       allow system() and signal()\n"
	      "  --metrics [ADDR:]PORT  serve the maps to Prometheus on\n"
	      "                 http://ADDR:PORT/metrics (ADDR 127.0.0.1)\n"
	      "  --metrics-any  let --metrics take 0.0.0.0 or ::\n"
	      "  -V, --version  version\n"
	      "  -h, --help     this help\n"
	      "  -B MODE        output buffering: line (default), none, full\n"
	      "  -k, -kk        warn when a map update or delete fails (-kk: a\n"
	      "                 read of an absent key too)\n"
	      "  --no-warnings  no warning messages\n"
	      "  --info         what this system offers (kernel, GPU)\n", f);
}

/* Read all of F into a NUL-terminated malloc'd buffer. */
static char *slurp(FILE *f, size_t *len)
{
	size_t cap = 4096, n = 0;
	char *buf = malloc(cap);

	while (buf) {
		size_t r = fread(buf + n, 1, cap - n - 1, f);

		n += r;
		if (r == 0)
			break;
		if (n + 1 == cap) {
			char *b = realloc(buf, cap * 2);

			if (!b) {
				free(buf);
				return NULL;
			}
			buf = b;
			cap *= 2;
		}
	}
	if (buf) {
		buf[n] = 0;
		*len = n;
	}
	return buf;
}

/* Root, or CAP_BPF and CAP_PERFMON in the effective set. */
static bool may_trace(void)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
	struct __user_cap_data_struct d[2] = { 0 };
	const int need[] = { CAP_BPF, CAP_PERFMON };

	if (geteuid() == 0)
		return true;
	if (syscall(SYS_capget, &h, d))
		return false;
	for (size_t i = 0; i < sizeof(need) / sizeof(need[0]); i++)
		if (!(d[need[i] / 32].effective & (1u << (need[i] % 32))))
			return false;
	return true;
}

static int parse_dump(const char *s, unsigned *dump)
{
	static const struct { const char *n; unsigned v; } st[] = {
		{ "ast", D_AST }, { "types", D_TYPES }, { "ebpf", D_EBPF },
		{ "ptx", D_PTX }, { "ptx-all", D_PTX | D_PTX_ALL },
		{ "verifier", D_VERIFIER },
		{ "all", D_AST | D_TYPES | D_EBPF | D_PTX | D_PTX_ALL | D_VERIFIER },
	};

	for (size_t i = 0; i < sizeof(st) / sizeof(st[0]); i++)
		if (!strcmp(s, st[i].n)) {
			*dump |= st[i].v;
			return 0;
		}
	return -EINVAL;
}

/*
 * -p PID, with bpftrace 0.17's words for what is wrong with it; the
 * range is the kernel's PID_MAX_LIMIT on 64-bit, as bpftrace's is.
 */
static int parse_pid(const char *s, int *pid)
{
	const long max = 4194304;
	char path[64], *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (*end || !*s || errno) {
		fprintf(stderr, "ERROR: pid '%s' is not a valid decimal number\n", s);
		return -EINVAL;
	}
	if (v < 1 || v > max) {
		fprintf(stderr, "ERROR: pid '%s' out of valid pid range [1,%ld]\n",
			s, max);
		return -ERANGE;
	}
	snprintf(path, sizeof(path), "/proc/%ld", v);
	if (access(path, F_OK)) {
		/* bpftrace 0.17 says "ERROR: : No such process" */
		fprintf(stderr, "ERROR: pid %ld: No such process\n", v);
		return -ESRCH;
	}
	*pid = v;
	return 0;
}

/* PATH made absolute (the agent opens it from the target's cwd). */
static char *abs_path(const char *path)
{
	char cwd[4096], *s;

	if (path[0] == '/')
		return strdup(path);
	if (!getcwd(cwd, sizeof(cwd))) {
		fprintf(stderr, "gputrace: --timeline: %s\n", strerror(errno));
		return NULL;
	}
	if (asprintf(&s, "%s/%s", cwd, path) < 0)
		return NULL;
	return s;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Device probes, or cuda:complete (which the agent times). */
struct attach_ctx {
	struct agentctl *ac;
	int pid;
	bool verbose;
	struct gt_object *obj;
};

/* -p: load the agent into PID and arm its hooks. */
static int attach_agent(void *arg)
{
	const struct attach_ctx *a = arg;

	return inject_agentctl(a->pid, a->ac, a->verbose);
}

/* -p with cuda: clauses alone: the agent could not be injected */
static int host_fallback(void *arg)
{
	const struct attach_ctx *a = arg;
	char err[4096];
	int e = hostpath_fallback(a->obj, agentctl_lib(a->ac), err,
				  sizeof(err));

	if (e)
		fprintf(stderr, "gputrace: %s\n", err);
	else
		fprintf(stderr, "gputrace: -p %d: cuda: clauses run as kernel uprobes instead\n",
			a->pid);
	return e;
}

static bool has_device_progs(const struct gt_object *obj)
{
	for (int i = 0; i < obj->nprogs; i++)
		if (obj->progs[i].probe->prov->device)
			return true;
	return false;
}

static void dump_ebpf(FILE *f, const struct gt_object *obj)
{
	for (int i = 0; i < obj->nprogs; i++) {
		fprintf(f, "Program %d: %s (%zu insns)\n", i,
			obj->progs[i].probe->name, obj->progs[i].ninsns);
		bpf_disasm(f, obj->progs[i].insns, obj->progs[i].ninsns);
	}
}

/* No program and a terminal: the interactive prompt. */
static int run_prompt(const char *fmt, const char *outfile,
		      const struct session_opts *so)
{
	struct out o = { .fmt = strcmp(fmt, "json") ? OUT_TEXT : OUT_JSON,
			 .f = stdout,
			 .utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8") };
	struct prompt_opts po = { .o = &o, .pid = so->pid, .quiet = so->quiet,
				  .verbose = so->verbose };
	int ret;

	if (!may_trace()) {
		fputs("gputrace: tracing needs root, or the CAP_BPF and CAP_PERFMON capabilities\n",
		      stderr);
		return 1;
	}
	if (outfile) {
		o.f = fopen(outfile, "w");
		o.blank = stdout;
		if (!o.f) {
			fprintf(stderr, "gputrace: %s: %s\n", outfile, strerror(errno));
			return 1;
		}
	}
	ret = prompt_run(&po);
	if (o.f != stdout)
		fclose(o.f);
	ast_free_all();
	knames_reset();
	return ret;
}

int main(int argc, char **argv)
{
	static const struct option lopts[] = {
		{ "dry-run", no_argument, NULL, 'D' },
		{ "unsafe", no_argument, NULL, 'U' },
		{ "metrics", required_argument, NULL, 'M' },
		{ "metrics-any", no_argument, NULL, 'A' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ "timeline", required_argument, NULL, 'T' },
		{ "no-warnings", no_argument, NULL, 'W' },
		{ "info", no_argument, NULL, 'I' },
		{ NULL, 0, NULL, 0 },
	};
	const char *prog_text = NULL, *outfile = NULL, *fmt = "text", *cmd = NULL;
	struct child child = { .release_fd = -1, .err_fd = -1 };
	struct session_opts sopts = { 0 };
	struct source src = { 0 };
	struct program *prog = NULL;
	struct unit *u = NULL;
	struct gt_object obj = { 0 };
	struct device_set ds = { 0 };
	struct agentctl *ac = NULL;
	struct out o = { 0 };
	bool dry_run = false, have_obj = false, list = false, have_ds = false;
	bool host_p = false;	/* -p: the agent for cuda: clauses alone */
	bool unsafe = false, buffer_full = false;
	int helper_check = 0;
	unsigned dump = 0;
	char *text = NULL, *dry_lib = NULL;
	const char *const *cglobs = NULL;
	const char *const *sglobs = NULL;
	char *timeline = NULL;
	int c, ret = 1, ncomplete, nsample, nhost = 0, npos = 0;
	const char *lpos[2];
	uint32_t speriod;
	struct agent_config hcfg = { 0 };
	bool *host_maps = NULL;

	setlocale(LC_CTYPE, "");
	while ((c = getopt_long(argc, argv, "+e:p:c:lf:o:qvd:VhB:k", lopts, NULL)) != -1) {
		switch (c) {
		case 'e':
			prog_text = optarg;
			break;
		case 'p':
			if (parse_pid(optarg, &sopts.pid))
				return 1;
			break;
		case 'c':
			cmd = optarg;
			break;
		case 'l':
			list = true;
			break;
		case 'f':
			fmt = optarg;
			if (strcmp(fmt, "text") && strcmp(fmt, "json")) {
				fprintf(stderr, "ERROR: Invalid output format \"%s\"\nValid formats: 'text', 'json'\n", fmt);
				return 1;
			}
			break;
		case 'o':
			outfile = optarg;
			break;
		case 'q':
			sopts.quiet = true;
			break;
		case 'v':
			sopts.verbose = true;
			break;
		case 'd':
			if (parse_dump(optarg, &dump)) {
				fprintf(stderr, "gputrace: -d: unknown stage '%s' (ast, types, ebpf, ptx, ptx-all, verifier, all)\n",
					optarg);
				return 1;
			}
			break;
		case 'D':
			dry_run = true;
			break;
		case 'U':
			unsafe = true;
			break;
		case 'T':
			free(timeline);
			if (!(timeline = abs_path(optarg)))
				return 1;
			break;
		case 'M':
			sopts.metrics = optarg;
			break;
		case 'A':
			sopts.metrics_any = true;
			break;
		case 'W':
			diag_set_warnings(0);
			break;
		case 'k':	/* -k, -kk: bpftrace's helper checks */
			helper_check++;
			break;
		case 'I':
			return info_print(stdout, GT_VERSION) ? 1 : 0;
		case 'B':
			/* bpftrace's -B; records are flushed one by one
			 * unless full */
			if (!strcmp(optarg, "full")) {
				buffer_full = true;
			} else if (strcmp(optarg, "none") && strcmp(optarg, "line")) {
				fputs("ERROR: USAGE: -B must be either 'line', 'full', or 'none'.\n",
				      stderr);
				return 1;
			}
			break;
		case 'V':
			printf("gputrace v%s\n", GT_VERSION);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 1;
		}
	}
	if (list) {
		const char *pat;

		/* -l has no program arguments: options may follow the
		 * PATTERN and BINARY too (-l 'gpu:*' -v BIN) */
		optind = 0;
		while ((c = getopt_long(argc, argv, "-e:p:c:lf:o:qvd:Vh", lopts,
					NULL)) != -1) {
			if (c == 1 && npos < 2) {
				lpos[npos++] = optarg;
			} else if (c == 1) {
				fprintf(stderr, "gputrace: -l: unexpected argument '%s' (usage: -l [PATTERN [BINARY]])\n",
					optarg);
				return 1;
			} else if (c == 'e') {
				fprintf(stderr, "gputrace: -l lists probes and runs no program: give a PATTERN, not -e\n");
				return 1;
			} else if (c == 'v') {
				sopts.verbose = true;
			} else if (c == 'c') {
				cmd = optarg;
			} else if (c == 'p' && parse_pid(optarg, &sopts.pid)) {
				return 1;
			} else if (c == '?') {
				return 1;
			}
		}
		pat = npos ? lpos[0] : NULL;
		/* -l PATTERN BINARY: the binary is the target, like -c */
		if (!cmd && !sopts.pid && npos > 1)
			cmd = lpos[1];
		return list_probes(pat, sopts.pid, cmd, sopts.verbose, stdout);
	}
	if (btenv_read())
		return 1;
	if (prog_text) {
		src.name = "stdin";
		src.text = prog_text;
		src.len = strlen(prog_text);
	} else if (optind < argc) {
		const char *path = argv[optind++];
		FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;

		if (!f) {
			fprintf(stderr, "ERROR: failed to open file '%s': %s\n",
				path, strerror(errno));
			return 1;
		}
		text = slurp(f, &src.len);
		if (f != stdin)
			fclose(f);
		if (!text) {
			fprintf(stderr, "gputrace: %s: cannot read\n", path);
			return 1;
		}
		src.name = strcmp(path, "-") ? path : "stdin";
		src.text = text;
	} else if (timeline) {
		/* the timeline alone: a program that does nothing */
		src.name = "stdin";
		src.text = "END {}";
		src.len = strlen(src.text);
	} else if (isatty(STDIN_FILENO) && !cmd && !dry_run && !dump) {
		if (sopts.metrics) {
			fprintf(stderr, "gputrace: --metrics needs a program (-e or FILE), not the prompt\n");
			return 1;
		}
		return run_prompt(fmt, outfile, &sopts);
	} else {
		usage(stderr);
		return 1;
	}
	o.fmt = strcmp(fmt, "json") ? OUT_TEXT : OUT_JSON;
	o.f = stdout;
	o.full = buffer_full;
	o.utf8 = !strcmp(nl_langinfo(CODESET), "UTF-8");
	if (outfile) {
		o.f = fopen(outfile, "w");
		o.blank = stdout;	/* bpftrace writes the blank pair there */
		if (!o.f) {
			fprintf(stderr, "gputrace: %s: %s\n", outfile, strerror(errno));
			goto out;
		}
	}
	if (cmd && sopts.pid) {
		fprintf(stderr, "gputrace: -p and -c cannot be used together\n");
		goto out;
	}
	if (timeline && !cmd && !sopts.pid) {
		fprintf(stderr, "gputrace: --timeline needs -c CMD or -p PID\n");
		goto out;
	}
	if (sopts.metrics) {
		struct sockaddr_storage ss;
		socklen_t sl;
		char err[512];

		/* a bad address is told before anything is compiled */
		if (metrics_parse_addr(sopts.metrics, sopts.metrics_any, &ss,
				       &sl, err, sizeof(err))) {
			fprintf(stderr, "gputrace: %s\n", err);
			goto out;
		}
	}
	provider_target_cmd = cmd;
	/* cuda:complete's probe is in the agent (-c or -p) */
	if ((cmd || sopts.pid) && dry_run)
		provider_agent_lib = dry_lib = agentctl_find_lib(NULL);
	if (ast_parse(&src, &prog))
		goto out;
	if (dump & D_AST)
		ast_dump(stderr, prog);
	struct sema_opts sem = { .argv = argv + optind, .argc = argc - optind,
				 .target_pid = sopts.pid, .unsafe = unsafe };

	/* -p with device probes: the agent will be injected (docs/attach.md) */
	if (sopts.pid && !dry_run &&
	    (hostpath_needs_agent(prog, 0) || timeline)) {
		struct agentctl_opts ao = { .verbose = sopts.verbose,
					    .attach_pid = sopts.pid,
					    .timeline = timeline };

		if (inject_check(sopts.pid) || agentctl_open(&ao, &ac))
			goto out;
		provider_agent_lib = agentctl_lib(ac);
		provider_hooked_lib = agentctl_lib(ac);
	} else if (sopts.pid && !dry_run &&
		   hostpath_attach_wanted(prog, sopts.pid, sopts.verbose)) {
		/* cuda: clauses alone: the agent runs them (docs/hostpath.md) */
		struct agentctl_opts ao = { .verbose = sopts.verbose,
					    .attach_pid = sopts.pid };

		if (agentctl_open(&ao, &ac))
			goto out;
		provider_agent_lib = provider_hooked_lib = agentctl_lib(ac);
		host_p = true;
	}

	/* the child exists (held) before compiling: cpid and -c scoping */
	if (cmd && !dry_run) {
		const char *const *env = NULL;

		/* the agent's socket and segment exist before the child */
		if (hostpath_wanted(prog, sopts.verbose) ||
		    hostpath_needs_agent(prog, 0) || timeline) {
			struct agentctl_opts ao = { .verbose = sopts.verbose,
						    .timeline = timeline };

			if (agentctl_open(&ao, &ac))
				goto out;
			env = agentctl_env(ac);
			provider_agent_lib = agentctl_lib(ac);
		}
		if (child_spawn(cmd, env, &child))
			goto out;
		sopts.child = &child;
		sem.target_pid = child.pid;
	}

	if (sema_check(prog, &sem, &u))
		goto out;
	if (dump & D_TYPES)
		sema_dump(stderr, u);
	struct cg_opts copts = { .start_ns = mono_ns(), .cpid = child.pid,
				 .map_keys_max = btenv.map_keys_max,
				 .helper_check = helper_check,
				 /* hist sums: read by the metrics page only */
				 .hist_sum = sopts.metrics != NULL };

	have_obj = true;
	if (cg_build(u, &copts, &obj))
		goto out;
	if (dump & D_EBPF)
		dump_ebpf(stderr, &obj);
	if (device_verify(u, &obj, dump & D_VERIFIER ? stderr : NULL))
		goto out;
	if (has_device_progs(&obj)) {
		if (device_lower(u, &obj, &ds))
			goto out;
		have_ds = true;
		/* a dry run checks -c's kernels (-d ptx says "no kernel
		 * matches" itself, as an error); a run hears it at the end */
		if (dry_run)
			devcheck_target(&ds, cmd, !(dump & D_PTX), true);
		if (dump & D_PTX) {
			/* --dry-run -d ptx: the splice into -c's program or
			 * the binary after -e; else the probe functions */
			char bin[4096] = "", *sp;

			if (dry_run && cmd)
				snprintf(bin, sizeof(bin), "%s", cmd);
			else if (dry_run && prog_text && optind < argc)
				snprintf(bin, sizeof(bin), "%s", argv[optind]);
			sp = strchr(bin, ' ');
			if (sp)
				*sp = 0;
			if (dryrun_ptx(&ds, bin[0] ? bin : NULL,
				       dump & D_PTX_ALL, stderr))
				goto out;
		}
	}
	ncomplete = cuda_complete_globs(&obj, &cglobs);
	nsample = gpu_sample_globs(&obj, &sglobs, &speriod);
	/* cuda: clauses the agent runs in the target (docs/hostpath.md) */
	if (ac) {
		host_maps = calloc(u->nmaps + 1, sizeof(*host_maps));
		if (!host_maps ||
		    (nhost = hostpath_select(&obj, u, sopts.verbose, &hcfg,
					     host_maps)) < 0)
			goto out;
		if (nhost)
			agentctl_set_host(ac, &hcfg, host_maps);
		/* -p: nothing for the agent after all, no injection */
		if (host_p && !nhost) {
			if (cuda_unhook(&obj, agentctl_lib(ac)))
				goto out;
			provider_agent_lib = provider_hooked_lib = NULL;
			agentctl_free(ac);
			ac = NULL;
		}
	}
	/* the agent was started: it reads a configuration, even empty */
	if (ac) {
		agentctl_set_completes(ac, cglobs, ncomplete);
		agentctl_set_complete_queued(ac, cuda_complete_queued(&obj));
		agentctl_set_samples(ac, sglobs, nsample, speriod);
		if (agentctl_configure(ac, u, &ds))
			goto out;
	}

	if (dry_run) {
		ret = 0;
		goto out;
	}
	if (!may_trace()) {
		fputs("gputrace: tracing needs root, or the CAP_BPF and CAP_PERFMON capabilities\n",
		      stderr);
		goto out;
	}
	sopts.agent = ac;
	struct attach_ctx actx = { ac, sopts.pid, sopts.verbose, &obj };

	if (ac && sopts.pid) {
		/* after the probes: they see the first instrumented launch */
		sopts.attach_agent = attach_agent;
		sopts.attach_arg = &actx;
		/* cuda: clauses alone: before them, so that a failed
		 * injection leaves them to the kernel */
		sopts.agent_early = host_p;
		sopts.agent_failed = host_fallback;
	}
	/* .cuda_match: the fatbins are read only when the kernel needs it */
	char merr[512];

	if (cuda_match_prepare(&obj, merr, sizeof(merr))) {
		fprintf(stderr, "gputrace: %s\n", merr);
		goto out;
	}
	ret = session_run(u, &obj, &o, &sopts);
out:
	/* never released (compile or attach failed), or still running when
	 * we end: bpftrace kills its -c child too */
	if (child.release_fd >= 0 || child.pid > 0)
		child_kill(&child);
	agentctl_free(ac);
	free(dry_lib);
	free(timeline);
	agent_config_free(&hcfg);
	free(host_maps);
	if (have_ds)
		device_set_free(&ds);
	if (o.f && o.f != stdout)
		fclose(o.f);
	fflush(stdout);
	if (have_obj)
		cg_free(&obj);
	unit_free(u);
	ast_free_all();
	knames_reset();
	free(text);
	return ret;
}
