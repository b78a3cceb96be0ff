import type { BusinessOperationId, FrameOperation, JsonSchema } from '@retrysafe/contract';
import { postMessageCard, updateCard } from './slack-cards.js';

/** The metadata `event_type` that tags a message with the business-operation id. */
export const DEFAULT_EVENT_TYPE = 'retrysafe_operation';

export interface PostMessageParams {
  readonly channel: string;
  readonly text: string;
  readonly blocks?: readonly Record<string, unknown>[];
  readonly mrkdwn?: boolean;
  readonly unfurl_links?: boolean;
  readonly unfurl_media?: boolean;
}

export interface UpdateParams {
  readonly channel: string;
  readonly ts: string;
  readonly text: string;
  readonly blocks?: readonly Record<string, unknown>[];
}

/** A posted or updated message: its conversation and timestamp (Slack's message id). */
export interface MessageResult {
  readonly channel: string;
  readonly ts: string;
}

/** Each operation's params and what a `done` result holds (runner.run checks a call against them). */
export type SlackOperationTypes = {
  readonly 'chat.postMessage': { readonly params: PostMessageParams; readonly result: MessageResult };
  readonly 'chat.update': { readonly params: UpdateParams; readonly result: MessageResult };
};

/** The metadata that carries the business-operation id on a posted message. */
export interface OperationMetadata {
  readonly event_type: string;
  readonly event_payload: { readonly op: string };
}

/** An operation as the adapter runs it: the frame's declaration plus the SDK method it calls. */
export interface SlackOperation extends FrameOperation {
  readonly method: 'chat.postMessage' | 'chat.update';
  /** The SDK arguments: params as given, plus the tag for a lookup when the operation has one. */
  args(params: Record<string, unknown>, id: BusinessOperationId, eventType: string): Record<string, unknown>;
}

// An id, not a #name: the lookup reads conversations.history, which takes ids only.
const channel: JsonSchema = {
  type: 'string',
  pattern: '^[CDG][A-Z0-9]{2,}$',
  description: 'Conversation id (C…, G… or D…), e.g. C0123456789',
};
// Slack posts a longer text cut short, or split into several messages:
// https://api.slack.com/changelog/2018-04-truncating-really-long-messages
const text: JsonSchema = {
  type: 'string',
  minLength: 1,
  maxLength: 40_000,
  description: 'Message text (also the notification fallback when blocks are given)',
};
const blocks: JsonSchema = { type: 'array', items: { type: 'object' }, description: 'Block Kit blocks' };
// A post's blocks are in its intent, so [] would be another id than none: refused rather than read as either. An update
// takes [] (it removes the message's blocks).
const postBlocks: JsonSchema = { ...blocks, minItems: 1 };
// The one spelling Slack writes (its OpenAPI description's defs_ts): the id digests ts as written, so another spelling
// of the message would be another operation.
const ts: JsonSchema = {
  type: 'string',
  pattern: '^[0-9]{10}\\.[0-9]{6}$',
  description: 'Timestamp of the message to update',
};

export function operationMetadata(id: BusinessOperationId, eventType: string): OperationMetadata {
  return { event_type: eventType, event_payload: { op: id } };
}

export const postMessage: SlackOperation = {
  name: 'chat.postMessage',
  method: 'chat.postMessage',
  description:
    'Post a message to a Slack conversation (tagged with the business-operation id in its metadata, so a lost answer is found in the history, never re-posted).',
  card: postMessageCard,
  sensitiveFields: ['text', 'blocks'],
  keyRule: null,
  paramsSchema: {
    type: 'object',
    required: ['channel', 'text'],
    additionalProperties: false,
    properties: {
      channel,
      text,
      blocks: postBlocks,
      mrkdwn: { type: 'boolean' },
      unfurl_links: { type: 'boolean' },
      unfurl_media: { type: 'boolean' },
    },
  },
  args: (params, id, eventType) => ({ ...params, metadata: operationMetadata(id, eventType) }),
};

export const update: SlackOperation = {
  name: 'chat.update',
  method: 'chat.update',
  description:
    "Set a Slack message's text, and its blocks when given (without blocks Slack keeps the message's blocks; [] removes them). Idempotent: the same content set twice is one edit.",
  card: updateCard,
  sensitiveFields: ['text', 'blocks'],
  keyRule: null,
  paramsSchema: {
    type: 'object',
    required: ['channel', 'ts', 'text'],
    additionalProperties: false,
    properties: { channel, ts, text, blocks },
  },
  args: (params) => ({ ...params }),
};

export const slackOperations = { 'chat.postMessage': postMessage, 'chat.update': update } as const;

/** Slack's `oldest` argument: seconds with six decimals, never before the epoch. */
export function slackTs(epochMs: number): string {
  return (Math.max(0, epochMs) / 1000).toFixed(6);
}
