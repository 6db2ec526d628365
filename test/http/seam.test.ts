/**
 * The request seam: one authorize for HTTP routes, SSE streams and WebSocket upgrades; one error
 * mapping per wire format; one way to register a router. Routes of their own are mounted here for
 * the test only (an SSE stream, a WebSocket echo, a route in the OpenSandbox format).
 *
 * The seam is the HTTP kernel's; no backend takes part:
 * @backend any
 */
import http from 'node:http';
import WebSocket from 'ws';
import { startTestBroker, eventually, type TestBroker } from '../helpers/broker';
import { rawJsonBody, rawRequest } from './rawHttp';
import { BadRequestError } from '../../src/common/errors';
import { openSandboxErrorFormat, poolErrorFormat } from '../../src/http/errorFormats';
import { openEventStream, type EventStream } from '../../src/http/sse';
import { createSeam } from '../../src/api/app';
import { HttpSeam } from '../../src/http/seam';
import { createAuthorize } from '../../src/http/auth';
import type { Router } from '../../src/http/router';
import type { SessionPool } from '../../src/core/pool/pool';
import { BrokerMetrics } from '../../src/metrics/metrics';
import { loadConfig } from '../../src/config/config';

const TOKEN = 'seam-test-token';
const bearer = { authorization: `Bearer ${TOKEN}` };

/** What the test routes saw. */
const seen = { streams: [] as EventStream[], sockets: 0 };

const testRouter: Router = {
  name: 'test-sse-ws',
  errors: poolErrorFormat,
  routes: [
    {
      method: 'GET',
      path: '/test/events',
      handle({ res }) {
        const stream = openEventStream(res, { keepAliveMs: 50 });
        seen.streams.push(stream);
        stream.send({ event: 'greeting', data: 'line one\nline two' });
      },
    },
  ],
  upgrades: [
    {
      path: '/test/ws/:room',
      accept(ws, { params }) {
        seen.sockets++;
        ws.send(`room ${params.room}`);
        ws.on('message', (data) => ws.send(`echo ${String(data)}`));
      },
    },
  ],
};

const execdLikeRouter: Router = {
  name: 'test-execd',
  errors: openSandboxErrorFormat,
  pathPrefix: '/test-execd',
  routes: [
    {
      method: 'POST',
      path: '/test-execd/fail',
      body: 'json',
      handle() {
        throw new BadRequestError("'cmd' is required");
      },
    },
    {
      method: 'GET',
      path: '/test-execd/crash',
      handle() {
        throw new Error('secret internals');
      },
    },
  ],
};

interface StreamRead {
  status: number;
  contentType: string | undefined;
  text: string;
  request: http.ClientRequest;
}

/** Opens GET `path` and reads until `until` matches the text so far (or the response ends). */
function readStream(url: string, path: string, headers: Record<string, string>, until: RegExp): Promise<StreamRead> {
  return new Promise((resolve, reject) => {
    const request = http.get(url + path, { headers }, (res) => {
      let text = '';
      const done = (): void => resolve({ status: res.statusCode ?? 0, contentType: res.headers['content-type'], text, request });
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        text += chunk;
        if (until.test(text)) done();
      });
      res.on('end', done);
    });
    request.on('error', reject);
  });
}

interface Refused {
  status: number;
  body: string;
}

/** A WebSocket client that expects the upgrade to be refused, and returns the HTTP answer instead. */
function refusedUpgrade(url: string, headers: Record<string, string> = {}): Promise<Refused> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.on('open', () => reject(new Error('the upgrade was accepted')));
    ws.on('error', reject);
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => {
        ws.terminate();
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
  });
}

function openSocket(url: string, headers: Record<string, string>): Promise<{ ws: WebSocket; first: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('message', (data) => resolve({ ws, first: String(data) }));
    ws.on('error', reject);
  });
}

describe('the request seam', () => {
  let tb: TestBroker;
  let wsUrl: string;
  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_TOKEN: TOKEN }, { routers: [testRouter, execdLikeRouter] });
    wsUrl = tb.url.replace('http:', 'ws:');
  });
  afterAll(async () => {
    await tb.close();
  });

  describe('authorize on an SSE route', () => {
    it('without the token: a 401 JSON error before any stream is opened', async () => {
      const before = seen.streams.length;
      const r = await readStream(tb.url, '/test/events', {}, /$^/);
      expect(r.status).toBe(401);
      expect(r.contentType).toMatch(/application\/json/);
      expect(JSON.parse(r.text)).toEqual({ detail: expect.stringMatching(/token/i), code: 'unauthorized' });
      expect(seen.streams.length).toBe(before);
    });

    it('with the token: the stream opens, says its event, keeps alive, and ends when the client leaves', async () => {
      const r = await readStream(tb.url, '/test/events', bearer, /: keep-alive\n\n/);
      expect(r.status).toBe(200);
      expect(r.contentType).toBe('text/event-stream; charset=utf-8');
      expect(r.text.startsWith('event: greeting\ndata: line one\ndata: line two\n\n')).toBe(true);
      const stream = seen.streams[seen.streams.length - 1];
      expect(stream.isOpen).toBe(true);
      r.request.destroy();
      await eventually(() => stream.signal.aborted, 10_000, 'the stream to see its client leave');
      expect(stream.send({ data: 'too late' })).toBe(false);
    });
  });

  describe('authorize on a WebSocket upgrade', () => {
    it.each([
      ['no token', {}],
      ['a wrong token', { authorization: 'Bearer nope' }],
    ])('with %s: a 401 JSON answer, and no socket is upgraded', async (_name, headers) => {
      const before = seen.sockets;
      const r = await refusedUpgrade(`${wsUrl}/test/ws/lobby`, headers as Record<string, string>);
      expect(r.status).toBe(401);
      expect(JSON.parse(r.body)).toEqual({ detail: expect.stringMatching(/token/i), code: 'unauthorized' });
      expect(seen.sockets).toBe(before);
      expect(tb.broker.seam.openWebSockets).toBe(0);
    });

    it('with the token (either header): the route takes the socket, with its parameter decoded', async () => {
      for (const headers of [bearer, { 'x-execd-access-token': TOKEN }]) {
        const { ws, first } = await openSocket(`${wsUrl}/test/ws/a%20b`, headers);
        expect(first).toBe('room a b');
        const echoed = new Promise((resolve) => ws.once('message', (d) => resolve(String(d))));
        ws.send('hi');
        expect(await echoed).toBe('echo hi');
        ws.close();
      }
    });

    it('an upgrade to a path with no WebSocket route is a 404 JSON, a bad parameter a 400 (each after the token is checked)', async () => {
      expect((await refusedUpgrade(`${wsUrl}/test/nowhere`)).status).toBe(401);
      const r = await refusedUpgrade(`${wsUrl}/test/nowhere`, bearer);
      expect(r.status).toBe(404);
      expect(JSON.parse(r.body)).toEqual({ detail: 'Not Found: GET /test/nowhere', code: 'route_not_found' });
      expect((await refusedUpgrade(`${wsUrl}/test/ws/%zz`)).status).toBe(401);
      const badParam = await refusedUpgrade(`${wsUrl}/test/ws/%zz`, bearer);
      expect(badParam.status).toBe(400);
      expect(JSON.parse(badParam.body).detail).toBe("room '%zz' is not valid percent-encoding");
    });

    it('a malformed handshake and a non-WebSocket upgrade are JSON 400s', async () => {
      const port = Number(new URL(tb.url).port);
      const noKey = await rawRequest(port, `GET /test/ws/x HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${TOKEN}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`);
      expect(noKey).toMatch(/^HTTP\/1\.1 400 /);
      expect(rawJsonBody(noKey).detail).toMatch(/Sec-WebSocket-Key/);
      const h2c = await rawRequest(port, `GET /health HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`);
      expect(h2c).toMatch(/^HTTP\/1\.1 400 /);
      expect(rawJsonBody(h2c).detail).toMatch(/only WebSocket upgrades/);
      expect((await tb.get('/health')).status).toBe(200);
    });
  });

  describe('error formats', () => {
    it("the pool API's bodies are unchanged, byte for byte", async () => {
      const missing = await tb.request('POST', `/session/${'f'.repeat(32)}/execute`, '{"command":"true"}', bearer);
      expect(missing.status).toBe(404);
      expect(missing.text).toBe(`{"detail":"Session not found: ${'f'.repeat(32)}","code":"session_not_found"}`);
      const badJson = await tb.request('POST', '/session/acquire', '{', bearer);
      expect(badJson.status).toBe(400);
      expect(badJson.json.code).toBe('bad_request');
      expect(badJson.json.detail).toMatch(/^Request body is not valid JSON: /);
      const badId = await tb.request('POST', '/session/%zz/release', undefined, bearer);
      expect(badId.text).toBe(`{"detail":"session id '%zz' is not valid percent-encoding","code":"bad_request"}`);
      const noToken = await tb.request('POST', '/session/acquire', '{}');
      expect(noToken.status).toBe(401);
      expect(noToken.headers['www-authenticate']).toBe('Bearer');
      expect(noToken.text).toBe(
        '{"detail":"Missing or invalid access token: send Authorization: Bearer <token> or X-EXECD-ACCESS-TOKEN","code":"unauthorized"}',
      );
    });

    it('an OpenSandbox-format route answers {"code","message"} with OpenSandbox codes', async () => {
      const failed = await tb.request('POST', '/test-execd/fail', '{}', bearer);
      expect(failed.status).toBe(400);
      expect(failed.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(failed.text).toBe(`{"code":"INVALID_REQUEST_BODY","message":"'cmd' is required"}`);
      const badJson = await tb.request('POST', '/test-execd/fail', 'not json', bearer);
      expect(badJson.status).toBe(400);
      expect(badJson.json).toEqual({ code: 'INVALID_REQUEST_BODY', message: expect.stringMatching(/not valid JSON/) });
      const noToken = await tb.request('POST', '/test-execd/fail', '{}');
      expect(noToken.status).toBe(401);
      expect(noToken.json).toEqual({ code: 'UNAUTHORIZED', message: expect.stringMatching(/token/) });
    });

    it('a foreign error is a plain 500 in either format, never its message or stack', async () => {
      const crashed = await tb.request('GET', '/test-execd/crash', undefined, bearer);
      expect(crashed.status).toBe(500);
      expect(crashed.text).toBe('{"code":"RUNTIME_ERROR","message":"Internal server error"}');
    });
  });

  describe('unknown routes', () => {
    it("outside any router's prefix: the pool API's 404 (401 first without the token)", async () => {
      const r = await tb.request('GET', '/no/such/route?x=1', undefined, bearer);
      expect(r.status).toBe(404);
      expect(r.text).toBe('{"detail":"Not Found: GET /no/such/route","code":"route_not_found"}');
      expect((await tb.request('GET', '/no/such/route')).status).toBe(401);
      const wrongMethod = await tb.request('GET', '/session/acquire', undefined, bearer);
      expect(wrongMethod.text).toBe('{"detail":"Not Found: GET /session/acquire","code":"route_not_found"}');
    });

    it("under an OpenSandbox router's prefix: its 404", async () => {
      const r = await tb.request('DELETE', '/test-execd/nope', undefined, bearer);
      expect(r.status).toBe(404);
      expect(r.text).toBe('{"code":"NOT_FOUND","message":"Not Found: DELETE /test-execd/nope"}');
      expect((await tb.request('GET', '/test-execd/nope')).json.code).toBe('UNAUTHORIZED');
    });

    it('GET /health stays public, HEAD too, and a trailing slash is the same route', async () => {
      expect((await tb.request('GET', '/health/')).status).toBe(200);
      const head = await tb.request('HEAD', '/health');
      expect(head.status).toBe(200);
      expect(head.text).toBe('');
    });
  });
});

describe('registering routers', () => {
  const config = loadConfig({});
  const pool = {} as SessionPool; // the routers are only declared, never called
  const options = { authorize: createAuthorize(null), maxBodyBytes: 1024, defaultErrors: poolErrorFormat };
  const route = (method: 'GET' | 'POST', path: string) => ({ method, path, handle: () => undefined });

  it("a route the broker's routers already declare stops the start, naming both routers", () => {
    const again: Router = { name: 'again', errors: poolErrorFormat, routes: [route('POST', '/session/:id/execute')] };
    expect(() => createSeam(pool, new BrokerMetrics(), config, [again])).toThrow(/POST \/session\/:\/execute is declared twice \(routers 'pool' and 'again'\)/);
  });

  it('so does a WebSocket path declared twice; the same path under another method is fine', () => {
    const accept = (): void => undefined;
    const ws: Router = { name: 'ws', errors: poolErrorFormat, routes: [], upgrades: [{ path: '/ws/:x', accept }, { path: '/ws/:y', accept }] };
    expect(() => new HttpSeam([ws], options)).toThrow(/declared twice/);
    const methods: Router = { name: 'm', errors: poolErrorFormat, routes: [route('GET', '/a/:x'), route('POST', '/a/:x')] };
    expect(() => new HttpSeam([methods], options)).not.toThrow();
  });

  it('rejects a malformed pattern', () => {
    for (const path of ['no-slash', '/trailing/', '/a/:x/:x', '/a/:1x']) {
      expect(() => new HttpSeam([{ name: 'bad', errors: poolErrorFormat, routes: [route('GET', path)] }], options)).toThrow(/route path/);
    }
  });
});

describe('shutdown with WebSockets open', () => {
  it('closes them with 1001 (going away)', async () => {
    const tb = await startTestBroker({}, { routers: [testRouter] });
    const { ws } = await openSocket(`${tb.url.replace('http:', 'ws:')}/test/ws/x`, {});
    const closed = new Promise<number>((resolve) => ws.once('close', (code) => resolve(code)));
    await tb.close();
    expect(await closed).toBe(1001);
  });
});
