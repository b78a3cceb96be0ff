// Compile-time checks of `runner.run` with the typed Stripe adapter. Every `@ts-expect-error` must be
// a real error (tsc reports an unused one), and test/run-types.test.ts compiles this file again with
// the directives removed and counts the errors, so each line below is proven to fail on its own.

import type { AdapterV1 } from '@retrysafe/contract';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { createStripeAdapter } from '../src/index.js';

const runner = createRunner({ ledger: createMemoryLedger() });
const stripe = createStripeAdapter({ apiKey: 'sk_test_x' });

export async function typed(): Promise<void> {
  // The right call compiles, and a done result is a PaymentIntent.
  const r = await runner.run(stripe, 'paymentIntents.create', { params: { customer: 'cus_123', orderRef: 'A-17', amount: 1500, currency: 'eur' } });
  if (r.status === 'done') {
    const amount: number = r.result.amount;
    const id: string = r.result.id;
    void amount;
    void id;
  }
  if (r.status === 'handed-off') void r.packet.reason;

  // A wrong operation name.
  // @ts-expect-error 'paymentIntent.create' is not one of the adapter's operations
  await runner.run(stripe, 'paymentIntent.create', { params: { customer: 'cus_123', orderRef: 'A-17', amount: 1500, currency: 'eur' } });

  // A missing intent field (orderRef names the payment together with customer).
  // @ts-expect-error orderRef is required
  await runner.run(stripe, 'paymentIntents.create', { params: { customer: 'cus_123', amount: 1500, currency: 'eur' } });

  // A wrong param type.
  // @ts-expect-error amount is a number in the smallest currency unit
  await runner.run(stripe, 'paymentIntents.create', { params: { customer: 'cus_123', orderRef: 'A-17', amount: '15.00', currency: 'eur' } });

  // Ids are plain strings: a customer id read from a database (type string) must be accepted.
  const fromDb: string = 'cus_from_db';
  await runner.run(stripe, 'paymentIntents.create', { params: { customer: fromDb, orderRef: 'A-17', amount: 1500, currency: 'eur' } });

  // Params of another operation.
  // @ts-expect-error refunds.create takes paymentIntent and refundRef
  await runner.run(stripe, 'refunds.create', { params: { customer: 'cus_123', orderRef: 'A-17', amount: 1500, currency: 'eur' } });

  // An unknown param.
  // @ts-expect-error amountt is not a param
  await runner.run(stripe, 'customers.create', { params: { customerRef: 'c-1', amountt: 1 } });

  // The result is typed: a Customer has no amount.
  const c = await runner.run(stripe, 'customers.create', { params: { customerRef: 'c-1' } });
  // @ts-expect-error Stripe.Customer has no amount
  if (c.status === 'done') void c.result.amount;
}

export async function untyped(adapter: AdapterV1, name: string): Promise<void> {
  // Backward compatible: an untyped adapter takes any name and any params, and the result is unknown.
  const r = await runner.run(adapter, name, { params: { anything: true } });
  if (r.status === 'done') {
    const v: unknown = r.result;
    void v;
  }
  // A typed adapter passed where an AdapterV1 is expected is untyped again.
  const plain: AdapterV1 = stripe;
  await runner.run(plain, 'whatever', { params: 1 });
  await runner.recover({ adapters: [stripe] });
}
