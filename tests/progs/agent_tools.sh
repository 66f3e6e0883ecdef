# SPDX-License-Identifier: MIT
# Sourced (from the repository root) by tests/progs/agent_lib.sh and
# tests/gpu/agent_standalone.sh: agent_tools builds the agent's test
# tools into $T: cfg (tests/gpu/agent_cfg.c, the configuration writer,
# with the device runtime's PTX) and tracer (tests/accept/agent_tracer.c,
# the protocol peer).  Needs NVCC, T and fail(); sets CC and W.
CC=${CC:-cc}
W="-std=gnu11 -O1 -g -Wall -Wextra -Wno-unused-parameter -Wno-sign-compare -I."

agent_tools() {
	devrt=build/runtime/agent/devrt_ptx.c
	if [ ! -f "$devrt" ]; then
		devrt=$T/devrt_ptx.c
		sh runtime/agent/devrt_embed.sh "$NVCC" runtime/agent/devrt.cu \
			"$devrt" || fail "devrt_embed.sh"
	fi
	$CC $W tests/gpu/agent_cfg.c compiler/ptx_lower.c \
		compiler/ptx_lower_an.c compiler/ptx_lower_insn.c \
		compiler/dev_helpers.c gpucode/agent_config.c "$devrt" \
		-o "$T/cfg" || fail "building agent_cfg"
	$CC $W tests/accept/agent_tracer.c gpucode/devrt_host.c \
		-o "$T/tracer" || fail "building agent_tracer"
}
