/**
 * File bytes in and out of a container through the engine's archive API: no process in the container
 * (a container at its pids limit still serves them), and both directions stream.
 *
 * - Out: a GET of the one-file tarball, the entry's bytes from `offset` for `length` piped on; the
 *   engine reads the file from its start, so a range near the end of a big file costs the bytes
 *   before it (on the engine's side, never in the broker's memory).
 * - In: a tar entry needs its size before its bytes, and a multipart part has none, so the upload is
 *   spooled to a file of the broker's temporary directory first (bounded by the upload limit), then
 *   PUT as a one-file tarball. Without the spool a client gone mid-part would leave half a file.
 */
import type Dockerode from 'dockerode';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { PassThrough, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import * as tar from 'tar-stream';
import { BackendError, errorMessage } from '../../../common/errors';
import { byteCounter } from '../../../common/byteCounter';

/** The bytes [offset, offset + length) of the first file of the container's tarball of `real`. */
export async function archiveRange(container: Dockerode.Container, real: string, offset: number, length: number): Promise<Readable> {
  const archive = (await container.getArchive({ path: real })) as Readable;
  const out = new PassThrough();
  const extract = tar.extract();
  let seen = 0;
  let sent = 0;
  const stop = (): void => {
    archive.destroy();
    extract.destroy();
  };
  extract.once('entry', (_header, entry) => {
    entry.on('data', (data: unknown) => {
      const chunk = data as Buffer;
      const from = Math.max(0, offset - seen);
      const to = Math.min(chunk.length, offset + length - seen);
      seen += chunk.length;
      if (to > from) {
        sent += to - from;
        if (!out.write(chunk.subarray(from, to))) {
          entry.pause();
          out.once('drain', () => entry.resume());
        }
      }
      if (sent >= length) {
        out.end();
        stop();
      }
    });
    entry.on('end', () => (sent >= length ? undefined : out.destroy(new BackendError(`the file was ${seen} bytes when read, shorter than its size`))));
  });
  const fail = (err: Error): void => void (sent >= length ? undefined : out.destroy(new BackendError(`could not read the file: ${err.message}`)));
  extract.on('error', fail);
  archive.on('error', fail);
  out.on('close', stop); // the client left: stop reading
  archive.pipe(extract);
  return out;
}

/** Spools `content` to a temporary file of the broker's host; resolves with its path and size. */
export async function spool(content: NodeJS.ReadableStream): Promise<{ file: string; size: number }> {
  const file = path.join(os.tmpdir(), `bash-broker-upload-${process.pid}-${randomBytes(6).toString('hex')}`);
  const count = byteCounter();
  try {
    await pipeline(content, count.stream, fs.createWriteStream(file, { mode: 0o600 }));
  } catch (err) {
    await fs.promises.rm(file, { force: true });
    throw err;
  }
  return { file, size: count.bytes() };
}

/**
 * Where an isolated session's upload waits in its container (stageFile): beside the working
 * directories, under a name no session id has (ids start with a letter or digit), in a directory
 * that no isolated session's view holds (each sees only its own directory there).
 */
const STAGING_DIR = '/tmp/s';

/** PUTs the spooled file into the container's own view, out of every session's reach; its path there. */
export async function stageFile(container: Dockerode.Container, spooled: { file: string; size: number }): Promise<string> {
  const staged = path.posix.join(STAGING_DIR, `.bkr-upload-${randomBytes(8).toString('hex')}`);
  await putFile(container, staged, spooled, 0o600);
  return staged;
}

/** PUTs the spooled file as `real` (its directory exists), with `mode`. */
export async function putFile(container: Dockerode.Container, real: string, spooled: { file: string; size: number }, mode: number): Promise<void> {
  const pack = tar.pack();
  const entry = pack.entry({ name: path.posix.basename(real), size: spooled.size, mode, mtime: new Date() });
  const feeding = pipeline(fs.createReadStream(spooled.file), entry).then(() => pack.finalize());
  try {
    await Promise.all([container.putArchive(pack as unknown as NodeJS.ReadableStream, { path: path.posix.dirname(real) }), feeding]);
  } catch (err) {
    pack.destroy();
    throw new BackendError(`could not write ${real} in container ${container.id.slice(0, 12)}: ${errorMessage(err)}`);
  }
}
