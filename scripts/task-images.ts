/**
 * Makes a task set as coding-agent RL runs have them: N distinct images, each the sandbox image plus
 * one layer of its own (a small repository of 1-5 MB and its test command, `bash /repo/run-tests.sh`:
 * devtools/taskImage.ts), pushed to a registry on loopback (scripts/registry.sh starts one).
 * Task i is `<registry>/<prefix>-<i, 4 digits>:v1`; its size is spread over [min, max] MB by i, the
 * same on every run and for every --count. Idempotent: an image the registry has already is skipped,
 * so a run that stopped half-way is finished by running it again. Built and pushed on the machine's
 * engine, which keeps none of them afterwards (--keep-local keeps them).
 *
 *   node -r ts-node/register/transpile-only scripts/task-images.ts --registry 127.0.0.1:5000
 *     [--count 200] [--base bash-broker-sandbox:latest] [--prefix tasks/task] [--min-mb 1] [--max-mb 5]
 *     [--jobs 2] [--user U (password in REGISTRY_PASSWORD)] [--keep-local] [--out tasks.json]
 *
 * Prints a line per image and a summary; --out writes the set as JSON: {registry, images: [{ref, bytes}]}.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { registryHas, writeDockerConfig, type RegistryRef } from '../devtools/registry';
import { pushTaskImage } from '../devtools/taskImage';

const { values: args } = parseArgs({
  options: {
    registry: { type: 'string' },
    count: { type: 'string', default: '200' },
    base: { type: 'string', default: 'bash-broker-sandbox:latest' },
    prefix: { type: 'string', default: 'tasks/task' },
    'min-mb': { type: 'string', default: '1' },
    'max-mb': { type: 'string', default: '5' },
    jobs: { type: 'string', default: '2' },
    user: { type: 'string' },
    'keep-local': { type: 'boolean', default: false },
    out: { type: 'string' },
  },
});

function usage(message: string): never {
  console.error(`task-images: ${message}\nusage: task-images.ts --registry 127.0.0.1:PORT [--count N] [--base IMG] [--prefix P] [--min-mb A] [--max-mb B] [--jobs J] [--user U] [--keep-local] [--out FILE]`);
  process.exit(2);
}

function number(name: string, min: number, max: number): number {
  const n = Number(args[name as keyof typeof args]);
  if (!Number.isFinite(n) || n < min || n > max) usage(`--${name} must be a number from ${min} to ${max}`);
  return n;
}

/** Task i's repository size in [min, max] MB: by the fractional part of i times the golden ratio, evenly spread and the same whatever --count. */
function bytesOf(i: number, minMb: number, maxMb: number): number {
  const spread = (i * 0.6180339887498949) % 1;
  return Math.round((minMb + (maxMb - minMb) * spread) * 1024 * 1024);
}

async function main(): Promise<void> {
  if (!args.registry || !/^(127\.0\.0\.1|localhost):\d+$/.test(args.registry)) usage('--registry must be 127.0.0.1:PORT (a registry on loopback)');
  if (!/^[a-z0-9]+([._/-][a-z0-9]+)*$/.test(args.prefix!)) usage('--prefix must be a repository name (lower case, digits, . _ - /)');
  const count = number('count', 1, 100_000);
  const [minMb, maxMb, jobs] = [number('min-mb', 0.01, 1024), number('max-mb', 0.01, 1024), number('jobs', 1, 16)];
  if (maxMb < minMb) usage('--max-mb must not be below --min-mb');
  let registry: RegistryRef = { address: args.registry, auth: null, dockerConfig: null };
  if (args.user) {
    const password = process.env.REGISTRY_PASSWORD;
    if (!password) usage('--user needs the password in REGISTRY_PASSWORD');
    const dockerConfig = fs.mkdtempSync(path.join(os.tmpdir(), 'bash-broker-task-images-'));
    registry = { address: args.registry, auth: { username: args.user, password }, dockerConfig };
    writeDockerConfig(dockerConfig, registry.address, registry.auth!);
    process.once('exit', () => fs.rmSync(dockerConfig, { recursive: true, force: true }));
  }

  const images: { ref: string; bytes: number }[] = [];
  const made = { pushed: 0, skipped: 0, buildMs: 0, pushMs: 0 };
  const t0 = Date.now();
  let next = 0;
  let done = 0;
  /** Takes the next tasks until none is left or it has pushed `maxPushes`. */
  const worker = async (maxPushes: number): Promise<void> => {
    let pushes = 0;
    while (pushes < maxPushes && next < count) {
      const i = next++;
      const repository = `${args.prefix}-${String(i).padStart(4, '0')}`;
      const bytes = bytesOf(i, minMb, maxMb);
      const ref = `${registry.address}/${repository}:v1`;
      images[i] = { ref, bytes };
      if (await registryHas(registry, repository, 'v1')) {
        made.skipped++;
        console.log(`[${++done}/${count}] ${ref}: already there`);
        continue;
      }
      const p = await pushTaskImage(registry, repository, 'v1', { base: args.base, bytes, keepLocal: args['keep-local'] });
      pushes++;
      Object.assign(made, { pushed: made.pushed + 1, buildMs: made.buildMs + p.buildMs, pushMs: made.pushMs + p.pushMs });
      console.log(`[${++done}/${count}] ${ref}: pushed (${(bytes / 1048576).toFixed(1)} MB, build ${p.buildMs} ms, push ${p.pushMs} ms)`);
    }
  };
  // The first push carries the base image's layers: alone, or each job would push them at once.
  await worker(1);
  await Promise.all(Array.from({ length: jobs }, () => worker(Infinity)));
  const mean = (ms: number) => (made.pushed ? Math.round(ms / made.pushed) : 0);
  console.log(
    `task-images: ${made.pushed} pushed, ${made.skipped} already there, in ${((Date.now() - t0) / 1000).toFixed(1)} s` +
      (made.pushed ? ` (per image: build ${mean(made.buildMs)} ms, push ${mean(made.pushMs)} ms)` : ''),
  );
  if (args.out) fs.writeFileSync(args.out, JSON.stringify({ registry: registry.address, base: args.base, images }, null, 2) + '\n');
}

main().catch((err: unknown) => {
  console.error(`task-images: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
