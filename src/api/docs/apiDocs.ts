/**
 * Every API's description, in the order /docs lists them. A new API adds its `<router>.openapi.ts`
 * here; test/http/openapi.test.ts fails until every route it mounts is described.
 */
import type { ApiDoc } from '../../http/openApiTypes';
import { POOL_API_DOC } from '../pool/poolRoutes.openapi';
import { HEALTH_API_DOC } from '../pool/healthRoutes.openapi';
import { WORKSPACE_API_DOC } from '../workspace/workspaceRoutes.openapi';
import { EXECD_PROCESS_API_DOC } from '../execd/execdProcess.openapi';
import { EXECD_FILES_API_DOC } from '../execd/execdFiles.openapi';
import { LIFECYCLE_API_DOC } from '../lifecycle/lifecycle.openapi';
import { GROUP_API_DOC } from '../groups/groupRoutes.openapi';
import { TASK_API_DOC } from '../tasks/taskRoutes.openapi';
import { DASHBOARD_API_DOC } from '../dashboard/dashboard.openapi';
import { DOCS_API_DOC } from './docs.openapi';

export const API_DOCS: readonly ApiDoc[] = [POOL_API_DOC, HEALTH_API_DOC, WORKSPACE_API_DOC, EXECD_PROCESS_API_DOC, EXECD_FILES_API_DOC, LIFECYCLE_API_DOC, GROUP_API_DOC, TASK_API_DOC, DASHBOARD_API_DOC, DOCS_API_DOC];
