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
export {
  drills,
  stripeDrill,
  stripeDrillOperations,
  stripeDrillFaults,
  startStripeDrillSandbox,
  type StripeDrill,
  type StripeDrillOperation,
} from './stripe-drills.js';
