/**
 * A small client for brokers of a cluster run as processes (brokerProcess.ts starts them): one
 * keep-alive pool for plain nodes and gateways, another that presents a member's certificate to
 * nodes over mutual TLS.
 */
import fs from 'node:fs';
import { Agent, type Dispatcher } from 'undici';
import { httpCall, type HttpResult } from './httpCall';

const dispatcher = new Agent({ keepAliveTimeout: 10_000, connections: 64 });
/** For https:// nodes: the test's calls straight to a node present a certificate of the cluster (presentToNodes). */
let memberDispatcher: Agent | null = null;

/** PEM files of a client of nodes over mutual TLS. */
export interface MemberCertificate {
  ca: string;
  cert: string;
  key: string;
}

/** The certificate the test's calls to https:// nodes present from now on (null: none, the node refuses the handshake). */
export function presentToNodes(member: MemberCertificate | null): void {
  void memberDispatcher?.close();
  memberDispatcher = member ? new Agent({ keepAliveTimeout: 10_000, connections: 64, connect: tlsFiles(member) }) : null;
}

/** tls.connect's options of a member's PEM files. */
export function tlsFiles(member: MemberCertificate): { ca: Buffer; cert: Buffer; key: Buffer } {
  return { ca: fs.readFileSync(member.ca), cert: fs.readFileSync(member.cert), key: fs.readFileSync(member.key) };
}

/** The test's client for `url`: with the member's certificate for an https:// one. */
export function dispatcherFor(url: string): Dispatcher {
  return url.startsWith('https://') && memberDispatcher ? memberDispatcher : dispatcher;
}

/** One call, its whole answer read. */
export function call(base: string, method: string, urlPath: string, body?: unknown, headers: Record<string, string> = {}): Promise<HttpResult> {
  return httpCall(dispatcherFor(base), base + urlPath, method, body, headers);
}

export async function closeClients(): Promise<void> {
  await Promise.all([dispatcher.close(), memberDispatcher?.close()]);
}

/** A gateway's /health as a client reads it (the nodes it lists, each with its pools). */
export interface GatewayNode {
  node_id: string;
  incarnation: string;
  address: string;
  health: string;
  heartbeat_age_ms: number;
  pools: Record<string, { total: number; available: number; in_use: number; cleaning: number; broken: number }>;
}

export interface GatewayHealth {
  status: string;
  total_sessions: number;
  available_sessions: number;
  store_connected: boolean;
  nodes: GatewayNode[];
}
