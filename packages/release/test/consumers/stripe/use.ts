// What a TypeScript user of @retrysafe/core + @retrysafe/ledger-sqlite + @retrysafe/stripe writes (strict, NodeNext, lib check
// on), typed against the published declarations; with its types erased it is the JavaScript user's use.mjs.
import { createRunner, type RunResult } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createStripeAdapter, type StripeAdapter } from '@retrysafe/stripe';
import { type StripeSandbox, startStripeSandbox } from '@retrysafe/stripe/sandbox';

const sandbox: StripeSandbox = await startStripeSandbox();
const adapter: StripeAdapter = createStripeAdapter({
  apiKey: 'sk_test_release_check',
  baseUrl: sandbox.url,
  timeoutMs: 5_000,
});
// The ledger file beside this script: the ESM run and the compiled run each start with their own.
const runner = createRunner({
  ledger: createSqliteLedger({ path: new URL('retrysafe.db', import.meta.url).pathname }),
});

const params = { customer: 'cus_fixture', amount: 1000, currency: 'eur', orderRef: 'A-17' };
const first: RunResult = await runner.run(adapter, 'paymentIntents.create', { params });
const again: RunResult = await runner.run(adapter, 'paymentIntents.create', { params });
await sandbox.close();
console.log(
  JSON.stringify({
    first: first.status,
    again: again.status,
    adopted: again.status === 'done' && again.adopted,
    sameOperation: first.businessOperationId === again.businessOperationId,
    providerRef: first.status === 'done' ? first.providerRef : null,
    records: sandbox.count('paymentIntents.create'),
    posts: sandbox.requestCount({ method: 'POST', path: '/v1/payment_intents' }),
  }),
);
