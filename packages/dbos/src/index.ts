export { createDbosRetrysafe, sendResolution, resolutionTopic, handoffEventKey, runIdForWorkflow, attemptIdsForStep } from './dbos-retrysafe.js';
export type { DbosRetrysafe, DbosRetrysafeOptions, DbosOperationOutcome, DbosRunInput, DbosStepOptions, AwaitResolutionOptions, DbosMessageSender, DbosResolutionMessage } from './dbos-retrysafe.js';
export { DbosStepConfigurationError } from './errors/dbos-step-configuration-error.js';
export type { DbosStepConfigurationProblem } from './errors/dbos-step-configuration-error.js';
