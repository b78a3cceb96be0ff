export {
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
