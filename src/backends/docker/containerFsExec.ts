/**
 * Runs containerFsScript.ts's script in a container (one `docker exec`) and reads its NUL-separated
 * answer: entries, and per-argument errors turned into the broker's errors.
 */
import type Dockerode from 'dockerode';
import type { Duplex } from 'node:stream';
import type { EntryInfo, EntryType } from '../../core/backend';
import { BackendError, BadRequestError, FileNotFoundError, ForbiddenError, NotADirectoryError, NotAFileError, PayloadTooLargeError, errorMessage } from '../../common/errors';
import { DockerDemuxer } from './demux';
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
    default:
      return new BadRequestError(`${path}: the operation failed (permissions, or something in the way)`);
  }
}

const TYPES: Record<string, EntryType> = { f: 'file', d: 'directory', l: 'symlink' };

/** The 7 entry fields (type, size, mtime, ctime, owner, group, mode) from `at`, as an entry named `path`. */
export function entryAt(fields: string[], at: number, path: string): EntryInfo {
  const type = TYPES[fields[at]] ?? 'other';
  return {
    path,
    type,
    size: type === 'directory' ? 0 : Number(fields[at + 1]),
    modifiedMs: Math.round(Number(fields[at + 2]) * 1000),
    createdMs: Math.round(Number(fields[at + 3]) * 1000),
    owner: fields[at + 4],
    group: fields[at + 5],
    mode: parseInt(fields[at + 6], 8),
  };
}

/** For the operations whose only answer is errors (`ERR kind index` records): throws the first. */
export function throwFirstError(fields: string[], paths: readonly string[]): void {
  if (fields.length >= 3 && fields[0] === 'ERR') throw fsError(fields[1], paths[Number(fields[2])] ?? '?');
  if (fields.length > 0) throw new BackendError(`a file operation answered what it should not: ${JSON.stringify(fields.slice(0, 4))}`);
}
