/** How scripts/sandbox-task.ts prints the events of a task sandbox: one readable line each. */

export interface Envelope {
  cursor: number;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  event: { type: string; timestamp: number; [field: string]: any };
}

const MAX_TOOL_OUTPUT_CHARS = 400;

function clip(text: string, max: number): string {
  const flat = text.replace(/\s+$/, '');
  return flat.length > max ? `${flat.slice(0, max)}... (${flat.length - max} more characters)` : flat;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any
function textOf(content: any): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return '';
  return content
    .filter((b) => b?.type === 'text')
    .map((b) => b.text as string)
    .join('');
}

/** The line for one event, or null for events too fine to print (deltas, the user's own message echoed). */
export function describeEvent(stream: 'control' | 'coding', { cursor, event }: Envelope): string | null {
  const tag = `[${stream} #${cursor}]`;
  switch (event.type) {
    case 'sandbox_ready':
      return `${tag} sandbox ready`;
    case 'repo_cloned':
      return `${tag} repo cloned: ${event.repo}`;
    case 'repo_clone_error':
      return `${tag} CLONE FAILED: ${event.repo}: ${event.message}`;
    case 'init_complete':
      return `${tag} workspace ready${event.resumed ? ' (resumed session)' : ''}`;
    case 'prompt_queued':
      return `${tag} prompt ${event.followUp ? 'queued as a follow-up' : 'sent'}: ${clip(String(event.message), 200)}`;
    case 'daemon_error':
      return `${tag} DAEMON ERROR: ${event.message}`;
    case 'sandbox_terminated':
      return `${tag} sandbox terminated (${event.reason ?? 'no reason given'})`;
    case 'cursor_expired':
      return `${tag} note: ${event.detail}`;
    case 'turn_start':
      return `${tag} --- turn starts`;
    case 'turn_end':
      return `${tag} --- turn ends (${event.message?.stopReason ?? 'unknown'})`;
    case 'message_end': {
      if (event.message?.role !== 'assistant') return null;
      const text = textOf(event.message.content);
      const error = event.message.errorMessage ? ` [error: ${event.message.errorMessage}]` : '';
      return text || error ? `${tag} assistant: ${text}${error}` : null;
    }
    case 'tool_execution_start':
      return `${tag} tool ${event.toolName}: ${clip(JSON.stringify(event.args), 200)}`;
    case 'tool_execution_end':
      return `${tag} tool ${event.toolName} ${event.isError ? 'FAILED' : 'done'}: ${clip(textOf(event.result?.content), MAX_TOOL_OUTPUT_CHARS)}`;
    default:
      return null; // message_start/update, tool_execution_update: the ends carry the whole
  }
}

/** A turn after which the agent stops (it does not go on to run tools). */
export function endsTheRun(envelope: Envelope): boolean {
  return envelope.event.type === 'turn_end' && envelope.event.message?.stopReason !== 'toolUse';
}
