// SPDX-License-Identifier: MIT
/*
 * --info, as bpftrace's: the system, the build, and yes/no for what the
 * kernel and the machine offer.  Each answer is a probe of the real thing
 * (a file, the kernel's own helper probe, a library that loads).
 */
#include <dlfcn.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>
#include <sys/utsname.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>

#include "runtime/info.h"

static const char *yes(bool b)
{
	return b ? "yes" : "no";
}

static bool have_file(const char *path)
{
	return access(path, F_OK) == 0;
}

static bool helper(enum bpf_func_id id)
{
	return libbpf_probe_bpf_helper(BPF_PROG_TYPE_KPROBE, id, NULL) == 1;
}

/* Left loaded: unloading CUPTI drops the C++ runtime's exception pool
 * that its load allocated (a leak to ASan); --info exits anyway. */
static bool have_lib(const char *name)
{
	return dlopen(name, RTLD_LAZY | RTLD_LOCAL) != NULL;
}

int info_print(FILE *f, const char *version)
{
	static const struct { const char *name; enum bpf_func_id id; } helpers[] = {
		{ "probe_read_user", BPF_FUNC_probe_read_user },
		{ "probe_read_user_str", BPF_FUNC_probe_read_user_str },
		{ "probe_read_kernel", BPF_FUNC_probe_read_kernel },
		{ "probe_read_kernel_str", BPF_FUNC_probe_read_kernel_str },
		{ "get_current_cgroup_id", BPF_FUNC_get_current_cgroup_id },
		{ "send_signal", BPF_FUNC_send_signal },
		{ "ringbuf_output", BPF_FUNC_ringbuf_output },
		{ "for_each_map_elem (len())", BPF_FUNC_for_each_map_elem },
	};
	struct utsname u;

	fputs("System\n", f);
	if (!uname(&u))
		fprintf(f, "  OS: %s %s %s\n  Arch: %s\n", u.sysname, u.release,
			u.version, u.machine);
	fprintf(f, "\nBuild\n  version: v%s\n  libbpf: %s\n", version,
		libbpf_version_string());
	fputs("\nKernel helpers\n", f);
	for (size_t i = 0; i < sizeof(helpers) / sizeof(helpers[0]); i++)
		fprintf(f, "  %s: %s\n", helpers[i].name, yes(helper(helpers[i].id)));
	fputs("\nKernel features\n", f);
	fprintf(f, "  btf: %s\n", yes(have_file("/sys/kernel/btf/vmlinux")));
	fprintf(f, "  tracefs: %s\n", yes(have_file("/sys/kernel/tracing/events") ||
					   have_file("/sys/kernel/debug/tracing/events")));
	fprintf(f, "  ringbuf map: %s\n",
		yes(libbpf_probe_bpf_map_type(BPF_MAP_TYPE_RINGBUF, NULL) == 1));
	fputs("\nProbe types\n", f);
	fprintf(f, "  kprobe: %s\n", yes(have_file("/sys/bus/event_source/devices/kprobe")));
	fprintf(f, "  uprobe: %s\n", yes(have_file("/sys/bus/event_source/devices/uprobe")));
	fprintf(f, "  perf_event: %s\n", yes(have_file("/proc/sys/kernel/perf_event_paranoid")));
	fputs("\nGPU\n", f);
	fprintf(f, "  libcuda: %s\n", yes(have_lib("libcuda.so.1")));
	fprintf(f, "  CUPTI: %s\n", yes(have_lib("libcupti.so") ||
					have_lib("libcupti.so.13") ||
					have_lib("libcupti.so.12")));
	fprintf(f, "  NVIDIA device: %s\n", yes(have_file("/dev/nvidia0")));
	return 0;
}
