# SPDX-License-Identifier: MIT
# Sourced by bench/launch, bench/complete and bench/sample (sh, from the
# repository root): the empty-kernel loop of tests/gpu/launches.cu.  The
# caller sets NVCC, CUDA and T (a scratch directory).
#   launches_build ARCH	tests/gpu/launches.cu for ARCH into $T/launches,
#			nvcc's messages appended to $T/nvcc
#   launches_rate FILE	the launches a second a run printed
#   launches_made FILE	the launches it made
launches_build() {
	"$NVCC" -O2 -arch="$1" -I"$CUDA/extras/CUPTI/include" -o "$T/launches" \
		tests/gpu/launches.cu -L"$CUDA/lib64/stubs" -lcuda 2>>"$T/nvcc"
}
launches_rate() { sed -n 's/.*: \([0-9][0-9]*\) launches\/s$/\1/p' "$1"; }
launches_made() { sed -n 's/^\([0-9][0-9]*\) launches in.*/\1/p' "$1"; }
