/** What the stub LLM (stubLlm.ts) answers a turn with, on either of its APIs. */
export interface StubToolCall {
  name: string;
  input: Record<string, unknown>;
}

export interface StubReply {
  /** Text chunks, streamed one text_delta each. */
  text?: string[];
  toolCalls?: StubToolCall[];
  /** Held between the first text chunk and the rest (a turn still streaming). */
  hold?: Promise<void>;
  /** A pause before each text chunk after the first (a paced stream, as a real model's). */
  chunkDelayMs?: number;
}
