#!/usr/bin/env node
// Prints the node_modules directories the task daemon needs (Pi's packages and their dependency
// closure, optional ones that are installed included), one per line, relative to the repo root, for
// scripts/docker-images.sh to copy into the task image. Resolution is Node's: a dependency is looked
// up in the node_modules of its dependant, then of each directory above it.
// Usage: node scripts/task-image-modules.js [package ...]   (default: the Pi packages)
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.resolve(__dirname, '..');
const wanted = process.argv.slice(2);
const start = wanted.length ? wanted : ['@mariozechner/pi-coding-agent', '@mariozechner/pi-ai', '@mariozechner/pi-agent-core'];

function locate(name, fromDir) {
  for (let dir = fromDir; ; dir = path.dirname(dir)) {
    const candidate = path.join(dir, 'node_modules', name);
    if (fs.existsSync(path.join(candidate, 'package.json'))) return candidate;
    if (dir === root || dir === path.dirname(dir)) return null;
  }
}

const seen = new Set();
const queue = start.map((name) => ({ name, from: root, optional: false }));
while (queue.length) {
  const { name, from, optional } = queue.shift();
  const dir = locate(name, from);
  if (!dir) {
    if (optional) continue;
    console.error(`task-image-modules: ${name} (needed by ${path.relative(root, from) || 'the repo'}) is not installed`);
    process.exit(1);
  }
  if (seen.has(dir)) continue;
  seen.add(dir);
  const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  for (const dep of Object.keys(pkg.dependencies ?? {})) queue.push({ name: dep, from: dir, optional: false });
  for (const dep of Object.keys(pkg.optionalDependencies ?? {})) queue.push({ name: dep, from: dir, optional: true });
  for (const dep of Object.keys(pkg.peerDependencies ?? {})) queue.push({ name: dep, from: dir, optional: true });
}
// Real paths relative to the repo (node_modules may be a symlink to a shared install).
const realRoot = fs.realpathSync(path.join(root, 'node_modules'));
for (const dir of [...seen].sort()) {
  const rel = path.relative(realRoot, fs.realpathSync(dir));
  console.log(path.join('node_modules', rel));
}
