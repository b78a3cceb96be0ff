// Issue 15 item 5: recover() drives each record on its own. One that cannot be driven is handed off with
// reason `recovery-failed` and its error, listed in the report; the healthy ones behind it proceed.

import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { asBusinessOperationId, fingerprint, type Ledger, LedgerError, type ProviderKey } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { createSqliteLedger } from '@retrysafe/ledger-sqlite';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { sandboxOn } from './helpers.js';

/** A ledger whose writes for one operation fail (a row the disk cannot take); handOff too when `all`. */
function poisoned(inner: Ledger, badId: string, all: boolean): Ledger {
  const writes = new Set(['markDispatched', 'setState', 'renewLease', ...(all ? ['handOff'] : [])]);
  return new Proxy(inner, {
    get(target, prop) {
      const v = Reflect.get(target, prop) as unknown;
      if (typeof v !== 'function') return v;
      return (...args: unknown[]) => {
        const ref = args[0] as { businessOperationId?: string } | undefined;
        if (writes.has(String(prop)) && ref?.businessOperationId === badId)
          return Promise.reject(new LedgerError(`${String(prop)}: disk full (injected)`));
        return (v as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

async function leftDispatched(ledger: Ledger, ref: string, now: number, provider = 'sandbox') {
  const operation = `${provider}.records.create`;
  const id = asBusinessOperationId(`${operation}:${ref}`);
  const params = { ref };
  const c = await ledger.claim({
    businessOperationId: id,
    provider,
    operation,
    intentFingerprint: fingerprint({ ref }),
    paramsFingerprint: fingerprint(params),
    params,
    providerKey: `k-${ref}` as ProviderKey,
    owner: 'dead-worker',
    leaseMs: 1000,
    now,
  });
  if (c.kind !== 'claimed') throw new Error('setup claim failed');
  await ledger.markDispatched({ businessOperationId: id, fence: c.record.fence }, now);
  return id;
}

describe('recover() isolates each record', () => {
  for (const all of [false, true]) {
    it(`a record whose writes fail${all ? ' (handoff too)' : ''} is reported with its error; the healthy records behind it are driven`, async () => {
      const { clock, provider, adapter } = sandboxOn();
      const inner = createMemoryLedger();
      const bad = await leftDispatched(inner, 'a-bad', clock.now());
      const good = [
        await leftDispatched(inner, 'b-good', clock.now()),
        await leftDispatched(inner, 'c-good', clock.now()),
      ];
      clock.advance(5000);
      const packets: unknown[] = [];
      const runner = createRunner({
        ledger: poisoned(inner, bad, all),
        clock,
        random: () => 0.5,
        handoff: { send: (p) => void packets.push(p) },
      });

      const reports = await runner.recover({ adapters: [adapter] });

      const byId = new Map(reports.map((r) => [r.businessOperationId as string, r]));
      expect(reports).toHaveLength(3);
      for (const id of good) expect(byId.get(id)?.action).toMatch(/^(completed|adopted)$/);
      for (const id of good) expect((await inner.get(id))?.state).toBe('succeeded');
      const r = byId.get(bad)!;
      expect(r.error).toMatchObject({ name: 'LedgerError', code: 'RETRYSAFE_LEDGER' });
      expect(r.error?.message).toContain('disk full');
      if (all) {
        expect(r.action).toBe('failed');
        expect((await inner.get(bad))?.state).toBe('dispatched'); // left for the next pass, lease released
      } else {
        expect(r.action).toBe('handed-off');
        const rec = await inner.get(bad);
        expect(rec?.state).toBe('handed-off');
        expect(rec?.handoff?.reason).toBe('recovery-failed');
        expect(rec?.handoff?.explanation).toContain('disk full');
        expect(rec?.handoff?.safeNextActions.find((a) => a.action === 'resume')?.safe).toBe(false);
        expect(packets).toHaveLength(1);
      }
      // The poisoned record was never sent twice: the good ones once each, the bad one at most once.
      expect(provider.count()).toBeLessThanOrEqual(3);
    });
  }

  it('a sink that never settles does not keep recover() from returning: the recovery-failed packet is in the ledger', async () => {
    const clock = createVirtualClock();
    const provider = createSandboxProvider({ ...REPLAYING_BEHAVIOUR, clock: clock.now, sleep: clock.sleep });
    const inner = createMemoryLedger();
    const bad = await leftDispatched(inner, 'a-bad', clock.now());
    clock.advance(5000);
    const logged: Array<{ event: string }> = [];
    const runner = createRunner({
      ledger: poisoned(inner, bad, false),
      clock,
      random: () => 0.5,
      policy: { maxElapsedMs: 300 },
      handoff: { send: () => new Promise<void>(() => {}) },
      logger: (e) => void logged.push(e),
    });
    const [report] = await runner.recover({ adapters: [createSandboxAdapter({ provider })] });
    expect(report).toMatchObject({ businessOperationId: bad, action: 'handed-off' });
    expect((await inner.get(bad))?.handoff?.reason).toBe('recovery-failed');
    expect(logged.some((e) => e.event === 'handoff-sink-unconfirmed')).toBe(true);
  }, 5000);

  it('a row whose stored record is cut (edited from outside) is reported failed, state unknown; the readable stuck one is recovered', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rs-recover-cut-'));
    const path = join(dir, 'ledger.db');
    const ledger = createSqliteLedger({ path });
    try {
      const { clock, provider, adapter } = sandboxOn();
      const cut = await leftDispatched(ledger, 'a-cut', clock.now());
      const good = await leftDispatched(ledger, 'b-good', clock.now());
      const raw = new DatabaseSync(path);
      raw.prepare('UPDATE retrysafe_operations SET record = substr(record, 1, 40) WHERE id = ?').run(cut);
      raw.close();
      clock.advance(5000);
      const logged: Array<{ event: string; message: string }> = [];
      const runner = createRunner({ ledger, clock, random: () => 0.5, logger: (e) => void logged.push(e) });

      const reports = await runner.recover({ adapters: [adapter] });

      const byId = new Map(reports.map((r) => [r.businessOperationId as string, r]));
      expect(reports).toHaveLength(2);
      expect(byId.get(good)?.action).toMatch(/^(completed|adopted)$/);
      expect((await ledger.get(good))?.state).toBe('succeeded');
      expect(byId.get(cut)).toMatchObject({ action: 'failed', from: null, to: null });
      expect(byId.get(cut)?.error).toMatchObject({ name: 'LedgerError', code: 'RETRYSAFE_LEDGER' });
      expect(byId.get(cut)?.error?.message).toMatch(/cut or corrupt/);
      expect(logged.find((e) => e.event === 'recover-failed')?.message).toContain(cut);
      expect(provider.count()).toBe(1); // the readable one only; nothing sent for the cut one
    } finally {
      await ledger.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a stored record over the payload limits is handed off (PayloadLimitError), not thrown out of recover()', async () => {
    const { clock, provider, adapter } = sandboxOn();
    const ledger = createMemoryLedger();
    let deep: Record<string, unknown> = { leaf: 1 };
    for (let i = 0; i < 150; i++) deep = { a: deep };
    const id = asBusinessOperationId('sandbox.records.create:deep-old');
    const params = { ref: 'deep-old', deep };
    const c = await ledger.claim({
      businessOperationId: id,
      provider: 'sandbox',
      operation: 'sandbox.records.create',
      intentFingerprint: 'i',
      paramsFingerprint: fingerprint(params),
      params,
      providerKey: 'k-deep' as ProviderKey,
      owner: 'old-version',
      leaseMs: 1000,
      now: clock.now(),
    });
    if (c.kind !== 'claimed') throw new Error('setup');
    const good = await leftDispatched(ledger, 'z-good', clock.now());
    clock.advance(5000);
    const reports = await createRunner({ ledger, clock, random: () => 0.5 }).recover({ adapters: [adapter] });
    expect(reports.find((r) => r.businessOperationId === id)).toMatchObject({
      action: 'handed-off',
      error: { name: 'PayloadLimitError', code: 'RETRYSAFE_PAYLOAD_LIMIT' },
    });
    expect((await ledger.get(id))?.handoff?.reason).toBe('recovery-failed');
    expect((await ledger.get(good))?.state).toBe('succeeded');
    expect(provider.records().some((r) => JSON.stringify(r).includes('deep-old'))).toBe(false);
  });

  it('a runner whose own configuration cannot drive a record (a policy its card refuses, an adapter whose card is invalid) leaves it as it is, reported failed: run() refuses the same before its claim, and the record is not at fault', async () => {
    const clock = createVirtualClock();
    const behaviour = { ...REPLAYING_BEHAVIOUR, lookup: 'get-by-key' as const, lookupDelayMs: 10, lateApplyMs: 10 };
    const provider = createSandboxProvider({ ...behaviour, clock: clock.now, sleep: clock.sleep });
    const adapter = createSandboxAdapter({ provider });
    const ledger = createMemoryLedger();
    const id = await leftDispatched(ledger, 'misconfigured', clock.now());
    clock.advance(5000);
    const before = await ledger.get(id);
    const spec = adapter.operations['records.create']!;
    const brokenCard = { ...spec.card, cardVersion: 99 } as unknown as typeof spec.card;
    const broken = { ...adapter, operations: { 'records.create': { ...spec, card: brokenCard } } };
    const misconfigured = [
      { policy: { lookupWindowMs: 5 }, adapters: [adapter], error: 'RunnerConfigurationError' },
      { policy: {}, adapters: [broken], error: 'CardValidationError' },
    ];
    for (const m of misconfigured) {
      const runner = createRunner({ ledger, clock, random: () => 0.5, policy: m.policy });
      const reports = await runner.recover({ adapters: m.adapters });
      expect(reports).toMatchObject([{ businessOperationId: id, action: 'failed', error: { name: m.error } }]);
      expect(await ledger.get(id)).toEqual(before); // not handed off: nothing written
      expect(await ledger.receipts(id)).toEqual([]);
    }
    // Configured as it should be, the next pass reconciles it: one record at the provider.
    const fixed = await createRunner({ ledger, clock, random: () => 0.5 }).recover({ adapters: [adapter] });
    expect(fixed.map((r) => r.action)).toEqual(['completed']);
    expect((await ledger.get(id))?.state).toBe('succeeded');
    expect(provider.count()).toBe(1);
  });

  it('handOffUndrivable: a record no adapter or card given can drive is handed off once its lease ran out (resume not safe, nothing sent); one whose lease lives is left', async () => {
    const { clock, provider, adapter } = sandboxOn();
    const ledger = createMemoryLedger();
    const spec = adapter.operations['records.create']!;
    const brokenCard = { ...spec.card, cardVersion: 99 } as unknown as typeof spec.card;
    const broken = { ...adapter, operations: { 'records.create': { ...spec, card: brokenCard } } };
    const cases = [
      { adapters: [adapter], error: 'no adapter given for other.records.create', provider: 'other' },
      { adapters: [broken], error: 'cardVersion', provider: 'sandbox' },
    ];
    for (const [i, c] of cases.entries()) {
      const id = await leftDispatched(ledger, `gone-${i}`, clock.now(), c.provider);
      const runner = createRunner({ ledger, clock, random: () => 0.5 });
      const opts = { adapters: c.adapters, businessOperationId: id, handOffUndrivable: true };
      const before = await ledger.get(id);
      expect(await runner.recover(opts)).toMatchObject([{ action: 'skipped-busy' }]);
      expect(await ledger.get(id)).toEqual(before);
      clock.advance(5000);
      const [report] = await runner.recover(opts);
      expect(report).toMatchObject({ action: 'handed-off', result: { status: 'handed-off' } });
      const { handoff } = (await ledger.get(id))!;
      expect(handoff).toMatchObject({ reason: 'recovery-failed', explanation: expect.stringContaining(c.error) });
      expect(handoff?.safeNextActions).toContainEqual(expect.objectContaining({ action: 'resume', safe: false }));
    }
    expect(provider.count()).toBe(0);
  });

  it('a limited pass lists past the records it leaves as they are (no adapter here): they keep the oldest places, and the one behind them is still driven', async () => {
    const { clock, provider, adapter } = sandboxOn();
    const ledger = createMemoryLedger();
    const others = [await leftDispatched(ledger, 'a', clock.now(), 'other')];
    clock.advance(10);
    others.push(await leftDispatched(ledger, 'b', clock.now(), 'other'));
    clock.advance(10);
    const mine = await leftDispatched(ledger, 'c', clock.now());
    clock.advance(5000);
    const runner = createRunner({ ledger, clock, random: () => 0.5 });
    for (let pass = 0; pass < 2; pass++) {
      const reports = await runner.recover({ adapters: [adapter], limit: 1 });
      expect(reports.filter((r) => r.action === 'skipped-no-adapter').map((r) => r.businessOperationId)).toEqual(
        others,
      );
      expect(reports.filter((r) => r.action !== 'skipped-no-adapter')).toHaveLength(pass === 0 ? 1 : 0);
    }
    expect((await ledger.get(mine))?.state).toBe('succeeded');
    expect(provider.count()).toBe(1);
  });
});
