import { ConflictError, type ParameterMatching } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { createSandboxProvider, REPLAYING_BEHAVIOUR, startSandboxServer } from '@retrysafe/sandbox';
import { startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it } from 'vitest';
import { etagDocumentsUpdate, type HttpOperationSpec, ietfOrdersCreate } from '../src/index.js';
import { startEtagSandbox, startIetfKeySandbox } from '../src/sandbox/index.js';
import { adapterAt, sandboxRecords } from './helpers.js';

// A user's declared operation maps 429 to not-applied because a re-send carries the same key, which folds it
// even if it had landed. A correction after it keeps that key: whether that is safe is the card's parameterMatching.

const OP = 'orders.create';

function recordsSpec(matching: ParameterMatching): HttpOperationSpec {
  const base = ietfOrdersCreate('acme');
  return sandboxRecords(
    {
      // The order reference names the order; the quantity is what a correction changes.
      businessOperationId: { ...base.card.businessOperationId, intentFields: ['orderRef'] },
      parameterMatching: { value: matching, source: 'test: the loopback sandbox' },
    },
    // The sandbox's dialect: `{ error: { code } }`, 422 for a key reused with other params.
    {
      errors: {
        ...base.errors,
        rules: [{ status: 422, outcome: 'rejected', reason: 'conflict' }, ...base.errors.rules],
      },
    },
  );
}

async function setup(matching: ParameterMatching) {
  const clock = createVirtualClock(Date.UTC(2026, 11, 6));
  const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, parameterMatching: matching, clock: clock.now });
  const server = closeAfterTest(await startSandboxServer({ provider }));
  // The first POST reaches the provider and is applied, but the answer is a 429.
  const proxy = closeAfterTest(
    await startFaultProxy({ target: server.url, faults: [{ kind: 'status', status: 429, forward: true }] }),
  );
  const adapter = closeAfterTest(adapterAt(proxy.url, OP, recordsSpec(matching)));
  const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5, policy: { maxAttempts: 1 } });
  return { provider, proxy, adapter, runner };
}

const params = (quantity: number) => ({ customer: 'cus_1', sku: 'sku_1', quantity, orderRef: 'R-1' });

describe('a correction after a 429 that had landed, under the key it keeps', () => {
  it.each<[ParameterMatching, string]>([
    ['replay-anyway', 'the provider would answer it with the first request’s record (a lost correction)'],
    ['none', 'the provider would make a second record'],
  ])(
    'parameterMatching %s: refused as a conflict a person resolves (%s); resend-with is not offered',
    async (matching) => {
      const { provider, proxy, adapter, runner } = await setup(matching);
      const first = await runner.run(adapter, OP, { params: params(1) });
      expect(first).toMatchObject({ status: 'handed-off', packet: { reason: 'retry-exhausted' } });
      expect(provider.count()).toBe(1); // the 429 hid an applied request
      expect(first.status === 'handed-off' && first.packet.safeNextActions.map((a) => a.action)).not.toContain(
        'resend-with',
      );

      const corrected = await runner.run(adapter, OP, { params: params(2) }).catch((e: unknown) => e);
      expect(ConflictError.isInstance(corrected) && corrected.needsPerson).toBe(true);
      expect((corrected as Error).message).toMatch(/cannot be superseded.*parameterMatching/);
      const byPerson = await runner
        .resolve(first.businessOperationId, { action: 'resend-with', params: params(2) }, { adapters: [adapter] })
        .catch((e: unknown) => e);
      expect(ConflictError.isInstance(byPerson)).toBe(true);
      expect(proxy.requests).toHaveLength(1);
      expect(provider.count()).toBe(1);
    },
  );

  it('parameterMatching mismatch-error: the correction goes out under the kept key and the provider refuses it: one record, handed off', async () => {
    const { provider, proxy, adapter, runner } = await setup('mismatch-error');
    const first = await runner.run(adapter, OP, { params: params(1) });
    expect(first).toMatchObject({ status: 'handed-off', packet: { reason: 'retry-exhausted' } });
    const corrected = await runner.run(adapter, OP, { params: params(2) });
    expect(corrected).toMatchObject({ status: 'handed-off', packet: { reason: 'rejected' } });
    expect(new Set(proxy.requests.map((r) => r.headers['idempotency-key'])).size).toBe(1);
    expect(provider.count()).toBe(1);
  });
});

describe('a correction under the kept key whose own answer is lost', () => {
  async function lostCorrection(landed: boolean) {
    const clock = createVirtualClock(Date.UTC(2026, 11, 6));
    const sandbox = closeAfterTest(await startIetfKeySandbox({ clock }));
    // The first POST is answered 429 (applied behind it, or not); the correction reaches the provider and its
    // answer is lost.
    const proxy = closeAfterTest(
      await startFaultProxy({
        target: sandbox.url,
        faults: [{ kind: 'status', status: 429, forward: landed }, 'drop-response'],
      }),
    );
    const base = ietfOrdersCreate('acme');
    const spec: HttpOperationSpec = {
      ...base,
      card: { ...base.card, businessOperationId: { ...base.card.businessOperationId, intentFields: ['orderRef'] } },
    };
    const adapter = closeAfterTest(adapterAt(proxy.url, OP, spec));
    const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5, policy: { maxAttempts: 1 } });
    const first = await runner.run(adapter, OP, { params: params(1) });
    expect(first).toMatchObject({ status: 'handed-off', packet: { reason: 'retry-exhausted' } });
    const corrected = await runner.run(adapter, OP, { params: params(2) });
    // The lookup finds an order under the operation's reference; which request made it, it cannot say.
    expect(corrected).toMatchObject({ status: 'handed-off', packet: { reason: 'lookup-window-exhausted' } });
    expect(corrected.status === 'handed-off' && corrected.packet.explanation).toMatch(/may be the earlier revision's/);
    // A resume re-sends the correction under the same key: the provider tells them apart.
    const resumed = await runner.resolve(first.businessOperationId, { action: 'resume' }, { adapters: [adapter] });
    return { sandbox, resumed };
  }

  it('the 429 had landed: the order found is the first request’s, never adopted as the correction’s result', async () => {
    const { sandbox, resumed } = await lostCorrection(true);
    expect(sandbox.records().map((o) => o.quantity)).toEqual([1]);
    expect(resumed).toMatchObject({ status: 'handed-off', packet: { reason: 'rejected' } });
  });

  it('the 429 had not: the order found is the correction’s, and the resume adopts it', async () => {
    const { sandbox, resumed } = await lostCorrection(false);
    expect(sandbox.records().map((o) => o.quantity)).toEqual([2]);
    expect(resumed).toMatchObject({ status: 'done' });
  });
});

describe('a correction after a 429 that had landed, under the precondition it keeps (no key travels)', () => {
  it('the document holds the first write: refused as a conflict a person resolves, never blamed on another writer', async () => {
    const sandbox = closeAfterTest(await startEtagSandbox());
    const proxy = closeAfterTest(
      await startFaultProxy({ target: sandbox.url, faults: [{ kind: 'status', status: 429, forward: true }] }),
    );
    // The document and the version it is edited from name the edit; its title is what a correction changes.
    const base = etagDocumentsUpdate('acme-docs');
    const card = {
      ...base.card,
      businessOperationId: { ...base.card.businessOperationId, intentFields: ['id', 'etag'] },
    };
    const adapter = closeAfterTest(adapterAt(proxy.url, 'documents.update', { ...base, card }));
    const runner = createRunner({ ledger: createMemoryLedger(), random: () => 0.5, policy: { maxAttempts: 1 } });
    const edit = (title: string) => ({ id: 'doc-1', etag: '"g1"', title, body: 'Signed.' });
    const first = await runner.run(adapter, 'documents.update', { params: edit('Finla') });
    expect(first).toMatchObject({ status: 'handed-off', packet: { reason: 'retry-exhausted' } });
    expect(sandbox.records()[0]).toMatchObject({ title: 'Finla', generation: 2 }); // the 429 hid an applied write
    expect(first.status === 'handed-off' && first.packet.safeNextActions.map((a) => a.action)).not.toContain(
      'resend-with',
    );

    const corrected = await runner.run(adapter, 'documents.update', { params: edit('Final') }).catch((e: unknown) => e);
    expect(ConflictError.isInstance(corrected) && corrected.needsPerson).toBe(true);
    expect(proxy.requests).toHaveLength(1);
  });
});
