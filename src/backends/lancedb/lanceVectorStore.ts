/**
 * The group's vector database on LanceDB, embedded in the broker's process: one table per
 * namespace (id, text, metadata as JSON text, vector), in the group's directory. A namespace's
 * table is made by its first write, which fixes its dimension. Writes to one namespace are chained
 * (one at a time): Lance commits are versioned and a concurrent merge would be retried or refused.
 *
 * Search is exact (a flat scan) until a namespace holds `indexAtRows` documents; then it gets an
 * IVF index (IVF_FLAT: partitions of the vectors themselves, so distances stay exact and any
 * dimension works), built once in its write chain. Rows written after it are scanned beside it
 * until a rebuild; queries probe enough partitions to keep recall high.
 */
import type * as lancedb from '@lancedb/lancedb';
import { BadRequestError } from '../../common/errors';
import type { NamespaceStats, VectorDocument, VectorHit, VectorStore } from '../../core/ports/vectorStore';

interface Row {
  id: string;
  text: string;
  metadata: string;
  vector: number[];
}

/** Below this many documents a flat scan is as fast as an index (microseconds per thousand here). */
export const DEFAULT_INDEX_AT_ROWS = 10_000;
/** Partitions a query probes; with ~sqrt(n) partitions this is a large share of a mid-sized namespace. */
const NPROBES = 32;

class LanceVectorStore implements VectorStore {
  private readonly tables = new Map<string, lancedb.Table>();
  private readonly indexed = new Set<string>();
  private readonly dimensions = new Map<string, number>();
  private readonly writes = new Map<string, Promise<unknown>>();

  constructor(
    private readonly lance: typeof lancedb,
    private readonly db: lancedb.Connection,
    private readonly indexAtRows: number,
  ) {}

  upsert(namespace: string, documents: VectorDocument[]): Promise<number> {
    return this.serialize(namespace, async () => {
      if (documents.length === 0) return 0;
      const dimension = this.dimensions.get(namespace) ?? documents[0].embedding.length;
      const wrong = documents.find((d) => d.embedding.length !== dimension);
      if (wrong) throw new BadRequestError(`document '${wrong.id}' has an embedding of ${wrong.embedding.length} numbers; namespace '${namespace}' has dimension ${dimension}`);
      const rows: Row[] = documents.map((d) => ({ id: d.id, text: d.text, metadata: JSON.stringify(d.metadata), vector: d.embedding }));
      const table = this.tables.get(namespace);
      if (!table) {
        this.tables.set(namespace, await this.db.createTable(namespace, rows as unknown as Record<string, unknown>[]));
        this.dimensions.set(namespace, dimension);
      } else {
        await table.mergeInsert('id').whenMatchedUpdateAll().whenNotMatchedInsertAll().execute(rows as unknown as Record<string, unknown>[]);
      }
      await this.indexWhenLarge(namespace);
      return rows.length;
    });
  }

  async query(namespace: string, embedding: number[], k: number): Promise<VectorHit[]> {
    const table = this.tables.get(namespace);
    if (!table) return [];
    const dimension = this.dimensions.get(namespace);
    if (embedding.length !== dimension) throw new BadRequestError(`the query's embedding has ${embedding.length} numbers; namespace '${namespace}' has dimension ${dimension}`);
    const search = table.search(embedding).limit(k) as lancedb.VectorQuery;
    if (this.indexed.has(namespace)) search.nprobes(NPROBES);
    const rows = (await search.toArray()) as (Row & { _distance: number })[];
    return rows.map((r) => ({ id: r.id, text: r.text, metadata: JSON.parse(r.metadata) as Record<string, unknown>, distance: r._distance }));
  }

  async get(namespace: string, id: string): Promise<VectorDocument | null> {
    const table = this.tables.get(namespace);
    if (!table) return null;
    const rows = (await table.query().where(`id = ${quote(id)}`).limit(1).toArray()) as Row[];
    if (rows.length === 0) return null;
    const r = rows[0];
    return { id: r.id, text: r.text, metadata: JSON.parse(r.metadata) as Record<string, unknown>, embedding: Array.from(r.vector) };
  }

  remove(namespace: string, id: string): Promise<boolean> {
    return this.serialize(namespace, async () => {
      const table = this.tables.get(namespace);
      if (!table) return false;
      const result = await table.delete(`id = ${quote(id)}`);
      return (result as { numDeletedRows?: number }).numDeletedRows !== 0;
    });
  }

  async stats(namespace: string): Promise<NamespaceStats> {
    const table = this.tables.get(namespace);
    return { documents: table ? await table.countRows() : 0, dimension: this.dimensions.get(namespace) ?? null, indexed: this.indexed.has(namespace) };
  }

  private async indexWhenLarge(namespace: string): Promise<void> {
    const table = this.tables.get(namespace);
    if (!table || this.indexed.has(namespace) || (await table.countRows()) < this.indexAtRows) return;
    await table.createIndex('vector', { config: this.lance.Index.ivfFlat() });
    this.indexed.add(namespace);
  }

  async close(): Promise<void> {
    await Promise.allSettled([...this.writes.values()]);
    for (const table of this.tables.values()) table.close();
    this.tables.clear();
    this.db.close();
  }

  private serialize<T>(namespace: string, work: () => Promise<T>): Promise<T> {
    const next = (this.writes.get(namespace) ?? Promise.resolve()).catch(() => undefined).then(work);
    this.writes.set(namespace, next);
    return next;
  }
}

/** A SQL string literal (ids are checked to be plain words; quoting stays correct regardless). */
function quote(value: string): string {
  return `'${value.replace(/'/g, "''")}'`;
}

/** Loaded on a group's first database: a broker that runs no group never loads the native engine. */
export async function openLanceStore(dir: string, indexAtRows = DEFAULT_INDEX_AT_ROWS): Promise<VectorStore> {
  const lance = await import('@lancedb/lancedb');
  return new LanceVectorStore(lance, await lance.connect(dir), indexAtRows);
}
