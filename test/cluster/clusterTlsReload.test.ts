/**
 * The cluster's TLS files read again (src/cluster/clusterTls.ts), on files made with openssl: an
 * unchanged set is no change; a new pair is taken and its listeners told; a certificate without its
 * key, or one a check refuses, is refused and the set in use kept; a change of the files is seen by
 * the watch. (SIGHUP, which a test process cannot take, is the cluster suite's: cluster-tls-renewal.)
 * @backend any
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ClusterTls, serialOf, type TlsIdentity } from '../../src/cluster/clusterTls';
import { selfSignedCa, signed } from '../../devtools/etcdPki';
import { eventually } from '../helpers/broker';

const NAMES = 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\n';

describe("the cluster's TLS files read again", () => {
  let dir: string;
  let files: { caFile: string; certFile: string; keyFile: string };
  let tls: ClusterTls;
  const taken: string[] = [];

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'cluster-tls-reload-'));
    selfSignedCa(dir, 'ca');
    const first = signed(dir, 'ca', 'first', 'first', NAMES);
    fs.mkdirSync(path.join(dir, 'in-use'));
    files = { caFile: path.join(dir, 'in-use', 'ca.crt'), certFile: path.join(dir, 'in-use', 'tls.crt'), keyFile: path.join(dir, 'in-use', 'tls.key') };
    fs.copyFileSync(path.join(dir, 'ca.crt'), files.caFile);
    fs.copyFileSync(first.cert, files.certFile);
    fs.copyFileSync(first.key, files.keyFile);
    tls = new ClusterTls(files);
    tls.onChange((identity: TlsIdentity) => taken.push(serialOf(identity.cert)));
  });
  afterAll(() => {
    tls.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  test('an unchanged set is no change; a new pair is taken and told', () => {
    expect(tls.reload('test')).toBe(false);
    const next = signed(dir, 'ca', 'next', 'next', NAMES);
    fs.copyFileSync(next.cert, files.certFile);
    fs.copyFileSync(next.key, files.keyFile);
    expect(tls.reload('test')).toBe(true);
    expect(serialOf(tls.cert)).toBe(serialOf(fs.readFileSync(next.cert)));
    expect(taken).toEqual([serialOf(fs.readFileSync(next.cert))]);
  });

  test('a certificate without its key, or one a check refuses, is refused: the set in use is kept', () => {
    const inUse = serialOf(tls.cert);
    const half = signed(dir, 'ca', 'half', 'half', NAMES);
    fs.copyFileSync(half.cert, files.certFile);
    expect(tls.reload('test')).toBe(false);
    expect(serialOf(tls.cert)).toBe(inUse);
    fs.copyFileSync(half.key, files.keyFile);
    let checked = 0;
    tls.addCheck(() => {
      if (checked++ === 0) throw new Error('refused by a check');
    });
    expect(tls.reload('test')).toBe(false);
    expect(serialOf(tls.cert)).toBe(inUse);
    // The same files again, the check now passing: taken.
    expect(tls.reload('test')).toBe(true);
    expect(serialOf(tls.cert)).toBe(serialOf(fs.readFileSync(half.cert)));
  });

  test('a change of the files is seen by the watch, and taken once they are still', async () => {
    tls.watch();
    const watched = signed(dir, 'ca', 'watched', 'watched', NAMES);
    fs.copyFileSync(watched.cert, files.certFile);
    fs.copyFileSync(watched.key, files.keyFile);
    await eventually(() => serialOf(tls.cert) === serialOf(fs.readFileSync(watched.cert)), 10_000, 'the watched change to be taken');
  });
});
