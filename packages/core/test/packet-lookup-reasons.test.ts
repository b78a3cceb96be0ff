import type { HandoffPacket } from '@retrysafe/contract';
import { expect, it } from 'vitest';
import { setup } from './helpers.js';

const OP = 'records.create';

it("a packet's lookup attempts carry what each lookup said, so a person sees why nothing could tell", async () => {
  const { provider, adapter, runner } = setup({ replays: false, retentionMs: null });
  const blind = {
    ...adapter,
    doLookup: async () => ({ kind: 'cannot-tell' as const, reason: 'the search index answered 503' }),
  };
  provider.failNext({ kind: 'unknown-after-commit' });
  const r = await runner.run(blind, OP, { params: { ref: 'lookup-reasons' } });
  expect(r.status).toBe('handed-off');
  const packet = (r as { packet: HandoffPacket }).packet;
  const lookups = packet.attempts.filter((a) => a.kind === 'lookup');
  expect(lookups.length).toBeGreaterThan(0);
  for (const a of lookups) expect(a.message).toBe('the search index answered 503');
  expect(packet.attempts.find((a) => a.kind === 'dispatch')).toMatchObject({ outcome: 'unknown' });
});
