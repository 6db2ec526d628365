/**
 * The session init (sessionInit.c) built for this host, at the broker's start when isolation is on:
 * no binary is shipped or committed, a ts-node run needs no build step, and a changed source is
 * rebuilt the next start. The result is named by a hash of its source and flags in the pipes' root,
 * so brokers of one host share one build (linked into each container's pipes directory), and builds
 * of other sources are removed once a day old (a broker still running one may link it meanwhile;
 * containers that run it keep their own links). Static: it runs in any image,
 * whatever its libc. An image without a compiler ships one built from the source beside it, named
 * by the same hash (containers/broker/Dockerfile), and it is taken as built. Without a C compiler, or
 * the source (a build that left it out), the containers start sessions through the setup script
 * instead: the same isolation, about 7 ms more CPU each.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { promisify } from 'node:util';
import { errorMessage } from '../../../common/errors';

const run = promisify(execFile);
const BUILT_PREFIX = '.session-init-';
const FLAGS = ['-static', '-Os', '-s', '-Wall'];
const BUILD_TIMEOUT_MS = 120_000;
const OLD_BUILD_MS = 24 * 3600_000;

/** Beside this module (ts-node), or in the sources next to a compiled tree (dist/ beside src/). */
const SOURCES = [path.join(__dirname, 'sessionInit.c'), path.resolve(__dirname, '../../../../src/backends/docker/isolation/sessionInit.c')];

/** The files a source includes from beside it (`#include "name"`), in order. */
function includedBeside(text: string): string[] {
  return [...text.matchAll(/^#include "([^"]+)"/gm)].map((m) => m[1]);
}

export type SessionInitBuild = { path: string; built: boolean } | { path: null; why: string };

/** Builds the session init into `root` (a directory only the broker writes), or says why it cannot. */
export async function buildSessionInit(root: string, compiler = process.env.CC || 'cc', sources = SOURCES): Promise<SessionInitBuild> {
  const source = sources.find((file) => fs.existsSync(file));
  if (!source) return { path: null, why: `its source is not beside the broker (${sources[0]})` };
  // The files it includes from beside it are part of its source: a change to any is a new build.
  const text = await fs.promises.readFile(source);
  const hasher = createHash('sha256').update(text);
  for (const name of includedBeside(text.toString('utf8'))) hasher.update(await fs.promises.readFile(path.join(path.dirname(source), name)));
  const name = `${BUILT_PREFIX}${hasher.update(FLAGS.join(' ')).digest('hex').slice(0, 16)}`;
  const target = path.join(root, name);
  await removeOlderBuilds(root, name);
  if (fs.existsSync(target)) return { path: target, built: false };
  const partial = `${target}.${process.pid}.partial`;
  // Built with the image, from this very source (the name is its hash): copied, not compiled.
  const shipped = path.join(path.dirname(source), name);
  try {
    if (fs.existsSync(shipped)) await fs.promises.copyFile(shipped, partial);
    else await run(compiler, [...FLAGS, '-o', partial, source], { timeout: BUILD_TIMEOUT_MS });
    await fs.promises.chmod(partial, 0o755);
    // A rename: a broker starting at the same time finds a whole file or none.
    await fs.promises.rename(partial, target);
    return { path: target, built: true };
  } catch (err) {
    await fs.promises.rm(partial, { force: true }).catch(() => undefined);
    const stderr = (err as { stderr?: string }).stderr?.trim();
    return { path: null, why: `${compiler} could not build it: ${stderr || errorMessage(err)}`.slice(0, 500) };
  }
}

async function removeOlderBuilds(root: string, keep: string): Promise<void> {
  const names = await fs.promises.readdir(root).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.startsWith(BUILT_PREFIX) || name === keep) continue;
    const file = path.join(root, name);
    const stat = await fs.promises.stat(file).catch(() => null);
    if (stat && Date.now() - stat.mtimeMs > OLD_BUILD_MS) await fs.promises.rm(file, { force: true }).catch(() => undefined);
  }
}
