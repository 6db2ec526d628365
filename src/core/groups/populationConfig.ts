/**
 * `initial_database_population_config`: a YAML file on the broker's host that fills a group's
 * namespaces before /group/start answers. Format (docs/groups.md, "Databases"):
 *
 *   namespaces:
 *     default:
 *       documents:
 *         - {id: doc1, text: "...", metadata: {source: a}, embedding: [0.1, 0.2, 0.3]}
 *         - {id: doc2, text: "...", metadata: {}}            # its embedding in the file below
 *       embeddings_file: default.embeddings.jsonl           # optional; one {"id", "embedding"} per line
 *
 * Relative paths are relative to the YAML file. Every problem is a 400 naming the file and the place.
 */
import { promises as fs } from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { BadRequestError, errorMessage } from '../../common/errors';
import { DOCUMENT_ID, type VectorDocument } from '../ports/vectorStore';

export type Population = Map<string, VectorDocument[]>;

export async function loadPopulation(file: string, namespaces: readonly string[]): Promise<Population> {
  if (!path.isAbsolute(file)) throw new BadRequestError(`'initial_database_population_config' must be an absolute path on the broker's host, got '${file}'`);
  const text = await readText(file, 'initial_database_population_config');
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new BadRequestError(`${file} is not valid YAML: ${errorMessage(err)}`);
  }
  const top = asObject(doc, `${file}`);
  const byNs = asObject(top.namespaces, `${file}: 'namespaces'`);
  const population: Population = new Map();
  for (const [ns, raw] of Object.entries(byNs)) {
    if (!namespaces.includes(ns)) throw new BadRequestError(`${file}: namespace '${ns}' is not one of the group's namespaces (${namespaces.join(', ')})`);
    population.set(ns, await namespaceDocuments(file, ns, asObject(raw, `${file}: namespace '${ns}'`)));
  }
  return population;
}

async function namespaceDocuments(file: string, ns: string, spec: Record<string, unknown>): Promise<VectorDocument[]> {
  const where = `${file}: namespace '${ns}'`;
  const rawDocs = spec.documents ?? [];
  if (!Array.isArray(rawDocs)) throw new BadRequestError(`${where}: 'documents' must be a list`);
  const fromFile = typeof spec.embeddings_file === 'string' ? await readEmbeddings(path.resolve(path.dirname(file), spec.embeddings_file), where) : new Map<string, number[]>();
  if (spec.embeddings_file !== undefined && typeof spec.embeddings_file !== 'string') throw new BadRequestError(`${where}: 'embeddings_file' must be a path`);
  const seen = new Set<string>();
  const docs = rawDocs.map((raw, i): VectorDocument => {
    const d = asObject(raw, `${where}, document ${i}`);
    const id = d.id;
    if (typeof id !== 'string' || !DOCUMENT_ID.test(id)) throw new BadRequestError(`${where}, document ${i}: 'id' must be 1-200 letters, digits, '_', '.', ':' or '-'`);
    if (seen.has(id)) throw new BadRequestError(`${where}: document id '${id}' appears twice`);
    seen.add(id);
    if (typeof d.text !== 'string') throw new BadRequestError(`${where}, document '${id}': 'text' must be a string`);
    const metadata = d.metadata === undefined || d.metadata === null ? {} : asObject(d.metadata, `${where}, document '${id}': 'metadata'`);
    const embedding = d.embedding !== undefined ? d.embedding : fromFile.get(id);
    if (embedding === undefined) throw new BadRequestError(`${where}, document '${id}' has no embedding (give 'embedding' or a line in 'embeddings_file')`);
    return { id, text: d.text, metadata, embedding: checkEmbedding(embedding, `${where}, document '${id}'`) };
  });
  const lengths = new Set(docs.map((d) => d.embedding.length));
  if (lengths.size > 1) throw new BadRequestError(`${where}: embeddings differ in length (${[...lengths].join(', ')}); a namespace has one dimension`);
  return docs;
}

async function readEmbeddings(file: string, where: string): Promise<Map<string, number[]>> {
  const text = await readText(file, `${where}: 'embeddings_file'`);
  const out = new Map<string, number[]>();
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch {
      throw new BadRequestError(`${file}, line ${i + 1}: not JSON (each line is {"id": ..., "embedding": [...]})`);
    }
    const r = asObject(row, `${file}, line ${i + 1}`);
    if (typeof r.id !== 'string') throw new BadRequestError(`${file}, line ${i + 1}: 'id' must be a string`);
    out.set(r.id, checkEmbedding(r.embedding, `${file}, line ${i + 1}`));
  });
  return out;
}

export function checkEmbedding(value: unknown, where: string): number[] {
  if (!Array.isArray(value) || value.length === 0 || value.length > 65_536 || !value.every((x) => typeof x === 'number' && Number.isFinite(x))) {
    throw new BadRequestError(`${where}: 'embedding' must be a non-empty list of at most 65536 finite numbers`);
  }
  return value as number[];
}

async function readText(file: string, what: string): Promise<string> {
  try {
    const stat = await fs.stat(file);
    if (!stat.isFile()) throw new BadRequestError(`${what}: ${file} is not a regular file`);
    return await fs.readFile(file, 'utf8');
  } catch (err) {
    if (err instanceof BadRequestError) throw err;
    throw new BadRequestError(`${what}: cannot read ${file} (${errorMessage(err)})`);
  }
}

function asObject(value: unknown, where: string): Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new BadRequestError(`${where} must be a mapping`);
  return value as Record<string, unknown>;
}
