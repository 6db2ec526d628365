/**
 * What the deployment files (deploy/k8s, docker-compose.yml, containers/monitoring) are checked
 * against: the images the project builds, and promtool over a Prometheus configuration whose token
 * files are not on this machine.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import YAML from 'yaml';

export const REPO = path.join(__dirname, '..', '..');

/**
 * The tags the project builds: scripts/docker-images.sh's (`test) tag=bash-broker-test:latest ;;` and
 * so on), and those of docker-compose.yml's services that have a Dockerfile to build.
 */
export function builtImages(): Set<string> {
  const script = fs.readFileSync(path.join(REPO, 'scripts', 'docker-images.sh'), 'utf8');
  const tags = new Set([...script.matchAll(/\btag=([a-z0-9][\w.:/-]*[\w])/g)].map((m) => m[1]).filter((t) => t.includes(':')));
  // NODE_TAG is the one spelled through a variable.
  const nodeTag = /^NODE_TAG=(\S+)$/m.exec(script)?.[1];
  if (nodeTag) tags.add(nodeTag);
  const compose = YAML.parse(fs.readFileSync(path.join(REPO, 'docker-compose.yml'), 'utf8'), { merge: true }) as { services: Record<string, { build?: unknown; image?: string }> };
  for (const service of Object.values(compose.services)) if (service.build && service.image) tags.add(service.image);
  return tags;
}

export function commandExists(command: string): boolean {
  return spawnSync('sh', ['-c', `command -v ${command}`]).status === 0;
}

interface WithCredentials {
  authorization?: { credentials_file?: string };
  tls_config?: { ca_file?: string; cert_file?: string; key_file?: string };
  http_sd_configs?: WithCredentials[];
}

/** Every credentials_file a Prometheus configuration names (scrape jobs and their http_sd). */
export function credentialsFiles(config: { scrape_configs?: WithCredentials[] }): string[] {
  const of = (c: WithCredentials): string[] => [c.authorization?.credentials_file ?? [], ...(c.http_sd_configs ?? []).flatMap(of)].flat();
  return (config.scrape_configs ?? []).flatMap(of);
}

/**
 * `promtool check config` over `text`, its token and TLS files (which live on the Prometheus host,
 * not here) replaced by empty files of a temporary directory, its rule files resolved from `ruleDir`.
 */
export function promtoolCheckConfig(text: string, ruleDir?: string): { status: number | null; output: string } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'bash-broker-promtool-'));
  try {
    const config = YAML.parse(text);
    const replace = (c: WithCredentials): void => {
      if (c.authorization?.credentials_file) {
        const file = path.join(dir, path.basename(c.authorization.credentials_file));
        fs.writeFileSync(file, 'token\n');
        c.authorization.credentials_file = file;
      }
      (c.http_sd_configs ?? []).forEach(replace);
      for (const key of ['ca_file', 'cert_file', 'key_file'] as const) {
        const named = c.tls_config?.[key];
        if (named === undefined) continue;
        const file = path.join(dir, `${key}-${path.basename(named)}`);
        fs.writeFileSync(file, '');
        c.tls_config![key] = file;
      }
    };
    (config.scrape_configs ?? []).forEach(replace);
    if (ruleDir && config.rule_files) config.rule_files = config.rule_files.map((f: string) => path.resolve(ruleDir, f));
    const file = path.join(dir, 'prometheus.yml');
    fs.writeFileSync(file, YAML.stringify(config));
    const r = spawnSync('promtool', ['check', 'config', file], { encoding: 'utf8', timeout: 60_000 });
    return { status: r.status, output: `${r.stdout}${r.stderr}` };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
