import { errorClass } from '@retrysafe/contract/provider';

/** An adapter broke its contract (e.g. a derivation threw), found before the claim: nothing was written or sent. */
export const AdapterContractError = errorClass(
  'AdapterContractError',
  'RETRYSAFE_ADAPTER_CONTRACT',
  (provider: string, operation: string, problem: string, options?: { cause?: unknown }) => ({
    provider,
    operation,
    ...options,
    message: `adapter ${provider}, operation ${operation}: ${problem}; nothing claimed, nothing sent`,
  }),
);
export type AdapterContractError = InstanceType<typeof AdapterContractError>;
