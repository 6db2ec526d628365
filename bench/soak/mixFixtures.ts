/**
 * What the sized mix's group sandboxes and tasks need besides the broker: a stub model (the one part
 * of the outside world a soak cannot reach), a bare repo the tasks clone, the groups' files on the
 * host, the tasks' socket directory, and a port range of the run's own for the group sandboxes' APIs.
 * The stub answers a task's prompt with a `bash` tool call reading the README, then with a text that
 * names the prompt's token, so a task episode checks the whole turn: model, tool, model.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { StubLlm, endsWithToolResult } from '../../devtools/stubLlm';
import { makeBareRepo } from '../../devtools/taskStreams';

export const TASK_REPO = 'acme/demo-repo';
export const TASK_README = 'This is demo-repo: it prints the answer 42.\n';
/** The key the broker holds for the stub (never sent to a real provider). */
const STUB_KEY = 'sk-ant-soak-stub-key';
/** Ports for group sandboxes: more than run at once at the overload (a sandbox takes one until it stops). */
const SANDBOX_PORTS = 200;

export interface MixFixtures {
  env: Record<string, string>;
  /** The groups' files on the host: nothing may stay mounted under it once the run ends. */
  groupDir: string;
  close(): Promise<void>;
}

export async function mixFixtures(taskImage: string, sandboxImage: string): Promise<MixFixtures> {
  const stub = new StubLlm();
  stub.reply = (req) => {
    // The prompt is the conversation's first user message; after the tool call the last one is its result.
    const token = /soak task (\w+):/.exec(JSON.stringify(req.body.messages ?? req.body.input ?? []))?.[1] ?? '?';
    if (endsWithToolResult(req)) return { text: ['Done ', token] };
    return { text: ['Reading it.'], toolCalls: [{ name: 'bash', input: { command: 'cat README.md' } }] };
  };
  await stub.start();
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'bash-broker-soak-'));
  const gitDir = path.join(root, 'git');
  const groupDir = path.join(root, 'groups');
  const socketDir = path.join(root, 'sockets');
  fs.mkdirSync(groupDir);
  makeBareRepo(gitDir, TASK_REPO, { 'README.md': TASK_README });
  const firstPort = 20_000 + Math.floor(Math.random() * 40_000);
  // The stub keeps every request it answered: a soak's thousands of turns are dropped as they come.
  const trim = setInterval(() => stub.requests.splice(0), 10_000);
  return {
    groupDir,
    env: {
      BROKER_SANDBOX_IMAGE: sandboxImage,
      BROKER_SANDBOX_PORTS: `${firstPort}-${firstPort + SANDBOX_PORTS - 1}`,
      BROKER_GROUP_DIR: groupDir,
      BROKER_TASK_IMAGE: taskImage,
      BROKER_GIT_BASE_URL: gitDir,
      BROKER_ANTHROPIC_BASE_URL: stub.url,
      BROKER_TASK_SOCKET_DIR: socketDir,
      BROKER_TASK_MODEL: 'anthropic/claude-sonnet-4-5',
      ANTHROPIC_API_KEY: STUB_KEY,
    },
    async close() {
      clearInterval(trim);
      await stub.close();
      fs.rmSync(root, { recursive: true, force: true });
    },
  };
}
