/**
 * What the broker and the task daemon (taskd/, a program of its own that runs in task containers)
 * share of their wire. The daemon imports this file and nothing else of src/; the core imports
 * nothing of the daemon. It imports nothing itself (an eslint rule keeps it so), so the daemon's
 * build takes this one file and the broker's build is the broker alone.
 *
 * The agent events that make the coding stream: the daemon forwards only these (the rest, agent_*,
 * queue_update, ..., stay in the sandbox) and Core routes them to its coding stream.
 */
export const CODING_EVENT_TYPES: ReadonlySet<string> = new Set([
  'turn_start',
  'turn_end',
  'message_start',
  'message_update',
  'message_end',
  'tool_execution_start',
  'tool_execution_update',
  'tool_execution_end',
]);
