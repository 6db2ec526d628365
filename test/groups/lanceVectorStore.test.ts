/**
 * The group database on real LanceDB (embedded, files in a temporary directory): namespaces apart,
 * inserts that replace by id, a namespace's one dimension, and the IVF index a large namespace gets
 * (here at 300 documents) still finding each document's own embedding first.
 * @backend any
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { openLanceStore } from '../../src/backends/lancedb/lanceVectorStore';
import type { VectorStore } from '../../src/core/ports/vectorStore';

describe('the LanceDB vector store', () => {
  let dir: string;
  let store: VectorStore;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bkr-lance-'));
    store = await openLanceStore(dir, 300);
  });
  afterAll(async () => {
    await store?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('keeps namespaces apart and replaces a document by its id', async () => {
    await store.upsert('a', [
      { id: 'x', text: 'first', metadata: { v: 1 }, embedding: [1, 0] },
      { id: 'y', text: 'other', metadata: {}, embedding: [0, 1] },
    ]);
    await store.upsert('b', [{ id: 'x', text: 'in b', metadata: {}, embedding: [1, 0, 0] }]);
    await store.upsert('a', [{ id: 'x', text: 'second', metadata: { v: 2 }, embedding: [0.9, 0.1] }]);
    expect(await store.stats('a')).toEqual({ documents: 2, dimension: 2, indexed: false });
    expect(await store.get('a', 'x')).toMatchObject({ text: 'second', metadata: { v: 2 } });
    expect((await store.get('b', 'x'))?.text).toBe('in b');
    expect((await store.query('a', [1, 0], 5)).map((h) => h.id)).toEqual(['x', 'y']);
    expect(await store.query('empty', [1, 0], 5)).toEqual([]);
    await expect(store.upsert('a', [{ id: 'z', text: '', metadata: {}, embedding: [1, 2, 3] }])).rejects.toThrow(/dimension 2/);
    await expect(store.query('a', [1], 1)).rejects.toThrow(/dimension 2/);
    expect(await store.remove('a', 'y')).toBe(true);
    expect(await store.get('a', 'y')).toBeNull();
  });

  it('indexes a large namespace and still finds each document first', async () => {
    let seed = 3;
    const rand = (): number => (seed = (seed * 16807) % 2147483647) / 2147483647;
    const docs = Array.from({ length: 400 }, (_, i) => ({ id: `d${i}`, text: `doc ${i}`, metadata: {}, embedding: Array.from({ length: 8 }, rand) }));
    await store.upsert('big', docs);
    expect(await store.stats('big')).toEqual({ documents: 400, dimension: 8, indexed: true });
    for (const d of [docs[0], docs[199], docs[399]]) {
      const [hit] = await store.query('big', d.embedding, 1);
      expect([hit.id, hit.distance]).toEqual([d.id, expect.closeTo(0, 5)]);
    }
  });
});
