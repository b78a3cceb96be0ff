export { SANDBOX_SIGNED_IN_USER, type SandboxUser } from './msgraph-directory.js';
export {
  DRILL_TOKEN,
  drillEventParams,
  drillMailParams,
  drills,
  drillTaskParams,
  type MsGraphDrill,
  type MsGraphDrillOperation,
  msGraphDrill,
  msGraphDrillFaults,
} from './msgraph-drills.js';
export {
  type DuplicateTransactionBehaviour,
  type FaultScript,
  graphRequestKind,
  type MsGraphSandbox,
  type MsGraphSandboxOptions,
  type SandboxEvent,
  type SandboxFault,
  type SandboxKind,
  type SandboxMessage,
  type SandboxRecord,
  type SandboxRequest,
  type SandboxTask,
  startMsGraphSandbox,
} from './msgraph-sandbox.js';
