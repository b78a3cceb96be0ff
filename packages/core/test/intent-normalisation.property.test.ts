import { type AdapterV1, ConflictError, type RetrySafetyCard } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';

const OP = 'records.create';

/** The sandbox operation, declaring what an LLM may re-format without changing the request. */
function declaredAdapter(provider: ReturnType<typeof createSandboxProvider>): AdapterV1 {
  const adapter = createSandboxAdapter({ provider });
  const spec = adapter.operations[OP]!;
  const card: RetrySafetyCard = {
    ...spec.card,
    businessOperationId: {
      ...spec.card.businessOperationId,
      normalize: [
        {
          field: 'ref',
          steps: ['nfkc', 'trim', 'collapse-whitespace', 'case-fold'],
          source: 'property test: references are case-insensitive, white space is not part of them',
          evidence: 'https://provider.example/docs/references',
        },
      ],
    },
    paramComparison: [
      {
        field: 'note',
        compare: 'normalized',
        steps: ['nfkc', 'trim', 'collapse-whitespace'],
        source: 'property test: free text, white space ignored',
        evidence: 'https://provider.example/docs/notes',
      },
      {
        field: 'amount',
        compare: 'normalized',
        steps: ['canonical-number'],
        source: 'property test: the provider parses numbers',
        evidence: 'https://provider.example/docs/numbers',
      },
    ],
  };
  return { ...adapter, operations: { ...adapter.operations, [OP]: { ...spec, card } } } as AdapterV1;
}

const word = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9-]{0,7}$/);
const words = fc.array(word, { minLength: 1, maxLength: 3 });
const space = fc.constantFrom(' ', '  ', '\t', '\u00a0', '\u3000', ' \n ');
const pad = fc.array(space, { maxLength: 2 }).map((a) => a.join(''));

/** Full-width forms (NFKC folds them back): 'A' → 'Ａ', '1' → '１', '-' → '－'. */
const fullWidth = (s: string) =>
  [...s].map((c) => (c >= '!' && c <= '~' ? String.fromCharCode(c.charCodeAt(0) + 0xfee0) : c)).join('');

/** An equivalent spelling of a text under nfkc + trim + collapse-whitespace (and case, when allowed). */
function reformatText(ws: readonly string[], caseToo: boolean): fc.Arbitrary<string> {
  return fc
    .record({
      before: pad,
      after: pad,
      gaps: fc.array(space, { minLength: ws.length, maxLength: ws.length }),
      wide: fc.array(fc.boolean(), { minLength: ws.length, maxLength: ws.length }),
      upper: fc.array(fc.constantFrom('keep', 'upper', 'lower'), { minLength: ws.length, maxLength: ws.length }),
    })
    .map(({ before, after, gaps, wide, upper }) => {
      const parts = ws.map((w, i) => {
        const cased = !caseToo || upper[i] === 'keep' ? w : upper[i] === 'upper' ? w.toUpperCase() : w.toLowerCase();
        return wide[i] ? fullWidth(cased) : cased;
      });
      return before + parts.map((p, i) => (i === 0 ? p : gaps[i]! + p)).join('') + after;
    });
}

/** An equivalent spelling of an integer: the number, or a string the provider parses to it. */
const reformatAmount = (n: number) => fc.constantFrom<unknown>(n, String(n), `${n}.0`, n.toExponential(), ` ${n} `);

/** The same params with keys in another order. */
function shuffled(o: Record<string, unknown>, order: readonly number[]): Record<string, unknown> {
  const keys = Object.keys(o);
  return Object.fromEntries(order.map((i) => [keys[i]!, o[keys[i]!]]));
}

describe('intent and param normalisation under LLM-style re-formatting (fast-check, issue 16)', () => {
  it('any sequence of declared-equivalent re-formattings is one effect; any material change is a conflict naming its path; never a second effect', async () => {
    const caseArb = fc.record({
      ref: words,
      note: words,
      amount: fc.integer({ min: 1, max: 1_000_000 }),
      lostFirst: fc.boolean(),
      change: fc.constantFrom('note', 'amount'),
    });
    await fc.assert(
      fc.asyncProperty(
        caseArb.chain((c) =>
          fc.record({
            c: fc.constant(c),
            variants: fc.array(
              fc.record({
                ref: reformatText(c.ref, true),
                note: reformatText(c.note, false),
                amount: reformatAmount(c.amount),
                order: fc.shuffledSubarray([0, 1, 2], { minLength: 3, maxLength: 3 }),
              }),
              { minLength: 1, maxLength: 5 },
            ),
          }),
        ),
        async ({ c, variants }) => {
          const clock = createVirtualClock();
          const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: clock.now, sleep: clock.sleep });
          if (c.lostFirst) provider.failNext({ kind: 'unknown-after-commit' });
          const adapter = declaredAdapter(provider);
          const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5 });
          const canonical = { ref: c.ref.join(' '), note: c.note.join(' '), amount: c.amount };
          const first = await runner.run(adapter, OP, { params: canonical });
          expect(first.status).toBe('done');
          for (const v of variants) {
            const r = await runner.run(adapter, OP, {
              params: shuffled({ ref: v.ref, note: v.note, amount: v.amount }, v.order),
            });
            expect(r.status === 'done' && r.adopted).toBe(true);
            expect(r.businessOperationId).toBe(first.businessOperationId);
          }
          expect(provider.count()).toBe(1);
          // a material change of a compared param: a conflict that names it, and nothing sent
          const calls = provider.calls();
          const changed =
            c.change === 'note'
              ? { ...canonical, note: `${canonical.note} x` }
              : { ...canonical, amount: c.amount + 1 };
          const err = await runner.run(adapter, OP, { params: changed }).catch((e: unknown) => e);
          expect(ConflictError.isInstance(err)).toBe(true);
          expect((err as ConflictError).paths).toEqual([c.change]);
          expect(provider.calls()).toBe(calls);
          expect(provider.count()).toBe(1);
        },
      ),
      { numRuns: 150 },
    );
  });
});
