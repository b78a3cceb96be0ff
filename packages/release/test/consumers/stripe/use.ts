// What a TypeScript user of @retrysafe/core + @retrysafe/ledger-sqlite + @retrysafe/stripe writes (strict, NodeNext, lib check
// on): the same scenario as use.mjs, typed against the published declarations.
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
const runner = createRunner({ ledger: createSqliteLedger({ path: 'retrysafe-ts.db' }) });

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
