export type {
  AwaitResolutionOptions,
  DbosMessageSender,
  DbosOperationOutcome,
  DbosResolutionMessage,
  DbosRetrysafe,
  DbosRetrysafeOptions,
  DbosRunInput,
  DbosStepOptions,
} from './dbos-retrysafe.js';
export {
  createDbosRetrysafe,
  handoffEventKey,
  resolutionTopic,
  runIdForWorkflow,
  sendResolution,
} from './dbos-retrysafe.js';
export type { DbosStepConfigurationProblem } from './errors/dbos-step-configuration-error.js';
export { DbosStepConfigurationError } from './errors/dbos-step-configuration-error.js';
