/**
 * execd's file operations inside a container, as ONE `docker exec` of a bash script per request
 * (paths passed as arguments, never spliced into the script). Why an exec and not the control shell's
 * lanes (~1 ms against ~60 ms): the lanes are the pool's (kills, health pings, working directories)
 * and cap an answer at 64 KiB; a listing of a big tree, or a slow `rm -rf` of one, must neither be cut
 * nor delay an acquire. Why not the archive API alone: it reports no owner names and cannot chmod,
 * chown, move or list without copying every file's bytes. Bytes themselves (download, upload) do go
 * through the archive API (dockerArchiveStreams.ts): no process, and they stream.
 *
 * Confinement is checked by the script, in the container, on what `readlink -f` (follow) or the
 * parent's `readlink -f` (no follow) resolves a path to: outside the root answers `forbidden`.
 * Needs GNU coreutils and findutils in the image (`find -printf`, `readlink -m`), as Debian and
 * Ubuntu images have.
 *
 * Output: NUL-separated fields. `ERR <kind> <index>` for a failed argument (kind: missing, forbidden,
 * isdir, notdir, symlink, failed), `OK <index> <real path> <entry fields>` for a stat, and
 * `E <depth> <relative path> <entry fields>` for each listed entry. Entry fields: type letter, size,
 * mtime, ctime, owner, group, octal mode.
 */
export const ENTRY_FORMAT = '%y\\0%s\\0%T@\\0%C@\\0%u\\0%g\\0%m\\0';

export const FS_SCRIPT = String.raw`
set -u
op=$1; R=$(readlink -f -- "$2") || R=$2; shift 2
err() { printf 'ERR\0%s\0%s\0' "$1" "$2"; }
inside() { [ "$R" = / ] && return 0; case "$1/" in "$R/"*) return 0;; esac; return 1; }
# follow: every symlink resolved (the last one included); no follow: the parent's only.
follow() { readlink -m -- "$1"; }
nofollow() { local d; d=$(readlink -m -- "$(dirname -- "$1")") || return 1; [ "$d" = / ] && d=; printf '%s/%s' "$d" "$(basename -- "$1")"; }
i=0
case $op in
stat)
  for p in "$@"; do
    r=$(follow "$p")
    if ! inside "$r"; then err forbidden $i
    elif [ ! -e "$r" ]; then err missing $i
    else printf 'OK\0%s\0%s\0' $i "$r"; find "$r" -maxdepth 0 -printf '${ENTRY_FORMAT}'; fi
    i=$((i+1))
  done ;;
list)
  dir=$1 depth=$2 max=$3; r=$(nofollow "$dir")
  if ! inside "$(follow "$dir")" || ! inside "$r"; then err forbidden 0
  elif [ -L "$r" ]; then err symlink 0
  elif [ ! -e "$r" ]; then err missing 0
  elif [ ! -d "$r" ]; then err notdir 0
  else find "$r" -mindepth 1 -maxdepth "$depth" -printf 'E\0%d\0%P\0${ENTRY_FORMAT}' 2>/dev/null | head -z -n $(( (max + 1) * 10 )); fi ;;
rmfile|rmdir)
  for p in "$@"; do
    r=$(nofollow "$p")
    if ! inside "$r" || [ "$r" = "$R" ]; then err forbidden $i
    elif [ ! -e "$r" ] && [ ! -L "$r" ]; then [ $op = rmfile ] && err missing $i
    elif [ $op = rmfile ] && [ -d "$r" ] && [ ! -L "$r" ]; then err isdir $i
    elif [ $op = rmdir ] && { [ ! -d "$r" ] || [ -L "$r" ]; }; then err notdir $i
    else rm -rf -- "$r" 2>/dev/null || err failed $i; fi
    i=$((i+1))
  done ;;
chmod|mkdir)
  # path mode owner group, repeated
  while [ $# -ge 4 ]; do
    p=$1 mode=$2 owner=$3 group=$4; shift 4
    r=$(follow "$p")
    if ! inside "$r"; then err forbidden $i
    elif [ $op = chmod ] && [ ! -e "$r" ]; then err missing $i
    elif [ $op = mkdir ] && ! mkdir -p -- "$r" 2>/dev/null; then err notdir $i
    elif ! chmod "$mode" -- "$r" 2>/dev/null; then err failed $i
    elif og=$owner && { [ -z "$group" ] || og="$og:$group"; } && [ -n "$og" ] && ! chown "$og" -- "$r" 2>/dev/null; then err owner $i
    fi
    i=$((i+1))
  done ;;
mv)
  while [ $# -ge 2 ]; do
    s=$(nofollow "$1") d=$(nofollow "$2"); shift 2
    if ! inside "$s" || ! inside "$d" || [ "$s" = "$R" ] || [ "$d" = "$R" ]; then err forbidden $i
    elif [ ! -e "$s" ] && [ ! -L "$s" ]; then err missing $i
    elif [ ! -d "$(dirname -- "$d")" ]; then err missing $i
    elif ! mv -fT -- "$s" "$d" 2>/dev/null; then err failed $i; fi
    i=$((i+1))
  done ;;
target)
  # where an upload writes: the path resolved, its parents made; the mode an existing file has
  r=$(follow "$1")
  if ! inside "$r"; then err forbidden 0
  elif [ -d "$r" ]; then err isdir 0
  elif ! mkdir -p -- "$(dirname -- "$r")" 2>/dev/null; then err notdir 0
  else printf 'OK\0%s\0' "$r"; [ -e "$r" ] && find "$r" -maxdepth 0 -printf '%m'; printf '\0'; fi ;;
esac
exit 0
`;
