import type { HandoffPacket } from '@retrysafe/contract';
import type { LogEntry } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

// A sink that never settles (a webhook that hangs): the packet is already in the ledger, so run() must not wait for
// the sink longer than the run's maxElapsed; it returns handed-off with a warning, and a late settle changes nothing.
const OP = 'records.create';
const policy = { maxElapsedMs: 300 };

function hangingSink() {
  const late = { settle: () => {}, sent: [] as HandoffPacket[] };
  const sink = {
    send: (p: HandoffPacket) => {
      late.sent.push(p);
      return new Promise<void>((resolve) => (late.settle = resolve));
    },
  };
  return { sink, late };
}

describe('a handoff sink that never settles', () => {
  it('run() returns handed-off after maxElapsed, the packet in the ledger, a warning logged; a late settle changes nothing', async () => {
    const { sink, late } = hangingSink();
    const logs: LogEntry[] = [];
    const { provider, adapter, runner, ledger } = setup({}, { handoff: sink, policy, logger: (e) => logs.push(e) });
    provider.failNext({ kind: 'rejected' });
    const r = await runner.run(adapter, OP, { params: { ref: 'sink-1' } });
    expect(r.status).toBe('handed-off');
    expect(late.sent).toHaveLength(1);
    const rec = await ledger.get(r.businessOperationId);
    expect(rec).toMatchObject({ state: 'handed-off', leaseOwner: null, handoff: { reason: 'rejected' } });
    expect(logs.filter((e) => e.event === 'handoff-sink-unconfirmed')).toHaveLength(1);
    const before = [await ledger.list(), await ledger.receipts(r.businessOperationId), logs.length];
    late.settle();
    await new Promise((done) => setTimeout(done, 20));
    expect([await ledger.list(), await ledger.receipts(r.businessOperationId), logs.length]).toEqual(before);
  }, 5000);

  it('a sink whose promise rejects is logged as failed, as a throwing one is: handed-off, not unconfirmed', async () => {
    const logs: LogEntry[] = [];
    const handoff = { send: () => Promise.reject(new Error('pager down')) };
    const { provider, adapter, runner } = setup({}, { handoff, policy, logger: (e) => logs.push(e) });
    provider.failNext({ kind: 'rejected' });
    const r = await runner.run(adapter, OP, { params: { ref: 'sink-2' } });
    expect(r.status).toBe('handed-off');
    expect(logs.map((e) => e.event).filter((e) => e.startsWith('handoff-sink'))).toEqual(['handoff-sink-failed']);
  });
});

describe('a handoff sink, when the caller has already given up', () => {
  it('run() does not wait for the sink once the caller aborted: the packet is in the ledger and is still sent', async () => {
    const { sink, late } = hangingSink();
    const logs: LogEntry[] = [];
    const caller = new AbortController();
    // The caller gives up just after the provider's rejection came back: the hand-off comes after the abort.
    const logger = (e: LogEntry) => {
      logs.push(e);
      if (e.event === 'outcome') caller.abort();
    };
    const slow = { maxElapsedMs: 60_000 };
    const { provider, adapter, runner, ledger } = setup({}, { handoff: sink, policy: slow, logger });
    provider.failNext({ kind: 'rejected' });
    const r = await runner.run(adapter, OP, { params: { ref: 'sink-3' }, signal: caller.signal });
    expect(r.status).toBe('handed-off');
    expect(late.sent).toHaveLength(1);
    expect(await ledger.get(r.businessOperationId)).toMatchObject({ state: 'handed-off', leaseOwner: null });
    expect(logs.filter((e) => e.event === 'handoff-sink-unconfirmed')).toHaveLength(1);
  }, 5000);
});
