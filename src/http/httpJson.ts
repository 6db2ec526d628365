/** JSON responses: whole, or streamed in slices when a command's output is large. */
import { STATUS_CODES, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorReply } from './errorFormats';

const JSON_TYPE = 'application/json; charset=utf-8';

export function sendJson(res: ServerResponse, status: number, body: unknown, headers?: Record<string, string>): void {
  sendJsonText(res, status, JSON.stringify(body), headers);
}

function sendJsonText(res: ServerResponse, status: number, text: string, headers?: Record<string, string>): void {
  // A flat [name, value, ...] list: node takes it as is (no header object to build and walk), the
  // common case on the execute path.
  const list = ['Content-Type', JSON_TYPE, 'Content-Length', String(Buffer.byteLength(text))];
  if (headers) for (const [name, value] of Object.entries(headers)) list.push(name, value);
  res.writeHead(status, list);
  res.end(text);
}

/** Above this many characters of string fields, a response is streamed instead of built whole. */
const STREAM_ABOVE_CHARS = 1 << 20;
/** Characters of one string serialized and written at a time (one write: at most ~6x this in bytes). */
const SLICE_CHARS = 64 * 1024;

/**
 * Like sendJson, but a body with large top-level strings (a command's output: up to 2 x 16 MiB by
 * default) is written in slices, waiting for the socket to drain between them. JSON escapes a
 * control byte as 6 characters, so a binary output once cost ~6x its size twice over (the JSON string
 * and its UTF-8 copy): a 16 MiB flood of NUL bytes peaked at +400 MB. Now the peak is the output's own
 * string plus one slice. Large answers go out chunked (no Content-Length): every HTTP/1.1 client reads it.
 */
export async function sendJsonStreamed(res: ServerResponse, status: number, body: Record<string, unknown>): Promise<void> {
  if (!hasStringsLongerThan(body, SLICE_CHARS)) return sendJson(res, status, body); // the common case, without arrays
  const big = Object.keys(body).filter((k) => typeof body[k] === 'string' && (body[k] as string).length > SLICE_CHARS);
  const total = big.reduce((n, k) => n + (body[k] as string).length, 0);
  if (total <= STREAM_ABOVE_CHARS) return sendJson(res, status, body);
  res.writeHead(status, { 'Content-Type': JSON_TYPE });
  const keys = Object.keys(body);
  for (const [i, key] of keys.entries()) {
    if (res.destroyed) return;
    const prefix = `${i === 0 ? '{' : ','}${JSON.stringify(key)}:`;
    const value = body[key];
    if (!big.includes(key)) {
      if (!res.write(prefix + JSON.stringify(value))) await drained(res);
      continue;
    }
    const text = value as string;
    res.write(prefix + '"');
    for (let at = 0; at < text.length; ) {
      if (res.destroyed) return; // the client left mid-answer
      let end = Math.min(text.length, at + SLICE_CHARS);
      // Never split a surrogate pair between two slices.
      if (end < text.length && isHighSurrogate(text.charCodeAt(end - 1))) end--;
      const piece = JSON.stringify(text.slice(at, end));
      if (!res.write(piece.slice(1, -1))) await drained(res);
      at = end;
    }
    res.write('"');
  }
  if (!res.destroyed) res.end('}');
}

function hasStringsLongerThan(body: Record<string, unknown>, chars: number): boolean {
  for (const key in body) {
    const value = body[key];
    if (typeof value === 'string' && value.length > chars) return true;
  }
  return false;
}

function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

/** Resolves when the response can take more, or when it closed (the client left: nothing more to do). */
function drained(res: ServerResponse): Promise<void> {
  if (res.destroyed || res.writableEnded) return Promise.resolve();
  return new Promise((resolve) => {
    const done = (): void => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.once('drain', done);
    res.once('close', done);
  });
}

/** An error's answer (errorFormats.ts); once the answer has begun, all that is left is to cut it. */
export function sendErrorReply(res: ServerResponse, reply: ErrorReply): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  sendJsonText(res, reply.status, reply.body, reply.headers);
}

/**
 * The same answer written on a socket that no ServerResponse owns (a refused upgrade, a request
 * Node's parser rejected), then the socket is closed.
 */
export function sendErrorReplyOnSocket(socket: Duplex, reply: ErrorReply): void {
  if (!socket.writable) {
    socket.destroy();
    return;
  }
  let head = `HTTP/1.1 ${reply.status} ${STATUS_CODES[reply.status] ?? 'Error'}\r\nContent-Type: ${JSON_TYPE}\r\n`;
  head += `Content-Length: ${Buffer.byteLength(reply.body)}\r\nConnection: close\r\n`;
  for (const [name, value] of Object.entries(reply.headers)) if (name !== 'Connection') head += `${name}: ${value}\r\n`;
  socket.end(`${head}\r\n${reply.body}`);
}

/** A page, script or document as text (or bytes), never cached stale. */
export function sendText(res: ServerResponse, type: string, body: string | Buffer): void {
  res.writeHead(200, { 'Content-Type': type, 'Content-Length': Buffer.byteLength(body), 'Cache-Control': 'no-cache' });
  res.end(body);
}
