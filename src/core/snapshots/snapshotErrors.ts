/** The snapshots' own errors (docs/snapshots.md), in the pool API's `{detail, code}` format through their kinds. */
import { brokerError } from '../../common/errors';

export class SnapshotNotFoundError extends brokerError('not_found', 'snapshot_not_found', (id: string) => `Snapshot not found: ${id} (deleted, expired, or taken before this broker started)`) {}

export class SnapshotsUnsupportedError extends brokerError('not_implemented', 'snapshots_unsupported', (why: string) => `Snapshots need per-lease isolation on the docker backend: ${why}`) {}

export class SnapshotWhileRunningError extends brokerError('busy', 'session_busy', (sessionId: string) => `Session ${sessionId} is running a command: a snapshot, fork or restore is taken only between commands; retry once it ended`) {}

export class SnapshotBudgetError extends brokerError('insufficient_storage', 'snapshot_budget_exceeded', (bytes: number, used: number, budget: number) => `The snapshot needs ${bytes} bytes; this node holds ${used} of its ${budget} bytes of snapshots (BROKER_SNAPSHOT_BUDGET_BYTES): delete some (DELETE /snapshots/{id})`) {}

export class SnapshotInUseError extends brokerError('busy', 'snapshot_in_use', (id: string, users: string) => `Snapshot ${id} is in use by ${users}: its layer lies beneath them; release or delete them first`) {}

export class SnapshotTooDeepError extends brokerError('busy', 'snapshot_too_deep', (sessionId: string, depth: number) => `Session ${sessionId} started from a chain of ${depth} snapshots, the most one view stacks (overlayfs lower layers): snapshot an ancestor instead`) {}

export class SnapshotNotOwnError extends brokerError('forbidden', 'snapshot_not_own', (id: string, sessionId: string) => `Snapshot ${id} was not taken of session ${sessionId}: a restore goes back to a snapshot of the session itself (fork another's with acquire {"snapshot"})`) {}

export class SnapshotOtherPoolError extends brokerError('invalid', 'snapshot_other_pool', (id: string, pool: string, asked: string) => `Snapshot ${id} is of pool '${pool}'; its sessions start there, not in '${asked}'`) {}
