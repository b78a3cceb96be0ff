export { createMsGraphAdapter, type MsGraphAdapter, type MsGraphAdapterOptions } from './msgraph-adapter.js';
export {
  BearerAuthMiddleware,
  TransportProbe,
  assertNoSdkRetries,
  createGraphClient,
  middlewareChain,
  type GraphClientOptions,
  type TokenProvider,
} from './msgraph-client.js';
export { SOURCES, eventsCreateCard, mailSendCard, msGraphCards, todoTasksCreateCard } from './msgraph-cards.js';
export {
  cannotTellFromAnswer,
  cannotTellFromNetworkError,
  outcomeFromErrorAnswer,
  outcomeFromNetworkError,
  outcomeFromTokenError,
  parseRetryAfter,
  scrubMessage,
  refsOf,
  type ClassifyOptions,
  type GraphHttpAnswer,
} from './msgraph-errors.js';
export {
  DEFAULT_APPLICATION_NAME,
  DEFAULT_EXTENDED_PROPERTY_ID,
  TRANSACTION_ID_RULE,
  eventsCreate,
  mailSend,
  msGraphOperations,
  odataString,
  todoTasksCreate,
  type BuildContext,
  type EventResult,
  type EventsCreateParams,
  type GraphOperation,
  type MsGraphOperationTypes,
  type GraphPost,
  type GraphQuery,
  type MailSendParams,
  type MailSendResult,
  type TaskResult,
  type TodoTasksCreateParams,
} from './msgraph-operations.js';
