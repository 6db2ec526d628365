/**
 * A wrapper of a server's request and upgrade listeners, which may answer a call itself instead of
 * passing it on: what a broker's server is given to admit some calls only (a node of a cluster
 * admits its gateways' calls alone).
 */
import type { IncomingMessage, RequestListener } from 'node:http';
import type { Duplex } from 'node:stream';

export type UpgradeListener = (req: IncomingMessage, socket: Duplex, head: Buffer) => void;

export interface ListenerGuard {
  request(listener: RequestListener): RequestListener;
  upgrade(listener: UpgradeListener): UpgradeListener;
}
