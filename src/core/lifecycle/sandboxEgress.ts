/**
 * A lifecycle sandbox's egress (OpenSandbox's `networkPolicy`, docs/isolation.md): a pooled one's
 * session gets the policy through its backend's per-session networks.
 */
import { BrokerError, NotImplementedError } from '../../common/errors';
import type { EgressRule } from '../network/egressRules';
import type { EgressPolicy } from '../ports/sessionNetworks';
import type { PoolEntry } from '../pool/poolRegistry';
import type { TakenSlot } from '../pool/poolTypes';

/**
 * A pooled sandbox created with egress denied or egress rules: its session's network is set before
 * the sandbox exists (the slot goes back when it cannot be). Where sessions share their container's
 * network, the policy cannot be held: a 501, never a sandbox that reaches what it was told not to.
 */
export async function setEgress(entry: PoolEntry, taken: TakenSlot, policy: EgressPolicy, rules: readonly EgressRule[]): Promise<void> {
  try {
    const site = entry.pool.site(taken.sessionId);
    if (!site.backend.networks) throw new NotImplementedError(`networkPolicy: the ${site.backend.kind} backend gives sandboxes no networks of their own`);
    await site.backend.networks.change(site.container, site.slotId, policy, rules);
  } catch (err) {
    taken.giveBack();
    if (err instanceof BrokerError && err.kind === 'busy') throw new NotImplementedError(`networkPolicy: ${err.detail}`);
    throw err;
  }
}
