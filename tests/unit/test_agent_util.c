// SPDX-License-Identifier: MIT
/*
 * The agent's pure helpers (runtime/agent/agent_util.c): kernel names,
 * PTX scans, hashing, ELF sizes and `extra` launch buffers.  The agent is
 * built only into its shared library, so this test compiles the file
 * itself; the rest of the agent is tested by tests/accept/agent_hooks.sh
 * (fake driver) and tests/gpu/agent_standalone.sh.
 */
#define GT_AGENT_SO
#define AGENT_NO_CUDA
#include "runtime/agent/agent_util.c"

#include <stdio.h>
#include <stdlib.h>

#include "tests/unit/unit.h"

static void check_name(char *got, const char *want, const char *name)
{
	CHECK_STR(got, want, name);
	free(got);
}

static void test_names(void)
{
	check_name(agent_base_name("vadd(float const*, float*, int)"), "vadd",
		   "base_plain");
	check_name(agent_base_name("void ns::gemm<float>(float*, int)"),
		   "ns::gemm<float>", "base_template_return_type");
	check_name(agent_base_name("void f<(anonymous namespace)::X>(int)"),
		   "f<(anonymous namespace)::X>", "base_space_in_template");
	check_name(agent_base_name("k(void (*)(int))"), "k",
		   "base_nested_parens");
	check_name(agent_base_name("vadd"), "vadd", "base_extern_c");
	check_name(agent_simple_name("_Z4vaddPKfS0_Pfi"), "vadd",
		   "simple_name");
	CHECK(!agent_simple_name("_ZN2ns4gemmIfEEvPT_"), "simple_nested");
	CHECK(!agent_simple_name("_Z4gemmIfEvPT_"), "simple_template");
	CHECK(!agent_simple_name("vadd"), "simple_unmangled");
	CHECK(!agent_simple_name("_Z99ab"), "simple_truncated");
}

static const char mod[] =
	".version 8.0\n.target sm_90a\n.address_size 64\n"
	".global .align 4 .u32 counter;\n"
	".const .align 8 .b8 table[64];\n"
	".global .align 1 .b8 $str[4] = {104, 105, 10, 0};\n"
	"// .global in a comment: not_a_var\n"
	".func helper(.param .b64 p)\n{\n\t.reg .b64 %r<2>;\n"
	"\tld.global.u32 %r1, [table];\n\tret;\n}\n"
	".visible .entry direct(.param .u64 a)\n{\n\t.reg .b32 %r<2>;\n"
	"\tld.global.u32 %r1, [counter];\n\tret;\n}\n"
	".visible .entry via_func(.param .u64 a)\n{\n"
	"\tcall helper, (a);\n\tret;\n}\n"
	".visible .entry clean(.param .u64 a)\n{\n"
	"\t// counter is only named in a comment\n"
	"\tmov.u64 %rd1, $str;\n\tret;\n}\n"
	".visible .entry cleanish(.param .u64 counterx)\n{\n\tret;\n}\n";

static void test_ptx(void)
{
	struct ptx_module *m = NULL;
	char err[256], name[64];
	const char *v;
	char variant;

	CHECK(agent_ptx_has_entry(mod, sizeof(mod) - 1, "direct"),
	      "has_entry");
	CHECK(!agent_ptx_has_entry(mod, sizeof(mod) - 1, "dir"),
	      "has_entry_prefix");
	CHECK(!agent_ptx_has_entry(mod, sizeof(mod) - 1, "helper"),
	      "has_entry_func");
	CHECK(agent_ptx_has_entry(".entry\n\tk (", 11, "k"),
	      "has_entry_newline");
	CHECK(agent_ptx_target(mod, sizeof(mod) - 1, &variant) == 90 &&
	      variant == 'a', "target_sm90a");
	CHECK(agent_ptx_target(".version 8.0\n", 13, &variant) == 0,
	      "target_none");
	if (ptx_parse(mod, sizeof(mod) - 1, &m, err, sizeof(err)) < 0) {
		printf("FAIL module_var_parse: %s\n", err);
		unit_failed = 1;
		return;
	}
	v = agent_ptx_module_var(m, ptx_find_entry(m, "direct"), name,
				 sizeof(name));
	CHECK_STR(v, "counter", "module_var_direct");
	v = agent_ptx_module_var(m, ptx_find_entry(m, "via_func"), name,
				 sizeof(name));
	CHECK_STR(v, "table", "module_var_through_func");
	CHECK(!agent_ptx_module_var(m, ptx_find_entry(m, "clean"), name,
				    sizeof(name)), "module_var_str_comment");
	CHECK(!agent_ptx_module_var(m, ptx_find_entry(m, "cleanish"), name,
				    sizeof(name)), "module_var_longer_name");
	ptx_free(m);
}

static void test_extra(void)
{
	struct agent_launch_param p = { .ctx = 0x1000, .launch = 7,
					.launch_ns = 123456789, .kernel = 3 };
	uint8_t orig[28], buf[32 + PTX_CTX_BYTES];
	size_t size = sizeof(orig), got = 0;
	void *extra[] = { (void *)1, orig, (void *)2, &size, NULL };
	void *bad[] = { (void *)1, orig, (void *)5, &size, NULL };
	void *nosize[] = { (void *)1, orig, NULL };
	void *out[5];
	bool ok = true;

	for (int i = 0; i < 28; i++)
		orig[i] = (uint8_t)(i + 1);
	memset(buf, 0xee, sizeof(buf));
	CHECK(agent_extra_build(extra, &p, 32, buf, sizeof(buf), &got,
				out) == 0, "extra_build");
	CHECK(got == 32 + PTX_CTX_BYTES && out[0] == (void *)1 && out[1] == buf &&
	      out[2] == (void *)2 && out[3] == &got && out[4] == NULL,
	      "extra_array");
	ok = !memcmp(buf, orig, 28);
	for (int i = 28; i < 32; i++)
		ok = ok && buf[i] == 0;
	CHECK(ok && !memcmp(buf + 32, &p, sizeof(p)), "extra_contents");
	CHECK(agent_extra_build(bad, &p, 32, buf, sizeof(buf), &got, out) ==
	      -EINVAL, "extra_unknown_key");
	CHECK(agent_extra_build(nosize, &p, 32, buf, sizeof(buf), &got,
				out) == -EINVAL, "extra_no_size");
	CHECK(agent_extra_build(extra, &p, 32, buf, 40, &got, out) == -E2BIG,
	      "extra_too_big");
}

/* A deadline MS from now on the monotonic clock, nanoseconds in range. */
static void test_deadline(void)
{
	struct timespec t0, d, t1;
	long long a, b, x;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	d = agent_deadline(1999);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	a = t0.tv_sec * 1000000000LL + t0.tv_nsec + 1999000000LL;
	b = t1.tv_sec * 1000000000LL + t1.tv_nsec + 1999000000LL;
	x = d.tv_sec * 1000000000LL + d.tv_nsec;
	CHECK(d.tv_nsec >= 0 && d.tv_nsec < 1000000000 && a <= x && x <= b,
	      "deadline_ms");
}

/* The NVRTC compiles the agent adds -lineinfo to: real archs only, not
 * when the program asked for line info, debug, LTO IR or OptiX IR. */
static void test_nvrtc_opts(void)
{
	const char *cupy[] = { "-DCUPY_USE_JITIFY", "--std=c++17",
			       "-arch=sm_90", "-ftz=true" };
	const char *two[] = { "--gpu-architecture", "sm_90a", "-I/x" };
	const char *eq[] = { "--gpu-architecture=sm_100f" };
	const char *last[] = { "-arch=sm_80", "-arch=compute_90" };
	const char *virt[] = { "-arch=compute_90" };
	const char *g[] = { "-arch=sm_90", "-G" };
	const char *dbg[] = { "--device-debug", "-arch=sm_90" };
	const char *li[] = { "-arch=sm_90", "-lineinfo" };
	const char *gli[] = { "-arch=sm_90", "--generate-line-info" };
	const char *lto[] = { "-arch=sm_90", "-dlto" };
	const char *optix[] = { "-optix-ir", "-arch=sm_90" };
	const char *gx[] = { "-arch=sm_90", "-Gx" };
	const char *dangling[] = { "-arch" };
	const char *hole[] = { "-arch=sm_90", NULL };
	const char *r;

	r = agent_nvrtc_lineinfo_arch(4, cupy);
	CHECK(r && !strcmp(r, "sm_90"), "nvrtc_cupy_options");
	r = agent_nvrtc_lineinfo_arch(3, two);
	CHECK(r && !strcmp(r, "sm_90a"), "nvrtc_arch_separate");
	r = agent_nvrtc_lineinfo_arch(1, eq);
	CHECK(r && !strcmp(r, "sm_100f"), "nvrtc_arch_long");
	CHECK(!agent_nvrtc_lineinfo_arch(2, last), "nvrtc_last_arch_virtual");
	CHECK(!agent_nvrtc_lineinfo_arch(1, virt), "nvrtc_virtual");
	CHECK(!agent_nvrtc_lineinfo_arch(0, NULL), "nvrtc_no_options");
	CHECK(!agent_nvrtc_lineinfo_arch(2, g), "nvrtc_G");
	CHECK(!agent_nvrtc_lineinfo_arch(2, dbg), "nvrtc_device_debug");
	CHECK(!agent_nvrtc_lineinfo_arch(2, li), "nvrtc_lineinfo");
	CHECK(!agent_nvrtc_lineinfo_arch(2, gli), "nvrtc_generate_line_info");
	CHECK(!agent_nvrtc_lineinfo_arch(2, lto), "nvrtc_dlto");
	CHECK(!agent_nvrtc_lineinfo_arch(2, optix), "nvrtc_optix");
	r = agent_nvrtc_lineinfo_arch(2, gx);
	CHECK(r && !strcmp(r, "sm_90"), "nvrtc_G_prefix_only");
	CHECK(!agent_nvrtc_lineinfo_arch(1, dangling), "nvrtc_dangling_arch");
	CHECK(!agent_nvrtc_lineinfo_arch(2, hole), "nvrtc_null_option");
	CHECK(!agent_nvrtc_lineinfo_arch(-1, cupy), "nvrtc_negative_count");
}

int main(void)
{
	test_deadline();
	test_names();
	test_ptx();
	test_extra();
	test_nvrtc_opts();
	UNIT_END();
}
