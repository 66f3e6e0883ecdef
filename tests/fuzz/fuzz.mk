# libFuzzer harnesses (tests/fuzz/README.md).  `make fuzz-build` builds the
# library with clang, ASan and UBSan into build-fuzz/ and one binary per
# harness; `make fuzz` runs each for FUZZ_SECONDS, one at a time;
# `tests/run.sh fuzz` (in `make check`) replays seeds and crashers and
# fuzzes each for FUZZ_SMOKE seconds.

FUZZ_CC      ?= clang-14
FUZZ_BUILD   := build-fuzz
FUZZ_SECONDS ?= 600
# past libFuzzer's default (the largest seed): PTX modules and fatbins
FUZZ_MAX_LEN ?= 65536
FUZZ_SAN     := -fsanitize=address,undefined -fno-sanitize-recover=undefined \
		-fno-omit-frame-pointer
FUZZ_HARNESS := prog fatbin ptx ebpf hbpf
FUZZ_BINS    := $(FUZZ_HARNESS:%=$(FUZZ_BUILD)/fuzz_%)

fuzz-build:
	$(MAKE) BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) \
		CFLAGS="-O1 -g -fsanitize=fuzzer-no-link $(FUZZ_SAN)" \
		$(FUZZ_BUILD)/libgputrace.a
	$(MAKE) $(FUZZ_BINS)

$(FUZZ_BUILD)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZ_BUILD)/libgputrace.a
	$(FUZZ_CC) -O1 -g -fsanitize=fuzzer $(FUZZ_SAN) $(XCFLAGS) -I$(FUZZ_BUILD) \
		-o $@ $< $(FUZZ_BUILD)/libgputrace.a $(LDLIBS)

# One harness at a time (the cores are shared); new inputs go to
# build-fuzz/corpus/NAME, findings to build-fuzz/findings/NAME.
fuzz: fuzz-build
	@for h in $(FUZZ_HARNESS); do \
		mkdir -p $(FUZZ_BUILD)/corpus/$$h $(FUZZ_BUILD)/findings/$$h; \
		echo "fuzz: $$h for $(FUZZ_SECONDS) s"; \
		$(FUZZ_BUILD)/fuzz_$$h -max_total_time=$(FUZZ_SECONDS) \
			-close_fd_mask=2 -print_final_stats=1 \
			-max_len=$(FUZZ_MAX_LEN) \
			-dict=tests/fuzz/$$h/dict \
			-artifact_prefix=$(FUZZ_BUILD)/findings/$$h/ \
			$(FUZZ_BUILD)/corpus/$$h tests/fuzz/$$h/seeds || exit 1; \
	done

.PHONY: fuzz fuzz-build
