/**
 * Before anything is timed: the same requests to both kernels, answers compared byte for byte
 * (status and body). A lease's round trip through fastify proves its routes work on the real pool;
 * the refusals show which error bodies fastify's schema validation would change if it were adopted
 * as is (the broker's answers must stay what they are).
 */
import { request } from 'undici';

export interface ParityCase {
  name: string;
  current: string;
  fastify: string;
  same: boolean;
}

interface Probe {
  name: string;
  path: string;
  body: string;
}

const UNKNOWN = '0123456789abcdef0123456789abcdef';

async function answer(url: string, probe: Probe): Promise<string> {
  const res = await request(url + probe.path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: probe.body });
  return `${res.statusCode} ${await res.body.text()}`;
}

/** `sessionId`: a lease held by the caller, driven by both kernels in turn. */
export async function compareAnswers(currentUrl: string, fastifyUrl: string, sessionId: string): Promise<ParityCase[]> {
  const lease = `/session/${sessionId}/execute`;
  const probes: Probe[] = [
    { name: 'execute `echo hi`', path: lease, body: JSON.stringify({ command: 'echo hi', timeout: 5 }) },
    { name: 'execute with facts', path: lease, body: JSON.stringify({ command: 'true', facts: true }) },
    { name: 'no command', path: lease, body: '{}' },
    { name: 'command not a string', path: lease, body: JSON.stringify({ command: 5 }) },
    { name: 'timeout not a number', path: lease, body: JSON.stringify({ command: 'true', timeout: '5' }) },
    { name: 'timeout zero', path: lease, body: JSON.stringify({ command: 'true', timeout: 0 }) },
    { name: 'body an array', path: lease, body: '[]' },
    { name: 'body not JSON', path: lease, body: '{"command":' },
    { name: 'unknown session', path: `/session/${UNKNOWN}/execute`, body: JSON.stringify({ command: 'true' }) },
    { name: 'acquire with files not an object', path: '/session/acquire', body: JSON.stringify({ files: [] }) },
  ];
  const cases: ParityCase[] = [];
  for (const probe of probes) {
    const [current, fastify] = [await answer(currentUrl, probe), await answer(fastifyUrl, probe)];
    // facts carry measured durations: compare their shape (the keys in order), not their values.
    const same = probe.name === 'execute with facts' ? keysOf(current) === keysOf(fastify) : current === fastify;
    cases.push({ name: probe.name, current, fastify, same });
  }
  return cases;
}

function keysOf(answerText: string): string {
  const space = answerText.indexOf(' ');
  return `${answerText.slice(0, space)} ${Object.keys(JSON.parse(answerText.slice(space + 1)) as object).join(',')}`;
}
