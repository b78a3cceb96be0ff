import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv';
import type { AgentToolResult } from '@retrysafe/core/agent';
import { ANSWER_PROPERTIES, reply } from '../server.js';
import { answerValue } from './fence-adapter.js';

type Schema = { readonly [k: string]: unknown };

/** The fence's own answer (a lookup's item, or a call that did not end `done`): `retrysafe` status, `result` value. */
const FENCE_ANSWER_SCHEMA = {
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

// The validator the official SDK client uses; Ajv caches what it compiled by schema object.
const validator = new AjvJsonSchemaValidator();

// `done` whose answer fits the upstream's outputSchema (if any): that answer unchanged; other `done`: the fence's
// answer with the value under `result`; any other status: the fence's answer as an error result.
export function fencedReply(r: AgentToolResult, schema: Schema | undefined) {
  const retrysafe = {
    status: r.status,
    businessOperationId: r.businessOperationId,
    ...(r.status === 'done' ? { adopted: r.adopted } : {}),
  };
  const _meta = { retrysafe };
  if (r.status !== 'done') return { ...reply({ retrysafe: r }), isError: true, _meta };
  const stored = (r.result ?? {}) as { content?: { type: string; text?: string }[]; structuredContent?: unknown };
  const value = stored.structuredContent;
  if (!schema || (value !== undefined && validator.getValidator(schema as never)(value).valid))
    return { content: stored.content ?? [], ...(value !== undefined ? { structuredContent: value } : {}), _meta };
  const answer = {
    retrysafe: { ...retrysafe, providerRef: r.providerRef, message: r.message },
    result: answerValue(stored),
  };
  return { ...reply(answer), _meta };
}
