export {
  startStripeSandbox,
  type StripeSandbox,
  type StripeSandboxOptions,
  type StripeRecordKind,
  type SandboxRecord,
  type SandboxRequest,
  type SandboxRequestResult,
  type SandboxFault,
} from './stripe-sandbox.js';
export { parseSearchQuery, SearchQueryError } from './search-query.js';
