// The root entry: what a user of the adapter needs. The loopback sandbox and drill are in `./sandbox`.
export { createMsGraphAdapter, type MsGraphAdapter, type MsGraphAdapterOptions } from './msgraph-adapter.js';
export { msGraphCards } from './msgraph-cards.js';
// For the `client` option: a Graph client with no RetryHandler in its chain.
export { createGraphClient, type GraphClientOptions, type TokenProvider } from './msgraph-client.js';
export type {
  EventResult,
  EventsCreateParams,
  MailSendParams,
  MailSendResult,
  MsGraphOperationTypes,
  TaskResult,
  TodoTasksCreateParams,
} from './msgraph-operations.js';
