/**
 * The engine's images (core/ports/imageStore.ts) over the Docker API: inspect and history for an
 * image's layers, a pull with the node's credentials and its progress stream read line by line,
 * a removal that never forces (the engine keeps an image a container uses).
 */
import { createHash } from 'node:crypto';
import type Dockerode from 'dockerode';
import type { HeldImage, ImageLayer, ImageStore, PullProgress, RegistryCredentials } from '../../../core/ports/imageStore';
import { PullFailure } from '../../../core/ports/imageStore';
import { canonicalImage } from '../../../core/images/imageRef';
import { errorMessage } from '../../../common/errors';
import { pullFailure } from './pullFailures';

interface ProgressLine {
  id?: string;
  status?: string;
  progressDetail?: { current?: number; total?: number };
  error?: string;
  errorDetail?: { message?: string };
}

export class DockerImageStore implements ImageStore {
  constructor(private readonly docker: Dockerode) {}

  async inspect(ref: string): Promise<HeldImage | null> {
    let info: Dockerode.ImageInspectInfo;
    try {
      info = await this.docker.getImage(ref).inspect();
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return null;
      throw err;
    }
    return { ref, layers: await this.layers(ref, info) };
  }

  async list(wanted: (ref: string) => boolean): Promise<HeldImage[]> {
    const images = await this.docker.listImages();
    const out: HeldImage[] = [];
    for (const image of images) {
      const refs = [...(image.RepoTags ?? []), ...(image.RepoDigests ?? [])].map((r) => canonicalImage(r)).filter((r): r is string => r !== null && wanted(r));
      for (const ref of new Set(refs)) {
        const held = await this.inspect(ref).catch(() => null);
        if (held) out.push(held);
      }
    }
    return out;
  }

  /**
   * Each layer keyed by its chain id (its diff id over the chain under it, as the engine's layer
   * store keys them), sized by the image's history: the entries that made a layer, oldest first, in
   * the order of the diff ids. A history that cannot be matched (a layer of 0 bytes among them)
   * counts the whole image as its top layer.
   */
  private async layers(ref: string, info: Dockerode.ImageInspectInfo): Promise<ImageLayer[]> {
    const diffIds = info.RootFS?.Layers ?? [];
    const chain: string[] = [];
    for (const diffId of diffIds) chain.push(chain.length === 0 ? diffId : `sha256:${createHash('sha256').update(`${chain[chain.length - 1]} ${diffId}`).digest('hex')}`);
    const history = (await this.docker.getImage(ref).history()) as Array<{ Size: number }>;
    const sizes = history.map((h) => h.Size).reverse().filter((size) => size > 0);
    if (sizes.length === chain.length) return chain.map((key, i) => ({ key, bytes: sizes[i] }));
    return [{ key: chain[chain.length - 1] ?? info.Id, bytes: info.Size }];
  }

  async pull(ref: string, credentials: RegistryCredentials | null, onProgress: (progress: PullProgress) => void, signal: AbortSignal): Promise<void> {
    const registry = ref.slice(0, ref.indexOf('/'));
    const auth = credentials ? { username: credentials.username, password: credentials.password, serveraddress: registry } : undefined;
    let stream: NodeJS.ReadableStream;
    try {
      stream = (await this.docker.pull(ref, { abortSignal: signal, ...(auth ? { authconfig: auth } : {}) })) as NodeJS.ReadableStream;
    } catch (err) {
      if (signal.aborted) throw signal.reason;
      throw pullFailure(engineMessage(err));
    }
    await readProgress(stream, onProgress, signal);
  }

  async remove(ref: string): Promise<boolean> {
    try {
      await this.docker.getImage(ref).remove({ force: false, noprune: false });
      return true;
    } catch (err) {
      const status = (err as { statusCode?: number }).statusCode;
      if (status === 404) return true;
      if (status === 409) return false;
      throw new Error(`removing image ${ref} failed: ${engineMessage(err)}`, { cause: err });
    }
  }
}

/** The engine's own message of an HTTP error (dockerode puts its JSON body under `json`). */
function engineMessage(err: unknown): string {
  const json = (err as { json?: { message?: string } }).json;
  return json?.message ?? errorMessage(err);
}

/** Follows the progress lines: each layer's size and what has arrived; an `error` line fails the pull. */
function readProgress(stream: NodeJS.ReadableStream, onProgress: (progress: PullProgress) => void, signal: AbortSignal): Promise<void> {
  const layers = new Map<string, { current: number; total: number }>();
  let buffer = '';
  let failure: PullFailure | null = null;
  const report = (): void => {
    let bytesTotal = 0;
    let bytesDone = 0;
    for (const l of layers.values()) {
      bytesTotal += l.total;
      bytesDone += Math.min(l.current, l.total);
    }
    onProgress({ bytesTotal, bytesDone });
  };
  const take = (line: ProgressLine): void => {
    if (line.error || line.errorDetail?.message) {
      failure ??= pullFailure(line.errorDetail?.message ?? line.error ?? 'the engine reported an error');
      return;
    }
    if (!line.id) return;
    const layer = layers.get(line.id) ?? { current: 0, total: 0 };
    const detail = line.progressDetail;
    if (line.status === 'Downloading' && detail?.total) {
      layer.total = detail.total;
      layer.current = detail.current ?? layer.current;
      layers.set(line.id, layer);
    } else if ((line.status === 'Download complete' || line.status === 'Pull complete') && layers.has(line.id)) {
      layer.current = layer.total;
    }
    report();
  };
  return new Promise<void>((resolve, reject) => {
    const onAbort = (): void => {
      (stream as unknown as { destroy?: () => void }).destroy?.();
      reject(signal.reason);
    };
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    stream.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      for (let nl = buffer.indexOf('\n'); nl >= 0; nl = buffer.indexOf('\n')) {
        const text = buffer.slice(0, nl).trim();
        buffer = buffer.slice(nl + 1);
        if (text === '') continue;
        try {
          take(JSON.parse(text) as ProgressLine);
        } catch {
          // a line that is not JSON says nothing we act on
        }
      }
    });
    stream.on('error', (err: Error) => {
      signal.removeEventListener('abort', onAbort);
      reject(signal.aborted ? signal.reason : pullFailure(errorMessage(err)));
    });
    stream.on('end', () => {
      signal.removeEventListener('abort', onAbort);
      if (signal.aborted) reject(signal.reason);
      else if (failure) reject(failure);
      else resolve();
    });
  });
}
