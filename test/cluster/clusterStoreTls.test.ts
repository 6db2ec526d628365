/**
 * The store is reached over mutual TLS (every test cluster's is, test/helpers/cluster.ts): nodes and
 * gateways present a client certificate of the cluster's CA, and the store refuses anyone without
 * one, or with a certificate of another CA. A node started with a stranger's certificate fails to
 * start and says why, and takes no acquire; the cluster goes on.
 *
 * TLS to the store is the same whatever the nodes run:
 * @backend any
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { useTestCluster, nodeOf } from '../helpers/cluster';

const run = promisify(execFile);
const cluster = useTestCluster(['n1'], 1);

/** etcdctl against the cluster's store with `tls` in place of the members' certificate: its exit code and output. */
async function etcdctlWith(tls: string[]): Promise<{ code: number; output: string }> {
  const args = ['--endpoints', cluster.etcd.endpoint, ...tls, '--dial-timeout', '3s', '--command-timeout', '5s', 'get', '--prefix', cluster.prefix, '--keys-only'];
  try {
    const { stdout, stderr } = await run('etcdctl', args, { env: { ...process.env, ETCDCTL_API: '3' } });
    return { code: 0, output: stdout + stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, output: `${e.stdout ?? ''}${e.stderr ?? ''}` };
  }
}

describe('the cluster store over mutual TLS', () => {
  it('members reach it with their certificate: the node is listed and an acquire through the gateway works', async () => {
    expect(cluster.etcd.endpoint).toMatch(/^https:\/\//);
    expect(cluster.registrations()).toEqual([`${cluster.prefix}nodes/n1`]);
    const acquired = await cluster.call(cluster.gateways[0], 'POST', '/session/acquire', {});
    expect(acquired.status).toBe(200);
    expect(nodeOf(acquired.json.session_id)).toBe('n1');
    expect((await cluster.call(cluster.gateways[0], 'POST', `/session/${acquired.json.session_id}/release`)).status).toBe(200);
  });

  it('refuses a client without a certificate, and one whose certificate another CA signed', async () => {
    const pki = cluster.etcd.pki!;
    const none = await etcdctlWith(['--cacert', pki.ca]);
    expect(none.code).not.toBe(0);
    const stranger = await etcdctlWith(['--cacert', pki.ca, '--cert', pki.strangerCert, '--key', pki.strangerKey]);
    expect(stranger.code).not.toBe(0);
    const member = await etcdctlWith(['--cacert', pki.ca, '--cert', pki.clientCert, '--key', pki.clientKey]);
    expect([member.code, member.output.trim()]).toEqual([0, `${cluster.prefix}nodes/n1`]);
  });

  it("a node with a stranger's certificate fails to start, says why, and takes no acquire", async () => {
    const pki = cluster.etcd.pki!;
    const started = cluster.startNodeWith('intruder', { BROKER_ETCD_CERT: pki.strangerCert, BROKER_ETCD_KEY: pki.strangerKey });
    await expect(started).rejects.toThrow(/exited before listening[\s\S]*node intruder could not register in the cluster store \(https:\/\/127\.0\.0\.1:\d+\): .*bad certificate/);
    for (let i = 0; i < 4; i++) {
      const acquired = await cluster.call(cluster.gateways[0], 'POST', '/session/acquire', {});
      expect(acquired.status).toBe(200);
      expect(nodeOf(acquired.json.session_id)).toBe('n1');
      await cluster.call(cluster.gateways[0], 'POST', `/session/${acquired.json.session_id}/release`);
    }
    expect((await cluster.health(cluster.gateways[0])).nodes.map((n) => n.node_id)).toEqual(['n1']);
    expect(cluster.registrations()).toEqual([`${cluster.prefix}nodes/n1`]);
  });
});
