import net from 'node:net';
import { startTestBroker, type TestBroker } from '../helpers/broker';

/** Sends raw bytes and returns the whole answer (the server closes the connection after it). */
function rawRequest(port: number, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.write(text));
    let answer = '';
    socket.on('data', (c) => (answer += c.toString('latin1')));
    socket.on('end', () => resolve(answer));
    socket.on('error', reject);
  });
}

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
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4));
    expect(body.detail).toMatch(/Malformed HTTP request/);
    expect((await tb.get('/health')).status).toBe(200);
  });
});
