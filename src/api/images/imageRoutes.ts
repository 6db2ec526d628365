/**
 * POST /images (keep images warm), GET /images (what the node holds) and, on a cluster's node,
 * POST /images/check (a gateway's check of a warm-up before it starts one): a thin router over
 * core/images/.
 */
import type { Router } from '../../http/router';
import { poolErrorFormat } from '../../http/errorFormats';
import { sendJson } from '../../http/httpJson';
import { served } from '../../http/contract';
import { compileCheck } from '../../http/schemaCheck';
import { IMAGE_CONTRACT, WARMUP_BODY } from './imageContract';
import type { ImageWarmups } from '../../core/images/imageWarmups';
import type { ImagesReport } from '../../core/images/imageViews';

const R = IMAGE_CONTRACT.routes;
const warmupCheck = compileCheck(WARMUP_BODY);

export function imageRouter(warmups: ImageWarmups, report: () => ImagesReport): Router {
  return {
    name: 'images',
    errors: poolErrorFormat,
    routes: [
      served(R.warm, ({ body, res }) => {
        const { images } = warmupCheck(body);
        const views = warmups.warm(images.map((i) => ({ image: i.image, sessions: i.sessions ?? 1 })));
        sendJson(res, 202, { images: views });
      }),
      served(R.list, ({ res }) => {
        sendJson(res, 200, report());
      }),
    ],
  };
}

/** POST /images/check: a cluster node's route for its gateways (a standalone broker has none). */
export function imageCheckRouter(warmups: ImageWarmups): Router {
  return {
    name: 'images (gateway checks)',
    errors: poolErrorFormat,
    routes: [
      served(R.check, ({ body, res }) => {
        const refs = warmups.check(warmupCheck(body).images);
        sendJson(res, 200, { images: refs.map((r) => r.canonical) });
      }),
    ],
  };
}
