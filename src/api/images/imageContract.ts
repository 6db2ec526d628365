/**
 * The images API's contract (docs/images.md): keep images warm ahead of a run (POST /images) and
 * read what the node holds, pulls and warms (GET /images). Errors in the pool's `{detail, code}`
 * format. imageRoutes.ts serves these; the body is checked against its schema before anything starts.
 */
import { Type, type Static } from '@sinclair/typebox';
import { IMAGE } from '../pool/poolContract';
import type { ApiContract, RouteContract } from '../../http/contract';

/** Images one warm-up may name. */
export const MAX_WARMUP_IMAGES = 1000;
/** Warm sessions one image may be asked for (the image's ceiling caps what it gets). */
export const MAX_WARMUP_SESSIONS = 4096;

export const WARMUP_BODY = Type.Object(
  {
    images: Type.Array(
      Type.Object(
        {
          image: IMAGE,
          sessions: Type.Optional(
            Type.Integer({ minimum: 0, maximum: MAX_WARMUP_SESSIONS, description: 'warm sessions to keep (0: the pull alone); default 1', 'x-refusal': { '*': `'sessions' must be an integer from 0 to ${MAX_WARMUP_SESSIONS}, got {json}` } }),
          ),
        },
        { additionalProperties: false, 'x-refusal': { type: "each of 'images' must be an object {\"image\", \"sessions\"}, got {a}", required: "each of 'images' needs an 'image'", additionalProperties: "each of 'images' has only 'image' and 'sessions'" } },
      ),
      { minItems: 1, maxItems: MAX_WARMUP_IMAGES, 'x-refusal': { '*': `'images' must be a list of 1 to ${MAX_WARMUP_IMAGES} images` } },
    ),
  },
  { additionalProperties: false, 'x-refusal': { type: 'Request body must be a JSON object, got {a}', required: "'images' is required", additionalProperties: "the body has only 'images'" } },
);
export type WarmupBody = Static<typeof WARMUP_BODY>;

const WARMUP_VIEW = Type.Object({
  image: Type.String(),
  sessions: Type.Integer(),
  state: Type.Unsafe<string>({ enum: ['pulling', 'starting', 'warm', 'failed'] }),
  error: Type.Union([Type.Object({ code: Type.String(), detail: Type.String() }), Type.Null()]),
  askedAtMs: Type.Number(),
});

const IMAGE_VIEW = Type.Object({
  image: Type.String(),
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
});

const IMAGES_REPORT = Type.Object({
  on_demand: Type.Boolean(),
  pulls_in_flight: Type.Integer(),
  images_held: Type.Integer(),
  disk_used_bytes: Type.Integer(),
  disk_budget_bytes: Type.Integer(),
  evictions: Type.Integer(),
  room: Type.Object({ containers_free: Type.Integer(), sessions_per_container: Type.Integer(), max_containers_per_image: Type.Integer() }),
  images: Type.Array(IMAGE_VIEW),
});

const EXAMPLE_IMAGE = 'registry.local:5000/swe/task-17:v1';

const routes = {
  warm: {
    method: 'POST',
    path: '/images',
    summary: 'Keep images warm ahead of a run',
    description: 'Each image is pulled in the background and its pool started with the containers that hold `sessions` warm sessions (within its ceiling and the node budget). Progress: GET /images.',
    body: { schema: WARMUP_BODY, example: { images: [{ image: EXAMPLE_IMAGE, sessions: 8 }] } },
    responses: { 202: { description: 'started: each image as it stands now', schema: Type.Object({ images: Type.Array(WARMUP_VIEW) }), example: { images: [{ image: EXAMPLE_IMAGE, sessions: 8, state: 'pulling', error: null, askedAtMs: 1795623330962 }] } } },
    errors: {
      400: 'a bad body or image reference (`bad_request`)',
      403: 'an image this node may not pull (`image_not_allowed`)',
      501: 'this node pulls no images (`not_implemented`)',
    },
  },
  list: {
    method: 'GET',
    path: '/images',
    summary: 'What the node holds, pulls and warms',
    responses: { 200: { description: 'the images, most used first', schema: IMAGES_REPORT } },
    errors: {},
  },
} satisfies Record<string, RouteContract>;

export const IMAGE_CONTRACT: ApiContract<typeof routes> = {
  tag: 'images',
  description: 'Images on demand: keep images warm ahead of a run, and see what a node holds (docs/images.md).',
  errors: 'pool',
  // On a cluster a gateway sends both to the home node: warming names images for that node, and the
  // list is that node's. Spreading a warm-up over the nodes, and placing by image, is the gateways'
  // placement work (docs/images.md, "Left").
  gateway: 'home',
  routes,
};
