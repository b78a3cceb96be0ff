// An error is redacted whole wherever it is stored or shown (DBOS's tables, an agent's tool error): its message and
// stack, every own field enumerable or not (cause, an AggregateError's errors, a provider body), at any depth, frozen
// or not; its class, name and code stay.
import { LedgerError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { agentRunner, agentTools, callAgentTool } from '@retrysafe/core/agent';
import { createRedactor } from '@retrysafe/core/internal';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

const SECRET = 'sk_live_4eC39HqLyjWDarjtT1zdp7dc';
const EMAIL = 'jane.doe@example.com';
const TOKEN = 'hunter2-not-a-pattern';

/** Every string reachable from `v` through own properties, enumerable or not (as DBOS's serializer and a logger walk). */
function allText(v: unknown, seen = new Set<unknown>()): string {
  if (typeof v === 'string') return `${v}\n`;
  if (typeof v !== 'object' || v === null || seen.has(v)) return '';
  seen.add(v);
  return Reflect.ownKeys(v)
    .map((k) => allText((v as Record<PropertyKey, unknown>)[k], seen))
    .join('');
}

function leakyError() {
  const inner = Object.freeze(Object.assign(new Error(`key ${SECRET} refused`), { code: 'E_INNER' }));
  const aggregate = new AggregateError([new Error(`no mailbox ${EMAIL}`), inner], 'all attempts failed');
  const cause = Object.assign(new Error('provider said no', { cause: aggregate }), {
    details: { apiKey: TOKEN, body: `{"email":"${EMAIL}"}` },
  });
  return Object.freeze(new LedgerError(`write failed for ${EMAIL}`, { cause }));
}

describe('an error redacted whole', () => {
  it('blanks its message, stack, cause chain, AggregateError errors and fields, frozen or not; class and code stay', () => {
    const err = leakyError();
    const out = createRedactor().params(err) as LedgerError;
    const text = allText(out);
    for (const leak of [SECRET, EMAIL, TOKEN]) expect(text).not.toContain(leak);
    expect(text).toContain('all attempts failed');
    expect(LedgerError.isInstance(out)).toBe(true);
    expect(out).toBeInstanceOf(LedgerError);
    expect(out).toMatchObject({ name: 'LedgerError', code: 'RETRYSAFE_LEDGER' });
    const aggregate = (out.cause as Error).cause as AggregateError;
    expect(aggregate).toBeInstanceOf(AggregateError);
    expect(aggregate.errors[1]).toMatchObject({ code: 'E_INNER' });
    // What it was given stays as it was (a frozen error cannot change; a copy carries the redacted text).
    expect(err.message).toContain(EMAIL);
  });

  it('hands back the error itself when nothing in it is sensitive', () => {
    const err = new LedgerError('the ledger is unreachable', { cause: new Error('ECONNREFUSED') });
    expect(createRedactor().params(err)).toBe(err);
  });
});

describe("what an agent is shown of an error: the user's redaction, on all of it", () => {
  it("scrubbedForAgent blanks the cause and fields with the runner's own patterns", () => {
    const runner = createRunner({ ledger: createMemoryLedger(), redact: { patterns: [/hunter2[\w-]*/g] } });
    const out = agentRunner(runner).scrubbed(leakyError());
    const text = allText(out);
    for (const leak of [SECRET, EMAIL, TOKEN, 'hunter2']) expect(text).not.toContain(leak);
  });

  it('a tool call whose ledger fails throws the error redacted with the runner options', async () => {
    const { adapter, ledger } = setup();
    const runner = createRunner({ ledger, redact: { patterns: [/ORDER-\d+/g] } });
    ledger.claim = () =>
      Promise.reject(new LedgerError('claim failed', { cause: new Error('row ORDER-12345 locked by ORDER-777') }));
    const [tool] = agentTools([adapter], ['sandbox_records_create']);
    const err = await callAgentTool(agentRunner(runner), tool!, { ref: 'r1' }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LedgerError);
    expect(allText(err)).toContain('claim failed');
    expect(allText(err)).not.toContain('ORDER-');
  });
});
