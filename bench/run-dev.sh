#!/bin/bash
# SPDX-License-Identifier: BSD-3-Clause
# Device-layer benchmark: the soft device against a plain shared-memory
# ping-pong in the same run.   bench/run-dev.sh [BUILD_DIR] [dev_pingpong args]
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
shift || true
exec "$build/bench/dev_pingpong" "$@"
