# SPDX-License-Identifier: BSD-3-Clause
# Sourced by contrib/get-ucx-src.sh and contrib/build-ucx.sh: their
# messages and the options both take (--cached, --cache-dir, --tarball,
# --help).  Not a command of its own.

prog=$(basename "$0")
cached_only=no
cache_dir=${DCX_CACHE_DIR:-${XDG_CACHE_HOME:-${HOME:-/root}/.cache}/dcx}
tarball=

die() {
    echo "$prog: $*" >&2
    exit 1
}

note() {
    echo "$prog: $*" >&2
}

# The script's leading comment, without its first line and the '# '
usage() {
    sed -n '3,/^$/s/^# \{0,1\}//p' "$0"
}

# ucx_src_common_opt "$@": takes the first word if it is an option both
# scripts accept; sets ucx_src_opt_words to how many words it used (0: not
# one of them)
ucx_src_common_opt() {
    ucx_src_opt_words=1
    case "$1" in
    --cached)       cached_only=yes ;;
    --cache-dir)    [ $# -ge 2 ] || die "--cache-dir needs a directory"
                    cache_dir=$2; ucx_src_opt_words=2 ;;
    --cache-dir=*)  cache_dir=${1#*=} ;;
    --tarball)      [ $# -ge 2 ] || die "--tarball needs a file"
                    tarball=$2; ucx_src_opt_words=2 ;;
    --tarball=*)    tarball=${1#*=} ;;
    -h|--help)      usage; exit 0 ;;
    *)              ucx_src_opt_words=0 ;;
    esac
}
