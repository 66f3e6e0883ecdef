# Test programs for the uprobe tests (tests/accept/uprobe_*.sh,
# tests/unit/test_syms.c): a workload and a C++ shared library, built
# -O0 -g -fno-inline whatever CFLAGS say, so that every call is real.

PROGS_DIR    := $(BUILD)/progs
PROGS_CFLAGS := -O0 -g -fno-inline -fno-omit-frame-pointer -Wall

EXTRA_ALL += $(PROGS_DIR)/uprobe_target $(PROGS_DIR)/libgtdemo.so

# Compiled as C++, linked as C: it uses nothing from libstdc++.
$(PROGS_DIR)/libgtdemo.so: tests/progs/gtdemo.cpp
	@mkdir -p $(dir $@)
	$(CXX) $(PROGS_CFLAGS) -fPIC -fno-exceptions -fno-rtti \
		-c -o $(PROGS_DIR)/gtdemo.o $<
	$(CC) -shared -o $@ $(PROGS_DIR)/gtdemo.o

# -rdynamic: its -w option finds its own functions with dlsym.
$(PROGS_DIR)/uprobe_target: tests/progs/uprobe_target.c tests/progs/probe_wait.h $(PROGS_DIR)/libgtdemo.so
	$(CC) $(PROGS_CFLAGS) -rdynamic -o $@ $< -L$(PROGS_DIR) -lgtdemo \
		-Wl,-rpath,'$$ORIGIN' -ldl

# Language tests that read user memory (tests/accept/lang_uprobe_diff.sh).
EXTRA_ALL += $(PROGS_DIR)/lang_target

$(PROGS_DIR)/lang_target: tests/progs/lang_target.c tests/progs/probe_wait.h
	@mkdir -p $(dir $@)
	$(CC) $(PROGS_CFLAGS) -rdynamic -o $@ $< -ldl

# cuda: provider tests (tests/accept/cuda_*.sh): a driver API workload
# and a fake driver; the workload finds libcuda.so.1 at run time through
# LD_LIBRARY_PATH: build/progs/fakecuda/, or a directory with a link to
# the toolkit's stub.
EXTRA_ALL += $(PROGS_DIR)/cuda_stub $(PROGS_DIR)/fakecuda/libcuda.so.1

$(PROGS_DIR)/fakecuda/libcuda.so.1: tests/progs/fakecuda.c
	@mkdir -p $(dir $@)
	$(CC) $(PROGS_CFLAGS) -fPIC -shared -Wl,-soname,libcuda.so.1 -o $@ $<

$(PROGS_DIR)/cuda_stub: tests/progs/cuda_stub.c tests/progs/probe_wait.h $(PROGS_DIR)/fakecuda/libcuda.so.1
	$(CC) $(PROGS_CFLAGS) -rdynamic -o $@ $< \
		$(PROGS_DIR)/fakecuda/libcuda.so.1 -ldl

# Launches in a loop through a dlsym pointer (tests/accept/cuda_hostpath.sh,
# bench/hostpath); -O2: the loop is the workload's, not ours to slow.
EXTRA_ALL += $(PROGS_DIR)/cuda_loop

$(PROGS_DIR)/cuda_loop: tests/progs/cuda_loop.c
	@mkdir -p $(dir $@)
	$(CC) -O2 -g -Wall -o $@ $< -ldl -lpthread

# Every cuda:memcpy/malloc/free/sync entry point through dlsym pointers
# (tests/accept/cuda_hostcalls.sh).
EXTRA_ALL += $(PROGS_DIR)/cuda_calls

$(PROGS_DIR)/cuda_calls: tests/progs/cuda_calls.c
	@mkdir -p $(dir $@)
	$(CC) $(PROGS_CFLAGS) -o $@ $< -ldl -lpthread

# usdt: provider tests (tests/diff/45*): <sys/sdt.h> probes, one behind
# a semaphore; -O1 so that arguments are in registers and in memory.
EXTRA_ALL += $(PROGS_DIR)/usdt_target

$(PROGS_DIR)/usdt_target: tests/progs/usdt_target.c tests/progs/usdt_sem.c
	@mkdir -p $(dir $@)
	$(CC) -O1 -g -Wall -o $@ tests/progs/usdt_target.c tests/progs/usdt_sem.c

# Stack tests (tests/accept/stack_*.sh): a C workload with threads, its
# stripped copy whose symbols are in a separate debug file found through
# .gnu_debuglink, and a C++ workload.
EXTRA_ALL += $(PROGS_DIR)/stack_target $(PROGS_DIR)/stack_stripped \
	$(PROGS_DIR)/stack_cxx $(PROGS_DIR)/cuda_stack

$(PROGS_DIR)/stack_target: tests/progs/stack_target.c tests/progs/probe_wait.h
	@mkdir -p $(dir $@)
	$(CC) $(PROGS_CFLAGS) -rdynamic -o $@ $< -ldl -lpthread

# objcopy looks for the debug file by the name given, from the cwd
$(PROGS_DIR)/stack_stripped: $(PROGS_DIR)/stack_target
	objcopy --only-keep-debug $< $@.debug
	objcopy --strip-all $< $@.tmp
	cd $(PROGS_DIR) && objcopy --add-gnu-debuglink=stack_stripped.debug \
		stack_stripped.tmp && mv stack_stripped.tmp stack_stripped

$(PROGS_DIR)/stack_cxx: tests/progs/stack_cxx.cpp tests/progs/probe_wait.h
	@mkdir -p $(dir $@)
	$(CXX) $(PROGS_CFLAGS) -fno-exceptions -fno-rtti -rdynamic -c \
		-o $(PROGS_DIR)/stack_cxx.o $<
	$(CC) -rdynamic -o $@ $(PROGS_DIR)/stack_cxx.o -ldl

# cuda: probes' stacks (tests/accept/cuda_stacks.sh): C++ on the fake driver
$(PROGS_DIR)/cuda_stack: tests/progs/cuda_stack.cpp tests/progs/probe_wait.h $(PROGS_DIR)/fakecuda/libcuda.so.1
	$(CXX) $(PROGS_CFLAGS) -fno-exceptions -fno-rtti -rdynamic -c \
		-o $(PROGS_DIR)/cuda_stack.o $<
	$(CC) -rdynamic -o $@ $(PROGS_DIR)/cuda_stack.o \
		$(PROGS_DIR)/fakecuda/libcuda.so.1 -ldl
