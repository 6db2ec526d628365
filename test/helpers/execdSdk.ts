/**
 * OpenSandbox's TypeScript SDK, unchanged, at execd level: its own client and adapters pointed at a
 * sandbox's execd base URL under the test broker (`/sandboxes/<id>/execd`), as its Sandbox class
 * builds them once it knows an endpoint. The package is ESM with a CommonJS build behind its
 * `exports`; the types are read from the ESM build's declarations (this repo's TypeScript resolves
 * without `exports`).
 */
type Internal = typeof import('@alibaba-group/opensandbox/dist/internal');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const sdk = require('@alibaba-group/opensandbox/internal') as Internal;

export type SdkFiles = InstanceType<Internal['FilesystemAdapter']>;
export type SdkMetrics = InstanceType<Internal['MetricsAdapter']>;

export function execdBaseUrl(brokerUrl: string, sandboxId: string): string {
  return `${brokerUrl}/sandboxes/${encodeURIComponent(sandboxId)}/execd`;
}

export function sdkExecd(brokerUrl: string, sandboxId: string, headers: Record<string, string> = {}): { files: SdkFiles; metrics: SdkMetrics } {
  const baseUrl = execdBaseUrl(brokerUrl, sandboxId);
  const client = sdk.createExecdClient({ baseUrl, headers });
  return { files: new sdk.FilesystemAdapter(client, { baseUrl, headers }), metrics: new sdk.MetricsAdapter(client) };
}
