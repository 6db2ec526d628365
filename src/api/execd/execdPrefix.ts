/**
 * Where execd's routes live on the broker's port: under one sandbox, `/sandboxes/<id>/execd`. The
 * sandbox's path parameter is named `sandboxId` in the process routes (ping, commands, sessions,
 * code) and `id` in the file and metrics routes. Both names are published in /openapi.json
 * (execdContract.ts describes each), which clients are generated from, so each family keeps its own.
 */
export type ExecdSandboxParam = 'sandboxId' | 'id';

export function execdPrefix(param: ExecdSandboxParam): string {
  return `/sandboxes/:${param}/execd`;
}
