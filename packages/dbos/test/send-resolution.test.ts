/**
 * sendResolution from outside the app: a DBOSClient is told of no event and reads the database on an interval of its
 * own (10 s unless asked), so each wait of the sender must ask for a short one.
 */
import type { DBOSClient } from '@dbos-inc/dbos-sdk';
import { describe, expect, it } from 'vitest';
import { sendResolution } from '../src/index.js';

type Options = Parameters<DBOSClient['getEvent']>[2];

describe('sendResolution', () => {
  it('asks for the workflow’s answer and waits on a short polling interval, as a client outside the app needs', async () => {
    const asked: Options[] = [];
    const sender = {
      send: async () => undefined,
      getWorkflowStatus: async () => ({ status: 'PENDING' }),
      getEvent: async (_wf: string, key: string, options?: Options) => {
        asked.push(options);
        if (key.startsWith('retrysafe.wait:')) return { wait: 1, open: true };
        if (key.startsWith('retrysafe.answer:')) return { applied: true };
        return null;
      },
    } as unknown as Parameters<typeof sendResolution>[0];
    const answer = sendResolution(
      sender,
      'wf-1',
      'sandbox.charge:1',
      { action: 'abandon', by: 'bob' },
      { awaitSeconds: 30 },
    );
    expect(await answer).toBe('applied');
    const waits = asked.filter((o) => typeof o === 'object' && (o.timeoutSeconds ?? 0) > 0);
    expect(waits.length).toBeGreaterThan(0);
    for (const o of asked) expect(o).toMatchObject({ pollingIntervalMs: expect.any(Number) });
    for (const o of waits) expect((o as { pollingIntervalMs: number }).pollingIntervalMs).toBeLessThanOrEqual(1000);
  });
});
