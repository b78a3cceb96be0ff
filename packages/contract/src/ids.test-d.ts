// Type tests: compiled by `tsc -p tsconfig.typetest.json` (run from ids-types.test.ts).
// Every @ts-expect-error below must be an error; if the branding ever weakens, tsc fails on the unused directive.
import {
  type AttemptId, 
  asBusinessOperationId, asProviderKey,type BusinessOperationId, businessOperationId, newAttemptId, newRunId, type ProviderKey, type RunId,
} from './index.js';

declare function performOperation(id: BusinessOperationId): void;
declare function recordRun(id: RunId): void;
declare function sendKey(key: ProviderKey): void;

const op = businessOperationId('stripe.paymentIntents.create', { order: 'A-17' });
const run = newRunId();
const attempt = newAttemptId();
const key = asProviderKey('rs-A-17');

performOperation(op);
performOperation(asBusinessOperationId('order-A-17'));
recordRun(run);
sendKey(key);

// @ts-expect-error a run id is never a business-operation id
performOperation(run);
// @ts-expect-error an attempt id is never a business-operation id
performOperation(attempt);
// @ts-expect-error a provider key is never a business-operation id
performOperation(key);
// @ts-expect-error a plain string must be validated first
performOperation('order-A-17');
// @ts-expect-error a business-operation id is not a run id
recordRun(op);
// @ts-expect-error a business-operation id is not the provider key: keys are derived per provider rules
sendKey(op);
// @ts-expect-error an attempt id is not a run id
const r: RunId = attempt;
// @ts-expect-error ids do not convert into each other by assignment
const a: AttemptId = run;

// a branded id is still a string for reading
const s: string = op;
void r; void a; void s;
