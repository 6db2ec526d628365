/**
 * A group's database and the grants its sandboxes get. A grant names the namespaces a sandbox may
 * reach and whether it may write; every call goes through one, so a namespace not granted is a 403
 * and a write through a read grant is a 403, whatever the transport in front of it.
 */
import { randomBytes } from 'node:crypto';
import { BadRequestError, ForbiddenError } from '../../common/errors';
import { NAMESPACE_NAME, type NamespaceStats, type VectorDocument, type VectorHit, type VectorStore } from '../ports/vectorStore';

export const SUPPORTED_DATABASE_TYPES = ['vector'] as const;
export const ACCESS_TYPES = ['read', 'read_write'] as const;
export type AccessType = (typeof ACCESS_TYPES)[number];

export interface DatabaseAccess {
  databaseType: 'vector';
  access: AccessType;
  namespaces: string[];
}

/** `{database_type, access_type, namespaces}` as a sandbox group's request writes it, checked. */
export function parseDatabaseAccess(raw: unknown, where: string): DatabaseAccess {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new BadRequestError(`'${where}' must be an object`);
  const r = raw as Record<string, unknown>;
  if (!(SUPPORTED_DATABASE_TYPES as readonly unknown[]).includes(r.database_type)) {
    throw new BadRequestError(`'${where}.database_type' ${JSON.stringify(r.database_type ?? null)} is not supported; supported: ${SUPPORTED_DATABASE_TYPES.join(', ')}`);
  }
  const access = r.access_type ?? 'read_write';
  if (!(ACCESS_TYPES as readonly unknown[]).includes(access)) throw new BadRequestError(`'${where}.access_type' must be one of ${ACCESS_TYPES.join(', ')}, got ${JSON.stringify(access)}`);
  const namespaces = r.namespaces ?? ['default'];
  if (!Array.isArray(namespaces) || namespaces.length === 0 || !namespaces.every((n) => typeof n === 'string' && NAMESPACE_NAME.test(n))) {
    throw new BadRequestError(`'${where}.namespaces' must be a non-empty list of names (1-64 letters, digits, '_' or '-')`);
  }
  if (new Set(namespaces).size !== namespaces.length) throw new BadRequestError(`'${where}.namespaces' names a namespace twice`);
  return { databaseType: 'vector', access: access as AccessType, namespaces: namespaces as string[] };
}

export class GroupDatabase {
  constructor(
    readonly store: VectorStore,
    readonly access: DatabaseAccess,
  ) {}

  /** A sandbox's grant: within the group's namespaces, and no more access than the group's. */
  grant(name: string, wanted: DatabaseAccess): DatabaseGrant {
    const outside = wanted.namespaces.filter((n) => !this.access.namespaces.includes(n));
    if (outside.length > 0) throw new BadRequestError(`'attached_databases.${name}' names namespaces the group does not have: ${outside.join(', ')} (the group's: ${this.access.namespaces.join(', ')})`);
    if (wanted.access === 'read_write' && this.access.access === 'read') throw new BadRequestError(`'attached_databases.${name}' asks for read_write, but the group's database is read-only`);
    return new DatabaseGrant(name, this.store, wanted.access, wanted.namespaces);
  }
}

export class DatabaseGrant {
  /** The credential the sandbox presents (Authorization: Bearer). */
  readonly token = randomBytes(24).toString('hex');

  constructor(
    readonly name: string,
    private readonly store: VectorStore,
    readonly access: AccessType,
    readonly namespaces: readonly string[],
  ) {}

  async list(): Promise<({ name: string; access: AccessType } & NamespaceStats)[]> {
    return Promise.all(this.namespaces.map(async (name) => ({ name, access: this.access, ...(await this.store.stats(name)) })));
  }

  query(ns: string, embedding: number[], k: number): Promise<VectorHit[]> {
    return this.store.query(this.reach(ns), embedding, k);
  }

  get(ns: string, id: string): Promise<VectorDocument | null> {
    return this.store.get(this.reach(ns), id);
  }

  upsert(ns: string, documents: VectorDocument[]): Promise<number> {
    return this.store.upsert(this.reach(ns, true), documents);
  }

  remove(ns: string, id: string): Promise<boolean> {
    return this.store.remove(this.reach(ns, true), id);
  }

  private reach(ns: string, write = false): string {
    if (!this.namespaces.includes(ns)) throw new ForbiddenError(`namespace '${ns}' is not attached to this sandbox (attached: ${this.namespaces.join(', ')})`);
    if (write && this.access !== 'read_write') throw new ForbiddenError(`'${this.name}' is attached read-only: writes to '${ns}' are refused`);
    return ns;
  }
}
