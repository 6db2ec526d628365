/**
 * Runs containerFsScript.ts's script in a container (one `docker exec`) and reads its NUL-separated
 * answer: entries, and per-argument errors turned into the broker's errors.
 */
import type Dockerode from 'dockerode';
import { PassThrough, type Duplex, type Readable } from 'node:stream';
import type { EntryInfo, EntryType } from '../../../core/ports/backend';
import { BackendError, BadRequestError, FileNotFoundError, ForbiddenError, NotADirectoryError, NotAFileError, PayloadTooLargeError, errorMessage } from '../../../common/errors';
import { DockerDemuxer } from '../shells/demux';
import { FS_SCRIPT } from './containerFsScript';
import { inSessionView } from '../isolation/sessionView';

/** What the script runs from the image besides bash (a command it cannot find exits 127). */
const FS_TOOLS = 'bash with readlink, basename, dirname, stat, find, xargs, rm, mkdir, chmod, chown, mv, cat, tail and head, as BusyBox or coreutils and findutils have them';
/** A listing's answer is read whole before it is parsed: ~150 bytes an entry, 100k entries ~15 MB. */
const MAX_ANSWER_BYTES = 256 * 1024 * 1024;
const MAX_STDERR_BYTES = 4096;

export type FsOp = 'stat' | 'list' | 'rmfile' | 'rmdir' | 'chmod' | 'mkdir' | 'mv' | 'target' | 'put';

/**
 * Where a file operation runs: `view` null, the container's own view; else the container pid of an
 * isolated session's shell, whose view it runs in (isolation/sessionView.ts). `staged`: a file of the
 * container's own view (no session's) given to the operation as its standard input, then removed.
 */
export interface FsPlace {
  view: number | null;
  staged?: string;
}

function fsCommand(op: FsOp | 'read', root: string, args: readonly string[], { view, staged }: FsPlace): string[] {
  const script = ['bash', '-c', FS_SCRIPT, 'execd-fs', op, root, ...args];
  // Its pid namespace too: the view's /proc is the session's, and /dev/fd (a process substitution's) leads through /proc/self.
  const placed = view === null ? script : inSessionView(view, script);
  // The redirection is opened in the container's view, before the view is entered: the session never sees the file.
  return staged === undefined ? placed : ['bash', '-c', 'f=$1; shift; exec <"$f" && rm -f -- "$f" && exec "$@"', 'bkr-put', staged, ...placed];
}

async function startFsExec(container: Dockerode.Container, cmd: string[]): Promise<{ exec: Dockerode.Exec; stream: Duplex }> {
  try {
    const exec = await container.exec({ Cmd: cmd, AttachStdout: true, AttachStderr: true, Tty: false, WorkingDir: '/' });
    return { exec, stream: (await exec.start({ hijack: true, stdin: false })) as Duplex };
  } catch (err) {
    throw new BackendError(`could not run a file operation in container ${container.id.slice(0, 12)}: ${errorMessage(err)}`);
  }
}

export async function runFsScript(container: Dockerode.Container, op: FsOp, root: string, args: string[], place: FsPlace = { view: null }): Promise<string[]> {
  const { exec, stream } = await startFsExec(container, fsCommand(op, root, args, place));
  const out: Buffer[] = [];
  let outBytes = 0;
  let stderr = '';
  await new Promise<void>((resolve, reject) => {
    const demux = new DockerDemuxer((which, chunk) => {
      if (which === 'stderr') stderr = (stderr + chunk.toString('utf8')).slice(0, MAX_STDERR_BYTES);
      else if ((outBytes += chunk.length) <= MAX_ANSWER_BYTES) out.push(chunk);
    });
    stream.on('data', (c: Buffer) => demux.push(c));
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', (err) => reject(new BackendError(`a file operation's stream failed: ${err.message}`)));
  });
  if (outBytes > MAX_ANSWER_BYTES) throw new PayloadTooLargeError(`the answer is over ${MAX_ANSWER_BYTES} bytes`);
  const { ExitCode } = await exec.inspect();
  if (ExitCode === 127) throw new BackendError(`${stderr.trim() || "the sandbox's image lacks a tool"}: the file routes need ${FS_TOOLS}`);
  if (ExitCode !== 0) throw new BackendError(`a file operation failed in container ${container.id.slice(0, 12)} (exit ${ExitCode}): ${stderr.trim() || 'no message'}`);
  const fields = Buffer.concat(out).toString('utf8').split('\0');
  fields.pop(); // after the last NUL
  return fields;
}

/**
 * `length` bytes from `offset` of `real` (a file inside `root`), read inside an isolated session's
 * view (`view`: its shell's container pid): a stream that fails when the read did not end well.
 */
export async function readInView(container: Dockerode.Container, view: number, root: string, real: string, offset: number, length: number): Promise<Readable> {
  const { exec, stream } = await startFsExec(container, fsCommand('read', root, [real, String(offset), String(length)], { view }));
  const out = new PassThrough();
  const demux = new DockerDemuxer((which, chunk) => {
    if (which === 'stdout' && !out.write(chunk)) {
      stream.pause();
      out.once('drain', () => stream.resume());
    }
  });
  stream.on('data', (c: Buffer) => demux.push(c));
  stream.on('error', (err) => out.destroy(new BackendError(`could not read the file: ${err.message}`)));
  let ended = false;
  const finish = (): void => {
    if (ended) return;
    ended = true;
    void exec.inspect().then(
      ({ ExitCode }) => (ExitCode === 0 ? out.end() : out.destroy(new BackendError(ExitCode === 127 ? `the sandbox's image lacks a tool: the file routes need ${FS_TOOLS}` : `could not read the file (exit ${ExitCode})`))),
      (err: unknown) => out.destroy(new BackendError(`could not read the file: ${errorMessage(err)}`)),
    );
  };
  stream.on('end', finish);
  stream.on('close', finish);
  out.on('close', () => stream.destroy()); // the client left: stop reading
  return out;
}

/** The error an `ERR <kind> <index>` record means, for the argument it names. */
export function fsError(kind: string, path: string): Error {
  switch (kind) {
    case 'missing':
      return new FileNotFoundError(path);
    case 'forbidden':
      return new ForbiddenError(`${path} leads outside the sandbox's working directory`);
    case 'isdir':
      return new NotAFileError(`${path} (a directory)`);
    case 'notdir':
      return new NotADirectoryError(path);
    case 'symlink':
      return new NotADirectoryError(path, 'a symlink: list the directory it points to');
    case 'owner':
      return new BadRequestError(`${path}: no such user or group in the sandbox`);
    case 'changed':
      return new BackendError(`${path} changed while it was listed; try again`);
    default:
      return new BadRequestError(`${path}: the operation failed (permissions, or something in the way)`);
  }
}

const TYPE_OF_FORMAT: Record<number, EntryType> = { 0o100000: 'file', 0o040000: 'directory', 0o120000: 'symlink' };

/** An entry from its stat line (`%f %s %Y %Z %U %G`: raw mode in hex, size, mtime, ctime, owner, group). */
export function entryOfStatLine(line: string, path: string): EntryInfo {
  const [rawMode, size, mtime, ctime, owner, group] = line.trim().split(' ');
  const mode = parseInt(rawMode, 16);
  const type = TYPE_OF_FORMAT[mode & 0o170000] ?? 'other';
  if (!Number.isFinite(mode) || group === undefined) throw new BackendError(`unexpected stat of ${path}: ${JSON.stringify(line)}`);
  return {
    path,
    type,
    size: type === 'directory' ? 0 : Number(size),
    modifiedMs: Number(mtime) * 1000,
    createdMs: Number(ctime) * 1000,
    owner,
    group,
    mode: mode & 0o7777,
  };
}

/** For the operations whose only answer is errors (`ERR kind index` records): throws the first. */
export function throwFirstError(fields: string[], paths: readonly string[]): void {
  if (fields.length >= 3 && fields[0] === 'ERR') throw fsError(fields[1], paths[Number(fields[2])] ?? '?');
  if (fields.length > 0) throw new BackendError(`a file operation answered what it should not: ${JSON.stringify(fields.slice(0, 4))}`);
}
