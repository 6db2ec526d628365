#!/usr/bin/env bash
# Prints the Debian mirror this machine's apt is configured with for SUITE (default bookworm), as
#   <uri> <file it was found in>
# read from apt's own source lists: the one-line sources.list and sources.list.d/*.list, and the deb822
# sources.list.d/*.sources (paths as apt-config reports them, so APT_CONFIG is honoured). The first
# enabled `deb` entry that offers SUITE with the `main` component and a scheme debootstrap can fetch
# from (http, https, file) wins. Exits 1 with a message when there is none: the project names no
# mirror of its own, so an image build without a configured mirror has nothing to fall back on.
#   scripts/apt-mirror.sh [SUITE]
set -euo pipefail
SUITE=${1:-bookworm}
say() { echo "[apt-mirror] $*" >&2; }

command -v apt-config >/dev/null || { say "apt-config not found: this needs a Debian machine with apt"; exit 1; }
ETC_SL=/etc/apt/sources.list ETC_SP=/etc/apt/sources.list.d/
eval "$(apt-config shell ETC_SL Dir::Etc::sourcelist/f ETC_SP Dir::Etc::sourceparts/d)"

files=()
[[ -f $ETC_SL ]] && files+=("$ETC_SL")
shopt -s nullglob
for f in "${ETC_SP%/}"/*.list "${ETC_SP%/}"/*.sources; do files+=("$f"); done

# One-line format: `deb [opt=val ...] uri suite component...`; `#` starts a comment.
one_line() {
  awk -v suite="$SUITE" '
    { sub(/#.*/, ""); gsub(/\[[^]]*\]/, " ") }
    $1 == "deb" && NF >= 4 && $3 == suite {
      for (i = 4; i <= NF; i++) if ($i == "main") { print $2; next }
    }' "$1"
}

# deb822: stanzas split by blank lines; `Field: value`, continuation lines start with white space;
# `#` lines are comments. Values are white-space separated lists.
deb822() {
  awk -v suite="$SUITE" '
    function has(list, word,   n, a, i) { n = split(list, a, /[ \t]+/); for (i = 1; i <= n; i++) if (a[i] == word) return 1; return 0 }
    function first(list,   n, a, i) { n = split(list, a, /[ \t]+/); for (i = 1; i <= n; i++) if (a[i] != "") return a[i]; return "" }
    function all(list,   n, a, i) { n = split(list, a, /[ \t]+/); for (i = 1; i <= n; i++) if (a[i] != "") print a[i] }
    function flush() {
      if (has(f["types"], "deb") && has(f["suites"], suite) && has(f["components"], "main") && tolower(first(f["enabled"])) != "no" && f["uris"] != "") {
        all(f["uris"])
      }
      delete f; key = ""
    }
    /^#/ { next }
    /^[ \t]*$/ { flush(); next }
    /^[ \t]/ { if (key != "") f[key] = f[key] " " $0; next }
    {
      i = index($0, ":"); if (i == 0) next
      key = tolower(substr($0, 1, i - 1)); f[key] = substr($0, i + 1)
    }
    END { flush() }' "$1"
}

for f in "${files[@]}"; do
  case $f in *.sources) uris=$(deb822 "$f") ;; *) uris=$(one_line "$f") ;; esac
  for uri in $uris; do
    case $uri in
      http://* | https://* | file:/*) echo "${uri%/} $f"; exit 0 ;;
      *) say "skipping $uri in $f: debootstrap cannot fetch from that scheme" ;;
    esac
  done
done
say "no Debian mirror for '$SUITE' (a 'deb' entry with component main) in apt's sources: ${files[*]:-none found} (from $ETC_SL and $ETC_SP)."
say "Configure one for apt first (sources.list or sources.list.d/*.list or *.sources); this project does not name a mirror."
exit 1
