# shellcheck shell=bash
# Debian source packages through a private apt configuration. Sourced by the scripts
# that build from Debian's sources (mpich-build.sh, libfabric-build.sh); not run.
#
#   debsrc_lines [SUITE...]
#       deb-src lines derived from this machine's own deb entries (deb822 .sources
#       files and one-line .list files), one per line. Without SUITE: the entries of
#       the machine's release (VERSION_CODENAME and its -updates, -security ...
#       suites). With SUITEs: the entries of the release's own suite only
#       (VERSION_CODENAME exactly: the main archive), repeated for each SUITE with the
#       same URIs and components. Their key stays the entry's own Signed-By unless
#       that keyring is one release's (its file name names the release: it cannot
#       verify another) or the entry has none (apt's trusted.gpg.d holds the
#       release's keys); then it is Debian's archive keyring
#       (/usr/share/keyrings/debian-archive-keyring.gpg, debian-archive-keyring),
#       which covers the next release as well.
#
#   debsrc_download WORKDIR DESTDIR PACKAGE ORIG-PREFIX [SUITE...]
#       `apt-get source --download-only` of PACKAGE into DESTDIR with the sources
#       list, package lists and cache in WORKDIR (removed at the end): the system's
#       apt sources, lists and cache are never read or written. With SUITEs it asks
#       for PACKAGE/SUITE, the first SUITE whose source package has an upstream
#       tarball whose name starts with ORIG-PREFIX (e.g. libfabric_2.1.0.orig.tar.);
#       without, for the release's own version. Only that tarball is required: the
#       other files of the source package (.dsc, .debian.tar.*) may fail to download
#       (apt-get then fails; that is reported, not fatal). The tarball's SHA256 must
#       be the one the signed Sources index gives. Prints what it does; returns
#       non-zero with a one-line reason when no suite has the tarball or it could not
#       be fetched or verified.
#
# No mirror is named here: every URI comes from the machine's own apt entries.

debsrc_archive_keyring=/usr/share/keyrings/debian-archive-keyring.gpg
debsrc_etc=${DEBSRC_APT_ETC:-/etc/apt} # tests point this at a copy

debsrc_lines() {
    local codename
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    [ -n "$codename" ] || { echo "debsrc: no VERSION_CODENAME in /etc/os-release" >&2; return 1; }
    local map=${*:-}
    shopt -s nullglob
    local f
    # Both parsers print "SIGNED-BY|URI|SUITE|COMPONENTS" for each deb entry of the
    # release; the mapping to SUITEs and keys is done once, below.
    {
        for f in "$debsrc_etc"/sources.list.d/*.sources; do
            awk -v codename="$codename" '
                function flush(  n, s, i, suites, uris, u) {
                    if (types ~ /(^| )deb( |$)/ && enabled != "no" && urilist != "") {
                        n = split(suitelist, suites, " ")
                        split(urilist, uris, " ")
                        for (i = 1; i <= n; i++)
                            if (suites[i] == codename || index(suites[i], codename "-") == 1)
                                for (u in uris)
                                    printf "%s|%s|%s|%s\n", signed, uris[u], suites[i], comps
                    }
                    types = ""; urilist = ""; suitelist = ""; comps = ""; signed = ""; enabled = ""
                }
                /^[ \t]*#/ { next }
                /^[ \t]*$/ { flush(); next }
                tolower($1) == "types:" { $1 = ""; types = substr($0, 2) }
                tolower($1) == "uris:" { $1 = ""; urilist = substr($0, 2) }
                tolower($1) == "suites:" { $1 = ""; suitelist = substr($0, 2) }
                tolower($1) == "components:" { $1 = ""; comps = substr($0, 2) }
                tolower($1) == "signed-by:" && $2 ~ /^\// { signed = $2 }
                tolower($1) == "enabled:" { enabled = tolower($2) }
                END { flush() }' "$f"
        done
        for f in "$debsrc_etc"/sources.list "$debsrc_etc"/sources.list.d/*.list; do
            [ -f "$f" ] || continue
            awk -v codename="$codename" '
                $1 == "deb" {
                    i = 2; signed = ""
                    if ($2 ~ /^\[/) {
                        for (;; i++) {
                            o = $i; gsub(/[\[\]]/, "", o)
                            if (o ~ /^signed-by=\//) signed = substr(o, 11)
                            if ($i ~ /\]$/) break
                        }
                        i++
                    }
                    uri = $i; suite = $(i + 1); comps = ""
                    for (j = i + 2; j <= NF && $j !~ /^#/; j++) comps = comps (comps == "" ? "" : " ") $j
                    if (suite == codename || index(suite, codename "-") == 1)
                        printf "%s|%s|%s|%s\n", signed, uri, suite, comps
                }' "$f"
        done
    } | awk -F'|' -v codename="$codename" -v map="$map" -v archive="$debsrc_archive_keyring" '
        function line(signed, uri, suite, comps) {
            printf "deb-src %s%s %s %s\n", (signed != "" ? "[signed-by=" signed "] " : ""), uri, suite, comps
        }
        map == "" { line($1, $2, $3, $4); next }
        $3 == codename {
            n = split(map, suites, " ")
            key = $1
            if (key == "" || index(key, codename) > 0) key = archive
            for (i = 1; i <= n; i++) line(key, $2, suites[i], $4)
        }' | sort -u
}

debsrc_download() {
    local work=$1 rc=0
    debsrc_download_in "$@" || rc=$?
    rm -rf "$work" # the private sources list, package lists and cache
    return $rc
}

debsrc_download_in() {
    local work=$1 dest=$2 pkg=$3 orig=$4
    shift 4
    local suites=("$@")
    mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$dest"
    debsrc_lines "${suites[@]}" >"$work/sources.list" || return 1
    echo "deb-src entries (private to this download):"
    sed 's/^/    /' "$work/sources.list"
    if [ ! -s "$work/sources.list" ]; then
        echo "debsrc: no deb entries for this release to derive deb-src entries from"
        return 1
    fi
    if grep -qF "signed-by=$debsrc_archive_keyring]" "$work/sources.list" && [ ! -r "$debsrc_archive_keyring" ]; then
        echo "debsrc: $debsrc_archive_keyring is missing (apt-get install debian-archive-keyring)"
        return 1
    fi
    local opts=(-o Dir::Etc::sourcelist="$work/sources.list" -o Dir::Etc::sourceparts=/nonexistent
        -o Dir::State::Lists="$work/lists" -o Dir::Cache="$work/cache" -o APT::Sandbox::User=root -q)
    if ! apt-get "${opts[@]}" update; then
        echo "debsrc: apt-get update failed for the entries above (does their keyring hold the suite's key?)"
        return 1
    fi

    # Which request has the tarball, and the tarball's name and SHA256 from the index.
    local req='' uris='' cand s
    local cands=()
    if [ ${#suites[@]} -gt 0 ]; then
        for s in "${suites[@]}"; do cands+=("$pkg/$s"); done
    else
        cands=("$pkg")
    fi
    for cand in "${cands[@]}"; do
        if ! uris=$(apt-get "${opts[@]}" source --print-uris "$cand" 2>&1); then
            echo "debsrc: $cand: $(echo "$uris" | tail -n 1)"
            continue
        fi
        if echo "$uris" | awk -v p="$orig" 'index($2, p) == 1 { found = 1 } END { exit !found }'; then
            req=$cand
            break
        fi
        echo "debsrc: $cand has no $orig*, only: $(echo "$uris" | awk '$2 ~ /\.orig\.tar\./ {print $2}' | tr '\n' ' ')"
    done
    if [ -z "$req" ]; then
        echo "debsrc: no source package among ${cands[*]} has an upstream tarball $orig*"
        return 1
    fi
    local file sum
    file=$(echo "$uris" | awk -v p="$orig" 'index($2, p) == 1 { print $2; exit }')
    sum=$(echo "$uris" | awk -v p="$orig" 'index($2, p) == 1 {
        for (i = 4; i <= NF; i++) if ($i ~ /^SHA256:/) print substr($i, 8); exit }')
    echo "debsrc: $req: $file (SHA256 ${sum:-not in the index})"

    local rc=0
    (cd "$dest" && apt-get "${opts[@]}" source --download-only "$req") || rc=$?
    [ $rc -eq 0 ] || echo "debsrc: apt-get source exited with $rc; only $file is needed, checking it"
    if [ ! -f "$dest/$file" ]; then
        echo "debsrc: $file was not downloaded"
        return 1
    fi
    if [ -z "$sum" ] || [ "$(sha256sum <"$dest/$file" | cut -d' ' -f1)" != "$sum" ]; then
        echo "debsrc: $file does not have the SHA256 the Sources index gives ($sum); removed"
        rm -f "$dest/$file"
        return 1
    fi
    echo "debsrc: $file verified against the Sources index of $req"
}
