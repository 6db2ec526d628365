/**
 * A group's vector database as one sandbox reaches it: through its attachment's grant (the
 * namespaces it names, read or read_write), on a unix socket mounted into that sandbox alone
 * (groupListeners.ts). Every route needs the attachment's token. Errors: `{"detail", "code"}`;
 * a namespace not attached or a write through a read attachment is a 403.
 */
import type { Router } from '../../http/router';
import type { DatabaseGrant } from '../../core/groups/groupDatabase';
import { BadRequestError, brokerError } from '../../common/errors';
import { checkEmbedding } from '../../core/groups/populationConfig';
import { DOCUMENT_ID, type VectorDocument } from '../../core/ports/vectorStore';
import { poolErrorFormat } from '../../http/errorFormats';
import { sendJson } from '../../http/httpJson';

const MAX_K = 1000;
const DEFAULT_K = 10;

class DocumentNotFoundError extends brokerError('not_found', 'document_not_found', (ns: string, id: string) => `No document '${id}' in namespace '${ns}'`) {}

export function vectorDbRouter(grant: DatabaseGrant): Router {
  return {
    name: `database ${grant.name}`,
    errors: poolErrorFormat,
    routes: [
      {
        method: 'GET',
        path: '/namespaces',
        async handle({ res }) {
          sendJson(res, 200, { database_type: 'vector', access_type: grant.access, namespaces: await grant.list() });
        },
      },
      {
        method: 'POST',
        path: '/namespaces/:ns/query',
        body: 'json',
        async handle({ params, body, res }) {
          const q = object(body);
          const k = q.k ?? DEFAULT_K;
          if (typeof k !== 'number' || !Number.isInteger(k) || k < 1 || k > MAX_K) throw new BadRequestError(`'k' must be an integer from 1 to ${MAX_K}`);
          const results = await grant.query(params.ns, checkEmbedding(q.embedding, 'the query'), k);
          sendJson(res, 200, { results });
        },
      },
      {
        method: 'POST',
        path: '/namespaces/:ns/documents',
        body: 'json',
        async handle({ params, body, res }) {
          const docs = object(body).documents;
          if (!Array.isArray(docs) || docs.length === 0) throw new BadRequestError("'documents' must be a non-empty list of {id, text, metadata, embedding}");
          sendJson(res, 200, { upserted: await grant.upsert(params.ns, docs.map(parseDocument)) });
        },
      },
      {
        method: 'GET',
        path: '/namespaces/:ns/documents/:id',
        async handle({ params, res }) {
          const doc = await grant.get(params.ns, params.id);
          if (!doc) throw new DocumentNotFoundError(params.ns, params.id);
          sendJson(res, 200, doc);
        },
      },
      {
        method: 'DELETE',
        path: '/namespaces/:ns/documents/:id',
        async handle({ params, res }) {
          sendJson(res, 200, { deleted: await grant.remove(params.ns, params.id) });
        },
      },
    ],
  };
}

function object(body: unknown): Record<string, unknown> {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw new BadRequestError('the request body must be a JSON object');
  return body as Record<string, unknown>;
}

function parseDocument(raw: unknown, i: number): VectorDocument {
  const d = object(raw);
  if (typeof d.id !== 'string' || !DOCUMENT_ID.test(d.id)) throw new BadRequestError(`documents[${i}].id must be 1-200 letters, digits, '_', '.', ':' or '-'`);
  if (typeof d.text !== 'string') throw new BadRequestError(`documents[${i}].text must be a string`);
  const metadata = d.metadata ?? {};
  if (metadata === null || typeof metadata !== 'object' || Array.isArray(metadata)) throw new BadRequestError(`documents[${i}].metadata must be an object`);
  return { id: d.id, text: d.text, metadata: metadata as Record<string, unknown>, embedding: checkEmbedding(d.embedding, `documents[${i}]`) };
}
