/**
 * BROKER_POOLS parsing (config/pools.ts) and the lifecycle API's resource quantities
 * (api/lifecycle/quantities.ts): pure functions, every rule and its message.
 * @backend any
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, ConfigError } from '../../src/config/config';
import { parseCpus, parseMemoryBytes } from '../../src/api/lifecycle/quantities';

const pools = (value: unknown): ReturnType<typeof loadConfig>['pools'] => loadConfig({ BROKER_POOLS: typeof value === 'string' ? value : JSON.stringify(value) }).pools;
const refused = (value: unknown): string => {
  try {
    pools(value);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('accepted');
};

describe('BROKER_POOLS', () => {
  it('unset is no named pool; a pool takes its defaults (BROKER_IMAGE, 1 x 1, fresh containers)', () => {
    expect(loadConfig({}).pools).toEqual([]);
    expect(pools({ py: {} })).toEqual([
      { name: 'py', image: 'bash-broker-sandbox:latest', containers: 1, sessionsPerContainer: 1, files: [], startupCommands: [], env: {}, freshContainer: true },
    ]);
  });

  it('reads every field, and a file when the value is a path', () => {
    const spec = { image: 'img:1', containers: 3, sessions_per_container: 4, files: { 'a/b.txt': Buffer.from('hi').toString('base64') }, startup_commands: ['true'], env: { A: '1' } };
    const expected = { name: 'x', image: 'img:1', containers: 3, sessionsPerContainer: 4, files: [{ path: 'a/b.txt', content: Buffer.from('hi') }], startupCommands: ['true'], env: { A: '1' }, freshContainer: false };
    expect(pools({ x: spec })).toEqual([expected]);
    const file = path.join(os.tmpdir(), `pools-${process.pid}.json`);
    fs.writeFileSync(file, JSON.stringify({ x: spec }));
    try {
      expect(pools(file)).toEqual([expected]);
    } finally {
      fs.rmSync(file);
    }
  });

  it('refuses what it cannot serve, naming the pool and the field', () => {
    expect(refused('{not json')).toMatch(/^BROKER_POOLS is not valid JSON/);
    expect(refused('/no/such/file.json')).toMatch(/^BROKER_POOLS names the file '\/no\/such\/file.json', which cannot be read/);
    expect(refused([1])).toMatch(/^BROKER_POOLS must be a JSON object of pool name -> pool/);
    expect(refused({ 'Bad Name': {} })).toMatch(/pool name 'Bad Name' must be/);
    expect(refused({ default: {} })).toMatch(/'default' names the pool of BROKER_CONTAINERS/);
    expect(refused({ p: { colour: 1 } })).toBe('BROKER_POOLS.p: unknown field(s) colour; known: image, containers, sessions_per_container, files, startup_commands, env, fresh_container, network, session_memory, session_cpus');
    expect(refused({ p: { session_memory: '1k' } })).toBe("BROKER_POOLS.p.session_memory must be at least 6m (Docker's minimum), got '1k'");
    expect(refused({ p: { session_cpus: 0 } })).toBe('BROKER_POOLS.p.session_cpus must be a number of cores above 0, got 0');
    expect(refused({ p: { network: 'some' } })).toBe('BROKER_POOLS.p.network must be one of full, none, shared, got "some"');
    expect(refused({ p: { containers: 0 } })).toBe('BROKER_POOLS.p.containers must be an integer between 1 and 4096, got 0');
    expect(refused({ p: { files: { '../x': 'aGk=' } } })).toBe("BROKER_POOLS.p: file path '../x' must not contain '..'");
    expect(refused({ p: { startup_commands: 'ls' } })).toBe("BROKER_POOLS.p: 'startup_commands' must be a list of strings, got a string");
    expect(refused({ p: { env: { 'A-B': 'x' } } })).toBe("BROKER_POOLS.p.env: 'A-B' is not a valid variable name");
    expect(refused({ p: { sessions_per_container: 2, fresh_container: true } })).toBe('BROKER_POOLS.p.fresh_container needs sessions_per_container 1 (got 2)');
  });
});

describe('resource quantities', () => {
  it('cpu: cores or millicores, within the host', () => {
    expect(parseCpus('500m', 2)).toBe(0.5);
    expect(parseCpus('2', 2)).toBe(2);
    expect(parseCpus('1.5', 2)).toBe(1.5);
    expect(() => parseCpus('3', 2)).toThrow("resourceLimits.cpu must be between 0.01 and 2 cores (this host's), got '3'");
    expect(() => parseCpus('5m', 2)).toThrow(/between 0.01 and 2/);
    expect(() => parseCpus('half', 2)).toThrow(/must be cores/);
  });

  it('memory: binary and decimal suffixes, at least 6Mi', () => {
    expect(parseMemoryBytes('512Mi')).toBe(512 * 1024 ** 2);
    expect(parseMemoryBytes('2Gi')).toBe(2 * 1024 ** 3);
    expect(parseMemoryBytes('500M')).toBe(500e6);
    expect(parseMemoryBytes('67108864')).toBe(67108864);
    expect(() => parseMemoryBytes('1Mi')).toThrow(/at least 6Mi/);
    expect(() => parseMemoryBytes('lots')).toThrow(/must be bytes with an optional suffix/);
  });
});
