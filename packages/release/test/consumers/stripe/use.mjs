// What a JavaScript user of @retrysafe/core + @retrysafe/ledger-sqlite + @retrysafe/stripe writes, against the adapter's
// loopback Stripe sandbox (the real stripe SDK talks to it): one payment intent, asked for twice.
import { createRunner } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createStripeAdapter } from '@retrysafe/stripe';
import { startStripeSandbox } from '@retrysafe/stripe/sandbox';

const sandbox = await startStripeSandbox();
const adapter = createStripeAdapter({ apiKey: 'sk_test_release_check', baseUrl: sandbox.url, timeoutMs: 5_000 });
const runner = createRunner({ ledger: createSqliteLedger({ path: 'retrysafe-esm.db' }) });

const params = { customer: 'cus_fixture', amount: 1000, currency: 'eur', orderRef: 'A-17' };
const first = await runner.run(adapter, 'paymentIntents.create', { params });
const again = await runner.run(adapter, 'paymentIntents.create', { params });
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
