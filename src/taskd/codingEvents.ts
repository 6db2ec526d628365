/**
 * The agent events that make the coding stream: the daemon forwards only these (the rest, agent_*,
 * queue_update, ..., stay in the sandbox) and Core routes them to its coding stream. One list for
 * both sides of the wire; it has no dependencies, so the daemon's build (rootDir src/taskd) and the
 * broker both take it.
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
