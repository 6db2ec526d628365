/**
 * The daemon holds no LLM key. Its model calls go through Core's relay, which attaches the keys; what
 * the daemon holds instead is its sandbox's capability (POST /credentials), a token only that relay
 * takes, which Pi sends where a key would go (`x-api-key`, `Authorization: Bearer`). The agent's
 * commands can read it (they run as root beside the daemon): it is worth a model call through this
 * sandbox's relay, which they can make anyway, and nothing once the sandbox is gone.
 *
 * `scrubEnv` is what every command the agent runs gets as its environment: the daemon's own, minus
 * anything that looks like a credential, in case one reached it some other way (an operator's
 * `docker run -e`).
 */

/** The Pi providers whose calls the relay carries: each is handed the capability as its key. */
export const RELAYED_PROVIDERS = ['anthropic', 'openai'] as const;

const SECRET_NAME = /(API_KEY|TOKEN|SECRET|PASSWORD|CREDENTIAL)/i;

export function scrubEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = {};
  for (const [name, value] of Object.entries(env)) {
    if (SECRET_NAME.test(name) || name.startsWith('TASKD_')) continue;
    out[name] = value;
  }
  return out;
}

/** Parses a POST /credentials body: `{"capability": "<non-empty string>"}` and nothing else. */
export function parseCapability(body: unknown): string {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new Error('the body must be a JSON object {"capability"}');
  const { capability, ...rest } = body as Record<string, unknown>;
  const extra = Object.keys(rest);
  if (extra.length > 0) throw new Error(`unknown field '${extra[0]}' (the daemon takes only a capability, never a key)`);
  if (typeof capability !== 'string' || capability === '') throw new Error("'capability' must be a non-empty string");
  return capability;
}
