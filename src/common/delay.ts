/** Unref'd: a bound raced against other work must not hold the process open once that work is done. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
