/**
 * Files a sandbox-group test hands the broker: tools, a population YAML and its embeddings file, in
 * a directory of the test's own (removed by the caller).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

export interface GroupFixtures {
  dir: string;
  wordCountTool: string;
  echoArgsTool: string;
  population: string;
  remove(): void;
}

/** Three documents in `default` (one embedding from the file), one in `other`. */
const POPULATION_YAML = `namespaces:
  default:
    documents:
      - {id: apple, text: "apples are red", metadata: {kind: fruit}, embedding: [1.0, 0.0, 0.0]}
      - {id: sky, text: "the sky is blue", metadata: {kind: sky}, embedding: [0.0, 1.0, 0.0]}
      - {id: grass, text: "grass is green", metadata: {kind: plant}}
    embeddings_file: default.embeddings.jsonl
  other:
    documents:
      - {id: secret, text: "only for other", embedding: [0.5, 0.5, 0.0]}
`;

export function makeGroupFixtures(name: string): GroupFixtures {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `${name}-`));
  const write = (file: string, text: string): string => {
    fs.writeFileSync(path.join(dir, file), text);
    return path.join(dir, file);
  };
  write('default.embeddings.jsonl', '{"id": "grass", "embedding": [0.0, 0.0, 1.0]}\n');
  return {
    dir,
    wordCountTool: write('word_count.py', 'def word_count(text, upper=False):\n    words = text.split()\n    print("counting", file=__import__("sys").stderr)\n    return {"words": len(words), "first": words[0].upper() if upper else words[0]}\n'),
    echoArgsTool: write('echo_args.py', 'import json\n\ndef echo_args(**kwargs):\n    return "args=" + json.dumps(kwargs, sort_keys=True)\n'),
    population: write('population.yml', POPULATION_YAML),
    remove: () => fs.rmSync(dir, { recursive: true, force: true }),
  };
}

/** Where the group keeps its databases, disks, sockets and tools: under the fixtures' directory. */
export function groupDirOf(fx: GroupFixtures): string {
  return path.join(fx.dir, 'groups');
}

/**
 * A broker's settings for a sandbox-group suite on Docker: one pool slot (the suites use the group,
 * not the pool), the sandbox image, 21 sandbox ports from a random start (so that suites and a
 * previous run's lingering sockets never collide), and the group's directory under the fixtures.
 * `extra` adds or overrides settings (a token, the action wait).
 */
export function groupBrokerEnv(fx: GroupFixtures, deployment: string, extra: Record<string, string> = {}): Record<string, string> {
  const firstPort = 20_000 + Math.floor(Math.random() * 40_000);
  return {
    BROKER_CONTAINERS: '1',
    BROKER_SESSIONS_PER_CONTAINER: '1',
    BROKER_DEPLOYMENT: deployment,
    BROKER_SANDBOX_IMAGE: 'bash-broker-sandbox:latest',
    BROKER_SANDBOX_PORTS: `${firstPort}-${firstPort + 20}`,
    BROKER_GROUP_DIR: groupDirOf(fx),
    ...extra,
  };
}
