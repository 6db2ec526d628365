/**
 * execd's file operations inside a container, as ONE `docker exec` of a bash script per request
 * (paths passed as arguments, never spliced into the script). Why an exec and not the control shell's
 * lanes (~1 ms against ~60 ms): the lanes are the pool's (kills, health pings, working directories)
 * and cap an answer at 64 KiB; a listing of a big tree, or a slow `rm -rf` of one, must neither be cut
 * nor delay an acquire. Why not the archive API alone: it reports no owner names and cannot chmod,
 * chown, move or list without copying every file's bytes. Bytes themselves (download, upload) do go
 * through the archive API (dockerArchiveStreams.ts): no process, and they stream.
 *
 * Confinement is checked by the script, in the container, on what a path resolves to (`canon`:
 * symlinks of its existing part followed, as `readlink -m` does) or, for operations on a link itself
 * (delete, move), what its directory resolves to: outside the root answers `forbidden`.
 *
 * Portable: bash 4.4 and the tools both GNU coreutils/findutils and BusyBox have (readlink -f,
 * stat -c, find -print0, xargs -0), so a Debian image and a BusyBox one both serve it.
 *
 * Output: NUL-separated fields. `ERR <kind> <index>` for a failed argument (kind: missing, forbidden,
 * isdir, notdir, symlink, owner, failed, changed); `OK <index> <real path> <stat line>` for a stat;
 * `E <relative path> <stat line>` per listed entry. `put PATH MODE` writes its standard input there
 * (resolved, held to the root, parents made) with MODE; `read PATH OFFSET LENGTH` prints those bytes
 * of the file, raw, or exits 3 (not a file inside the root): both only for an isolated session's own
 * view (files/sessionView.ts), where a check and its use cannot be raced out of that view. A stat line is `stat -c '%f %s %Y %Z %U %G'`: raw
 * mode in hex, size, mtime, ctime, owner, group.
 */

/** `@{` stands for bash's `${` (a template literal would take it for its own). */
export const FS_SCRIPT = String.raw`
set -u
# An image without one of them (bash alone) is told at once, not answered wrongly op by op: exit 127.
m=; for t in readlink basename dirname stat find xargs rm mkdir chmod chown mv cat tail head; do type -P $t >/dev/null || m="$m $t"; done
[ -z "$m" ] || { printf "the sandbox's image lacks%s" "$m" >&2; exit 127; }
F='%f %s %Y %Z %U %G'
op=$1; R=$(readlink -f -- "$2") || R=$2; shift 2
err() { printf 'ERR\0%s\0%s\0' "$1" "$2"; }
inside() { [ "$R" = / ] && return 0; case "$1/" in "$R/"*) return 0;; esac; return 1; }
canon() {
  local p=$1 rest= r
  while [ ! -e "$p" ] && [ ! -L "$p" ]; do rest="/$(basename -- "$p")$rest"; p=$(dirname -- "$p"); done
  r=$(readlink -f -- "$p") || return 1
  [ "$r" = / ] && r=
  printf '%s%s' "$r" "$rest"
}
# An owner or group as chown takes it: empty (none asked), a number, or a name in the file's first column.
named() {
  [ -z "$1" ] && return 0
  case $1 in *[!0-9]*) ;; *) return 0;; esac
  local n _; while IFS=: read -r n _; do [ "$n" = "$1" ] && return 0; done <"$2" 2>/dev/null
  return 1
}
nofollow() { local d; d=$(canon "$(dirname -- "$1")") || return 1; printf '%s/%s' "$d" "$(basename -- "$1")"; }
i=0
case $op in
stat)
  for p in "$@"; do
    r=$(canon "$p")
    if [ -z "$r" ] || ! inside "$r"; then err forbidden $i
    elif [ ! -e "$r" ]; then err missing $i
    else printf 'OK\0%s\0%s\0%s\0' $i "$r" "$(stat -c "$F" -- "$r")"; fi
    i=$((i+1))
  done ;;
list)
  dir=$1 depth=$2 max=$3; r=$(nofollow "$dir")
  if ! inside "$(canon "$dir")" || ! inside "$r"; then err forbidden 0
  elif [ -L "$r" ]; then err symlink 0
  elif [ ! -e "$r" ]; then err missing 0
  elif [ ! -d "$r" ]; then err notdir 0
  else
    mapfile -d '' -n $((max + 1)) names < <(find "$r" -mindepth 1 -maxdepth "$depth" -print0 2>/dev/null)
    while IFS= read -r line; do
      printf 'E\0%s\0%s\0' "@{names[i]#"$r"/}" "$line"; i=$((i+1))
    done < <([ @{#names[@]} -gt 0 ] && printf '%s\0' "@{names[@]}" | xargs -0 stat -c "$F" -- 2>/dev/null)
    [ $i -eq @{#names[@]} ] || err changed 0
  fi ;;
rmfile|rmdir)
  for p in "$@"; do
    r=$(nofollow "$p")
    if [ -z "$r" ] || ! inside "$r" || [ "$r" = "$R" ]; then err forbidden $i
    elif [ ! -e "$r" ] && [ ! -L "$r" ]; then [ $op = rmfile ] && err missing $i
    elif [ $op = rmfile ] && [ -d "$r" ] && [ ! -L "$r" ]; then err isdir $i
    elif [ $op = rmdir ] && { [ ! -d "$r" ] || [ -L "$r" ]; }; then err notdir $i
    else rm -rf -- "$r" 2>/dev/null || err failed $i; fi
    i=$((i+1))
  done ;;
chmod|mkdir)
  # path mode owner group, repeated. Every path and owner is checked before any is touched: a
  # refused request changes nothing (a directory made before its owner turned out unknown would stay).
  bad=0
  for ((k = 1; k + 3 <= $#; k += 4)); do
    p=@{!k}; o=$((k + 2)); g=$((k + 3)); r=$(canon "$p")
    if [ -z "$r" ] || ! inside "$r"; then err forbidden $i; bad=1
    elif [ $op = chmod ] && [ ! -e "$r" ]; then err missing $i; bad=1
    elif ! named "@{!o}" /etc/passwd || ! named "@{!g}" /etc/group; then err owner $i; bad=1; fi
    i=$((i+1))
  done
  [ $bad = 0 ] || exit 0
  i=0
  while [ $# -ge 4 ]; do
    p=$1 mode=$2 owner=$3 group=$4; shift 4
    r=$(canon "$p"); og=$owner; [ -n "$group" ] && og="$og:$group"
    if [ -z "$r" ] || ! inside "$r"; then err forbidden $i
    elif [ $op = chmod ] && [ ! -e "$r" ]; then err missing $i
    elif [ $op = mkdir ] && ! mkdir -p -- "$r" 2>/dev/null; then err notdir $i
    elif ! chmod "$mode" -- "$r" 2>/dev/null; then err failed $i
    elif [ -n "$og" ] && ! chown "$og" -- "$r" 2>/dev/null; then err owner $i
    fi
    i=$((i+1))
  done ;;
mv)
  s=$(nofollow "$1") d=$(nofollow "$2")
  if [ -z "$s" ] || [ -z "$d" ] || ! inside "$s" || ! inside "$d" || [ "$s" = "$R" ] || [ "$d" = "$R" ]; then err forbidden 0
  elif [ ! -e "$s" ] && [ ! -L "$s" ]; then err missing 0
  elif [ ! -d "$(dirname -- "$d")" ]; then err missing 1
  elif [ -d "$d" ] && [ ! -L "$d" ]; then err isdir 1
  elif ! mv -f -- "$s" "$d" 2>/dev/null; then err failed 0; fi ;;
target)
  # where an upload writes: the path resolved, its parents made; the mode a file there has now.
  # The owner and group it will be given ($2, $3) are checked first: a refused upload writes nothing.
  r=$(canon "$1")
  if [ -z "$r" ] || ! inside "$r"; then err forbidden 0
  elif ! named "@{2-}" /etc/passwd || ! named "@{3-}" /etc/group; then err owner 0
  elif [ -d "$r" ]; then err isdir 0
  elif ! mkdir -p -- "$(dirname -- "$r")" 2>/dev/null; then err notdir 0
  else printf 'OK\0%s\0%s\0' "$r" "$([ -e "$r" ] && stat -c %a -- "$r")"; fi ;;
put)
  r=$(canon "$1")
  if [ -z "$r" ] || ! inside "$r"; then err forbidden 0
  elif [ -d "$r" ]; then err isdir 0
  elif ! mkdir -p -- "$(dirname -- "$r")" 2>/dev/null; then err notdir 0
  elif ! { cat >"$r" && chmod "$2" -- "$r"; } 2>/dev/null; then err failed 0; fi ;;
read)
  r=$(canon "$1")
  { [ -n "$r" ] && inside "$r" && [ -f "$r" ]; } || exit 3
  tail -c +$(($2 + 1)) -- "$r" | head -c "$3" ;;
esac
exit 0
`.replaceAll('@{', '${');
