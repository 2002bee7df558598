#!/bin/sh
# SPDX-License-Identifier: BSD-3-Clause
set -e
cd "$(dirname "$0")"
mkdir -p config/aux config/m4
autoreconf -fi
