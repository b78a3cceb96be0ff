import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { AgentToolResult } from '@retrysafe/core/agent';
import { ANSWER_PROPERTIES } from '../server.js';
import { answerValue } from './fence-adapter.js';

type Schema = { readonly [k: string]: unknown };

/** The fence's own answer (a lookup's item, or a call that did not end `done`): `retrysafe` status, `result` value. */
export const FENCE_ANSWER_SCHEMA = {
  type: 'object',
  properties: {
    retrysafe: {
      type: 'object',
      properties: ANSWER_PROPERTIES,
      required: ['status', 'message'],
    },
    result: {},
  },
  required: ['retrysafe'],
} as const;

/** The upstream's outputSchema or the fence's answer; `$defs` and `$schema` stay at the root so `#/…` refs resolve. */
export function fencedOutputSchema(upstream: Schema): Schema {
  const { $schema, $defs, definitions, ...own } = upstream;
  return {
    ...($schema !== undefined ? { $schema } : {}),
    type: 'object',
    anyOf: [own, FENCE_ANSWER_SCHEMA],
    ...($defs !== undefined ? { $defs } : {}),
    ...(definitions !== undefined ? { definitions } : {}),
  };
}

/** Checks a value against an upstream outputSchema with the validator the official SDK client uses; compiled once per schema. */
export function outputChecker(): (schema: Schema, value: unknown) => boolean {
  const validator = new AjvJsonSchemaValidator();
  const compiled = new WeakMap<Schema, (v: unknown) => boolean>();
  return (schema, value) => {
    let check = compiled.get(schema);
    if (!check) {
      const v = validator.getValidator(schema as never);
      check = (x) => v(x).valid;
      compiled.set(schema, check);
    }
    return check(value);
  };
}

// `done` with an answer that `fits`: that answer unchanged; other `done`: the fence's answer with the value under
// `result`; any other status: the fence's answer as an error result.
export function fencedReply(r: AgentToolResult, fits: (value: unknown) => boolean) {
  const retrysafe = {
    status: r.status,
    businessOperationId: r.businessOperationId,
    ...(r.status === 'done' ? { adopted: r.adopted } : {}),
  };
  const _meta = { retrysafe };
  if (r.status !== 'done')
    return {
      content: [{ type: 'text' as const, text: JSON.stringify(r, null, 2) }],
      structuredContent: { retrysafe: r },
      isError: true,
      _meta,
    };
  const stored = (r.result ?? {}) as { content?: { type: string; text?: string }[]; structuredContent?: unknown };
  const content = stored.content ?? [];
  if (fits(stored.structuredContent))
    return {
      content,
      ...(stored.structuredContent !== undefined ? { structuredContent: stored.structuredContent } : {}),
      _meta,
    };
  const answer = {
    retrysafe: { ...retrysafe, providerRef: r.providerRef, message: r.message },
    result: answerValue(stored),
  };
  return {
    content: [{ type: 'text' as const, text: JSON.stringify(answer, null, 2) }],
    structuredContent: answer,
    _meta,
  };
}
