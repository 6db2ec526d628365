/**
 * A node's cuts of its gateways' waiting acquires (src/cluster/node/acquireCuts.ts), over a real
 * server on port 0 and a real seam, composed as a node composes them (the tagged calls tracked
 * before the seam, the cut a route of the seam), whose "acquire" waits until the test grants it: a waiting call is ended and its
 * grant undone, a call whose answer is on its way is left to end, a cut that comes before its call
 * ends that call on arrival, and untagged calls are not touched; a grant written to a response cut
 * before its close event is undone.
 * @backend any
 */
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Agent, request } from 'undici';
import { ACQUIRE_TAG_HEADER, AcquireCuts } from '../../src/cluster/node/acquireCuts';
import { ifUndelivered } from '../../src/http/clientGone';
import { HttpSeam } from '../../src/http/seam';
import { createAuthorize } from '../../src/http/auth';
import { poolErrorFormat } from '../../src/http/errorFormats';
import { eventually } from '../helpers/broker';
import { httpCall } from '../../devtools/httpCall';

/** A call the server holds: its answer's head written or not, and what became of it. */
interface Held {
  res: http.ServerResponse;
  /** 'delivered' (written whole), 'undone' (closed before it was: the grant goes back). */
  end: Promise<'delivered' | 'undone'>;
}

describe("a node's cuts of waiting acquires", () => {
  let server: http.Server;
  let url: string;
  let calls = 0;
  const held = new Map<string, Held>();
  const agent = new Agent();

  beforeAll(async () => {
    const cuts = new AcquireCuts();
    const acquires = {
      name: 'test acquires',
      errors: poolErrorFormat,
      routes: [
        {
          method: 'POST' as const,
          path: '/session/acquire',
          handle({ req, res }: { req: http.IncomingMessage; res: http.ServerResponse }) {
            calls++;
            const end = new Promise<'delivered' | 'undone'>((resolve) => res.once('close', () => resolve(res.writableFinished ? 'delivered' : 'undone')));
            held.set(String(req.headers['x-test-call']), { res, end });
          },
        },
      ],
    };
    const seam = new HttpSeam([cuts.router(), acquires], { authorize: createAuthorize(null), maxBodyBytes: 1 << 20, defaultErrors: poolErrorFormat });
    server = http.createServer(cuts.wrap(seam.serveRequest));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((r) => server.close(r));
    await agent.close();
  });

  /** A tagged acquire, named `name` for the server; settles with its answer's text or 'cut'. */
  function acquire(name: string, tag: string | null): Promise<string> {
    const headers: Record<string, string> = { 'x-test-call': name };
    if (tag !== null) headers[ACQUIRE_TAG_HEADER] = tag;
    return request(`${url}/session/acquire`, { method: 'POST', body: '{}', headers, dispatcher: agent, headersTimeout: 0, bodyTimeout: 0 }).then(
      (res) => res.body.text(),
      () => 'cut',
    );
  }

  async function cut(tag: string): Promise<unknown> {
    const r = await httpCall(agent, `${url}/cluster/acquires/${tag}/cut`, 'POST', undefined, { [ACQUIRE_TAG_HEADER]: tag });
    expect(r.status).toBe(200);
    return r.json;
  }

  async function heldCall(name: string): Promise<Held> {
    await eventually(() => held.has(name), 10_000, `call ${name} to reach the server`);
    return held.get(name)!;
  }

  test('a waiting call is ended: its client sees the cut, and a grant written after it is undone', async () => {
    const tag = randomUUID();
    const client = acquire('waiting', tag);
    const call = await heldCall('waiting');
    expect(await cut(tag)).toEqual({ cut: true });
    expect(await client).toBe('cut');
    // The grant comes now, on a call already ended: it is not delivered, so it goes back.
    call.res.end('{"session_id":"s1"}');
    expect(await call.end).toBe('undone');
  });

  test('a call whose answer is on its way is left to end: its client reads the grant', async () => {
    const tag = randomUUID();
    const client = acquire('answering', tag);
    const call = await heldCall('answering');
    call.res.writeHead(200, { 'content-type': 'application/json' });
    expect(await cut(tag)).toEqual({ cut: false });
    call.res.end('{"session_id":"s2"}');
    expect(await client).toBe('{"session_id":"s2"}');
    expect(await call.end).toBe('delivered');
    // Answered: a late cut says so.
    expect(await cut(tag)).toEqual({ cut: false });
  });

  test('a cut that comes before its call ends that call on arrival, unserved', async () => {
    const tag = randomUUID();
    expect(await cut(tag)).toEqual({ cut: true });
    const before = calls;
    expect(await acquire('late', tag)).toBe('cut');
    expect(calls).toBe(before);
  });

  test('a cut without its tag in the header (as a client could send through a gateway) is no cut: a call to no route, the acquire goes on', async () => {
    const tag = randomUUID();
    const client = acquire('unheaded', tag);
    const call = await heldCall('unheaded');
    for (const headers of [{}, { [ACQUIRE_TAG_HEADER]: randomUUID() }] as Record<string, string>[]) {
      const forged = await httpCall(agent, `${url}/cluster/acquires/${tag}/cut`, 'POST', undefined, headers);
      expect({ status: forged.status, body: forged.json }).toEqual({ status: 404, body: { detail: `Not Found: POST /cluster/acquires/${tag}/cut`, code: 'route_not_found' } });
    }
    call.res.end('{"session_id":"s3"}');
    expect(await client).toBe('{"session_id":"s3"}');
    expect(await call.end).toBe('delivered');
  });

  test('untagged calls, and other tags, are not touched', async () => {
    const client = acquire('untagged', null);
    const call = await heldCall('untagged');
    expect(await cut(randomUUID())).toEqual({ cut: true });
    call.res.end('served');
    expect(await client).toBe('served');
  });
});

describe('a grant written to a response its node just cut', () => {
  test('is undone, though the close event comes after the write', async () => {
    const undone: string[] = [];
    const server = http.createServer((_req, res) => {
      // As a cut does: the response destroyed, then the grant's answer written before its close event.
      res.destroy();
      ifUndelivered(res, () => undone.push('released'));
      res.end('{"session_id":"s1"}');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    const agent = new Agent();
    try {
      await expect(request(`http://127.0.0.1:${port}/session/acquire`, { method: 'POST', body: '{}', dispatcher: agent })).rejects.toThrow();
      await eventually(() => undone.length === 1, 10_000, 'the lease to be released');
      expect(undone).toEqual(['released']);
    } finally {
      await agent.close();
      await new Promise((r) => server.close(r));
    }
  });
});
