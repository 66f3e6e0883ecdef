#!/bin/sh
# SPDX-License-Identifier: MIT
# GPU: tests/gpu/cuda_launch.sh on the kernel path: with
# GPUTRACE_CUDA_UPROBES=1 every cuda: clause is a kernel uprobe, as
# without the agent (docs/hostpath.md); cuda_launch.sh itself runs the
# cuda:launch clauses in the agent (the default with -c).  Same checks,
# same exit codes.
GPUTRACE_CUDA_UPROBES=1 exec sh "$(dirname "$0")/cuda_launch.sh"
