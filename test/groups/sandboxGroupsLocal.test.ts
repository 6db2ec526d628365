/**
 * Sandbox groups on the local backend: every bad request is a 400 that says what is
 * wrong (checked before anything else, on any backend), and a valid start is a 501 saying the
 * groups need Docker. Nothing is started, nothing is left.
 * @backend local
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startTestBroker, type TestBroker } from '../helpers/broker';
import { makeGroupFixtures, type GroupFixtures } from '../helpers/groupFixtures';

const DB = { database_type: 'vector', access_type: 'read_write', namespaces: ['default', 'other'] };

describe('sandbox groups on the local backend', () => {
  let tb: TestBroker;
  let fx: GroupFixtures;
  beforeAll(async () => {
    fx = makeGroupFixtures('bkr-groups-local');
    tb = await startTestBroker({ BROKER_BACKEND: 'local', BROKER_CONTAINERS: '1', BROKER_SESSIONS_PER_CONTAINER: '1', BROKER_GROUP_DIR: path.join(fx.dir, 'groups') });
  });
  afterAll(async () => {
    await tb?.close();
    fx?.remove();
  });

  it('answers 501 for a valid group or sandbox start: they need Docker', async () => {
    const group = await tb.post('/group/start', { database_access: DB, initial_database_population_config: fx.population });
    expect(group.status).toBe(501);
    expect(group.json).toMatchObject({ code: 'needs_docker' });
    expect(group.json.detail).toMatch(/docker backend/);
    const sandbox = await tb.post('/sandbox/start', { id: 's1', tools: [fx.wordCountTool], compute_resources: { cpu_cores: 1, ram_gb: 0.5, disk_gb: 0.1, unit: 'absolute' } });
    expect(sandbox.status).toBe(501);
    expect(sandbox.json.detail).toMatch(/docker/);
    // Nothing ran, so nothing stops: stop is idempotent, an unknown sandbox is a 404.
    expect((await tb.post('/group/stop')).json).toEqual({ status: 'stopped' });
    const stop = await tb.post('/sandbox/stop', { id: 's1' });
    expect(stop.status).toBe(404);
    expect(stop.json.code).toBe('sandbox_not_found');
  });

  it.each([
    ['another database type', { database_access: { ...DB, database_type: 'graph' } }, /not supported; supported: vector/],
    ['an unknown access type', { database_access: { ...DB, access_type: 'admin' } }, /access_type' must be one of read, read_write/],
    ['a relative population path', { database_access: DB, initial_database_population_config: 'pop.yml' }, /absolute path/],
    ['a missing population file', { database_access: DB, initial_database_population_config: '/nonexistent/pop.yml' }, /cannot read/],
    ['an unknown field', { database: DB }, /unknown fields: database/],
  ])('refuses a group start with %s (400)', async (_, body, detail) => {
    const r = await tb.post('/group/start', body);
    expect(r.status).toBe(400);
    expect(r.json.detail).toMatch(detail);
  });

  it('refuses a population file that does not fit the group (400 naming the place)', async () => {
    const bad = path.join(fx.dir, 'bad.yml');
    const cases: [string, RegExp][] = [
      ['namespaces: {default: {documents: [{id: a, text: t}]}}', /document 'a' has no embedding/],
      ['namespaces: {elsewhere: {documents: []}}', /'elsewhere' is not one of the group's namespaces/],
      ['namespaces: {default: {documents: [{id: a, text: t, embedding: [1, 2]}, {id: b, text: t, embedding: [1]}]}}', /differ in length/],
      ['namespaces: [', /not valid YAML/],
    ];
    for (const [yaml, detail] of cases) {
      fs.writeFileSync(bad, yaml);
      const r = await tb.post('/group/start', { database_access: DB, initial_database_population_config: bad });
      expect([r.status, r.json.detail]).toEqual([400, expect.stringMatching(detail)]);
    }
  });

  it.each([
    ['an unknown unit', { unit: 'percent' }, /unit' must be one of absolute, relative/],
    ['a negative figure', { cpu_cores: -1 }, /cpu_cores' must be positive/],
    ['more cores than the host has', { cpu_cores: os.cpus().length + 1 }, /but the host has/],
    ['more memory than the host has', { ram_gb: Math.ceil(os.totalmem() / 1024 ** 3) + 1 }, /but the host has .* of memory/],
    ['a relative figure above 1', { unit: 'relative', ram_gb: 1.5 }, /at most 1/],
    ['a figure that is not a number', { disk_gb: '10' }, /disk_gb' must be a number/],
    ['a bandwidth that is not positive', { memory_bandwidth_gbps: 0 }, /memory_bandwidth_gbps' must be a positive number/],
  ])('refuses compute_resources with %s (400)', async (_, compute, detail) => {
    const r = await tb.post('/sandbox/start', { id: 's1', compute_resources: compute });
    expect(r.status).toBe(400);
    expect(r.json.detail).toMatch(detail);
  });

  it.each([
    ['a bad id', { id: '../x' }, /'id' must be/],
    ['a tool that is not a .py file', { id: 's1', tools: ['/etc/hostname'] }, /name\.py/],
    ['a tool that does not exist', { id: 's1', tools: ['/nonexistent/tool.py'] }, /cannot be read/],
    ['an attachment of another type', { id: 's1', attached_databases: { db: { database_type: 'sql', access_type: 'read', namespaces: ['default'] } } }, /supported: vector/],
    ['an attachment name that is no variable name', { id: 's1', attached_databases: { 'my-db': { database_type: 'vector' } } }, /environment variables/],
  ])('refuses a sandbox start with %s (400)', async (_, body, detail) => {
    const r = await tb.post('/sandbox/start', body);
    expect(r.status).toBe(400);
    expect(r.json.detail).toMatch(detail);
  });
});
