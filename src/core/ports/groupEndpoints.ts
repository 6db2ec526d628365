/**
 * The group service's port to the HTTP side (implemented in api/groups/groupListeners.ts): a listener per
 * sandbox serving its Sandbox API, and a unix socket per database attachment serving the group's
 * database through that attachment's grant. The core decides ports and paths; it never sees HTTP.
 */
import { brokerError } from '../../common/errors';
import type { DatabaseGrant } from '../groups/groupDatabase';
import type { GroupSandbox } from '../groups/groupSandbox';

export interface Closable {
  close(): Promise<void>;
}

/** The port is taken by someone else: the group service tries the next one. */
export class PortInUseError extends brokerError('unavailable', 'port_in_use', (port: number) => `port ${port} is in use`) {}

export interface GroupEndpoints {
  /** Listens on `port` (PortInUseError when it is taken). */
  serveSandbox(sandbox: GroupSandbox, port: number): Promise<Closable>;
  /** The URL a client reaches `port` at (`http://HOST:PORT`). */
  sandboxUrl(port: number): string;
  serveDatabase(grant: DatabaseGrant, socketPath: string): Promise<Closable>;
}
