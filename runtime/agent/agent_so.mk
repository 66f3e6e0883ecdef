# SPDX-License-Identifier: MIT
# The in-process agent, $(BUILD)/libgputrace-agent.so, that `gputrace -c`
# preloads into CUDA programs (docs/agent.md).  Included by the top
# Makefile.  Its sources are compiled a second time, position independent,
# under $(BUILD)/pic with GT_AGENT_SO defined (without it the agent_*.c
# files compile to nothing, so the tracer never exports our dlsym/cu*
# wrappers).  zstd and lz4 are linked statically (their Debian archives
# are PIC) and hidden, so the target's own copies are not interposed;
# so is libiberty's demangler (agent_dmgl.c: the tracer's base names);
# libelf is not needed: the agent reads images from memory.
# -Bsymbolic-functions: our wrappers' addresses are our own even when we
# are dlopened behind libcuda (-p), whose exports come first in the
# global scope.  Needs
# cuda.h (types only; the driver is opened at run time).

CUDA_HOME ?= /usr/local/cuda
AGENT_CUDA_INC ?= $(CUDA_HOME)/include
AGENT_SO := $(BUILD)/libgputrace-agent.so
AGENT_SRCS := $(wildcard runtime/agent/agent_*.c) gpucode/fatbin.c \
	gpucode/fatbin_cubin.c gpucode/cubin_scan.c \
	gpucode/ptx_read.c gpucode/ptx_splice.c gpucode/ptx_mem.c \
	gpucode/ptx_splice_mem.c \
	gpucode/ptx_prune.c gpucode/devrt_host.c gpucode/agent_config.c \
	gpucode/hbpf.c gpucode/hbpf_jit.c \
	runtime/zydis_load.c
AGENT_OBJS := $(AGENT_SRCS:%.c=$(BUILD)/pic/%.o)
# fixed flags: an ASan build of the agent could not be preloaded into
# programs built without it
AGENT_OPT ?= -O2 -g
AGENT_CFLAGS := -std=gnu11 -Wall -Wextra -Wno-unused-parameter \
	-Wno-sign-compare -MMD -MP -I. -I$(AGENT_CUDA_INC) -fPIC \
	-fvisibility=hidden -DGT_AGENT_SO
AGENT_LIBS := -Wl,-Bstatic -lzstd -llz4 -liberty -Wl,-Bdynamic -ldl -lpthread
# -p's inline hooks decode x86 with Zydis (libzydis-dev).  Debian packages
# no static libZydis, so the agent dlopens it when it is injected: a copy
# goes next to the agent (carry it with the agent to a machine without
# libzydis4); -c needs none of it.
ZYDIS_SO := $(firstword $(wildcard /usr/lib/$(shell $(CC) -print-multiarch 2>/dev/null)/libZydis.so.4.0 /usr/lib/libZydis.so.4.0))
ifneq ($(wildcard /usr/include/Zydis/Zydis.h),)
AGENT_CFLAGS += -DGT_HAVE_ZYDIS
endif
ifneq ($(ZYDIS_SO),)
AGENT_ZYDIS := $(BUILD)/libZydis.so.4.0
EXTRA_ALL += $(AGENT_ZYDIS)
$(AGENT_ZYDIS): $(ZYDIS_SO)
	cp -L $< $@
endif

ifneq ($(wildcard $(AGENT_CUDA_INC)/cuda.h),)
EXTRA_ALL += $(AGENT_SO)
else
$(info agent_so.mk: no $(AGENT_CUDA_INC)/cuda.h, libgputrace-agent.so not built)
endif

$(BUILD)/pic/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(AGENT_OPT) $(AGENT_CFLAGS) -c -o $@ $<

$(AGENT_SO): $(AGENT_OBJS)
	$(CC) $(AGENT_OPT) -shared -o $@ $(AGENT_OBJS) \
		-Wl,--exclude-libs,ALL -Wl,-z,defs -Wl,-z,now \
		-Wl,-Bsymbolic-functions $(AGENT_LIBS)

agent: $(AGENT_SO)

.PHONY: agent
