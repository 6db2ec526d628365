/**
 * Runs containerFsScript.ts's script in a container (one `docker exec`) and reads its NUL-separated
 * answer: entries, and per-argument errors turned into the broker's errors.
 */
import type Dockerode from 'dockerode';
import type { Duplex } from 'node:stream';
import type { EntryInfo, EntryType } from '../../../core/ports/backend';
import { BackendError, BadRequestError, FileNotFoundError, ForbiddenError, NotADirectoryError, NotAFileError, PayloadTooLargeError, errorMessage } from '../../../common/errors';
import { DockerDemuxer } from '../shells/demux';
import { FS_SCRIPT } from './containerFsScript';

/** A listing's answer is read whole before it is parsed: ~150 bytes an entry, 100k entries ~15 MB. */
const MAX_ANSWER_BYTES = 256 * 1024 * 1024;
const MAX_STDERR_BYTES = 4096;

export type FsOp = 'stat' | 'list' | 'rmfile' | 'rmdir' | 'chmod' | 'mkdir' | 'mv' | 'target';

export async function runFsScript(container: Dockerode.Container, op: FsOp, root: string, args: string[]): Promise<string[]> {
  let stream: Duplex;
  let exec: Dockerode.Exec;
  try {
    exec = await container.exec({ Cmd: ['bash', '-c', FS_SCRIPT, 'execd-fs', op, root, ...args], AttachStdout: true, AttachStderr: true, Tty: false, WorkingDir: '/' });
    stream = (await exec.start({ hijack: true, stdin: false })) as Duplex;
  } catch (err) {
    throw new BackendError(`could not run a file operation in container ${container.id.slice(0, 12)}: ${errorMessage(err)}`);
  }
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
  if (ExitCode !== 0) throw new BackendError(`a file operation failed in container ${container.id.slice(0, 12)} (exit ${ExitCode}): ${stderr.trim() || 'no message'}`);
  const fields = Buffer.concat(out).toString('utf8').split('\0');
  fields.pop(); // after the last NUL
  return fields;
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
