// Redactor.changes(params) lets preclaim skip building the redacted copy (and writing its canonical JSON
// again) when nothing would be blanked. It may say "changes" too often, never too rarely: whenever it
// says false, the copy's canonical JSON must be the params' own, or receipts would carry a request
// fingerprint of text that still holds a secret.

import { canonicalJson } from '@retrysafe/contract';
import { createRedactor } from '@retrysafe/core/internal';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { REDACTED } from '../src/redact.js';

// Keys and strings drawn so that every rule gets hit: secret- and PII-named keys, declared fields, a
// caller pattern, detector food (emails, card numbers, tokens, `key=value` text), plain values.
const key = fc.constantFrom(
  'ref',
  'amount',
  'note',
  'customer',
  'email',
  'password',
  'apiKey',
  'card',
  'number',
  'items',
  'meta',
  'a.b',
  'me@x.example',
  '__proto__',
  'ACCT-7',
);
const text = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc.constantFrom(
    'A-17',
    'order 5',
    'alice@example.test',
    '4242 4242 4242 4242',
    'Bearer abc.def',
    'sk_live_51Habcdefghij',
    'token=t0k3n',
    'ACCT-991',
    REDACTED,
    'bob-secret',
    'ünïcödé',
    '',
  ),
);
const leaf = fc.oneof(
  text,
  fc.integer(),
  fc.constantFrom(4242424242424242, 1796193979010, 0, -1, 1.5),
  fc.boolean(),
  fc.constant(null),
  fc.date({ noInvalidDate: true }),
);
const value = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small' },
    leaf,
    fc.array(tie('node'), { maxLength: 3 }),
    fc.dictionary(key, tie('node'), { maxKeys: 4 }),
  ),
})).node;
const options = fc.record({
  fields: fc.subarray(['note', 'customer.email', 'meta', 'items.ref']),
  patterns: fc.subarray([/ACCT-\d+/]),
  pii: fc.boolean(),
});

describe('Redactor.changes', () => {
  it('false only when the redacted copy writes the same canonical JSON (with values from the params, declared fields, patterns, PII on or off)', () => {
    fc.assert(
      fc.property(
        options,
        fc.dictionary(key, value, { maxKeys: 5 }),
        fc.option(fc.dictionary(key, text, { maxKeys: 2 }), { nil: undefined }),
        (opts, params, valuesFrom) => {
          let r = createRedactor({ fields: opts.fields, patterns: opts.patterns, pii: opts.pii }, ['items.ref']);
          r = r.withValuesFrom(params);
          if (valuesFrom !== undefined) r = r.withValuesFrom(valuesFrom);
          const same = canonicalJson(r.params(params)) === canonicalJson(params);
          if (!r.changes(params)) expect(same).toBe(true);
          // And it is not simply always true: where no rule applies it answers false (checked below on plain params).
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('answers false for plain params and true for each rule that blanks something', () => {
    const r = createRedactor({ fields: ['customer.phone'], patterns: [/ACCT-\d+/] });
    expect(
      r.changes({ orderRef: 'A-17', amount: 1500, currency: 'eur', lines: [{ sku: 's1', qty: 2 }], at: new Date(0) }),
    ).toBe(false);
    expect(r.changes({ orderRef: 'A-17', password: 'hunter2' })).toBe(true); // secret-named key
    expect(r.changes({ customer: { phone: '+44 1' } })).toBe(true); // declared dot path
    expect(r.changes({ note: 'mail alice@example.test' })).toBe(true); // detector in a value
    expect(r.changes({ 'alice@example.test': 1 })).toBe(true); // detector in a key
    expect(r.changes({ note: 'ACCT-991' })).toBe(true); // caller pattern
    expect(r.changes({ n: 4242424242424242 })).toBe(true); // card-like number
    expect(r.changes({ password: REDACTED })).toBe(false); // already blank: the copy is the same
    expect(r.withValuesFrom({ password: 'hunter22' }).changes({ note: 'it is hunter22' })).toBe(true); // a known sensitive value in free text
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(r.changes(cyclic)).toBe(true); // cannot tell cheaply: build the copy
  });
});

describe('Redactor.text remembers short texts per redactor', () => {
  it("gives the same answer on every call, past the memo bound, and never one redactor's answer to another", () => {
    const plain = createRedactor();
    const withValue = plain.withValuesFrom({ password: 'hunter22' });
    const t = 'login hunter22 failed';
    expect(plain.text(t)).toBe(t);
    expect(withValue.text(t)).toBe('login [redacted] failed');
    expect(plain.text(t)).toBe(t); // the other redactor's answer is not this one's
    for (let i = 0; i < 2000; i++) withValue.text(`filler ${i}`); // past the memo's bound: emptied, still right
    expect(withValue.text(t)).toBe('login [redacted] failed');
    expect(withValue.text('mail alice@example.test')).toBe('mail [redacted]');
    expect(withValue.text('mail alice@example.test')).toBe('mail [redacted]');
    const long = `${'x'.repeat(200)} alice@example.test`; // longer than what is remembered: asked each time
    expect(withValue.text(long)).toBe(`${'x'.repeat(200)} [redacted]`);
  });
});
