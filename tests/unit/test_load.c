// SPDX-License-Identifier: MIT
/*
 * gt_object_load and the BEGIN/END/interval providers against the real
 * kernel: programs are written by hand here, so a failure points at the
 * loader or the provider, not at the compiler.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "compiler/program.h"
#include "probes/provider.h"
#include "tests/unit/unit.h"

#define INSN(c, d, s, o, i) \
	((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), \
			    .off = (o), .imm = (i) })
#define MOV_IMM(d, i)	INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define MOV_REG(d, s)	INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define ADD_IMM(d, i)	INSN(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i)
#define ST_DW(d, o, i)	INSN(BPF_ST | BPF_DW | BPF_MEM, d, 0, o, i)
#define ST_W(d, o, i)	INSN(BPF_ST | BPF_W | BPF_MEM, d, 0, o, i)
#define STX_DW(d, s, o)	INSN(BPF_STX | BPF_DW | BPF_MEM, d, s, o, 0)
#define LDX_DW(d, s, o)	INSN(BPF_LDX | BPF_DW | BPF_MEM, d, s, o, 0)
#define JEQ_IMM(d, i, o) INSN(BPF_JMP | BPF_JEQ | BPF_K, d, 0, o, i)
#define CALL(f)		INSN(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define EXIT()		INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)
#define LD_MAP(d, idx)	INSN(BPF_LD | BPF_DW | BPF_IMM, d, BPF_PSEUDO_MAP_FD, 0, idx), \
			INSN(0, 0, 0, 0, 0)
#define LD_IMM64(d, v)	INSN(BPF_LD | BPF_DW | BPF_IMM, d, 0, 0, (uint32_t)(v)), \
			INSN(0, 0, 0, 0, (uint32_t)((uint64_t)(v) >> 32))
#define N(a)		(sizeof(a) / sizeof((a)[0]))

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

static struct probe mkprobe(const char *prov, char *name, char *a0, char *a1)
{
	struct probe p = { .name = name, .prog_fd = -1 };

	p.prov = provider_find(prov);
	if (a0)
		p.args[p.nargs++] = a0;
	if (a1)
		p.args[p.nargs++] = a1;
	return p;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* (a) BEGIN: update a hash map, and record whose pid the program saw. */
static void test_begin_hash(void)
{
	struct bpf_insn insns[] = {
		ST_DW(10, -8, 0),
		ST_DW(10, -16, 42),
		LD_MAP(1, 0),
		MOV_REG(2, 10), ADD_IMM(2, -8),
		MOV_REG(3, 10), ADD_IMM(3, -16),
		MOV_IMM(4, BPF_ANY),
		CALL(BPF_FUNC_map_update_elem),
		CALL(BPF_FUNC_get_current_pid_tgid),
		STX_DW(10, 0, -16),
		ST_DW(10, -8, 1),
		LD_MAP(1, 0),
		MOV_REG(2, 10), ADD_IMM(2, -8),
		MOV_REG(3, 10), ADD_IMM(3, -16),
		MOV_IMM(4, BPF_ANY),
		CALL(BPF_FUNC_map_update_elem),
		CALL(BPF_FUNC_ktime_get_ns),
		STX_DW(10, 0, -16),
		ST_DW(10, -8, 2),
		LD_MAP(1, 0),
		MOV_REG(2, 10), ADD_IMM(2, -8),
		MOV_REG(3, 10), ADD_IMM(3, -16),
		MOV_IMM(4, BPF_ANY),
		CALL(BPF_FUNC_map_update_elem),
		CALL(BPF_FUNC_get_smp_processor_id),
		STX_DW(10, 0, -16),
		ST_DW(10, -8, 3),
		LD_MAP(1, 0),
		MOV_REG(2, 10), ADD_IMM(2, -8),
		MOV_REG(3, 10), ADD_IMM(3, -16),
		MOV_IMM(4, BPF_ANY),
		CALL(BPF_FUNC_map_update_elem),
		MOV_IMM(0, 0),
		EXIT(),
	};
	struct gt_map_def map = { .name = "@x", .type = GT_MT_HASH,
				  .key_size = 8, .value_size = 8,
				  .max_entries = 16 };
	char name[] = "BEGIN";
	struct probe p = mkprobe("BEGIN", name, NULL, NULL);
	struct gt_bpf_prog prog = { .probe = &p, .insns = insns,
				    .ninsns = N(insns) };
	struct gt_object obj = { .maps = &map, .nmaps = 1, .progs = &prog, .nprogs = 1 };
	char err[4096];
	uint64_t key = 0, val = 0, t0, t1;
	int ret, arg = 5;

	/* the insns array must not be patched in place */
	struct bpf_insn before = insns[2];

	CHECK(p.prov == &provider_begin, "begin: provider_find BEGIN");
	CHECK(provider_find("begin") == &provider_begin, "begin: alias");
	CHECK(provider_find("end") == &provider_end, "end: alias");
	CHECK(p.prov->parse(&p, err, sizeof(err), &arg) == 0, "begin: parse");
	ret = gt_object_load(&obj, err, sizeof(err));
	CHECK(ret == 0, "begin: load");
	if (ret) {
		printf("  %s\n", err);
		return;
	}
	CHECK(map.fd >= 0 && prog.fd >= 0, "begin: fds set");
	CHECK(!memcmp(&before, &insns[2], sizeof(before)),
	      "begin: caller's insns untouched");
	CHECK(p.prov->attach(&p, prog.fd, err, sizeof(err)) == 0,
	      "begin: attach");
	CHECK(bpf_map_lookup_elem(map.fd, &key, &val) != 0,
	      "begin: nothing before fire");
	t0 = mono_ns();
	CHECK(p.prov->fire(&p) == 0, "begin: fire");
	t1 = mono_ns();
	CHECK(bpf_map_lookup_elem(map.fd, &key, &val) == 0 && val == 42,
	      "begin: map holds 42");
	key = 1;
	CHECK(bpf_map_lookup_elem(map.fd, &key, &val) == 0 &&
	      (val >> 32) == (uint64_t)getpid(),
	      "begin: runs in the tracer's process");
	key = 2;
	CHECK(bpf_map_lookup_elem(map.fd, &key, &val) == 0 &&
	      val >= t0 && val <= t1, "begin: ktime_get_ns is CLOCK_MONOTONIC");
	key = 3;
	CHECK(bpf_map_lookup_elem(map.fd, &key, &val) == 0 &&
	      val < (uint64_t)libbpf_num_possible_cpus(),
	      "begin: get_smp_processor_id");
	p.prov->detach(&p);
	p.prov->detach(&p);
	CHECK(p.prog_fd == -1 && p.prov->fire(&p) == -EBADF,
	      "begin: no fire after detach");
	gt_object_unload(&obj);
	gt_object_unload(&obj);
	CHECK(map.fd == -1 && prog.fd == -1, "begin: unload idempotent");
}

struct rb_seen {
	int n;
	uint64_t magic, pid_tgid;
	char comm[16];
};

static int rb_cb(void *ctx, void *data, size_t size)
{
	struct rb_seen *s = ctx;

	if (size < 32)
		return 0;
	s->n++;
	memcpy(&s->magic, data, 8);
	memcpy(&s->pid_tgid, (char *)data + 8, 8);
	memcpy(s->comm, (char *)data + 16, 16);
	return 0;
}

/* (b) reserve + submit a ring buffer record from END. */
static void test_ringbuf(void)
{
	struct bpf_insn insns[] = {
		LD_MAP(1, 1),
		MOV_IMM(2, 32),
		MOV_IMM(3, 0),
		CALL(BPF_FUNC_ringbuf_reserve),
		JEQ_IMM(0, 0, 13),
		MOV_REG(6, 0),
		LD_IMM64(1, 0x1122334455667788ull),
		STX_DW(6, 1, 0),
		CALL(BPF_FUNC_get_current_pid_tgid),
		STX_DW(6, 0, 8),
		MOV_REG(1, 6), ADD_IMM(1, 16),
		MOV_IMM(2, 16),
		CALL(BPF_FUNC_get_current_comm),
		MOV_REG(1, 6),
		MOV_IMM(2, 0),
		CALL(BPF_FUNC_ringbuf_submit),
		MOV_IMM(0, 0),
		EXIT(),
	};
	/* map 0 is unused: checks that the index, not position 0, is used */
	struct gt_map_def maps[] = {
		{ .name = "@unused", .type = GT_MT_ARRAY, .key_size = 4,
		  .value_size = 8, .max_entries = 1 },
		{ .name = ".events", .type = GT_MT_RINGBUF, .key_size = 4,
		  .value_size = 4, .max_entries = 4096 },
	};
	char name[] = "END";
	struct probe p = mkprobe("END", name, NULL, NULL);
	struct gt_bpf_prog prog = { .probe = &p, .insns = insns,
				    .ninsns = N(insns) };
	struct gt_object obj = { .maps = maps, .nmaps = 2, .progs = &prog, .nprogs = 1 };
	struct rb_seen seen = { 0 };
	struct ring_buffer *rb;
	char err[4096], comm[17] = { 0 };
	int ret;

	ret = gt_object_load(&obj, err, sizeof(err));
	CHECK(ret == 0, "ringbuf: load");
	if (ret) {
		printf("  %s\n", err);
		return;
	}
	rb = ring_buffer__new(maps[1].fd, rb_cb, &seen, NULL);
	CHECK(rb != NULL, "ringbuf: ring_buffer__new");
	if (rb) {
		CHECK(p.prov->attach(&p, prog.fd, err, sizeof(err)) == 0 &&
		      p.prov->fire(&p) == 0, "ringbuf: fire END");
		CHECK(ring_buffer__poll(rb, 100) == 1 && seen.n == 1,
		      "ringbuf: one record");
		CHECK(seen.magic == 0x1122334455667788ull,
		      "ringbuf: record bytes");
		CHECK((seen.pid_tgid >> 32) == (uint64_t)getpid() &&
		      (uint32_t)seen.pid_tgid == (uint32_t)getpid(),
		      "ringbuf: pid/tid are the tracer's");
		prctl(PR_GET_NAME, comm);
		CHECK_STR(seen.comm, comm, "ringbuf: comm is the tracer's");
		ring_buffer__free(rb);
	}
	p.prov->detach(&p);
	gt_object_unload(&obj);
}

static uint64_t percpu_sum(int fd, int ncpu)
{
	uint64_t *v = calloc(ncpu, sizeof(*v)), sum = 0;
	uint32_t key = 0;
	int i;

	if (v && !bpf_map_lookup_elem(fd, &key, v))
		for (i = 0; i < ncpu; i++)
			sum += v[i];
	free(v);
	return sum;
}

/* (c) interval:ms:10 counting into a per-CPU array. */
static void test_interval(void)
{
	struct bpf_insn insns[] = {
		ST_W(10, -4, 0),
		LD_MAP(1, 0),
		MOV_REG(2, 10), ADD_IMM(2, -4),
		CALL(BPF_FUNC_map_lookup_elem),
		JEQ_IMM(0, 0, 3),
		LDX_DW(1, 0, 0),
		ADD_IMM(1, 1),
		STX_DW(0, 1, 0),
		MOV_IMM(0, 0),
		EXIT(),
	};
	struct gt_map_def map = { .name = "@ticks", .type = GT_MT_PERCPU_ARRAY,
				  .key_size = 4, .value_size = 8,
				  .max_entries = 1 };
	char name[] = "interval:ms:10", u[] = "ms", n[] = "10";
	struct probe p = mkprobe("interval", name, u, n);
	struct gt_bpf_prog prog = { .probe = &p, .insns = insns,
				    .ninsns = N(insns) };
	struct gt_object obj = { .maps = &map, .nmaps = 1, .progs = &prog, .nprogs = 1 };
	int ncpu = libbpf_num_possible_cpus();
	uint64_t ticks, after;
	char err[4096];
	int ret, arg = 5;

	CHECK(p.prov && p.prov->prog_type == BPF_PROG_TYPE_PERF_EVENT &&
	      !p.prov->fire, "interval: provider");
	ret = p.prov->parse(&p, err, sizeof(err), &arg);
	CHECK(ret == 0 && p.period_ns == 10000000, "interval: parse ms:10");
	ret = gt_object_load(&obj, err, sizeof(err));
	CHECK(ret == 0, "interval: load");
	if (ret) {
		printf("  %s\n", err);
		return;
	}
	ret = p.prov->attach(&p, prog.fd, err, sizeof(err));
	CHECK(ret == 0 && p.nfds > 0, "interval: attach");
	if (ret)
		printf("  %s\n", err);
	sleep_ms(120);
	p.prov->detach(&p);
	CHECK(p.nfds == 0, "interval: detach closes fds");
	ticks = percpu_sum(map.fd, ncpu);
	CHECK(ticks >= 5 && ticks <= 20, "interval: ~12 ticks in 120 ms");
	sleep_ms(50);
	after = percpu_sum(map.fd, ncpu);
	CHECK(after == ticks, "interval: no ticks after detach");
	p.prov->detach(&p);
	gt_object_unload(&obj);
}

/* (d) loader errors: kernel rejection, bad map index, bad map. */
static void test_load_errors(void)
{
	struct bpf_insn bad[] = { MOV_REG(0, 2), EXIT() };
	struct bpf_insn oob[] = { LD_MAP(1, 7), MOV_IMM(0, 0), EXIT() };
	struct bpf_insn ok[] = { MOV_IMM(0, 0), EXIT() };
	struct gt_map_def map = { .name = "@x", .type = GT_MT_HASH,
				  .key_size = 8, .value_size = 8,
				  .max_entries = 16 };
	struct gt_map_def rbad = { .name = "@rb", .type = GT_MT_RINGBUF,
				   .max_entries = 1000 };
	char name[] = "BEGIN";
	struct probe p = mkprobe("BEGIN", name, NULL, NULL);
	struct gt_bpf_prog progs[2] = {
		{ .probe = &p, .insns = ok, .ninsns = N(ok) },
		{ .probe = &p, .insns = bad, .ninsns = N(bad) },
	};
	struct gt_object obj = { .maps = &map, .nmaps = 1, .progs = progs, .nprogs = 2 };
	char err[4096];
	int ret;

	ret = gt_object_load(&obj, err, sizeof(err));
	CHECK(ret < 0, "errors: kernel rejects");
	CHECK(strstr(err, "probe BEGIN") && strstr(err, "R2 !read_ok"),
	      "errors: message has the verifier log");
	CHECK(map.fd == -1 && progs[0].fd == -1 && progs[1].fd == -1,
	      "errors: rejection leaves nothing loaded");

	progs[1].insns = oob;
	progs[1].ninsns = N(oob);
	ret = gt_object_load(&obj, err, sizeof(err));
	CHECK(ret == -EINVAL && strstr(err, "map index 7 out of range"),
	      "errors: map index out of range");
	CHECK(map.fd == -1 && progs[0].fd == -1,
	      "errors: bad index leaves nothing loaded");

	obj.maps = &rbad;
	obj.nprogs = 1;
	ret = gt_object_load(&obj, err, sizeof(err));
	CHECK(ret < 0 && strstr(err, "map @rb"),
	      "errors: bad ring buffer size names the map");

	/* a small error buffer still ends with the verifier's verdict */
	obj.maps = &map;
	obj.nprogs = 2;
	progs[1].insns = bad;
	progs[1].ninsns = N(bad);
	ret = gt_object_load(&obj, err, 64);
	CHECK(ret < 0 && strlen(err) < 64, "errors: short error buffer");
}

static int parse_err(const char *prov, char *a0, char *a1, int *arg,
		     uint64_t *period, char *err, size_t errlen)
{
	char name[] = "p";
	struct probe p = mkprobe(prov, name, a0, a1);
	int ret;

	*arg = 99;
	ret = p.prov->parse(&p, err, errlen, arg);
	*period = p.period_ns;
	return ret;
}

static void test_parse(void)
{
	char ms[] = "ms", s[] = "s", us[] = "us", hz[] = "hz", ns[] = "ns";
	char ten[] = "10", zero[] = "0", abc[] = "abc", neg[] = "-3";
	char e3[] = "1e3", hex[] = "0x10", big[] = "99999999999999999999";
	char n99[] = "99", x[] = "x", huge[] = "20000000000", e99[] = "1e99";
	char err[256];
	uint64_t per;
	int arg;

	CHECK(parse_err("interval", ns, ten, &arg, &per, err, sizeof(err)) ==
	      -EINVAL && arg == 0 && strstr(err, "ns is not an accepted unit"),
	      "parse: unit ns rejected at arg 0");
	CHECK(parse_err("interval", ms, zero, &arg, &per, err, sizeof(err)) ==
	      -EINVAL && arg == 1 && strstr(err, "positive integer"),
	      "parse: zero rejected at arg 1");
	CHECK(parse_err("interval", ms, abc, &arg, &per, err, sizeof(err)) ==
	      -EINVAL && arg == 1 && strstr(err, "'abc'"),
	      "parse: non-number rejected at arg 1");
	CHECK(parse_err("interval", ms, neg, &arg, &per, err, sizeof(err)) ==
	      -EINVAL && arg == 1, "parse: negative rejected");
	CHECK(parse_err("interval", ms, big, &arg, &per, err, sizeof(err)) ==
	      -EINVAL && arg == 1, "parse: overflow rejected");
	CHECK(parse_err("interval", s, huge, &arg, &per, err, sizeof(err)) ==
	      -EINVAL && arg == 1 && strstr(err, "too long"),
	      "parse: period overflow rejected");
	CHECK(parse_err("interval", ms, NULL, &arg, &per, err, sizeof(err)) ==
	      -EINVAL && arg == -1 && strstr(err, "requires 2 arguments"),
	      "parse: missing count rejected as a whole");
	CHECK(parse_err("interval", s, e3, &arg, &per, err, sizeof(err)) ==
	      0 && per == 1000000000000ull, "parse: s:1e3");
	CHECK(parse_err("interval", ms, e99, &arg, &per, err, sizeof(err)) ==
	      -EINVAL && arg == 1, "parse: 1e99 rejected");
	CHECK(parse_err("interval", us, hex, &arg, &per, err, sizeof(err)) ==
	      0 && per == 16000, "parse: us:0x10");
	CHECK(parse_err("interval", hz, n99, &arg, &per, err, sizeof(err)) ==
	      0 && per == 1000000000 / 99, "parse: hz:99");
	CHECK(parse_err("BEGIN", x, NULL, &arg, &per, err, sizeof(err)) ==
	      -EINVAL && arg == 0 && strstr(err, "BEGIN probe type requires 0"),
	      "parse: BEGIN takes no arguments");

	CHECK(provider_host_builtin("pid") && provider_host_builtin("cpid") &&
	      provider_host_builtin("probe") && !provider_host_builtin("arg0") &&
	      !provider_host_builtin("retval") && !provider_host_builtin("smid"),
	      "builtins: host set");
	CHECK(provider_interval.has_builtin(NULL, "comm") &&
	      !provider_begin.has_builtin(NULL, "func"),
	      "builtins: BEGIN/interval use the host set");
	CHECK(provider_find("nope") == NULL, "provider_find: unknown");
}

int main(void)
{
	int fds;

	test_parse();
	if (geteuid() != 0) {
		printf("SKIP load: needs root\n");
		UNIT_END();
	}
	fds = count_fds();
	test_begin_hash();
	test_ringbuf();
	test_interval();
	test_load_errors();
	CHECK(count_fds() == fds, "no fd leak");
	UNIT_END();
}
