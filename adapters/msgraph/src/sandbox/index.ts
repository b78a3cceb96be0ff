export {
  graphRequestKind,
  startMsGraphSandbox,
  type DuplicateTransactionBehaviour,
  type FaultScript,
  type MsGraphSandbox,
  type MsGraphSandboxOptions,
  type SandboxEvent,
  type SandboxFault,
  type SandboxKind,
  type SandboxMessage,
  type SandboxRecord,
  type SandboxRequest,
  type SandboxTask,
} from './msgraph-sandbox.js';
export { msGraphDrill, drills, msGraphDrillFaults, DRILL_TOKEN, drillMailParams, drillEventParams, drillTaskParams, type MsGraphDrill, type MsGraphDrillOperation } from './msgraph-drills.js';
