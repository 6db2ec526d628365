/**
 * A lifecycle create (CreateSandboxRequest) is checked field by field against the schema the
 * document shows, with its cross-field rules beside it (src/api/lifecycle/createRequest.ts): a body
 * with several faults is refused by the first rule in their order (unknown fields, then what the
 * broker does not serve, then field by field), in the words and statuses OpenSandbox clients read;
 * null is a field not sent. The answers are those the route gives (OpenSandbox's error format).
 * @backend any
 */
import { createParser } from '../../src/api/lifecycle/lifecycleInput';
import { openSandboxErrorFormat } from '../../src/http/errorFormats';

const parse = createParser({ minSeconds: 60, maxSeconds: 3600 });

function answer(body: unknown): string {
  try {
    return `OK ${JSON.stringify(parse(body))}`;
  } catch (err) {
    const reply = openSandboxErrorFormat.reply(err, 'test');
    return `${reply.status} ${JSON.parse(reply.body).message}`;
  }
}

describe('a lifecycle create, checked by its schema and its rules', () => {
  test('is refused by the first rule it breaks, in their order', () => {
    const cases: [unknown, string][] = [
      [{ image: { uri: 'w' }, entrypoint: ['x'], colour: 1, snapshotId: 's' }, '400 unknown field(s) colour; CreateSandboxRequest has image, snapshotId, platform, timeout, resourceLimits, resourceRequests, env, metadata, entrypoint, networkPolicy, credentialProxy, secureAccess, volumes, extensions'],
      [{ snapshotId: '', volumes: [{}] }, '501 volumes: storage mounts are not served by this broker'],
      [{ volumes: [{}], secureAccess: 'yes', image: 5 }, '501 volumes: storage mounts are not served by this broker'],
      [{ secureAccess: true, image: 5 }, '501 secureAccess: signed endpoint access is not served; endpoints take the broker token (OPEN-SANDBOX-API-KEY)'],
      [{ secureAccess: null }, '400 secureAccess must be a boolean'],
      [{ extensions: 5 }, '400 extensions must be a JSON object'],
      [{ extensions: { poolRef: 'warm', 'access.renew.extend.seconds': '9' }, image: 5 }, '501 extensions.access.renew.extend.seconds: renew-on-access is not served (renew with renew-expiration)'],
      [{ snapshotId: ' ', image: 5 }, '400 snapshotId must be a snapshot id (a non-empty string, as POST /v1/sandboxes/{sandboxId}/snapshots answered it), got " "'],
      [{ snapshotId: false }, '400 snapshotId must be a snapshot id (a non-empty string, as POST /v1/sandboxes/{sandboxId}/snapshots answered it), got false'],
      [{ snapshotId: 's1', image: 5 }, "400 image and snapshotId: give exactly one (a restored sandbox runs its snapshot's image)"],
      [{ snapshotId: 's1', extensions: { poolRef: 'warm' } }, "400 snapshotId and extensions.poolRef: give one (a restored sandbox is a session of its snapshot's pool)"],
      [{ entrypoint: ['x'] }, '400 image is required: {"uri": "<image>"} (or snapshotId naming a snapshot, or extensions.poolRef naming a pool)'],
      [{ image: { uri: '', auth: {} }, entrypoint: ['x'] }, '400 image.uri must be a non-empty string'],
      [{ image: { uri: 'w', x: 1, auth: {} }, entrypoint: ['x'] }, '400 image: unknown field(s) x'],
      // image.auth is checked for its shape here; whether it names the node's own credentials is the image service's.
      [{ image: { uri: 'w', auth: { username: 1 } }, entrypoint: ['x'] }, "400 'image.auth.username' must be string"],
      [{ image: { uri: 'w' }, resourceLimits: { gpu: '1', tpu: '2' }, resourceRequests: 5 }, '400 resourceRequests must be a JSON object'],
      [{ image: { uri: 'w' }, resourceLimits: { gpu: '1', tpu: '2' }, env: 5 }, '400 resourceLimits: gpu, tpu not served (cpu and memory are)'],
      [{ image: { uri: 'w' }, env: { A: 'x', 'A-B': 'x' } }, "400 env: 'A-B' is not a valid variable name"],
      [{ image: { uri: 'w' } }, '400 entrypoint is required with image: e.g. ["tail", "-f", "/dev/null"]'],
      [{ image: { uri: 'w' }, entrypoint: [], metadata: { '': 'x' } }, '400 entrypoint must be a non-empty list of strings'],
      [{ image: { uri: 'w' }, entrypoint: ['x'], metadata: { a: 'b\u0000' } }, '400 metadata.a must be a string without NUL bytes'],
      [{ image: { uri: 'w' }, entrypoint: ['x'], resourceLimits: { cpu: 'lots' }, timeout: 5 }, '400 timeout must be an integer number of seconds between 60 and 3600 (BROKER_SANDBOX_MAX_TIMEOUT), or null for none; got 5'],
      [{ image: { uri: 'w' }, entrypoint: ['x'], resourceLimits: { cpu: 'lots' } }, `400 resourceLimits.cpu must be cores ("2", "0.5") or millicores ("500m"), got 'lots'`],
    ];
    expect(cases.map(([body]) => answer(body))).toEqual(cases.map(([, want]) => want));
  });

  test('takes null, false and empty for the fields not served as not sent, a pool or a snapshot in place of an image', () => {
    const body = { image: null, extensions: { poolRef: 'warm' }, platform: null, env: null, timeout: null, snapshotId: null, networkPolicy: {}, volumes: [] };
    expect(answer(body)).toBe('OK {"image":"","poolRef":"warm","entrypoint":["tail","-f","/dev/null"],"env":{},"metadata":{},"timeoutMs":null,"cpus":null,"memoryBytes":null}');
    expect(answer({ image: { uri: ' w ' }, entrypoint: ['x'], timeout: 60, resourceLimits: { cpu: '500m', memory: '512Mi' } })).toBe(
      'OK {"image":"w","poolRef":null,"entrypoint":["x"],"env":{},"metadata":{},"timeoutMs":60000,"cpus":0.5,"memoryBytes":536870912}',
    );
    // A restore: no image, no entrypoint (the spec's default), limits taken as sent.
    expect(answer({ snapshotId: 'snap-0123456789abcdef', resourceLimits: { cpu: '1', memory: '2Gi' } })).toBe(
      'OK {"image":"","poolRef":null,"entrypoint":["tail","-f","/dev/null"],"env":{},"metadata":{},"timeoutMs":null,"cpus":1,"memoryBytes":2147483648,"snapshotId":"snap-0123456789abcdef"}',
    );
  });
});
