/**
 * Every API's description, in the order /docs lists them: each API's contracts (src/api/contracts.ts).
 * The document shows the routes a broker serves (openApiDocument.ts); test/http/openapi.test.ts fails
 * for a route it serves with no contract.
 */
import type { ApiDoc } from '../../http/openApiTypes';
import { apiDocOf } from '../../http/contract';
import { API_CONTRACTS } from '../contracts';

export const API_DOCS: readonly ApiDoc[] = API_CONTRACTS.map(apiDocOf);
