/**
 * Bash functions the per-container control shell uses to find and kill a session's processes with
 * nothing but bash builtins and /proc (the image needs no tool of ours). No single criterion catches
 * every escapee: the parent tree misses a double fork plus setsid, the session or process group
 * misses setsid, the environment tag misses `env -i`. Their union catches all of them.
 *
 *   __bk_kill ROOT SINCE_EPOCH_MS TAG KEEP_ROOT
 *     kills (SIGKILL) every process that is ROOT's descendant, or in ROOT's session or process group
 *     (a shell spawned by the container's entrypoint leads its group, not a session), or carries TAG
 *     in its environment; only those started at or after SINCE_EPOCH_MS (-1: all); ROOT itself
 *     and its ancestors only when KEEP_ROOT is 0. Never PID 1 or the control shell. Prints the count.
 *     Each pass stops its victims before killing them, and passes repeat (up to 3) while they find
 *     any: a parent still alive while its children die may fork again into the room they free
 *     (a fork burst held at the pids limit does exactly that), after the /proc snapshot was taken.
 *
 *   __bk_ps PID              one line: PID and its children, each `pid(comm) state wchan;` ("gone":
 *                            none), to say why a shell did not answer (builtins only)
 *   __bk_ticks EPOCH_MS      sets __bk_t to that moment in /proc's start-time ticks (also __bk_gc's)
 *   __bk_slay PID...         stops, then SIGKILLs its arguments (none: nothing)
 *   __bk_fgint PID           SIGINT to the foreground process group of PID's terminal, only when
 *                            that group is not PID's own (a command owns the terminal, not the
 *                            shell PID); prints 1 when sent, 0 when not
 *   __bk_nspid NSPID TAG     the container's pid of the process carrying TAG whose pid in its own
 *                            pid namespace (nested in the container's: an isolated session's) is
 *                            NSPID, from /proc/<pid>/status's NSpid; 0 when none
 *
 * The threshold is converted to /proc's start-time ticks when the kill RUNS, from the clock read
 * then ($EPOCHREALTIME, /proc/uptime): the control shell may run it seconds after it was queued when
 * a runaway command starves its container's CPU, and a relative "ms ago" would then be stale.
 */
export const CONTROL_SCRIPT = `
__bk_ps(){
  local root=$1 f l p c w out=
  for f in /proc/[0-9]*/stat; do
    { builtin read -r l < "$f"; } 2>/dev/null || continue
    p=\${f#/proc/}; p=\${p%/stat}
    c=\${l#*\\(}; c=\${c%)*}
    builtin set -- \${l##*) }
    [[ $p == "$root" || $2 == "$root" ]] || continue
    w=; { builtin read -r w < "/proc/$p/wchan"; } 2>/dev/null
    out+="$p($c) $1 \${w:-?}; "
  done
  builtin echo "\${out:-gone}"
}
__bk_ticks(){
  local up now
  builtin read -r up _ < /proc/uptime; up=\${up/./}; now=\${EPOCHREALTIME//[!0-9]/}
  __bk_t=$(( up - (now / 1000 - $1) / 10 - 1 ))
}
__bk_slay(){
  (($#)) && { builtin kill -STOP "$@"; builtin kill -9 "$@"; } 2>/dev/null
  :
}
__bk_fgint(){
  local l=
  { builtin read -r l < "/proc/$1/stat"; } 2>/dev/null
  builtin set -- \${l##*) }
  # After the name: $3 is the process group, $6 the terminal's foreground group.
  if [[ -n $l ]] && (($6 > 0 && $6 != $3)) && builtin kill -INT -- "-$6" 2>/dev/null; then builtin echo 1; else builtin echo 0; fi
}
__bk_nspid(){
  local f p k v e
  for f in /proc/[0-9]*/status; do
    p=\${f#/proc/}; p=\${p%/status}; v=
    { while builtin read -r k v; do [[ $k == NSpid: ]] && break; v=; done < "$f"; } 2>/dev/null
    [[ $v == *[[:space:]]* && \${v##*[[:space:]]} == "$1" ]] || continue
    while IFS= builtin read -r -d '' e; do [[ $e == "$2" ]] && { builtin echo "$p"; return; }; done < "/proc/$p/environ" 2>/dev/null
  done
  builtin echo 0
}
__bk_kill(){
  # Killed by an earlier round: a process with SIGKILL pending may not be a zombie yet when the next
  # round reads /proc, and must be neither killed nor counted twice.
  local total=0 round envmin=-1 up
  local -A __bk_dead=()
  for round in 1 2 3; do
    builtin read -r up _ < /proc/uptime; up=\${up/./}
    __bk_kill_pass "$@" "$envmin"
    ((total += __bk_n))
    ((__bk_n)) || break
    envmin=$((up - 1))
  done
  builtin echo "$total"
}
__bk_kill_pass(){
  local root=$1 since=$2 tag=$3 keep=$4 envmin=$5 f l p e min=-1 changed=1
  local -A pp=() sd=() pg=() st=() hit=()
  __bk_n=0
  for f in /proc/[0-9]*/stat; do
    { builtin read -r l < "$f"; } 2>/dev/null || continue
    p=\${f#/proc/}; p=\${p%/stat}
    set -- \${l##*) }
    [[ $1 == [ZX] ]] && continue
    pp[$p]=$2; pg[$p]=$3; sd[$p]=$4; st[$p]=\${20}
  done
  hit[$root]=1
  while ((changed)); do changed=0
    for p in "\${!pp[@]}"; do
      if [[ -z \${hit[$p]} && -n \${hit[\${pp[$p]}]} ]]; then hit[$p]=1; changed=1; fi
    done
  done
  for p in "\${!sd[@]}"; do [[ \${sd[$p]} == "$root" || \${pg[$p]} == "$root" ]] && hit[$p]=1; done
  if ((since >= 0)); then __bk_ticks "$since"; min=$__bk_t; fi
  # Reading environments is the costly part: skip processes too old to be victims, and, in a later
  # pass, those the previous pass already read.
  ((envmin < min)) && envmin=$min
  if [[ -n $tag ]]; then
    for p in "\${!pp[@]}"; do
      [[ -n \${hit[$p]} ]] && continue
      ((envmin >= 0 && \${st[$p]} < envmin)) && continue
      while IFS= builtin read -r -d '' e; do [[ $e == "$tag" ]] && { hit[$p]=1; break; }; done < /proc/$p/environ 2>/dev/null
    done
  fi
  # Kept: ROOT and, with it, every ancestor of ROOT. An isolated session's bash runs under its
  # session init (its PID namespace's init): killing that init kills bash. The init carries the tag
  # and starts in the same clock tick as a shell opened just before the command was typed, so the
  # tag and the start time alone would take it.
  local -A kept=()
  if ((keep == 1)); then p=$root; while [[ -n $p && $p != 0 && -z \${kept[$p]} ]]; do kept[$p]=1; p=\${pp[$p]}; done; fi
  # A kept ROOT's own children are killed without a stop first: a shell that saw its job stop
  # before the kill landed would report it Stopped (status 147), not killed (137).
  local victims=() direct=()
  for p in "\${!hit[@]}"; do
    [[ $p == 1 || $p == "$$" || $p == "$BASHPID" || -z \${pp[$p]} ]] && continue
    [[ -n \${kept[$p]} || -n \${__bk_dead[$p]} ]] && continue
    ((min >= 0 && \${st[$p]} < min)) && continue
    __bk_dead[$p]=1
    if ((keep == 1)) && [[ \${pp[$p]} == "$root" ]]; then direct+=("$p"); else victims+=("$p"); fi
  done
  ((\${#victims[@]})) && builtin kill -STOP "\${victims[@]}" 2>/dev/null
  ((\${#direct[@]})) && builtin kill -9 "\${direct[@]}" 2>/dev/null
  __bk_slay "\${victims[@]}"
  __bk_n=$((\${#victims[@]} + \${#direct[@]}))
}
`;

/**
 * The collector of what ended sessions left behind (controlShell.ts, `collect`):
 *
 *   __bk_gc BEFORE_EPOCH_MS LIVE_TAG...
 *     kills (SIGKILL) every process started before BEFORE_EPOCH_MS whose environment carries a
 *     non-empty BROKER_SESSION_TAG= entry that is none of the LIVE_TAGs (the control lanes carry an
 *     empty one). Never PID 1 or the control shell.
 *     Prints the count.
 *
 * A session's tag is live from before its bash starts until its shell is closed or recycled, so a
 * process with a tag that is not live belongs to no session: an escapee its session's kills missed
 * (reparented to init after its bash died, or forked after a kill pass took its snapshot). Only
 * processes older than the request count, so a session opened after the live list was written is
 * never taken for a dead one. A process that drops or rewrites the variable escapes this; the
 * docs/architecture.md says the variable is the broker's.
 */
export const GC_SCRIPT = `
__bk_gc(){
  local before=$1 f l p e max victims=() env=()
  local -A live=()
  shift
  for e; do live[$e]=1; done
  __bk_ticks "$before"; max=$__bk_t
  for f in /proc/[0-9]*/stat; do
    { builtin read -r l < "$f"; } 2>/dev/null || continue
    p=\${f#/proc/}; p=\${p%/stat}
    [[ $p == 1 || $p == "$$" || $p == "$BASHPID" ]] && continue
    builtin set -- \${l##*) }
    [[ $1 == [ZX] ]] && continue
    ((\${20} < max)) || continue
    { builtin mapfile -d '' -t env < "/proc/$p/environ"; } 2>/dev/null || continue
    for e in "\${env[@]}"; do
      [[ $e == BROKER_SESSION_TAG=* ]] || continue
      [[ $e == BROKER_SESSION_TAG= ]] && break # the control lanes' (fifoSpawner.ts): no session's
      [[ -z \${live[$e]} ]] && victims+=("$p")
      break
    done
  done
  __bk_slay "\${victims[@]}"
  builtin echo "\${#victims[@]}"
}
`;

/**
 * The fs lane's one function. `__bk_room` succeeds when the container's pids cgroup (v1 or v2, as
 * seen from inside) has room for a few more processes, or when no limit is visible; builtins only,
 * so asking costs no fork. A fork at the limit would make bash retry for ~15 s, then abort the
 * whole input line (the framing's end marker with it).
 */
export const FS_SCRIPT = `
__bk_room(){
  local d m c
  for d in /sys/fs/cgroup/pids /sys/fs/cgroup; do
    { builtin read -r m < "$d/pids.max" && builtin read -r c < "$d/pids.current"; } 2>/dev/null || continue
    [[ $m == max ]] && return 0
    (( m - c > 4 ))
    return
  done
  return 0
}
`;
