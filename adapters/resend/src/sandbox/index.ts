export {
  startResendSandbox,
  RESEND_RETENTION_MS,
  type ResendSandbox,
  type ResendSandboxOptions,
  type ResendOperationName,
  type SentEmail,
  type SandboxRequest,
  type SandboxFault,
} from './resend-sandbox.js';
export { drills, resendDrill, resendDrillOperations, resendDrillFaults, startResendDrillSandbox, type ResendDrill, type ResendDrillOperation } from './resend-drills.js';
