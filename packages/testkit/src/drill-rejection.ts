/** The drill's scenario for a rejection that still created something (sideEffect.rejectionMayCreate). */
import { type AdapterV1, ConflictError, type HandoffPacket, type Ledger } from '@retrysafe/contract';
import type { createRunner } from '@retrysafe/core';
import type { DrillOutcome } from './drill-types.js';

/** What the scenario needs of the drill's harness. */
export interface ScenarioHarness {
  readonly adapter: AdapterV1;
  readonly packets: readonly HandoffPacket[];
  makeLedger(): Ledger;
  makeRunner(ledger: Ledger): ReturnType<typeof createRunner>;
}

/** A run's result as the drill counts it. */
export function outcomeOf(result: { status: string }): DrillOutcome {
  if (result.status === 'done' || result.status === 'handed-off' || result.status === 'in-progress')
    return result.status;
  return 'error';
}

/**
 * The provider rejects the call but keeps what it created (a declined create+confirm); the packet must
 * name it, and neither a corrected call of the same intent nor `resend-with` may send anything.
 */
export async function rejectionLeftObject(
  h: ScenarioHarness,
  operation: string,
  params: unknown,
  corrected: unknown,
  out: { label: string; outcomes: DrillOutcome[]; failures: string[]; notes: string[]; errors: string[] },
): Promise<void> {
  const runner = h.makeRunner(h.makeLedger());
  const first = await runner.run(h.adapter, operation, { params }).catch((err: unknown) => err as Error);
  if (first instanceof Error) {
    out.errors.push(`${first.name}: ${first.message}`);
    out.outcomes.push('error');
    return;
  }
  out.outcomes.push(outcomeOf(first));
  const created = h.packets.at(-1)?.lastKnown.created;
  if (created === undefined)
    out.failures.push(
      `${out.label}: the handoff packet does not name the object the rejected call left (lastKnown.created)`,
    );
  else out.notes.push(`the rejected call left ${created}`);
  const attempts: [string, () => Promise<unknown>][] = [
    ['a corrected call', () => runner.run(h.adapter, operation, { params: corrected })],
    [
      'resend-with',
      () =>
        runner.resolve(
          first.businessOperationId,
          { action: 'resend-with', params: corrected },
          { adapters: [h.adapter] },
        ),
    ],
  ];
  for (const [what, call] of attempts) {
    try {
      const r = (await call()) as { status: string };
      out.outcomes.push(outcomeOf(r));
      out.notes.push(`${what}: ${r.status}`);
    } catch (err) {
      out.outcomes.push(ConflictError.isInstance(err) ? 'conflict' : 'error');
      if (!ConflictError.isInstance(err)) out.errors.push(`${what}: ${(err as Error).name}: ${(err as Error).message}`);
      else out.notes.push(`${what}: refused (${(err as Error).message})`);
    }
  }
}
