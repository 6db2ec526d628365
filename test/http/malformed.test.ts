/**
 * Requests the HTTP parser refuses answer a JSON 400, and the broker keeps serving. They never
 * reach a route, let alone a backend:
 * @backend any
 */
import { startTestBroker, type TestBroker } from '../helpers/broker';
import { rawJsonBody, rawRequest } from './rawHttp';

describe('requests the HTTP parser rejects', () => {
  let tb: TestBroker;
  beforeAll(async () => {
    tb = await startTestBroker();
  });
  afterAll(async () => {
    await tb.close();
  });

  it.each([
    ['an unknown method', 'FOO /session/acquire HTTP/1.1\r\nHost: x\r\n\r\n'],
    ['a malformed header line', 'POST /session/acquire HTTP/1.1\r\nHost: x\r\nbad header\r\n\r\n'],
  ])('%s gets a JSON 400 with a detail, and the broker keeps serving', async (_name, text) => {
    const port = Number(new URL(tb.url).port);
    const answer = await rawRequest(port, text);
    expect(answer).toMatch(/^HTTP\/1\.1 400 /);
    expect(rawJsonBody(answer).detail).toMatch(/Malformed HTTP request/);
    expect((await tb.get('/health')).status).toBe(200);
  });

  it('answers exactly as before the seam (status line, headers, body)', async () => {
    const answer = await rawRequest(Number(new URL(tb.url).port), 'FOO / HTTP/1.1\r\nHost: x\r\n\r\n');
    const body = '{"detail":"Malformed HTTP request (HPE_INVALID_METHOD)","code":"bad_request"}';
    expect(answer).toBe(
      `HTTP/1.1 400 Bad Request\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
});
