/**
 * An acquire's files written by bash builtins on a container's fs lane, as one command line:
 * `[[ -d D ]] || mkdir -p -- D` for the working directory and each file's parent, then one
 * `builtin printf -- FORMAT > PATH` per file, the bytes spelled out in the format.
 *
 * Why not the engine's archive upload (putArchive): dockerd serves each one by re-executing its own
 * ~75 MB binary in the container's root (chrootarchive), and that start-up alone costs ~150 ms of
 * CPU on this kind of machine (`dockerd --version`, 10 in a row: 1.5 s); 60 acquires with two small
 * files cost dockerd 230 ms of CPU each and took 206 ms at p50, against none and 23 ms here. A
 * printf is a builtin: no process at all when the directories exist (a slot's prepared one does),
 * one `mkdir` when a file sits in a subdirectory.
 *
 * Bash reads a pipe a byte at a time, so the line's length is its cost: LANE_FILES_MAX_BYTES keeps
 * big payloads on the upload, where their size costs nothing extra.
 */
import type { WorkdirFile } from '../../../core/ports/backend';

/** Past this many bytes of command line, the files go up as a tarball instead. */
export const LANE_FILES_MAX_BYTES = 64 * 1024;

/**
 * The printf format that writes exactly `content`: printable ASCII as itself, `%` and `\` doubled,
 * everything else (the single quote, controls, NUL, bytes over 0x7e) as a three-digit octal escape,
 * so the format can sit in single quotes and no escape swallows a following digit.
 */
export function printfFormat(content: Buffer): string {
  let out = '';
  for (const byte of content) {
    if (byte === 0x25) out += '%%';
    else if (byte === 0x5c) out += '\\\\';
    else if (byte >= 0x20 && byte <= 0x7e && byte !== 0x27) out += String.fromCharCode(byte);
    else out += `\\${byte.toString(8).padStart(3, '0')}`;
  }
  return out;
}

/**
 * The command that creates `dir` (if missing), the files' parents (if missing) and the files under
 * `dir`; it prints nothing and fails (non-zero) at the first step that fails. Null when it would be
 * longer than LANE_FILES_MAX_BYTES. `files`' paths are relative and validated (no `..`, not
 * absolute) before they get here.
 */
export function writeFilesCommand(dir: string, files: readonly WorkdirFile[]): string | null {
  // Each byte takes at most 4 in the format: no need to spell out what cannot fit.
  let least = 0;
  for (const f of files) least += f.content.length + f.path.length;
  if (least > LANE_FILES_MAX_BYTES) return null;
  const root = dir.replace(/\/+$/, '');
  const dirs = new Set<string>([root]);
  for (const f of files) {
    const parts = f.path.split('/').filter((p) => p !== '');
    for (let i = 1; i < parts.length; i++) dirs.add(`${root}/${parts.slice(0, i).join('/')}`);
  }
  // Files made by a redirect get 0666 & ~umask, directories 0777 & ~umask: 0644 and 0755, as the
  // tarball gives them.
  const steps = ['builtin umask 022'];
  for (const d of [...dirs].sort()) steps.push(`{ [[ -d ${quote(d)} ]] || mkdir -p -- ${quote(d)}; }`);
  for (const f of files) steps.push(`builtin printf -- '${printfFormat(f.content)}' > ${quote(`${root}/${f.path}`)}`);
  const command = steps.join(' && ');
  return command.length > LANE_FILES_MAX_BYTES ? null : command;
}

/** For logs: the command with every file's bytes left out. */
export function redactFileContents(command: string): string {
  return command.replace(/printf -- '[^']*'/g, "printf -- '...'");
}

function quote(s: string): string {
  return `'${s.replace(/'/g, `'\\''`)}'`;
}
