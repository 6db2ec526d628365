/**
 * The stub LLM's OpenAI side: the Responses API as OpenAI streams it (`POST /v1/responses`,
 * `stream: true`), which is what Pi's `openai` models call (pi-ai's openai-responses provider,
 * through the OpenAI SDK). Each SSE frame is `event: <type>` plus `data:` JSON carrying the same
 * `type` and a rising `sequence_number`; there is no `[DONE]`, the stream ends with
 * response.completed and the connection closing. One answer is:
 *
 *   response.created, response.in_progress
 *   per text:      output_item.added (message), content_part.added (output_text),
 *                  output_text.delta..., output_text.done, content_part.done, output_item.done
 *   per tool call: output_item.added (function_call, empty arguments),
 *                  function_call_arguments.delta..., function_call_arguments.done, output_item.done
 *   response.completed (status completed, usage)
 *
 * Pi reads the stop reason from the status and turns `completed` with a function call into toolUse.
 */
import type http from 'node:http';
import type { StubReply } from './stubReply';

/** The items of a request's `input` the tests look at (Pi also sends system/developer and assistant items). */
export interface ResponsesInputItem {
  type?: string;
  role?: string;
  content?: string | Array<{ type: string; text?: string }>;
  /** A function_call_output's result, and its call's id. */
  output?: string | Array<{ type: string; text?: string }>;
  call_id?: string;
}

export async function streamOpenaiResponse(res: http.ServerResponse, model: string, reply: StubReply, serial: number): Promise<void> {
  res.writeHead(200, { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache', 'x-request-id': `req_${serial}` });
  let sequence = 0;
  const send = (type: string, data: object): void => {
    if (!res.writableEnded && !res.destroyed) res.write(`event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...data })}\n\n`);
  };
  const response = { id: `resp_${serial}`, object: 'response', created_at: Math.floor(Date.now() / 1000), model, output: [] as object[], tools: [], store: false };
  send('response.created', { response: { ...response, status: 'in_progress' } });
  send('response.in_progress', { response: { ...response, status: 'in_progress' } });
  const output: object[] = [];
  const text = reply.text ?? [];
  if (text.length > 0 || reply.hold) {
    const item = { id: `msg_${serial}`, type: 'message', role: 'assistant' };
    const at = { item_id: item.id, output_index: output.length, content_index: 0 };
    send('response.output_item.added', { output_index: at.output_index, item: { ...item, status: 'in_progress', content: [] } });
    send('response.content_part.added', { ...at, part: { type: 'output_text', text: '', annotations: [] } });
    const [first, ...rest] = text.length > 0 ? text : [''];
    send('response.output_text.delta', { ...at, delta: first, logprobs: [] });
    if (reply.hold) await reply.hold;
    for (const piece of rest) {
      if (reply.chunkDelayMs) await new Promise((r) => setTimeout(r, reply.chunkDelayMs));
      send('response.output_text.delta', { ...at, delta: piece, logprobs: [] });
    }
    const part = { type: 'output_text', text: text.join(''), annotations: [] };
    send('response.output_text.done', { ...at, text: part.text, logprobs: [] });
    send('response.content_part.done', { ...at, part });
    const done = { ...item, status: 'completed', content: [part] };
    send('response.output_item.done', { output_index: at.output_index, item: done });
    output.push(done);
  }
  for (const call of reply.toolCalls ?? []) {
    const item = { id: `fc_${serial}_${output.length}`, type: 'function_call', call_id: `call_${serial}_${output.length}`, name: call.name };
    const at = { item_id: item.id, output_index: output.length };
    send('response.output_item.added', { output_index: at.output_index, item: { ...item, status: 'in_progress', arguments: '' } });
    // The arguments arrive in pieces, as a real model streams them (Pi parses the partial JSON as it goes).
    const args = JSON.stringify(call.input);
    const third = Math.ceil(args.length / 3);
    for (let from = 0; from < args.length; from += third) send('response.function_call_arguments.delta', { ...at, delta: args.slice(from, from + third) });
    send('response.function_call_arguments.done', { ...at, arguments: args });
    const done = { ...item, status: 'completed', arguments: args };
    send('response.output_item.done', { output_index: at.output_index, item: done });
    output.push(done);
  }
  const usage = { input_tokens: 10, input_tokens_details: { cached_tokens: 0 }, output_tokens: 20, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: 30 };
  send('response.completed', { response: { ...response, status: 'completed', output, usage } });
  res.end();
}

/** The text of the last user message or tool result of a Responses request's input. */
export function lastResponsesInputText(input: ResponsesInputItem[]): string {
  const last = [...input].reverse().find((item) => item.type === 'function_call_output' || (item.role === 'user' && item.type !== 'function_call'));
  const content = last?.type === 'function_call_output' ? last.output : last?.content;
  if (content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.map((part) => part.text ?? '').join('\n');
}
