// The root entry: what a user of the adapter needs. The loopback sandbox and drill are in `./sandbox`.
export { createResendAdapter, type ResendAdapter, type ResendAdapterOptions } from './resend-adapter.js';
export { resendCards } from './resend-cards.js';
export type {
  BatchSendParams,
  BatchSendResult,
  EmailFields,
  EmailsSendParams,
  EmailsSendResult,
  ResendOperationTypes,
} from './resend-types.js';
