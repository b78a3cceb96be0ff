export { drills, resendDrill } from './resend-drills.js';
export {
  RESEND_RETENTION_MS,
  type ResendOperationName,
  type ResendSandbox,
  type ResendSandboxOptions,
  type SandboxFault,
  type SandboxRequest,
  type SentEmail,
  startResendSandbox,
} from './resend-sandbox.js';
