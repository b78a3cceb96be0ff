export { parseSearchQuery, SearchQueryError } from './search-query.js';
export {
  drills,
  type StripeDrill,
  type StripeDrillOperation,
  startStripeDrillSandbox,
  stripeDrill,
  stripeDrillFaults,
  stripeDrillOperations,
} from './stripe-drills.js';
export {
  type SandboxFault,
  type SandboxRecord,
  type SandboxRequest,
  type SandboxRequestResult,
  type StripeRecordKind,
  type StripeSandbox,
  type StripeSandboxOptions,
  startStripeSandbox,
} from './stripe-sandbox.js';
