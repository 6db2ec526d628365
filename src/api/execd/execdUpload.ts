/**
 * execd's multipart upload (POST /files/upload): parts come in pairs, a `metadata` part (JSON
 * FileMetadata: path, mode, owner, group) then a `file` part, as many pairs as the client sends.
 * OpenSandbox's SDK sends the metadata as a file part named `metadata` (filename "metadata",
 * application/json); a plain form field is taken too.
 *
 * Streamed: each file part goes to the backend as it arrives (busboy holds the rest of the body
 * back meanwhile), never whole in memory. A file past BROKER_EXECD_MAX_UPLOAD_BYTES fails with 413
 * and is not written; a client that leaves mid-part leaves no file either.
 */
import type { IncomingMessage } from 'node:http';
import busboy from 'busboy';
import type { Readable } from 'node:stream';
import { AbortedError, BadRequestError, PayloadTooLargeError, errorMessage } from '../../common/errors';
import type { Permission } from '../../core/ports/backend';
import type { ExecdFiles } from '../../core/execd/execdFiles';
import type { SandboxHandle } from '../../core/sandbox/sandboxHandle';
import { parseMode } from '../../core/execd/execdPaths';
import { optionalName } from './execdViews';

const MAX_METADATA_BYTES = 64 * 1024;
/** Parts one upload may have (500 files with their metadata). */
const MAX_PARTS = 1000;

interface Metadata {
  path: unknown;
  permission: Partial<Permission>;
}

function parseMetadata(text: string): Metadata {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (err) {
    throw new BadRequestError(`the metadata part is not valid JSON: ${errorMessage(err)}`);
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new BadRequestError('the metadata part must be a JSON object {path, mode, owner, group}');
  const m = raw as Record<string, unknown>;
  const mode = m.mode === undefined || m.mode === null ? undefined : parseMode(m.mode, 'metadata.mode');
  return { path: m.path, permission: { mode, owner: optionalName(m.owner, 'metadata.owner'), group: optionalName(m.group, 'metadata.group') } };
}

function readSmall(stream: Readable, maxBytes: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    stream.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= maxBytes) chunks.push(c);
    });
    stream.on('end', () => (size > maxBytes ? reject(new PayloadTooLargeError(`a metadata part is over ${maxBytes} bytes`)) : resolve(Buffer.concat(chunks).toString('utf8'))));
    stream.on('error', reject);
  });
}

/** Writes every file of the request; resolves with how many. */
export function receiveUploads(req: IncomingMessage, files: ExecdFiles, handle: SandboxHandle): Promise<number> {
  const type = req.headers['content-type'] ?? '';
  if (!/^multipart\/form-data\b/i.test(type)) throw new BadRequestError(`an upload is multipart/form-data (metadata and file parts), not ${JSON.stringify(type)}`);
  const maxBytes = files.limits.maxUploadBytes;
  return new Promise<number>((resolve, reject) => {
    let failed: Error | null = null;
    let current: Readable | null = null;
    let metadata: Metadata | null = null;
    let written = 0;
    let chain: Promise<void> = Promise.resolve();
    const fail = (err: Error): void => {
      if (failed) return;
      failed = err;
      current?.destroy(err);
      req.unpipe(parser);
      req.resume(); // the rest of the body is read and dropped (a 413 also closes the connection)
      // Answered once the part being written has been undone: the client never sees a leftover.
      void chain.then(() => reject(err));
    };
    const step = (work: () => Promise<void>): void => {
      chain = chain.then(() => (failed ? undefined : work())).catch(fail);
    };
    let parser: busboy.Busboy;
    try {
      parser = busboy({ headers: req.headers, limits: { fileSize: maxBytes, fieldSize: MAX_METADATA_BYTES, parts: MAX_PARTS } });
    } catch (err) {
      throw new BadRequestError(`the multipart body cannot be read: ${errorMessage(err)}`);
    }
    parser.on('field', (name, value) => {
      if (name === 'metadata') step(async () => void (metadata = parseMetadata(value)));
    });
    parser.on('file', (name, stream) => {
      if (failed) return void stream.resume();
      if (name === 'metadata') return step(async () => void (metadata = parseMetadata(await readSmall(stream, MAX_METADATA_BYTES))));
      if (name !== 'file') return void stream.resume();
      stream.on('error', () => undefined); // destroyed by fail(): the step that reads it reports the error
      stream.on('limit', () => fail(new PayloadTooLargeError(`a file of the upload is over ${maxBytes} bytes (BROKER_EXECD_MAX_UPLOAD_BYTES); nothing of it was written`)));
      step(async () => {
        const meta = metadata;
        metadata = null;
        if (!meta) throw new BadRequestError("a 'file' part must follow its 'metadata' part");
        current = stream;
        await files.upload(handle, meta.path, stream, meta.permission);
        current = null;
        written++;
      });
    });
    parser.on('partsLimit', () => fail(new PayloadTooLargeError(`an upload has at most ${MAX_PARTS} parts`)));
    parser.on('error', (err: Error) => fail(new BadRequestError(`the multipart body cannot be read: ${err.message}`)));
    parser.on('close', () => {
      step(async () => {
        if (metadata) throw new BadRequestError("the last 'metadata' part has no 'file' part after it");
        if (written === 0) throw new BadRequestError("the upload has no 'metadata' and 'file' parts");
      });
      void chain.then(() => (failed ? undefined : resolve(written)));
    });
    req.on('close', () => {
      if (!req.complete) fail(new AbortedError('the upload'));
    });
    req.pipe(parser);
  });
}
