/**
 * The images API's contract (docs/images.md): keep images warm ahead of a run (POST /images) and
 * read what the node holds, pulls and warms (GET /images); on a cluster a gateway spreads the first
 * over the nodes and merges the second. Errors in the pool's `{detail, code}` format. imageRoutes.ts
 * serves these; the body is checked against its schema before anything starts.
 */
import { Type, type Static, type TProperties } from '@sinclair/typebox';
import { IMAGE } from '../pool/poolContract';
import type { ApiContract, RouteContract } from '../../http/contract';

/** Images one warm-up may name. */
export const MAX_WARMUP_IMAGES = 1000;
/** Warm sessions one image may be asked for (the image's ceiling caps what it gets). */
export const MAX_WARMUP_SESSIONS = 4096;
/** Nodes one image's warm-up may be spread over, through a gateway (the cluster's nodes that may serve it bound it further). */
export const MAX_WARMUP_NODES = 256;

const SESSIONS = Type.Optional(
  Type.Integer({ minimum: 0, maximum: MAX_WARMUP_SESSIONS, description: 'warm sessions to keep (0: the pull alone); default 1. Through a gateway: in all, over its `nodes`', 'x-refusal': { '*': `'sessions' must be an integer from 0 to ${MAX_WARMUP_SESSIONS}, got {json}` } }),
);

const NODES = Type.Optional(
  Type.Integer({ minimum: 1, maximum: MAX_WARMUP_NODES, description: 'through a gateway: the nodes to warm it on, placed as its acquires are (default 1); a node alone takes no `nodes`', 'x-refusal': { '*': `'nodes' must be an integer from 1 to ${MAX_WARMUP_NODES}, got {json}` } }),
);

/** A warm-up's body: a list of images, each an object of `fields` (named in its refusals). */
function warmupBody<P extends TProperties>(fields: P) {
  const names = Object.keys(fields);
  const quoted = names.map((n) => `'${n}'`);
  const only = `${quoted.slice(0, -1).join(', ')} and ${quoted[quoted.length - 1]}`;
  const item = Type.Object(fields, {
    additionalProperties: false,
    'x-refusal': { type: `each of 'images' must be an object {${names.map((n) => `"${n}"`).join(', ')}}, got {a}`, required: "each of 'images' needs an 'image'", additionalProperties: `each of 'images' has only ${only}` },
  });
  return Type.Object(
    { images: Type.Array(item, { minItems: 1, maxItems: MAX_WARMUP_IMAGES, 'x-refusal': { '*': `'images' must be a list of 1 to ${MAX_WARMUP_IMAGES} images` } }) },
    { additionalProperties: false, 'x-refusal': { type: 'Request body must be a JSON object, got {a}', required: "'images' is required", additionalProperties: "the body has only 'images'" } },
  );
}

/** A node's warm-up: each image on this node. */
export const WARMUP_BODY = warmupBody({ image: IMAGE, sessions: SESSIONS });

/**
 * A cluster's warm-up, through a gateway: a node's, and each image may be spread over `nodes`
 * nodes (cluster/gateway/gatewayWarmups.ts). A node alone takes the node's body (no `nodes`).
 */
export const CLUSTER_WARMUP_BODY = warmupBody({ image: IMAGE, sessions: SESSIONS, nodes: NODES });

export type WarmupBody = Static<typeof WARMUP_BODY>;
export type ClusterWarmupBody = Static<typeof CLUSTER_WARMUP_BODY>;

const WARMUP_VIEW = Type.Object({
  image: Type.String(),
  sessions: Type.Integer(),
  state: Type.Unsafe<string>({ enum: ['pulling', 'starting', 'warm', 'failed'] }),
  error: Type.Union([Type.Object({ code: Type.String(), detail: Type.String() }), Type.Null()]),
  askedAtMs: Type.Number(),
  /** Through a gateway: the node given this part, and the placement rule that chose it (null: no node may serve it). */
  node: Type.Optional(Type.String()),
  placement: Type.Optional(Type.Union([Type.Unsafe<string>({ enum: ['warm', 'held', 'cold'] }), Type.Null()])),
});

/** One image on one node (through a gateway, also its sums over the nodes). */
const IMAGE_FIELDS = {
  state: Type.Unsafe<string>({ enum: ['pulling', 'held', 'failed'] }),
  pull: Type.Union([Type.Object({ bytes_total: Type.Integer(), bytes_done: Type.Integer(), started_at_ms: Type.Number() }), Type.Null()]),
  disk_bytes: Type.Union([Type.Integer(), Type.Null()]),
  containers: Type.Integer(),
  warm_sessions: Type.Integer(),
  leased_sessions: Type.Integer(),
  /** Acquires on their way to a session of it (waiting for its pull, a container or a free session). */
  acquires_waiting: Type.Integer(),
  uses: Type.Integer(),
  last_used_at_ms: Type.Union([Type.Number(), Type.Null()]),
  warmup: Type.Union([Type.Object({ sessions: Type.Integer(), state: Type.String() }), Type.Null()]),
  error: Type.Union([Type.Object({ code: Type.String(), detail: Type.String() }), Type.Null()]),
};

const NODE_TOTALS = {
  on_demand: Type.Boolean(),
  pulls_in_flight: Type.Integer(),
  images_held: Type.Integer(),
  disk_used_bytes: Type.Integer(),
  disk_budget_bytes: Type.Integer(),
  evictions: Type.Integer(),
  room: Type.Object({ containers_free: Type.Integer(), sessions_per_container: Type.Integer(), max_containers_per_image: Type.Integer() }),
};

const IMAGES_REPORT = Type.Object({
  ...NODE_TOTALS,
  images: Type.Array(
    Type.Object({
      image: Type.String(),
      ...IMAGE_FIELDS,
      /** Through a gateway: the image on each node that holds, pulls or warms it. */
      nodes: Type.Optional(Type.Array(Type.Object({ node_id: Type.String(), ...IMAGE_FIELDS }))),
    }),
  ),
  /** Through a gateway: each node's totals. */
  nodes: Type.Optional(Type.Array(Type.Object({ node_id: Type.String(), ...NODE_TOTALS }))),
});

const EXAMPLE_IMAGE = 'registry.local:5000/swe/task-17:v1';

const routes = {
  warm: {
    method: 'POST',
    path: '/images',
    // Each image on the nodes its acquires are placed on, spread over `nodes` (cluster/gateway/gatewayWarmups.ts).
    gateway: 'warm-images',
    summary: 'Keep images warm ahead of a run',
    description:
      'Each image is pulled in the background and its pool started with the containers that hold `sessions` warm sessions (within its ceiling and the node budget). Progress: GET /images. Through a gateway, each image goes to the node its acquires are placed on, or is spread over `nodes` nodes (its `sessions` split over them); each part answers its `node` and `placement`. A node alone takes no `nodes`.',
    body: { schema: CLUSTER_WARMUP_BODY, example: { images: [{ image: EXAMPLE_IMAGE, sessions: 8 }] } },
    responses: { 202: { description: 'started: each image (through a gateway: each part) as it stands now', schema: Type.Object({ images: Type.Array(WARMUP_VIEW) }), example: { images: [{ image: EXAMPLE_IMAGE, sessions: 8, state: 'pulling', error: null, askedAtMs: 1795623330962 }] } } },
    errors: {
      400: 'a bad body or image reference, `nodes` on a node alone, or more `nodes` than the cluster has that may serve the image (`bad_request`)',
      403: 'an image this node (through a gateway: a node given it) may not pull (`image_not_allowed`)',
      501: 'this node pulls no images (`not_implemented`)',
    },
  },
  check: {
    method: 'POST',
    path: '/images/check',
    // A gateway's own call to each node of a warm-up before it starts any (cluster/gateway/gatewayWarmups.ts).
    gateway: 'node',
    summary: "Check a warm-up as POST /images would, starting nothing (a gateway's call to its nodes)",
    body: { schema: WARMUP_BODY },
    responses: { 200: { description: 'the warm-up would start: each image canonical', schema: Type.Object({ images: Type.Array(Type.String()) }) } },
    errors: {
      400: 'a bad body or image reference (`bad_request`)',
      403: 'an image this node may not pull (`image_not_allowed`)',
      501: 'this node pulls no images (`not_implemented`)',
    },
  },
  list: {
    method: 'GET',
    path: '/images',
    // Every node's, merged (cluster/gateway/imageReports.ts).
    gateway: 'list-images',
    summary: 'What the node holds, pulls and warms (through a gateway: every node, merged)',
    responses: { 200: { description: 'the images, most used first; through a gateway each with `nodes`, its view on each node, and the totals with each node\'s', schema: IMAGES_REPORT } },
    errors: {},
  },
} satisfies Record<string, RouteContract>;

export const IMAGE_CONTRACT: ApiContract<typeof routes> = {
  tag: 'images',
  description: 'Images on demand: keep images warm ahead of a run, and see what a node holds (docs/images.md).',
  errors: 'pool',
  routes,
};
