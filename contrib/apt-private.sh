# SPDX-License-Identifier: BSD-3-Clause
# shellcheck shell=sh
# Sourced by contrib/get-ucx-src.sh and contrib/build-ucx.sh, after
# contrib/ucx-src-opts.sh (its die, note and cache_dir): dcx's own apt
# configuration for fetching Debian source packages.  Not a command of its
# own.
#
# dcx never changes the machine's package sources: nothing under /etc/apt
# (apt's Dir::Etc) is created or changed.  A source package is fetched with
# a private configuration, one per purpose, under $cache_dir/apt/NAME/:
#   sources.list.d/dcx.sources   deb-src entries for the suites it needs,
#                                on the mirror the system's own "deb"
#                                entries use for the Debian archive
#   lists/                       apt's lists of those entries alone
#   cache/                       apt's package caches built from them
#   apt.conf                     clears the system's apt-get update hooks
#                                (they are for the system's lists), keeps
#                                the lists compressed
# apt-get and apt-cache run with that apt.conf and Dir::Etc::SourceList,
# Dir::Etc::SourceParts, Dir::State::Lists and Dir::Cache pointing there;
# everything else (proxies, trusted keys, ...) is the system's
# configuration.  No root is needed.  As root, apt does not hand its
# downloads to its sandbox user _apt (APT::Sandbox::User=root): that user
# could not write to a cache under /root.
#
# Earlier dcx versions added deb-src entries to /etc/apt/sources.list.d
# (dcx-src.sources, dcx-ucx-newer.sources); private_apt_forget_old removes
# them.

private_apt_dir=
private_apt_mirror=

# apt's value of configuration item $1 (apt-config's /d or /f forms)
apt_item() {
    apt-config shell apt_item_v "$1" 2>/dev/null |
        sed -n "s/^apt_item_v='\(.*\)'\$/\1/p"
}

# Removes the deb-src files that earlier dcx versions added to the
# system's source parts (as root), saying so in one line; without root
# says how to remove them.  A file of one of those names that holds
# anything but deb-src entries is not dcx's: it is left, with a note.
private_apt_forget_old() {
    command -v apt-config >/dev/null 2>&1 || return 0
    pa_parts=$(apt_item Dir::Etc::SourceParts/d)
    [ -n "$pa_parts" ] || return 0
    pa_gone=
    pa_left=
    for pa_f in "${pa_parts%/}/dcx-src.sources" \
                "${pa_parts%/}/dcx-ucx-newer.sources"; do
        [ -f "$pa_f" ] || continue
        if ! grep -q '^Types: deb-src$' "$pa_f" ||
           grep '^Types:' "$pa_f" | grep -qv '^Types: deb-src$'; then
            note "$pa_f holds more than deb-src entries, so it is not one dcx wrote: left as it is"
        elif rm -f "$pa_f" 2>/dev/null && [ ! -e "$pa_f" ]; then
            pa_gone="${pa_gone:+$pa_gone and }$pa_f"
        else
            pa_left="${pa_left:+$pa_left and }$pa_f"
        fi
    done
    [ -z "$pa_gone" ] ||
        note "removed $pa_gone: deb-src entries an earlier dcx version added (dcx now fetches sources with its own apt configuration in $cache_dir/apt)"
    [ -z "$pa_left" ] ||
        note "cannot remove $pa_left (not root?): an earlier dcx version added these deb-src entries; remove them as root (dcx no longer needs them)"
}

# The code name of the Debian release the machine runs (bookworm, ...)
release_codename() {
    [ -r /etc/os-release ] || die "no /etc/os-release: cannot tell the release"
    # shellcheck disable=SC1091
    rc_name=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [ -n "$rc_name" ] || die "no VERSION_CODENAME in /etc/os-release: cannot tell the release"
    echo "$rc_name"
}

# The URI of the Debian archive in the system's sources: the first "deb"
# entry for release $1's main component whose Release file says Origin and
# Label Debian, else (no Release file fetched yet: apt lists such entries
# only with --no-release-info) the first such entry at all.
private_apt_find_mirror() {
    # shellcheck disable=SC2016
    pa_fmt='$(REPO_URI) $(TARGET_OF) $(RELEASE) $(COMPONENT) $(ORIGIN) $(LABEL) $(CODENAME)'
    {
        apt-get indextargets --format "$pa_fmt" 2>/dev/null
        apt-get indextargets --no-release-info --format "$pa_fmt" 2>/dev/null
    } |
    awk -v rel="$1" '
        $2 == "deb" && $4 == "main" && ($3 == rel || $7 == rel) {
            if ($5 == "Debian" && $6 == "Debian") { print $1; found = 1; exit }
            if (first == "" && $5 == "$(ORIGIN)") first = $1
        }
        END { if (!found && first != "") print first }'
}

# private_apt_setup NAME SUITE...: selects (creating or updating it) the
# private configuration $cache_dir/apt/NAME with deb-src entries for the
# main component of SUITE... on the system's Debian mirror.
private_apt_setup() {
    pa_name=$1
    shift
    pa_rel=$(release_codename) || exit 1
    private_apt_mirror=$(private_apt_find_mirror "$pa_rel")
    [ -n "$private_apt_mirror" ] ||
        die "apt's sources have no 'deb' entry for $pa_rel main, so the Debian mirror to fetch sources from is unknown (pass --tarball FILE)"
    private_apt_dir="$cache_dir/apt/$pa_name"
    mkdir -p "$private_apt_dir/sources.list.d" "$private_apt_dir/lists/partial" \
        "$private_apt_dir/cache" || die "cannot create $private_apt_dir"
    pa_keyring=/usr/share/keyrings/debian-archive-keyring.gpg
    {
        echo "Types: deb-src"
        echo "URIs: $private_apt_mirror"
        echo "Suites: $*"
        echo "Components: main"
        [ ! -f "$pa_keyring" ] || echo "Signed-By: $pa_keyring"
    } | private_apt_write "$private_apt_dir/sources.list.d/dcx.sources"
    {
        echo "// dcx's own apt configuration (contrib/apt-private.sh): the"
        echo "// system's hooks on apt-get update are for its own lists, not these;"
        echo "// the lists are kept compressed"
        echo "#clear APT::Update::Pre-Invoke;"
        echo "#clear APT::Update::Post-Invoke;"
        echo "#clear APT::Update::Post-Invoke-Success;"
        echo "Acquire::GzipIndexes \"true\";"
    } | private_apt_write "$private_apt_dir/apt.conf"
}

# private_apt_write FILE: FILE gets standard input's text (replaced whole,
# and only if the text differs)
private_apt_write() {
    cat > "$1.new.$$" || die "cannot write $1.new.$$"
    if cmp -s "$1.new.$$" "$1"; then
        rm -f "$1.new.$$"
    else
        mv "$1.new.$$" "$1" || die "cannot write $1"
    fi
}

# private_apt COMMAND ARG...: runs apt-get or apt-cache COMMAND with the
# configuration private_apt_setup selected (under flock on the file
# pa_lock if that is set)
pa_lock=
private_apt() {
    pa_cmd=$1
    shift
    pa_sandbox=
    [ "$(id -u)" != 0 ] || pa_sandbox="-o APT::Sandbox::User=root"
    # shellcheck disable=SC2086
    ${pa_lock:+flock} ${pa_lock:+"$pa_lock"} \
        "$pa_cmd" -c "$private_apt_dir/apt.conf" \
        -o Dir::Etc::SourceList="$private_apt_dir/sources.list" \
        -o Dir::Etc::SourceParts="$private_apt_dir/sources.list.d" \
        -o Dir::State::Lists="$private_apt_dir/lists" \
        -o Dir::Cache="$private_apt_dir/cache" $pa_sandbox "$@"
}

# Fetches the private configuration's lists, one run at a time per
# configuration (where flock is there)
private_apt_update() {
    note "updating the lists of $private_apt_dir (deb-src from $private_apt_mirror)"
    pa_lock=
    ! command -v flock >/dev/null 2>&1 ||
        pa_lock="$private_apt_dir/update.lock"
    private_apt apt-get update >&2
    pa_rc=$?
    pa_lock=
    return $pa_rc
}
