/**
 * Every API's contracts (src/http/contract.ts): each route the broker or a cluster serves, declared
 * once with its inputs, its answers and where a gateway sends it. The OpenAPI document is built from
 * them (docs/apiDocs.ts), in this order; the gateway's routes are (cluster/gateway/gatewayRoutes.ts);
 * tests hold them equal to the routes the routers serve and to the gateway's; a fuzz suite can draw
 * inputs from their schemas. A new API adds its contract here, and nowhere else.
 */
import type { ApiContract } from '../http/contract';
import { POOL_CONTRACT } from './pool/poolContract';
import { HEALTH_CONTRACT } from './pool/healthContract';
import { EXECD_FILES_CONTRACT, EXECD_PROCESS_CONTRACT } from './execd/execdContract';
import { LIFECYCLE_CONTRACT } from './lifecycle/lifecycleContract';
import { WORKSPACE_CONTRACT } from './workspace/workspaceContract';
import { TASK_CONTRACT } from './tasks/taskContract';
import { GROUP_CONTRACT } from './groups/groupContract';
import { DASHBOARD_CONTRACT } from './dashboard/dashboardContract';
import { DOCS_CONTRACT } from './docs/docsContract';
import { CLUSTER_CONTRACT } from './cluster/clusterContract';
import { IMAGE_CONTRACT } from './images/imageContract';
import { SNAPSHOT_CONTRACT } from './snapshots/snapshotContract';

export const API_CONTRACTS: readonly ApiContract[] = [
  POOL_CONTRACT,
  HEALTH_CONTRACT,
  WORKSPACE_CONTRACT,
  EXECD_PROCESS_CONTRACT,
  EXECD_FILES_CONTRACT,
  LIFECYCLE_CONTRACT,
  GROUP_CONTRACT,
  TASK_CONTRACT,
  DASHBOARD_CONTRACT,
  DOCS_CONTRACT,
  CLUSTER_CONTRACT,
  IMAGE_CONTRACT,
  SNAPSHOT_CONTRACT,
];
