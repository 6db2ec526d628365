/**
 * A value in words, as a refusal quotes what was sent: `an empty body`, `null`, `an array`, `a number`.
 * One wording for the hand-written checks (core/session/sessionInput.ts) and the schema-driven ones
 * (http/schemaCheck.ts), since clients read the same 400s from both.
 */
export function describe(value: unknown): string {
  if (value === undefined) return 'an empty body';
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  return `a ${typeof value}`;
}
