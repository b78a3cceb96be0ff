import type { DrillFault, DrillOperation, DrillSetup } from '@retrysafe/contract';
import { createResendAdapter } from '../resend-adapter.js';
import { startResendSandbox } from './resend-sandbox.js';

/** The drill setup: `runConformance` and `retrysafe drill --adapter resend` run what this file exports. */
export type ResendDrill = DrillSetup;
export type ResendDrillOperation = DrillOperation;
type StatusFault = Extract<DrillFault, { kind: 'status' }>;

const resendError = (statusCode: number, name: string, message: string, retryAfterS?: number): StatusFault => ({
  kind: 'status',
  status: statusCode,
  body: { statusCode, name, message },
  ...(retryAfterS ? { retryAfterS } : {}),
});

/** Resend's wire format for the four answers the drill needs (https://resend.com/docs/api-reference/errors). */
export const resendDrillFaults: ResendDrillOperation['faults'] = {
  permanent: resendError(422, 'validation_error', 'Invalid `to` field (drill).'),
  transient: resendError(429, 'rate_limit_exceeded', 'Too many requests (drill).'),
  rateLimited: resendError(429, 'rate_limit_exceeded', 'Too many requests (drill).', 2),
  inProgress: resendError(
    409,
    'concurrent_idempotent_requests',
    'Same idempotency key used while original request is still in progress (drill).',
  ),
};

const change = (field: string) => (p: unknown) => ({
  ...(p as Record<string, unknown>),
  [field]: `${String((p as Record<string, unknown>)[field])}-changed`,
});
const email = (i: number, n: number) => ({
  from: 'Acme <billing@acme.test>',
  to: [`user-${i}-${n}@example.test`],
  subject: `Invoice ${i}`,
  text: `Your invoice ${i}.`,
});

export const resendDrillOperations: Readonly<Record<string, ResendDrillOperation>> = {
  'emails.send': {
    params: (i) => ({ emailRef: `invoice-ready/${i}`, ...email(i, 0) }),
    changeIntent: change('emailRef'),
    faults: resendDrillFaults,
  },
  'batch.send': {
    params: (i) => ({ batchRef: `invoices/${i}`, emails: [email(i, 0), email(i, 1)] }),
    changeIntent: change('batchRef'),
    faults: resendDrillFaults,
  },
};

/** A fresh sandbox on the runner's clock, as the drill wants it. */
export const startResendDrillSandbox: ResendDrill['startSandbox'] = async ({ clock }) => {
  const s = await startResendSandbox({ now: clock.now });
  return { url: s.url, count: (op) => s.count(op), close: () => s.close(), expireKeys: () => void s.expireKeys() };
};

export const resendDrill: ResendDrill = {
  name: 'resend',
  createAdapter: ({ baseUrl, timeoutMs }) => createResendAdapter({ apiKey: 're_drill', baseUrl, timeoutMs }),
  startSandbox: startResendDrillSandbox,
  operations: resendDrillOperations,
};

/** What `retrysafe drill --adapter resend` runs. */
export const drills: readonly ResendDrill[] = [resendDrill];
