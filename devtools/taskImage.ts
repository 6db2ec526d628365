/**
 * Task images, as a coding-agent RL task set has them: one image per task, each a base image the
 * project builds (bash-broker-test:latest for tests, bash-broker-sandbox:latest for the bench) plus
 * one layer of its own holding a small repository (/repo: a few files of a configurable total size,
 * their checksums, and a test command, `bash /repo/run-tests.sh`, which checks them and prints
 * `ok <repository>:<tag>`).
 *
 * Built with the engine's own builder from a two-line Dockerfile (FROM the base, COPY the
 * repository), then `docker push`ed: the base's layers are pushed once per registry, each task image
 * after that pushes one layer. The Docker CLI runs on the machine's engine unless `dockerHost` names
 * another, with the registry's credentials (DOCKER_CONFIG) when it has any.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { RegistryRef } from './registry';

const DOCKER_TIMEOUT_MS = 300_000;

export interface TaskImageOptions {
  /** The image it is built FROM (default bash-broker-test:latest). */
  base?: string;
  /** The repository's total size in bytes (default 1 MiB), over `files` files. */
  bytes?: number;
  /** How many data files (default 4). */
  files?: number;
  /** Keep the built image on the engine after the push (default true); false removes it (a cold engine). */
  keepLocal?: boolean;
  /** The engine that builds and pushes (DOCKER_HOST form); default the machine's. */
  dockerHost?: string;
}

export interface PushedImage {
  /** `<registry>/<repository>:<tag>`. */
  ref: string;
  /** `<registry>/<repository>@sha256:…`, as the registry stores it. */
  digestRef: string;
  /** The repository's bytes in the image's own layer. */
  bytes: number;
  buildMs: number;
  pushMs: number;
}

/** Runs the Docker CLI; its stdout. */
export async function docker(args: string[], options: { dockerHost?: string; dockerConfig?: string | null } = {}): Promise<string> {
  const env: NodeJS.ProcessEnv = { ...process.env, DOCKER_BUILDKIT: '0' };
  // The machine's engine unless told otherwise: a DOCKER_HOST a test exported for a broker is not ours.
  delete env.DOCKER_HOST;
  if (options.dockerHost) env.DOCKER_HOST = options.dockerHost;
  if (options.dockerConfig) env.DOCKER_CONFIG = options.dockerConfig;
  try {
    const { stdout } = await promisify(execFile)('docker', args, { env, timeout: DOCKER_TIMEOUT_MS, maxBuffer: 16 * 1024 * 1024 });
    return stdout;
  } catch (err) {
    const e = err as { stderr?: string; message: string };
    throw new Error(`docker ${args.slice(0, 2).join(' ')}: ${e.stderr?.trim() || e.message}`, { cause: err });
  }
}

/** Bytes that depend only on `seed` (repeatable builds of a task hold the same repository) and do not compress. */
function seededBytes(seed: string, length: number): Buffer {
  const out = Buffer.alloc(length);
  for (let block = 0, at = 0; at < length; block++, at += 32) createHash('sha256').update(`${seed}#${block}`).digest().copy(out, at);
  return out;
}

/** Writes the build context of task `name` into `dir`: the Dockerfile and repo/. */
export function writeTaskContext(dir: string, name: string, base: string, bytes: number, files: number): void {
  const repo = path.join(dir, 'repo');
  fs.mkdirSync(path.join(repo, 'data'), { recursive: true });
  const sums: string[] = [];
  for (let i = 0; i < files; i++) {
    const rel = `data/part-${i}.bin`;
    const content = seededBytes(`${name}/${i}`, Math.floor(bytes / files) + (i < bytes % files ? 1 : 0));
    fs.writeFileSync(path.join(repo, rel), content);
    sums.push(`${createHash('sha256').update(content).digest('hex')}  ${rel}`);
  }
  fs.writeFileSync(path.join(repo, 'SHA256SUMS'), sums.join('\n') + '\n');
  fs.writeFileSync(path.join(repo, 'README'), `Task ${name}: a repository of ${files} data files and their checksums.\n`);
  // The test command: busybox's and coreutils' sha256sum both take -c (and no common option to be quiet).
  fs.writeFileSync(path.join(repo, 'run-tests.sh'), `#!/bin/bash\nset -e\ncd /repo\nsha256sum -c SHA256SUMS >/dev/null\necho "ok ${name}"\n`, { mode: 0o755 });
  fs.writeFileSync(path.join(dir, 'Dockerfile'), `FROM ${base}\nCOPY repo /repo\nLABEL io.bash-broker.task-image=${JSON.stringify(name)}\n`);
}

/** Builds task image `repository:tag` (the base plus its repository layer) and pushes it to `registry`. */
export async function pushTaskImage(registry: RegistryRef, repository: string, tag: string, options: TaskImageOptions = {}): Promise<PushedImage> {
  const ref = `${registry.address}/${repository}:${tag}`;
  const bytes = options.bytes ?? 1024 * 1024;
  const context = fs.mkdtempSync(path.join(os.tmpdir(), 'bash-broker-task-image-'));
  const cli = { dockerHost: options.dockerHost, dockerConfig: registry.dockerConfig };
  try {
    writeTaskContext(context, `${repository}:${tag}`, options.base ?? 'bash-broker-test:latest', bytes, options.files ?? 4);
    const t0 = Date.now();
    await docker(['build', '-q', '--force-rm', '-t', ref, context], cli);
    const t1 = Date.now();
    await docker(['push', '-q', ref], cli);
    const pushMs = Date.now() - t1;
    const digests = JSON.parse(await docker(['image', 'inspect', '--format', '{{json .RepoDigests}}', ref], cli)) as string[];
    const digestRef = digests.find((d) => d.startsWith(`${registry.address}/${repository}@`));
    if (!digestRef) throw new Error(`pushed ${ref}, but the engine holds no digest of it in ${registry.address}`);
    if (options.keepLocal === false) await removeImage(ref, options.dockerHost);
    return { ref, digestRef, bytes, buildMs: t1 - t0, pushMs };
  } finally {
    fs.rmSync(context, { recursive: true, force: true });
  }
}

/**
 * Removes `ref` from an engine (the machine's unless `dockerHost`), so that the next use pulls it:
 * the tag, and the image with its own layers when no other tag names it. Layers other images share
 * stay; an image a container uses is not removed (an error). False when the engine has no such image.
 */
export async function removeImage(ref: string, dockerHost?: string): Promise<boolean> {
  try {
    await docker(['image', 'rm', ref], { dockerHost });
    return true;
  } catch (err) {
    if (/No such image/i.test((err as Error).message)) return false;
    throw err;
  }
}

/** Pulls `ref` into an engine (the machine's unless `dockerHost`) with the registry's credentials; how long it took. */
export async function pullImage(ref: string, options: { registry?: RegistryRef; dockerHost?: string } = {}): Promise<number> {
  const t0 = Date.now();
  await docker(['pull', '-q', ref], { dockerHost: options.dockerHost, dockerConfig: options.registry?.dockerConfig });
  return Date.now() - t0;
}
