/**
 * The cluster's TLS files renewed without a restart (src/cluster/clusterTls.ts): a node and a
 * gateway, each with files of its own, are given new certificates of the same CA, then a CA bundle
 * (old and new CA), certificates of the new CA, and the new CA alone. A node's new connections
 * present its new certificate (its serial, read from the handshake); a node started after the CA
 * change, which trusts the new CA alone, serves the gateway's new connections (so the gateway
 * presents its new certificate); calls through the gateway answer throughout. A half-written pair
 * (a certificate without its key) and a certificate that does not name the node's address are
 * refused, and the set in use is kept.
 *
 * TLS files are the same whatever the nodes run:
 * @backend any
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { X509Certificate } from 'node:crypto';
import { useTestCluster, nodeOf } from '../helpers/cluster';
import type { BrokerProcess } from '../../devtools/brokerProcess';
import { selfSignedCa, signed } from '../../devtools/etcdPki';
import { eventually } from '../helpers/broker';

const cluster = useTestCluster([], 0);
const NODE_NAMES = 'subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth,clientAuth\n';
const GATEWAY_NAMES = 'extendedKeyUsage=clientAuth\n';

let pkiDir: string;
/** The files each member reads (BROKER_CLUSTER_CA/CERT/KEY), rewritten by the test. */
let nodeFiles: MemberFiles;
let gatewayFiles: MemberFiles;
let node: BrokerProcess;
let gateway: BrokerProcess;

interface MemberFiles {
  ca: string;
  cert: string;
  key: string;
}

function memberFiles(name: string, ca: string, cert: { cert: string; key: string }): MemberFiles {
  const dir = path.join(pkiDir, name);
  fs.mkdirSync(dir);
  const files = { ca: path.join(dir, 'ca.crt'), cert: path.join(dir, 'tls.crt'), key: path.join(dir, 'tls.key') };
  fs.copyFileSync(ca, files.ca);
  fs.copyFileSync(cert.cert, files.cert);
  fs.copyFileSync(cert.key, files.key);
  return files;
}

function envOf(files: MemberFiles): Record<string, string> {
  return { BROKER_CLUSTER_CA: files.ca, BROKER_CLUSTER_CERT: files.cert, BROKER_CLUSTER_KEY: files.key };
}

const caFile = (name: string): string => path.join(pkiDir, `${name}.crt`);
const serialOf = (certFile: string): string => new X509Certificate(fs.readFileSync(certFile)).serialNumber;

/** The serial of the certificate the node presents on a new connection (the test presents the gateway's files of the moment). */
function nodeSerial(): Promise<string> {
  const { port } = new URL(node.url);
  return new Promise((resolve, reject) => {
    const socket = tls.connect({ host: '127.0.0.1', port: Number(port), ca: fs.readFileSync(gatewayFiles.ca), cert: fs.readFileSync(gatewayFiles.cert), key: fs.readFileSync(gatewayFiles.key), rejectUnauthorized: false, maxVersion: 'TLSv1.2' }, () => {
      const serial = socket.getPeerCertificate().serialNumber;
      socket.destroy();
      resolve(serial);
    });
    socket.once('error', reject);
  });
}

/** An episode through the gateway: acquire, execute, release, each answered. */
async function episode(): Promise<string> {
  const acquired = await cluster.call(gateway, 'POST', '/session/acquire', {});
  expect(acquired.status).toBe(200);
  const id = acquired.json.session_id as string;
  const ran = await cluster.call(gateway, 'POST', `/session/${id}/execute`, { command: 'echo renewed' });
  expect([ran.status, ran.json.stdout]).toEqual([200, 'renewed\n']);
  expect((await cluster.call(gateway, 'POST', `/session/${id}/release`)).status).toBe(200);
  return id;
}

/** Until `member` logs that it took (or refused) a set: the count of such lines grows past `before`. */
async function untilLogged(member: BrokerProcess, what: 'reloaded' | 'NOT reloaded', before: number): Promise<void> {
  await eventually(() => logged(member, what) > before, 30_000, () => `${member.name} to log 'cluster TLS files ${what}' (its log: ${member.output.slice(-2_000)})`);
}

function logged(member: BrokerProcess, what: 'reloaded' | 'NOT reloaded'): number {
  return member.output.split(`cluster TLS files ${what}`).length - 1;
}

/** Writes a certificate and its key over a member's files, as a renewal does. */
function install(files: MemberFiles, cert: { cert: string; key: string }): void {
  fs.copyFileSync(cert.cert, files.cert);
  fs.copyFileSync(cert.key, files.key);
}

beforeAll(async () => {
  pkiDir = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-tls-renewal-'));
  const pki = cluster.etcd.pki!;
  // The cluster's CA (its key beside it), and a second CA for the rollover.
  fs.copyFileSync(pki.clusterCa, caFile('cluster-ca'));
  fs.copyFileSync(path.join(pki.dir, 'cluster-ca.key'), path.join(pkiDir, 'cluster-ca.key'));
  selfSignedCa(pkiDir, 'next-ca');
  fs.writeFileSync(caFile('bundle'), fs.readFileSync(caFile('cluster-ca')) + fs.readFileSync(caFile('next-ca')).toString());
  nodeFiles = memberFiles('node', pki.clusterCa, { cert: pki.nodeCert, key: pki.nodeKey });
  gatewayFiles = memberFiles('gateway', pki.clusterCa, { cert: pki.gatewayCert, key: pki.gatewayKey });
  node = await cluster.startNodeWith('n1', envOf(nodeFiles));
  gateway = await cluster.startGatewayWith(envOf(gatewayFiles));
  await cluster.waitMembers(['n1']);
}, 240_000);

afterAll(() => {
  if (pkiDir) fs.rmSync(pkiDir, { recursive: true, force: true });
});

describe("the cluster's TLS files renewed without a restart", () => {
  test('new certificates of the same CA: new connections present them, calls answer throughout', async () => {
    expect(await nodeSerial()).toBe(serialOf(nodeFiles.cert));
    await episode();
    const nodeNext = signed(pkiDir, 'cluster-ca', 'node-2', 'bash-broker-node', NODE_NAMES);
    const gatewayNext = signed(pkiDir, 'cluster-ca', 'gateway-2', 'bash-broker-gateway', GATEWAY_NAMES);
    const [nodeBefore, gatewayBefore] = [logged(node, 'reloaded'), logged(gateway, 'reloaded')];
    install(nodeFiles, nodeNext);
    install(gatewayFiles, gatewayNext);
    await untilLogged(node, 'reloaded', nodeBefore);
    await untilLogged(gateway, 'reloaded', gatewayBefore);
    expect(await nodeSerial()).toBe(serialOf(nodeNext.cert));
    expect(gateway.output).toContain(`"serial":"${serialOf(gatewayNext.cert)}"`);
    await episode();
  }, 120_000);

  test('a half-written pair, and a certificate that does not name the node, are refused: the set in use is kept', async () => {
    const inUse = await nodeSerial();
    // A certificate whose key is not written yet.
    const half = signed(pkiDir, 'cluster-ca', 'node-half', 'bash-broker-node', NODE_NAMES);
    const keyInUse = fs.readFileSync(nodeFiles.key);
    let refused = logged(node, 'NOT reloaded');
    fs.copyFileSync(half.cert, nodeFiles.cert);
    await untilLogged(node, 'NOT reloaded', refused);
    expect(await nodeSerial()).toBe(inUse);
    await episode();
    // A whole pair that names another host than the node's address (SIGHUP: read at once).
    const unnamed = signed(pkiDir, 'cluster-ca', 'node-unnamed', 'bash-broker-node', 'subjectAltName=DNS:elsewhere.example\nextendedKeyUsage=serverAuth,clientAuth\n');
    refused = logged(node, 'NOT reloaded');
    install(nodeFiles, unnamed);
    process.kill(node.pid, 'SIGHUP');
    await untilLogged(node, 'NOT reloaded', refused);
    expect(await nodeSerial()).toBe(inUse);
    await episode();
    // The pair made whole: taken.
    const reloaded = logged(node, 'reloaded');
    fs.copyFileSync(half.cert, nodeFiles.cert);
    fs.copyFileSync(half.key, nodeFiles.key);
    await untilLogged(node, 'reloaded', reloaded);
    expect(await nodeSerial()).toBe(serialOf(half.cert));
    expect(fs.readFileSync(nodeFiles.key).equals(keyInUse)).toBe(false);
    await episode();
  }, 120_000);

  test('a CA rollover (old and new CA, certificates of the new, the new alone): calls answer throughout; a node of the new CA alone serves the gateway', async () => {
    const members: Array<[BrokerProcess, MemberFiles, string]> = [
      [node, nodeFiles, NODE_NAMES],
      [gateway, gatewayFiles, GATEWAY_NAMES],
    ];
    for (const step of ['bundle', 'certificates', 'next-ca'] as const) {
      for (const [member, files, names] of members) {
        const before = logged(member, 'reloaded');
        if (step === 'certificates') install(files, signed(pkiDir, 'next-ca', `${member === node ? 'node' : 'gateway'}-next`, member === node ? 'bash-broker-node' : 'bash-broker-gateway', names));
        else fs.copyFileSync(caFile(step), files.ca);
        await untilLogged(member, 'reloaded', before);
      }
      await episode();
    }
    expect(await nodeSerial()).toBe(serialOf(nodeFiles.cert));
    // A node that trusts the new CA alone: the gateway's connections to it are new ones, with its new certificate.
    const laterFiles = memberFiles('later-node', caFile('next-ca'), { cert: nodeFiles.cert, key: nodeFiles.key });
    await cluster.startNodeWith('n2', envOf(laterFiles));
    await cluster.waitMembers(['n1', 'n2']);
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const acquired = await cluster.call(gateway, 'POST', '/session/acquire', {});
      expect(acquired.status).toBe(200);
      ids.push(acquired.json.session_id as string);
    }
    expect(ids.map(nodeOf)).toContain('n2');
    for (const id of ids) {
      const ran = await cluster.call(gateway, 'POST', `/session/${id}/execute`, { command: 'echo next-ca' });
      expect([ran.status, ran.json.stdout]).toEqual([200, 'next-ca\n']);
      expect((await cluster.call(gateway, 'POST', `/session/${id}/release`)).status).toBe(200);
    }
  }, 240_000);
});
