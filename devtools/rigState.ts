/**
 * A cluster rig's record (clusterRig.ts): `rig.json` in its directory, holding all a later command
 * needs to reach and take down what an earlier one started (its ports, tokens, store prefix, and the
 * process that owns it, if any), and the addresses it names. The tokens are in it: the owner's alone.
 */
import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { freePort } from './freePort';
import { startTimeOf } from './procs';
import type { RigRegistryState } from './rigRegistry';

const STATE_FILE = 'rig.json';
/** A test's rig is `<tmp>/<this><pid>`; its owner is the test process. */
export const TEST_RIG_PREFIX = 'bbrig-t';

export interface RigOptions {
  dir: string;
  engines: number;
  gateways: number;
  /** Images copied into each engine; the first is the nodes' BROKER_IMAGE. */
  images: string[];
  /** The compiled broker's entry point (`node <entry>`). */
  entry: string;
  /** The first two numbers of the bridges' addresses: engine n's bridge is <base>.<n>.1/24. */
  subnetBase?: string;
  /** More settings of every node (pools, limits, timings), over the rig's. */
  nodeEnv?: Record<string, string>;
  /** A process whose end abandons the rig (a test's): a later sweep takes it down. */
  ownerPid?: number;
  /** Mutual TLS between gateways and nodes (default true); false: plain HTTP with the cluster token. */
  nodeTls?: boolean;
  /** A running registry on loopback (`127.0.0.1:<port>`, no credentials) to use instead of starting one. */
  registry?: string;
}

export interface RigState {
  id: string;
  engines: number;
  gateways: number;
  images: string[];
  entry: string;
  subnetBase: string;
  nodeEnv: Record<string, string>;
  /** The store's ports: its clients' (TLS), its peers', and a plain-http one for its /health. */
  etcdPorts: { client: number; peer: number; metrics: number };
  nodePorts: number[];
  gatewayPorts: number[];
  clusterToken: string;
  clientToken: string;
  prefix: string;
  owner: { pid: number; start: string | null } | null;
  /** Whether gateways and nodes speak mutual TLS (absent in a rig of an older build: they did not). */
  nodeTls?: boolean;
  /** The registry the engines pull from, and whether the rig runs it (rigRegistry.ts). */
  registry?: RigRegistryState;
}

/** Whether a rig lives in `dir` (its record is there). */
export function rigIn(dir: string): boolean {
  return fs.existsSync(path.join(dir, STATE_FILE));
}

/** A new rig's record, written into `dir`: free ports, fresh tokens, a store prefix of its own. */
export async function newRigState(dir: string, options: RigOptions): Promise<RigState> {
  const ports = async (n: number) => Promise.all(Array.from({ length: n }, () => freePort()));
  const state: RigState = {
    id: randomBytes(2).toString('hex'),
    engines: options.engines,
    gateways: options.gateways,
    images: options.images,
    entry: path.resolve(options.entry),
    subnetBase: options.subnetBase ?? '172.29',
    nodeEnv: options.nodeEnv ?? {},
    etcdPorts: { client: await freePort(), peer: await freePort(), metrics: await freePort() },
    nodePorts: await ports(options.engines),
    gatewayPorts: await ports(options.gateways),
    clusterToken: randomBytes(24).toString('hex'),
    clientToken: randomBytes(24).toString('hex'),
    prefix: '',
    owner: options.ownerPid === undefined ? null : { pid: options.ownerPid, start: startTimeOf(options.ownerPid) },
    nodeTls: options.nodeTls ?? true,
    registry: { address: options.registry ?? `127.0.0.1:${await freePort()}`, own: options.registry === undefined },
  };
  state.prefix = `/bash-broker-rig-${state.id}/`;
  fs.writeFileSync(path.join(dir, STATE_FILE), JSON.stringify(state, null, 2), { mode: 0o600 });
  return state;
}

/** The record of the rig in `dir`. */
export function readRigState(dir: string): RigState {
  const file = path.join(dir, STATE_FILE);
  if (!fs.existsSync(file)) throw new Error(`no rig in ${dir} (no ${STATE_FILE})`);
  return JSON.parse(fs.readFileSync(file, 'utf8')) as RigState;
}

/** Whether the rig's owner process ended (its pid gone, or taken by another process since). */
export function ownerGone(state: RigState): boolean {
  return state.owner !== null && startTimeOf(state.owner.pid) !== state.owner.start;
}

export function etcdEndpoint(state: RigState): string {
  return `https://127.0.0.1:${state.etcdPorts.client}`;
}

export function gatewayUrls(state: RigState): string[] {
  return state.gatewayPorts.map((p) => `http://127.0.0.1:${p}`);
}

/** Node n (1-based): its id, address and deployment (the label of its containers). */
export function nodeOf(state: RigState, n: number): { id: string; url: string; deployment: string } {
  const scheme = state.nodeTls ? 'https' : 'http';
  return { id: `n${n}`, url: `${scheme}://127.0.0.1:${state.nodePorts[n - 1]}`, deployment: `rig-${state.id}-n${n}` };
}
