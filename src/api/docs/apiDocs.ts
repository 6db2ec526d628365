/**
 * Every API's description, in the order /docs lists them: an API with route contracts
 * (src/api/contracts.ts) is described by them. A new API adds its contract here;
 * test/http/openapi.test.ts fails until every route it mounts is described.
 */
import type { ApiDoc } from '../../http/openApiTypes';
import { POOL_CONTRACT } from '../pool/poolContract';
import { HEALTH_API_DOC } from '../pool/healthRoutes.openapi';
import { WORKSPACE_CONTRACT } from '../workspace/workspaceContract';
import { EXECD_FILES_CONTRACT, EXECD_PROCESS_CONTRACT } from '../execd/execdContract';
import { apiDocOf } from '../../http/contract';
import { LIFECYCLE_CONTRACT } from '../lifecycle/lifecycleContract';
import { GROUP_CONTRACT } from '../groups/groupContract';
import { TASK_CONTRACT } from '../tasks/taskContract';
import { IMAGE_CONTRACT } from '../images/imageContract';
import { DASHBOARD_API_DOC } from '../dashboard/dashboard.openapi';
import { DOCS_API_DOC } from './docs.openapi';

export const API_DOCS: readonly ApiDoc[] = [apiDocOf(POOL_CONTRACT), HEALTH_API_DOC, apiDocOf(WORKSPACE_CONTRACT), apiDocOf(EXECD_PROCESS_CONTRACT), apiDocOf(EXECD_FILES_CONTRACT), apiDocOf(LIFECYCLE_CONTRACT), apiDocOf(GROUP_CONTRACT), apiDocOf(TASK_CONTRACT), apiDocOf(IMAGE_CONTRACT), DASHBOARD_API_DOC, DOCS_API_DOC];
