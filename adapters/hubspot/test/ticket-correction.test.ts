import { ConflictError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner, createVirtualClock } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { adapter, sb, ticket } from './helpers.js';

// The caller's ref names the ticket; the pipeline it goes into is what it is made with. A corrected pipeline
// under the same ref is a correction of the one ticket, never a second ticket.

async function rig() {
  const clock = createVirtualClock(Date.now());
  const s = await sb({ clock });
  const runner = createRunner({ ledger: createMemoryLedger(), clock, random: () => 0.5 });
  return { s, a: adapter(s.url), runner };
}

const inPipeline = (hs_pipeline: string) => ticket('T-9', { hs_pipeline });

describe('tickets.create: one ref, one ticket', () => {
  it('done, then the same ref with the pipeline corrected ⇒ a ConflictError naming it, no second ticket', async () => {
    const { s, a, runner } = await rig();
    expect(await runner.run(a, 'tickets.create', { params: inPipeline('0') })).toMatchObject({ status: 'done' });
    const err = await runner.run(a, 'tickets.create', { params: inPipeline('1') }).catch((e: unknown) => e);
    expect(ConflictError.isInstance(err) && err.paths).toEqual(['properties.hs_pipeline']);
    expect(s.records('tickets.create')).toHaveLength(1);
  });

  it('refused before processing (missing scope), then the pipeline corrected ⇒ the same operation makes the one ticket', async () => {
    const { s, a, runner } = await rig();
    s.denyScope('tickets');
    const first = await runner.run(a, 'tickets.create', { params: inPipeline('0') });
    expect(first).toMatchObject({ status: 'handed-off' });
    s.allowScope('tickets');
    const again = await runner.run(a, 'tickets.create', { params: inPipeline('1') });
    expect(again).toMatchObject({ status: 'done', businessOperationId: first.businessOperationId });
    expect(s.records('tickets.create').map((r) => r.properties.hs_pipeline)).toEqual(['1']);
  });
});
