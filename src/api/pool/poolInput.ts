/**
 * The pool API's request bodies, checked against their contract (poolContract.ts) before the pool is
 * touched, so a rejected request holds no session and writes nothing. The schema states the shapes and
 * words the refusals; a working directory's files (each path inside it, each content base64, no path
 * both a file and a directory) are the session's own check (core/session/sessionInput.ts), which
 * BROKER_POOLS' preparations pass too, run where the schema's `x-workdir-files` stands.
 */
import type { WorkdirFile } from '../../core/ports/backend';
import { BadRequestError } from '../../common/errors';
import { parseWorkdirFiles, type CommandLimits } from '../../core/session/sessionInput';
import { addDomainCheck, compileCheck } from '../../http/schemaCheck';
import { acquireBody, executeBody, type AcquireBody, type ExecuteBody } from './poolContract';
import { acquireFingerprint, type AcquireExtras } from './rolloutInput';

export interface ExecuteInput {
  command: string;
  timeoutSeconds: number;
  /** Additive (rolloutInput.ts): a retry with the same id gets this execute's answer. */
  requestId: string | null;
  /** Additive: the answer carries the termination facts (null: the server's default, BROKER_EXECUTE_FACTS). */
  facts: boolean | null;
  /** Additive: the lease is released once the command ran, as a release call right after it would. */
  release: boolean;
}

export interface AcquireInput extends AcquireExtras {
  files: WorkdirFile[];
  startupCommands: string[];
  /** A named pool of BROKER_POOLS; undefined: the default pool. */
  pool?: string;
  /** An image reference (docs/images.md); undefined: the pool's own image. */
  image?: string;
  /** A snapshot to start from (docs/snapshots.md); undefined: the image alone. */
  snapshot?: string;
  /** What the request asked for, for its request_id's conflict check. */
  fingerprint(): string;
}

/** The files a body's check decoded, so a body's megabytes of base64 are decoded once. */
const decodedFiles = new WeakMap<object, WorkdirFile[]>();
addDomainCheck('x-workdir-files', (files) => {
  decodedFiles.set(files, parseWorkdirFiles(files));
});

interface PoolChecks {
  execute: (body: unknown) => ExecuteBody;
  acquire: (body: unknown) => AcquireBody;
}

/** Compiled once per set of limits (a broker has one; tests make a few), found by the limits object first (the execute path). */
const checksByLimits = new Map<string, PoolChecks>();
const checksOfObject = new WeakMap<CommandLimits, PoolChecks>();

function checksFor(limits: CommandLimits): PoolChecks {
  let checks = checksOfObject.get(limits);
  if (checks) return checks;
  const key = `${limits.maxTimeoutSeconds}/${limits.maxCommandBytes}`;
  checks = checksByLimits.get(key);
  if (!checks) checksByLimits.set(key, (checks = { execute: compileCheck(executeBody(limits)), acquire: compileCheck(acquireBody(limits)) }));
  checksOfObject.set(limits, checks);
  return checks;
}

export function parseExecute(body: unknown, limits: CommandLimits): ExecuteInput {
  const obj = checksFor(limits).execute(body);
  return {
    command: obj.command,
    timeoutSeconds: obj.timeout ?? limits.defaultTimeoutSeconds,
    requestId: obj.request_id ?? null,
    facts: obj.facts ?? null,
    release: obj.release === true,
  };
}

export function parseAcquire(body: unknown, limits: CommandLimits): AcquireInput {
  const obj = checksFor(limits).acquire(body === undefined ? {} : body);
  const input: AcquireInput = {
    files: obj.files ? (decodedFiles.get(obj.files) ?? parseWorkdirFiles(obj.files)) : [],
    startupCommands: obj.startup_commands ?? [],
    requestId: obj.request_id ?? null,
    leaseTtlMs: milliseconds(obj.lease_ttl),
    acquireTimeoutMs: milliseconds(obj.acquire_timeout),
    fingerprint: () => acquireFingerprint(obj),
  };
  if (obj.pool !== undefined && obj.pool !== null) input.pool = obj.pool;
  if (obj.image !== undefined && obj.image !== null) {
    if (input.pool !== undefined) throw new BadRequestError("give 'pool' or 'image', not both: an image names its pool");
    input.image = obj.image;
  }
  if (obj.snapshot !== undefined && obj.snapshot !== null) {
    // A snapshot is the whole start: its files, its shell state, its pool.
    if (input.image !== undefined || input.files.length > 0 || input.startupCommands.length > 0) throw new BadRequestError("give 'snapshot' alone (with 'pool', 'lease_ttl', 'acquire_timeout', 'request_id'): a session started from a snapshot has its files and state");
    input.snapshot = obj.snapshot;
  }
  return input;
}

/** Seconds (a float, as the pool API's timeout is) in whole ms, at least 1. */
function milliseconds(seconds: number | null | undefined): number | undefined {
  return seconds === undefined || seconds === null ? undefined : Math.max(1, Math.round(seconds * 1000));
}
