#!/usr/bin/env node
// Forwards every connection accepted on one socket to another, byte for byte, for as many pairs as
// given. The cluster rig (devtools/clusterRig.ts) needs it because each of its engines runs in a
// network namespace with no way out, yet must pull from a registry on the machine's loopback: inside
// each namespace one of these listens on the registry's own address (127.0.0.1:<port>) and forwards
// to a unix socket in the rig's directory (a file: seen from every namespace); on the machine's side
// another listens on that socket and forwards to the registry. An image then has one name on both
// sides, and the engines pull it over plain HTTP as from any registry on loopback.
//
// Usage: node scripts/socket-forward.js LISTEN=CONNECT... [--ready-file F] [--exit-with-parent]
//   LISTEN, CONNECT  host:port (TCP) or an absolute path (a unix socket; a stale one is replaced)
//   --ready-file F   written once every pair listens
//   --exit-with-parent  exits when its parent does (one started beside a dockerd ends with it)
'use strict';
const fs = require('node:fs');
const net = require('node:net');
const { setInterval } = require('node:timers');

function endpoint(spec) {
  if (spec.startsWith('/')) return { path: spec };
  const at = spec.lastIndexOf(':');
  const port = Number(spec.slice(at + 1));
  if (at <= 0 || !Number.isInteger(port) || port < 1 || port > 65535) usage(`not host:port or an absolute path: ${spec}`);
  return { host: spec.slice(0, at), port };
}

function usage(message) {
  console.error(`socket-forward: ${message}\nusage: socket-forward.js LISTEN=CONNECT... [--ready-file F] [--exit-with-parent]`);
  process.exit(2);
}

const args = process.argv.slice(2);
let readyFile = null;
let exitWithParent = false;
const pairs = [];
for (let i = 0; i < args.length; i++) {
  if (args[i] === '--ready-file') readyFile = args[++i] ?? usage('--ready-file needs a path');
  else if (args[i] === '--exit-with-parent') exitWithParent = true;
  else if (args[i].includes('=')) pairs.push(args[i].split('=', 2).map(endpoint));
  else usage(`unknown argument ${args[i]}`);
}
if (pairs.length === 0) usage('no LISTEN=CONNECT pair');

function forward(client, to) {
  const upstream = net.connect(to);
  // Either side's end or error ends both: the peer of a refused or broken upstream sees its
  // connection closed, as with a registry that went away.
  const end = () => {
    client.destroy();
    upstream.destroy();
  };
  for (const socket of [client, upstream]) {
    socket.on('error', end);
    socket.on('close', end);
  }
  client.pipe(upstream).pipe(client);
}

let listening = 0;
for (const [listen, to] of pairs) {
  if (listen.path) fs.rmSync(listen.path, { force: true });
  const server = net.createServer((client) => forward(client, to));
  server.on('error', (err) => {
    console.error(`socket-forward: ${JSON.stringify(listen)}: ${err.message}`);
    process.exit(1);
  });
  server.listen(listen, () => {
    if (++listening === pairs.length && readyFile) fs.writeFileSync(readyFile, `${process.pid}\n`);
  });
}

if (exitWithParent) {
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) process.exit(0);
  }, 200);
}
for (const signal of ['SIGTERM', 'SIGINT']) process.on(signal, () => process.exit(0));
