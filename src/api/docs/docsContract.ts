/**
 * /openapi.json and /docs themselves, each route's contract written once: docsRoutes.ts serves them.
 * The same on every node: a gateway asks any node.
 */
import { STRING } from '../../http/openApiTypes';
import type { ApiContract, RouteContract } from '../../http/contract';

const routes = {
  document: {
    method: 'GET',
    path: '/openapi.json',
    public: true,
    summary: 'The OpenAPI 3.1 document of every route (public)',
    responses: { 200: { description: 'the document', schema: { type: 'object', required: ['openapi', 'paths'] } } },
  },
  viewer: { method: 'GET', path: '/docs', public: true, summary: 'The document in Swagger UI (public)', responses: { 200: { description: 'the page', contentType: 'text/html', schema: STRING } } },
  assets: {
    method: 'GET',
    path: '/docs/assets/:name',
    public: true,
    summary: "Swagger UI's files, from the broker's node_modules",
    responses: { 200: { description: 'the file', contentType: 'text/javascript', schema: STRING } },
    errors: { 404: 'no such asset (`asset_not_found`)' },
  },
} satisfies Record<string, RouteContract>;

export const DOCS_CONTRACT: ApiContract<typeof routes> = {
  tag: 'docs',
  description: 'This document, and a viewer for it.',
  errors: 'pool',
  gateway: 'any',
  pathParams: { name: { description: 'a file of swagger-ui-dist', example: 'swagger-ui.css' } },
  routes,
};
