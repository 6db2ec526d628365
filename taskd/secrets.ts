/**
 * The LLM keys the daemon holds, in its memory only: never in its environment (so no child inherits
 * them), a file, a log line or an event. `scrubEnv` is what every command the agent runs gets as its
 * environment: the daemon's own, minus anything that looks like a credential, in case a key reached
 * it some other way (an operator's `docker run -e`).
 */

export const CREDENTIAL_NAMES = ['OPENAI_API_KEY', 'ANTHROPIC_API_KEY'] as const;
export type CredentialName = (typeof CREDENTIAL_NAMES)[number];
export type Credentials = Partial<Record<CredentialName, string>>;

/** Which Pi provider each key is for. */
export const PROVIDER_OF: Readonly<Record<CredentialName, string>> = { OPENAI_API_KEY: 'openai', ANTHROPIC_API_KEY: 'anthropic' };

const SECRET_NAME = /(API_KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)/i;

export function scrubEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (SECRET_NAME.test(name) || name.startsWith('TASKD_')) continue;
    out[name] = value;
  }
  return out;
}

/** Parses a POST /credentials body: known names with non-empty string values, at least one. */
export function parseCredentials(body: unknown): Credentials {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('the body must be a JSON object of keys');
  const out: Credentials = {};
  for (const [name, value] of Object.entries(body)) {
    if (!(CREDENTIAL_NAMES as readonly string[]).includes(name)) throw new Error(`unknown credential '${name}' (known: ${CREDENTIAL_NAMES.join(', ')})`);
    if (typeof value !== 'string') throw new Error(`credential '${name}' must be a string`);
    if (value !== '') out[name as CredentialName] = value;
  }
  return out;
}
