/**
 * GET /openapi.json (the OpenAPI 3.1 document of every mounted route, openApiDocument.ts) and GET
 * /docs (swagger-ui-dist, served from the broker's own node_modules, never a CDN). Both are public:
 * they describe routes and hold no data, every route they describe keeps its own guard, and a viewer
 * or a client generator can read them without a token. In /docs, "Authorize" takes the token for
 * "Try it out". Its tags open collapsed: Swagger UI takes many seconds to draw every operation of a
 * document this size at once, and one tag at a time draws at once.
 */
import fs from 'node:fs';
import path from 'node:path';
import { BrokerError } from '../../common/errors';
import type { RegisteredRoute } from '../../http/seam';
import type { Router } from '../../http/router';
import { sendText } from '../../http/httpJson';
import { apiErrors, served } from '../../http/contract';
import { API_DOCS } from './apiDocs';
import { buildOpenApi } from '../../http/openApiDocument';
import { DOCS_CONTRACT } from './docsContract';

const R = DOCS_CONTRACT.routes;

const SWAGGER_DIR = path.dirname(require.resolve('swagger-ui-dist/package.json'));
const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>bash-session broker API</title><link rel="stylesheet" href="/docs/assets/swagger-ui.css"><link rel="icon" href="/docs/assets/favicon-32x32.png"></head>
<body><div id="swagger-ui"></div><script src="/docs/assets/swagger-ui-bundle.js"></script>
<script>window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#swagger-ui', deepLinking: true, persistAuthorization: true, docExpansion: 'none' });</script>
</body></html>`;

function packageVersion(): string {
  try {
    return (JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', '..', 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '0.0.0';
  }
}

/** `routes`: the seam's route list, read at the first request (the seam is built after its routers). */
export function docsRouter(routes: () => RegisteredRoute[]): Router {
  let documentText: string | null = null;
  const assets = new Map<string, Buffer>();
  return {
    name: 'docs',
    ...apiErrors(DOCS_CONTRACT),
    routes: [
      served(R.document, ({ res }) => {
        documentText ??= JSON.stringify(buildOpenApi(API_DOCS, routes(), packageVersion()).document);
        sendText(res, 'application/json', documentText);
      }),
      served(R.viewer, ({ res }) => sendText(res, 'text/html; charset=utf-8', PAGE)),
      served(R.assets, ({ params, res }) => {
        // Own names only: `constructor` or `__proto__` would find the object's prototype's, and a file of that name.
        const type = Object.hasOwn(ASSETS, params.name) ? ASSETS[params.name] : undefined;
        if (!type) throw new BrokerError('not_found', 'asset_not_found', `no docs asset '${params.name}'`);
        let body = assets.get(params.name);
        if (!body) assets.set(params.name, (body = fs.readFileSync(path.join(SWAGGER_DIR, params.name))));
        res.writeHead(200, { 'Content-Type': type, 'Content-Length': body.length, 'Cache-Control': 'public, max-age=3600' });
        res.end(body);
      }),
    ],
  };
}
