import type { DrillFault, DrillOperation, DrillSetup } from '@retrysafe/contract';
import { createResendAdapter } from '../resend-adapter.js';
import { startResendSandbox } from './resend-sandbox.js';

type StatusFault = Extract<DrillFault, { kind: 'status' }>;

const resendError = (statusCode: number, name: string, message: string, retryAfterS?: number): StatusFault => ({
  kind: 'status',
  status: statusCode,
  body: { statusCode, name, message },
  ...(retryAfterS ? { retryAfterS } : {}),
});

/** Resend's wire format for the four answers the drill needs (https://resend.com/docs/api-reference/errors). */
const faults: DrillOperation['faults'] = {
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

/** What `runConformance` and `retrysafe drill --adapter resend` run. */
export const resendDrill: DrillSetup = {
  name: 'resend',
  createAdapter: ({ baseUrl, timeoutMs }) => createResendAdapter({ apiKey: 're_drill', baseUrl, timeoutMs }),
  startSandbox: async ({ clock }) => {
    const s = await startResendSandbox({ now: clock.now });
    return { url: s.url, count: (op) => s.count(op), close: () => s.close(), expireKeys: () => void s.expireKeys() };
  },
  operations: {
    'emails.send': {
      params: (i) => ({ emailRef: `invoice-ready/${i}`, ...email(i, 0) }),
      changeIntent: change('emailRef'),
      faults,
    },
    'batch.send': {
      params: (i) => ({ batchRef: `invoices/${i}`, emails: [email(i, 0), email(i, 1)] }),
      changeIntent: change('batchRef'),
      faults,
    },
  },
};

export const drills: readonly DrillSetup[] = [resendDrill];
