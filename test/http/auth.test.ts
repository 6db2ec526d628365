/**
 * BROKER_TOKEN: every route but the public ones asks for it. The seam checks it before any
 * backend sees the request:
 * @backend any
 */
import { request } from 'undici';
import { startTestBroker, type TestBroker } from '../helpers/broker';
import { ConfigError, loadConfig } from '../../src/config/config';

const TOKEN = 's3cret-token-for-tests';

describe('auth: BROKER_TOKEN', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker({ BROKER_TOKEN: TOKEN });
  });
  afterAll(async () => {
    await tb.close();
  });

  const bearer = { authorization: `Bearer ${TOKEN}` };

  it('GET /health needs no token', async () => {
    const r = await tb.get('/health');
    expect(r.status).toBe(200);
  });

  it.each([
    ['no token', {}],
    ['a wrong bearer token', { authorization: 'Bearer nope' }],
    ['a token of another length', { authorization: `Bearer ${TOKEN}x` }],
    ['a wrong execd token', { 'x-execd-access-token': 'nope' }],
    ['a non-bearer scheme', { authorization: `Basic ${TOKEN}` }],
  ])('acquire with %s is 401 JSON and holds no session', async (_name, headers) => {
    const r = await tb.post('/session/acquire', {}, headers as Record<string, string>);
    expect(r.status).toBe(401);
    expect(r.json.detail).toMatch(/token/i);
    expect(r.headers['www-authenticate']).toBe('Bearer');
    const h = await tb.get('/health');
    expect(h.json.in_use_sessions).toBe(0);
  });

  it('the whole episode works with Authorization: Bearer, and with X-EXECD-ACCESS-TOKEN', async () => {
    const acquired = await tb.post('/session/acquire', {}, bearer);
    expect(acquired.status).toBe(200);
    const id = acquired.json.session_id;
    const r = await tb.post(`/session/${id}/execute`, { command: 'echo ok' }, { 'x-execd-access-token': TOKEN });
    expect(r.json.stdout).toBe('ok\n');
    expect((await tb.post(`/session/${id}/execute`, { command: 'echo ok' })).status).toBe(401);
    expect((await tb.post(`/session/${id}/release`, undefined, bearer)).json).toEqual({ status: 'released' });
  });

  it('/metrics needs the token unless BROKER_METRICS_PUBLIC=1', async () => {
    expect((await tb.get('/metrics')).status).toBe(401);
    const r = await request(`${tb.url}/metrics`, { headers: bearer });
    expect(r.statusCode).toBe(200);
    expect(await r.body.text()).toMatch(/broker_sessions/);
  });
});

describe('auth: BROKER_METRICS_PUBLIC', () => {
  it('serves /metrics without a token, still guards the pool API', async () => {
    const tb = await startTestBroker({ BROKER_TOKEN: TOKEN, BROKER_METRICS_PUBLIC: '1' });
    try {
      expect((await tb.get('/metrics')).status).toBe(200);
      expect((await tb.post('/session/acquire', {})).status).toBe(401);
    } finally {
      await tb.close();
    }
  });
});

describe('auth: refusing to listen openly', () => {
  it('a non-loopback HOST without a token stops the start, naming the variables', () => {
    expect(() => loadConfig({ HOST: '0.0.0.0' })).toThrow(ConfigError);
    expect(() => loadConfig({ HOST: '0.0.0.0' })).toThrow(/BROKER_TOKEN.*BROKER_ALLOW_INSECURE/);
  });
  it('is allowed with a token, with BROKER_ALLOW_INSECURE=1, or on loopback', () => {
    expect(loadConfig({ HOST: '0.0.0.0', BROKER_TOKEN: 't' }).token).toBe('t');
    expect(loadConfig({ HOST: '0.0.0.0', BROKER_ALLOW_INSECURE: '1' }).host).toBe('0.0.0.0');
    for (const host of ['127.0.0.1', '127.1.2.3', 'localhost', '::1']) expect(loadConfig({ HOST: host }).host).toBe(host);
  });
  it('rejects a malformed flag', () => {
    expect(() => loadConfig({ HOST: '0.0.0.0', BROKER_ALLOW_INSECURE: 'maybe' })).toThrow(/BROKER_ALLOW_INSECURE/);
  });
});
