/**
 * Every API's contracts (src/http/contract.ts): each route the broker serves, declared once with
 * its inputs and answers. The OpenAPI document is built from them (docs/apiDocs.ts), and a test
 * holds them equal to the routes the routers serve; a fuzz suite can draw inputs from their schemas.
 */
import type { ApiContract } from '../http/contract';
import { POOL_CONTRACT } from './pool/poolContract';
import { EXECD_FILES_CONTRACT, EXECD_PROCESS_CONTRACT } from './execd/execdContract';
import { LIFECYCLE_CONTRACT } from './lifecycle/lifecycleContract';
import { WORKSPACE_CONTRACT } from './workspace/workspaceContract';
import { TASK_CONTRACT } from './tasks/taskContract';
import { GROUP_CONTRACT } from './groups/groupContract';
import { IMAGE_CONTRACT } from './images/imageContract';

export const API_CONTRACTS: readonly ApiContract[] = [POOL_CONTRACT, WORKSPACE_CONTRACT, EXECD_PROCESS_CONTRACT, EXECD_FILES_CONTRACT, LIFECYCLE_CONTRACT, GROUP_CONTRACT, TASK_CONTRACT, IMAGE_CONTRACT];
