/** Polls `probe` until it returns true or `timeoutMs` passes (generous bounds: CI is noisy). */
export async function eventually(
  probe: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
  what: string | (() => string) = 'condition',
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await probe()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${typeof what === 'function' ? what() : what}`);
}
