// The root entry: what a user of the adapter needs. The loopback sandbox and drill are in `./sandbox`.
export { createSlackAdapter, createSlackClient, type SlackAdapter, type SlackAdapterOptions } from './slack-adapter.js';
export { slackCards } from './slack-cards.js';
export type { MessageResult, PostMessageParams, SlackOperationTypes, UpdateParams } from './slack-operations.js';
