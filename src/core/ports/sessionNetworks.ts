/**
 * A backend's per-session networks (docs/isolation.md): each session of a shared container in a
 * network namespace of its own, with an egress policy its pool gives and a lease may change.
 */
import type { EgressRule } from '../network/egressRules';
import type { ContainerRef } from './container';

/**
 * What a lease may ask of its session's egress: none beyond its own loopback, or what its container
 * reaches; with rules (core/network/egressRules.ts), the action for what no rule matches (`none`:
 * deny, `full`: allow).
 */
export type EgressPolicy = 'none' | 'full';

/** The egress in force for a session. */
export interface EgressState {
  policy: EgressPolicy;
  /** Its rules, in order (empty: the policy alone). */
  rules: EgressRule[];
  /** In a network of its own; else its container's (no rules can be held there). */
  own: boolean;
}

export interface SessionNetworkControl {
  /**
   * The live session of slot `slotId` in `container` gets `policy` from now on (its slot's next lease
   * gets its pool's again), with `rules` before it (checked ones: egressRules.ts checkRules; none:
   * the policy alone). Throws a 409 (`busy`) where the session shares its container's network.
   */
  change(container: ContainerRef, slotId: string, policy: EgressPolicy, rules?: readonly EgressRule[]): Promise<void>;
  /** The egress in force for slot `slotId`'s session. */
  current(container: ContainerRef, slotId: string): Promise<EgressState>;
  status(): NetworkReport;
}

/** Each session's memory and CPUs within its container, as /health reports them (0: none of its own). */
export interface SessionLimitsReport {
  memoryBytes: number;
  cpus: number;
  /** Why sessions do not get them on this host (cgroup v2 without delegation, a broker off the engine's host); null: they do. */
  refusal: string | null;
}

/** The sessions' networks as /health reports them. */
export interface NetworkReport {
  /** The pool's policy: `full`, `none`, or `shared` (the container's network, as without isolation). */
  policy: string;
  /** Containers whose sessions get network namespaces of their own. */
  ownNetworkContainers: number;
  /** Of those, the ones whose sessions of policy `full` reach what the container reaches. */
  routedContainers: number;
  /** Containers whose sessions share its network though the policy asked for their own. */
  sharedNetworkContainers: number;
  /** Why the last container that could not do what the policy asks could not; null when all could. */
  refusal: string | null;
}
