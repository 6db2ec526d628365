/**
 * The port of a group's vector database: namespaces of documents (id, text, metadata, embedding),
 * nearest-neighbour queries over the embeddings. Implemented on LanceDB (backends/lancedb/), an
 * embedded engine the broker runs in its own process, with its files in the group's directory.
 */

export interface VectorDocument {
  id: string;
  text: string;
  metadata: Record<string, unknown>;
  embedding: number[];
}

export interface VectorHit {
  id: string;
  text: string;
  metadata: Record<string, unknown>;
  /** Squared L2 distance to the query (smaller is nearer). */
  distance: number;
}

export interface NamespaceStats {
  documents: number;
  /** The embeddings' length, fixed by the first document; null while the namespace is empty. */
  dimension: number | null;
  /** Searched through a vector index (large namespaces) rather than a flat scan. */
  indexed: boolean;
}

export interface VectorStore {
  /** Inserts or replaces by id. An embedding of another length than the namespace's is a 400. */
  upsert(namespace: string, documents: VectorDocument[]): Promise<number>;
  query(namespace: string, embedding: number[], k: number): Promise<VectorHit[]>;
  get(namespace: string, id: string): Promise<VectorDocument | null>;
  remove(namespace: string, id: string): Promise<boolean>;
  stats(namespace: string): Promise<NamespaceStats>;
  /** Closes the engine (its files are the caller's to remove). */
  close(): Promise<void>;
}

/** Opens (creates) a store whose files live in `dir`. */
export type VectorStoreOpener = (dir: string) => Promise<VectorStore>;

/** Ids are plain words: they appear in the engine's filters. */
export const DOCUMENT_ID = /^[A-Za-z0-9_.:-]{1,200}$/;
export const NAMESPACE_NAME = /^[A-Za-z0-9_-]{1,64}$/;
