// A wrapped adapter keeps what names its operations (account, intent resolution): the drill and the crash worker run
// the same ids the adapter alone gives.
import { createSandboxAdapter, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { wrapAdapter } from '../src/wrap-adapter.js';

describe('wrapAdapter', () => {
  it('keeps the inner adapter’s account and doResolveIntent', async () => {
    const base = createSandboxAdapter({
      baseUrl: 'http://127.0.0.1:9',
      behaviour: REPLAYING_BEHAVIOUR,
      account: 'ann',
    });
    const inner = { ...base, doResolveIntent: async (_op: string, intent: Record<string, unknown>) => intent };
    const wrapped = wrapAdapter(inner, { doExecute: inner.doExecute, doLookup: inner.doLookup });
    expect(wrapped.account).toBe('ann');
    expect(await wrapped.doResolveIntent?.('create', { ref: 'a' })).toEqual({ ref: 'a' });
  });
});
