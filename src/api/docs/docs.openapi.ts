/** /openapi.json and /docs themselves (docsRoutes.ts). */
import { STRING, type ApiDoc } from '../../http/openApiTypes';

export const DOCS_API_DOC: ApiDoc = {
  tag: 'docs',
  description: 'This document, and a viewer for it.',
  errors: 'pool',
  pathParams: { name: { description: 'a file of swagger-ui-dist', example: 'swagger-ui.css' } },
  operations: {
    'GET /openapi.json': { summary: 'The OpenAPI 3.1 document of every route (public)', responses: { 200: { description: 'the document', schema: { type: 'object', required: ['openapi', 'paths'] } } } },
    'GET /docs': { summary: 'The document in Swagger UI (public)', responses: { 200: { description: 'the page', contentType: 'text/html', schema: STRING } } },
    'GET /docs/assets/:name': {
      summary: "Swagger UI's files, from the broker's node_modules",
      responses: { 200: { description: 'the file', contentType: 'text/javascript', schema: STRING } },
      errors: { 404: 'no such asset (`asset_not_found`)' },
    },
  },
};
