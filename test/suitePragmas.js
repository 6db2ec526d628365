/**
 * What a test file says of how it runs, read from the tags of its first doc comment, so that a new
 * file needs no list to be added to (jest.config.js builds its projects from these). Its folder
 * (test/<feature>/, laid out like src/) says what it tests, never where it runs:
 *
 *   (no tag)        the suite runs in both projects: against the local backend and against Docker.
 *   @backend any    the suite does not depend on the backend (a unit, or only what the HTTP layer, a
 *                   contract or a cluster's routing decides): it runs once, in the local project.
 *   @backend local  the suite is about the local backend (its confinement, its hosts, its 501s for
 *                   what only Docker has): only the local project runs it.
 *   @backend docker the suite does something only a Docker engine has: only the docker project runs it.
 *   @serial <why>   the suite must have the machine to itself (it stops or restarts the shared engine,
 *                   kills broadly, or measures the machine's global resources): `npm test` runs it
 *                   after the parallel part, alone, one file at a time. The reason is required.
 */
const fs = require('node:fs');
const path = require('node:path');

const BACKENDS = ['any', 'local', 'docker'];
/** The jest projects a `@backend` value puts a suite in; a suite with no tag runs in both. */
const PROJECTS_OF = { any: ['local'], local: ['local'], docker: ['docker'] };
const BOTH = ['local', 'docker'];

/** The tags of the file's first `/** ... *\/` comment, if it is the first thing in the file: { name: value }. */
function readPragmas(file) {
  const head = fs.readFileSync(file, 'utf8').slice(0, 8192);
  const block = /^\s*\/\*\*([\s\S]*?)\*\//.exec(head);
  const pragmas = {};
  if (!block) return pragmas;
  for (const raw of block[1].split('\n')) {
    const m = /^\s*\*?\s*@([a-z][\w-]*)(?:\s+(.*?))?\s*$/.exec(raw);
    if (m) pragmas[m[1]] = m[2] ?? '';
  }
  return pragmas;
}

function testFiles(dir) {
  const found = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) found.push(...testFiles(full));
    else if (entry.name.endsWith('.test.ts')) found.push(full);
  }
  return found;
}

/**
 * Every test file under `root` with what its tags say: { file, backend: 'any'|'local'|'docker'|null,
 * projects, serial: reason|null }. A tag with a value it does not know is a mistake in the file, and
 * so is a file that is not exactly one folder under `root` (its `../helpers/` and `../../src/`
 * imports assume that depth): it throws, naming the file.
 */
function suiteTags(root) {
  return testFiles(root).map((file) => {
    const p = readPragmas(file);
    if (p.backend !== undefined && !BACKENDS.includes(p.backend)) {
      throw new Error(`${file}: @backend ${p.backend}: expected one of ${BACKENDS.join(', ')}`);
    }
    if (p.serial !== undefined && p.serial === '') throw new Error(`${file}: @serial needs a reason`);
    const depth = path.relative(root, file).split(path.sep).length;
    if (depth !== 2) throw new Error(`${file}: a suite lives in a feature folder one level under test/ (test/<feature>/<name>.test.ts)`);
    const backend = p.backend ?? null;
    return { file, backend, projects: backend === null ? BOTH : PROJECTS_OF[backend], serial: p.serial ?? null };
  });
}

/** Regular expressions that match exactly these absolute paths (for testPathIgnorePatterns). */
function exactPathPatterns(files) {
  return files.map((f) => `^${f.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`);
}

module.exports = { suiteTags, exactPathPatterns, readPragmas };
