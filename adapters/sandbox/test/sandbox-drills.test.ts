import { asBusinessOperationId, newAttemptId, newRunId, pickIntent } from '@retrysafe/contract';
import { drills } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';

describe('drill setups exported for the CLI and the testkit', () => {
  it('start a loopback sandbox, build an adapter for it, count records and expire keys', async () => {
    expect(drills.map((d) => d.name)).toEqual(['sandbox-replaying', 'sandbox-forgetful']);
    for (const drill of drills) {
      let t = 0;
      const sandbox = await drill.startSandbox({
        clock: {
          now: () => t,
          sleep: async (ms) => {
            t += ms;
          },
        },
      });
      try {
        const adapter = await drill.createAdapter({ baseUrl: sandbox.url, timeoutMs: 2000 });
        const op = drill.operations['records.create']!;
        const params = op.params(3);
        const id = asBusinessOperationId('drill-1');
        const ctx = {
          businessOperationId: id,
          providerKey: adapter.deriveProviderKey('records.create', id),
          runId: newRunId(),
          attemptId: newAttemptId(),
          attempt: 1,
          statusRef: null,
        };
        expect((await adapter.doExecute('records.create', params, ctx)).kind).toBe('succeeded');
        const again = await adapter.doExecute('records.create', params, ctx);
        expect(again.kind).toBe(drill.name === 'sandbox-replaying' ? 'replayed' : 'succeeded');
        expect(sandbox.count('records.create')).toBe(drill.name === 'sandbox-replaying' ? 1 : 2);
        sandbox.expireKeys!();
        expect((await adapter.doExecute('records.create', params, ctx)).kind).toBe('succeeded');
        const fields = adapter.operations['records.create']!.intentFields;
        expect(pickIntent(op.changeIntent(params), fields)).not.toEqual(pickIntent(params, fields));
      } finally {
        await sandbox.close();
      }
    }
  });
});
