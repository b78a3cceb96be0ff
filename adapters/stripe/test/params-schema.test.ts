import { schemaErrors } from '@retrysafe/contract/provider';
import { paramsErrors } from '@retrysafe/core/internal';
import { describe, expect, it } from 'vitest';
import { stripeOperations } from '../src/stripe-operations.js';

// The params schema is the one definition of what Stripe accepts: the runner refuses these before the
// claim (no row, no provider call, issue 16), and the frame refuses them on every attempt.
const ok: Record<string, Record<string, unknown>> = {
  'customers.create': { customerRef: 'u-1', email: 'a@example.test' },
  'paymentIntents.create': { customer: 'cus_1', amount: 1500, currency: 'eur', orderRef: 'A-1' },
  'invoices.create': { customer: 'cus_1', invoiceRef: 'I-1' },
  'refunds.create': { paymentIntent: 'pi_1', refundRef: 'R-1' },
};
const breakers: ((p: Record<string, unknown>, name: string) => Record<string, unknown>)[] = [
  (p) => ({ ...p, metadata: Object.fromEntries(Array.from({ length: 50 }, (_, i) => [`k${i}`, 'v'])) }),
  (p) => ({ ...p, metadata: { ['k'.repeat(41)]: 'v' } }),
  (p) => ({ ...p, metadata: { retrysafe_operation_id: 'mine' } }),
  (p) => ({ ...p, metadata: { k: 'v'.repeat(501) } }),
  (p) => ({ ...p, unknownField: 1 }),
  (p, n) =>
    n === 'paymentIntents.create'
      ? { ...p, amount: 0 }
      : n === 'refunds.create'
        ? { ...p, amount: 1.5 }
        : n === 'invoices.create'
          ? { ...p, daysUntilDue: 0 }
          : { ...p, email: '' },
  (p, n) =>
    n === 'paymentIntents.create'
      ? { ...p, customer: `cus_${'x'.repeat(300)}` }
      : n === 'refunds.create'
        ? { ...p, paymentIntent: 'ch_1' }
        : n === 'invoices.create'
          ? { ...p, customer: 'acct_1' }
          : { ...p, customerRef: '' },
  (p, n) => (n === 'paymentIntents.create' ? { ...p, paymentMethodTypes: [] } : p),
];

describe('Stripe params schemas refuse what Stripe would', () => {
  for (const [name, op] of Object.entries(stripeOperations)) {
    it(name, () => {
      const spec = { card: op.card, paramsSchema: op.paramsSchema } as Parameters<typeof paramsErrors>[0];
      expect(paramsErrors(spec, ok[name])).toEqual([]);
      expect(schemaErrors(op.paramsSchema, ok[name])).toEqual([]);
      for (const b of breakers) {
        const bad = b(ok[name]!, name);
        if (bad === ok[name]) continue;
        expect(paramsErrors(spec, bad), `${name}: ${JSON.stringify(bad).slice(0, 80)}`).not.toEqual([]);
        expect(schemaErrors(op.paramsSchema, bad), `frame, ${name}: ${JSON.stringify(bad).slice(0, 80)}`).not.toEqual(
          [],
        );
      }
    });
  }
});

// `cus_1 ` would digest to an id of its own while naming (if Stripe reads it so) customer cus_1: a second charge. An id
// has one spelling, so another is refused, never folded.
describe('a Stripe id that names the intent takes one spelling', () => {
  const ids: [string, string][] = [
    ['paymentIntents.create', 'customer'],
    ['invoices.create', 'customer'],
    ['refunds.create', 'paymentIntent'],
  ];
  for (const [name, field] of ids)
    it(`${name}: ${field} with white space is refused`, () => {
      const op = stripeOperations[name]!;
      const id = String(ok[name]![field]);
      for (const bad of [`${id} `, `${id}\n`, `${id.slice(0, 3)}_ ${id.slice(4)}`, `${id}\u00a0`])
        expect(schemaErrors(op.paramsSchema, { ...ok[name], [field]: bad }), JSON.stringify(bad)).not.toEqual([]);
    });
});
