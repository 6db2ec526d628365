/**
 * readJsonBody over a real node:http server and raw sockets: a Content-Length body is done when that
 * many bytes arrived (not at 'end'), so bodies split across writes, chunked bodies and pipelined
 * requests must each still be read whole and alone.
 * @backend any
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { readJsonBody } from '../../src/http/body';
import { BadRequestError, PayloadTooLargeError } from '../../src/common/errors';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('readJsonBody', () => {
  let server: http.Server;
  let port: number;
  /** What each request's body read gave, in arrival order. */
  let outcomes: unknown[];

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      readJsonBody(req, 64).then(
        (body) => {
          outcomes.push(body);
          res.end(JSON.stringify({ body }));
        },
        (err: Error) => {
          outcomes.push(err);
          res.statusCode = 400;
          res.end(JSON.stringify({ error: err.constructor.name }));
        },
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  beforeEach(() => {
    outcomes = [];
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  /** Writes `parts` with a pause between them, then reads until `answers` responses came (or the end). */
  async function exchange(parts: string[], answers: number): Promise<string> {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    socket.on('data', (c) => (text += c.toString('latin1')));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    for (const [i, part] of parts.entries()) {
      if (i > 0) await sleep(50);
      socket.write(part);
    }
    const deadline = Date.now() + 5000;
    while ((text.match(/HTTP\/1\.1 \d{3} /g) ?? []).length < answers && Date.now() < deadline) await sleep(10);
    socket.end();
    await closed;
    return text;
  }

  const head = (length: number) => `POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: ${length}\r\n\r\n`;

  it('a Content-Length body split across two writes is read whole', async () => {
    const body = '{"command":"echo split"}';
    await exchange([head(body.length) + body.slice(0, 10), body.slice(10)], 1);
    expect(outcomes).toEqual([{ command: 'echo split' }]);
  });

  it('a chunked body is read whole, at its end', async () => {
    const chunk = (s: string) => `${s.length.toString(16)}\r\n${s}\r\n`;
    const start = 'POST /x HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n';
    await exchange([start + chunk('{"a":'), chunk('1,"b"'), chunk(':2}') + '0\r\n\r\n'], 1);
    expect(outcomes).toEqual([{ a: 1, b: 2 }]);
  });

  it('pipelined requests on one connection each get their own body', async () => {
    const one = '{"n":1}';
    const two = '{"n":2}';
    const answer = await exchange([head(one.length) + one + head(two.length) + two], 2);
    expect(outcomes).toEqual([{ n: 1 }, { n: 2 }]);
    expect(answer).toContain('{"body":{"n":1}}');
    expect(answer).toContain('{"body":{"n":2}}');
  });

  it('an empty body is undefined; bad JSON and an oversized body are 4xx errors', async () => {
    await exchange([head(0)], 1);
    await exchange([head(5) + '{nope'], 1);
    await exchange([head(100) + 'x'.repeat(100)], 1);
    expect(outcomes[0]).toBeUndefined();
    expect(outcomes[1]).toBeInstanceOf(BadRequestError);
    expect(outcomes[2]).toBeInstanceOf(PayloadTooLargeError);
  });
});
