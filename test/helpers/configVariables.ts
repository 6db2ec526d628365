/**
 * The environment variables the broker's configuration reads, found in its source (src/config): for
 * the tests that hold a page or a deployment file to the code (docs/configuration.md, deploy/k8s,
 * docker-compose.yml), so a renamed or dropped variable fails there.
 */
import fs from 'node:fs';
import path from 'node:path';

export const CONFIG_DIR = path.join(__dirname, '..', '..', 'src', 'config');

export function sourcesUnder(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourcesUnder(full);
    return entry.name.endsWith('.ts') ? [fs.readFileSync(full, 'utf8')] : [];
  });
}

/**
 * The names the configuration reads: `env.NAME`, `env['NAME']`, and the names passed to its readers
 * (`int(env, 'NAME', ...)`, aliases, the credential keys). In src/config every all-capitals string
 * literal is such a name, so all of them count.
 */
export function variablesRead(sources: string[]): Set<string> {
  const names = new Set<string>();
  for (const source of sources) {
    for (const m of source.matchAll(/\benv\.([A-Z][A-Z0-9_]*)\b/g)) names.add(m[1]);
    for (const m of source.matchAll(/'([A-Z][A-Z0-9_]+)'/g)) names.add(m[1]);
  }
  return names;
}

/** Every variable the configuration in src/config reads. */
export function configVariables(): Set<string> {
  return variablesRead(sourcesUnder(CONFIG_DIR));
}
