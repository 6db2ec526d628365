/**
 * The cluster's own routes, each route's contract written once: a gateway's list of its nodes for
 * Prometheus (cluster/gateway/gateway.ts serves it), and a node's cut of an acquire its gateway no
 * longer needs (cluster/node/acquireCuts.ts), which clients never see: a gateway serves it to no one
 * and the document leaves it out. A standalone broker serves neither.
 */
import { arrayOf, object, STRING } from '../../http/openApiTypes';
import { PUBLIC_WITH_METRICS, type ApiContract, type RouteContract } from '../../http/contract';

const routes = {
  targets: {
    method: 'GET',
    path: '/cluster/targets',
    public: PUBLIC_WITH_METRICS,
    gateway: 'gateway',
    summary: "A gateway's nodes as Prometheus HTTP service discovery targets (public with BROKER_METRICS_PUBLIC=1)",
    responses: {
      200: {
        description: 'one target group per node',
        schema: arrayOf(object({ targets: arrayOf(STRING), labels: { type: 'object', additionalProperties: STRING } })),
        example: [{ targets: ['10.0.0.5:8180'], labels: { node: 'n1', __scheme__: 'http' } }],
      },
    },
  },
  cutAcquire: {
    method: 'POST',
    path: '/cluster/acquires/:tag/cut',
    // Its guard is the cluster's (node/clusterGuard.ts): only a gateway's call with the cluster token reaches it.
    public: true,
    gateway: 'node',
    readsJson: false,
    summary: "Cut a gateway's waiting acquire (the tag in the path and in X-Broker-Acquire-Tag), unless its grant is on its way",
    responses: { 200: { description: 'whether the call was cut', schema: object({ cut: { type: 'boolean' } }) } },
    errors: { 404: 'not a gateway\'s cut: the tag in the header is not the path\'s (`route_not_found`)' },
  },
} satisfies Record<string, RouteContract>;

export const CLUSTER_CONTRACT: ApiContract<typeof routes> = {
  tag: 'cluster',
  description: 'A cluster of nodes behind gateways: what the gateways report of it.',
  errors: 'pool',
  pathParams: { tag: { description: "a gateway's acquire tag (a UUID)", example: '0b6f4c1e-8f0a-4d57-9a37-3c5e8b1f2a90' } },
  routes,
};
