# gputrace — plain make + pkg-config.  `make` builds build/gputrace,
# `make check` installs what is missing, builds and runs every test this
# machine can run, `make gpu-check` runs the GPU suite (device machine).
# `make install` puts the binary, agent, tools and man pages under PREFIX
# (tools/install.mk).

CC       ?= gcc
BUILD    ?= build
PKGS     := libbpf libelf zlib libedit
CFLAGS   ?= -O2 -g
XCFLAGS  := -std=gnu11 -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare \
	    -MMD -MP -I. -I$(BUILD) $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
# libdw, libbpf, libelf, zlib, bzip2, xz, zstd, lz4 and libedit are linked
# statically so the binary runs on the device machine, which has no
# package registry.
STATIC_LIBS := -Wl,-Bstatic -ldw -lbpf -lelf -lz -lbz2 -llzma -lzstd -llz4 -ledit -ltinfo -lbsd -lmd -liberty \
	       -Wl,-Bdynamic
LDLIBS   += $(STATIC_LIBS) -ldl -lpthread -lm
# uprobe offsets are checked with Zydis, dlopen'd (probes/insn_check.c)
ifneq ($(wildcard /usr/include/Zydis/Zydis.h),)
XCFLAGS  += -DGT_HAVE_ZYDIS
endif
# --metrics serves with libmicrohttpd, dlopen'd (runtime/metrics_http.c):
# its static archive needs a static GnuTLS and p11-kit
ifneq ($(wildcard /usr/include/microhttpd.h),)
XCFLAGS  += -DGT_HAVE_MHD
endif

LEX_SRC  := lang/lexer.l
YACC_SRC := lang/parser.y
GEN_C    := $(BUILD)/lang/lexer.c $(BUILD)/lang/parser.c
# runtime/agent/ is the in-process agent (agent_so.mk builds it); what
# the tracer and the agent share (the device runtime's layout, the agent
# protocol and its config file) lives in gpucode/.
SRCS     := $(filter-out runtime/main.c,$(wildcard lang/*.c compiler/*.c gpucode/*.c runtime/*.c probes/*.c))
OBJS     := $(SRCS:%.c=$(BUILD)/%.o) $(GEN_C:%.c=%.o)
MAIN_OBJ := $(BUILD)/runtime/main.o
UNIT_SRC := $(wildcard tests/unit/*.c)
UNIT_BIN := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)

.DEFAULT_GOAL := all

# Fragments owned by their modules (test programs, the device runtime and
# agent): they add to EXTRA_OBJS, EXTRA_UNIT_DEPS and their own rules.
-include tests/progs/progs.mk
-include runtime/agent/agent.mk
-include runtime/agent/agent_so.mk
-include tools/install.mk
-include tests/fuzz/fuzz.mk

all: $(BUILD)/gputrace $(BUILD)/tools/workload $(EXTRA_ALL)

# The demo's bundled workload: -O0 so its functions stay for uprobes.
$(BUILD)/tools/workload: tools/workload.c
	@mkdir -p $(dir $@)
	$(CC) -O0 -g -fno-inline -o $@ $<

demo: deps
	$(MAKE) all
	$(BUILD)/gputrace -c '$(BUILD)/tools/workload' tools/demo.gt

$(BUILD)/gputrace: $(MAIN_OBJ) $(BUILD)/libgputrace.a
	$(CC) $(CFLAGS) $(XCFLAGS) $(LDFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/libgputrace.a: $(OBJS)
	@rm -f $@
	$(AR) rcs $@ $^

$(BUILD)/%.o: %.c | $(GEN_C)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) -c -o $@ $<

$(BUILD)/lang/%.o: $(BUILD)/lang/%.c
	$(CC) $(CFLAGS) $(XCFLAGS) -Ilang -Wno-unused-function -c -o $@ $<

$(BUILD)/lang/parser.c: $(YACC_SRC)
	@mkdir -p $(dir $@)
	bison -Wall -Werror --defines=$(BUILD)/lang/parser.h -o $@ $<

$(BUILD)/lang/parser.h: $(BUILD)/lang/parser.c

$(BUILD)/lang/lexer.c: $(LEX_SRC) $(BUILD)/lang/parser.c
	@mkdir -p $(dir $@)
	flex --header-file=$(BUILD)/lang/lexer.h -o $@ $<

$(BUILD)/tests/%: tests/unit/%.c $(BUILD)/libgputrace.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(XCFLAGS) $(LDFLAGS) -o $@ $(filter %.c %.a,$^) $(LDLIBS)

units: $(UNIT_BIN) $(EXTRA_UNIT_DEPS)

# AddressSanitizer build used by the test suite.
asan:
	$(MAKE) BUILD=build-asan CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer" \
		LDFLAGS="-fsanitize=address,undefined" all units

deps:
	@sh tests/install-deps.sh

check: deps
	$(MAKE) all units
	$(MAKE) asan
	$(MAKE) fuzz-build
	@sh tests/run.sh

gpu-check: all units
	@sh tests/gpu/run.sh

bench: all
	@sh bench/run.sh

clean:
	rm -rf build build-asan build-fuzz

.PHONY: all units asan deps check gpu-check bench clean demo
-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
