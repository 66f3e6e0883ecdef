# SPDX-License-Identifier: MIT
# Make fragment for runtime/agent, included by the top Makefile after
# OBJS is set and before the library rule uses it.
#
# The device runtime (devrt.cu) is compiled to PTX with nvcc and embedded
# as a C string in $(BUILD)/runtime/agent/devrt_ptx.c; its object joins
# libgputrace.a.  Without nvcc the string is empty (device probes then
# report the runtime missing) and the build still succeeds.

CUDA_HOME ?= /usr/local/cuda
NVCC ?= $(firstword $(wildcard $(CUDA_HOME)/bin/nvcc) $(shell command -v nvcc 2>/dev/null))

DEVRT_PTX_C := $(BUILD)/runtime/agent/devrt_ptx.c
DEVRT_PTX_O := $(BUILD)/runtime/agent/devrt_ptx.o

$(DEVRT_PTX_C): runtime/agent/devrt.cu gpucode/devrt.h \
		runtime/agent/devrt_embed.sh
	@mkdir -p $(dir $@)
	sh runtime/agent/devrt_embed.sh "$(NVCC)" runtime/agent/devrt.cu $@

$(DEVRT_PTX_O): $(DEVRT_PTX_C)
	$(CC) $(CFLAGS) $(XCFLAGS) -c -o $@ $<

OBJS += $(DEVRT_PTX_O)
