/**
 * docs/configuration.md against the code: every environment variable the configuration reads is
 * documented there, and every variable the page names is read, by the configuration or (the Docker
 * client's three) by the Docker client library. A renamed, added or dropped variable fails here
 * until the page follows.
 * @backend any
 */
import fs from 'node:fs';
import path from 'node:path';
import { CONFIG_DIR, sourcesUnder, variablesRead } from '../helpers/configVariables';

const ROOT = path.join(__dirname, '..', '..');
const PAGE = path.join(ROOT, 'docs', 'configuration.md');
/** Read by docker-modem (under dockerode), not by the broker's configuration; the page says so. */
const DOCKER_CLIENT_VARIABLES = ['DOCKER_HOST', 'DOCKER_TLS_VERIFY', 'DOCKER_CERT_PATH'];

/** Every name the page sets in code type: `NAME`, or `NAME=value`. */
function variablesNamed(page: string): Set<string> {
  return new Set([...page.matchAll(/`([A-Z][A-Z0-9_]+)(?:=[^`]*)?`/g)].map((m) => m[1]));
}

describe('docs/configuration.md', () => {
  const read = variablesRead(sourcesUnder(CONFIG_DIR));
  const named = variablesNamed(fs.readFileSync(PAGE, 'utf8'));

  it('finds what the configuration reads (the extraction is not empty or partial)', () => {
    for (const name of ['BROKER_BACKEND', 'HOST', 'PORT', 'BROKER_POOLS', 'SWEREX_ACQUIRE_TIMEOUT', 'ANTHROPIC_API_KEY', 'NODE_ENV', 'BROKER_WORKSPACE_PING_MS', 'BROKER_TASK_MODEL', 'BROKER_DOCKER_FIFO_DIR']) {
      expect(read).toContain(name);
    }
    expect(read.size).toBeGreaterThan(70);
  });

  it('documents every variable the configuration reads', () => {
    expect([...read].filter((name) => !named.has(name)).sort()).toEqual([]);
  });

  it('names no variable that nothing reads', () => {
    expect([...named].filter((name) => !read.has(name) && !DOCKER_CLIENT_VARIABLES.includes(name)).sort()).toEqual([]);
  });

  it("names the Docker client's variables only where that client reads them", () => {
    const modem = fs.readFileSync(require.resolve('docker-modem/lib/modem.js'), 'utf8');
    for (const name of DOCKER_CLIENT_VARIABLES) {
      expect(named).toContain(name);
      expect(modem).toContain(`process.env.${name}`);
    }
  });
});

describe('the extraction', () => {
  it('reads env.NAME, quoted names and NAME=value, and nothing in lower case', () => {
    expect([...variablesRead(["const a = env.FOO_BAR; int(env, 'BAZ', 1); env.lower; 'x'"])].sort()).toEqual(['BAZ', 'FOO_BAR']);
    expect([...variablesNamed('| `FOO` | `BAR=1` | `C.UTF-8` | `/usr/bin` | `lower` |')].sort()).toEqual(['BAR', 'FOO']);
  });
});
