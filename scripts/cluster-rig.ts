/**
 * The cluster rig from a terminal (scripts/cluster.sh runs it): etcd, a registry, N Docker engines,
 * N node brokers and G gateways on this machine, under one directory (devtools/clusterRig.ts).
 * The images go from the machine's engine to the engines through the registry: the rig's own, or
 * with --registry one already running on loopback (scripts/registry.sh, e.g. the bench's task set).
 *
 *   up     [--dir D] [--nodes N] [--gateways G] [--image IMG]... [--containers C] [--sessions S] [--registry 127.0.0.1:PORT] --entry dist/index.js
 *   down   [--dir D]   stops everything and removes what it made; exit 1 names anything it could not
 *   status [--dir D]
 *   sweep              takes down the rigs of test processes that ended without taking theirs down
 */
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ClusterRig } from '../devtools/clusterRig';

const { values: args, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    dir: { type: 'string', default: path.join(os.tmpdir(), 'bash-broker-rig') },
    nodes: { type: 'string', default: '3' },
    gateways: { type: 'string', default: '2' },
    image: { type: 'string', multiple: true },
    containers: { type: 'string', default: '2' },
    sessions: { type: 'string', default: '4' },
    entry: { type: 'string' },
    registry: { type: 'string' },
  },
});

function count(name: string, value: string, max: number): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > max) usage(`--${name} must be a whole number from 1 to ${max}`);
  return n;
}

function usage(message: string): never {
  console.error(`cluster: ${message}\nusage: cluster.sh up [--dir D] [--nodes N] [--gateways G] [--image IMG]... [--containers C] [--sessions S] [--registry 127.0.0.1:PORT] | down [--dir D] | status [--dir D]`);
  process.exit(2);
}

async function up(): Promise<void> {
  if (!args.entry) usage('up needs --entry (the compiled broker)');
  const rig = await ClusterRig.up({
    dir: args.dir!,
    // Engine n's bridge is 172.29.n.1/24: up to 250 engines.
    engines: count('nodes', args.nodes!, 250),
    gateways: count('gateways', args.gateways!, 50),
    images: args.image ?? ['bash-broker-sandbox:latest'],
    entry: args.entry,
    registry: args.registry,
    nodeEnv: { BROKER_CONTAINERS: String(count('containers', args.containers!, 1000)), BROKER_SESSIONS_PER_CONTAINER: String(count('sessions', args.sessions!, 64)) },
  });
  for (const line of rig.status()) console.log(line);
  console.log(`\nthe rig's directory (logs, state): ${rig.dir}`);
  console.log('\nthe gateways (clients send the token as "Authorization: Bearer <token>"):');
  for (const url of rig.gatewayUrls) console.log(`  ${url}`);
  console.log(`\nexport BROKER_URL=${rig.gatewayUrls[0]} BROKER_TOKEN=${rig.clientToken}`);
}

async function down(): Promise<void> {
  const { leftByMembers, left } = await ClusterRig.open(args.dir!).down((step) => console.log(`down: ${step}`));
  // A node killed rather than stopped leaves its containers and registration: the rig removed them.
  for (const line of leftByMembers) console.log(`down: removed ${line}`);
  if (left.length === 0) {
    console.log('down: every process, container, mount, bridge and registration of the rig is gone');
    return;
  }
  console.error(`down: left behind (the directory ${args.dir} is kept):\n  ${left.join('\n  ')}`);
  process.exit(1);
}

async function main(): Promise<void> {
  switch (positionals[0]) {
    case 'up':
      return up();
    case 'down':
      return down();
    case 'sweep':
      for (const dir of await ClusterRig.sweepAbandoned()) console.log(`swept the abandoned rig in ${dir}`);
      return;
    case 'status':
      for (const line of ClusterRig.open(args.dir!).status()) console.log(line);
      return;
    default:
      usage(`unknown command '${positionals[0] ?? ''}'`);
  }
}

main().catch((err: unknown) => {
  console.error(`cluster: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});
