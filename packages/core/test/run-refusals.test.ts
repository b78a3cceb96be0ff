// A refusal before the claim (unknown operation, input that is not an object, params over the limits,
// an invalid runId) comes back from run() as a rejected promise, never as a synchronous throw, whatever
// the intake does synchronously; and nothing is claimed.
import { describe, expect, it } from 'vitest';
import { setup } from './helpers.js';

describe('run() refusals before the claim', () => {
  it('reject the returned promise (no synchronous throw) and claim nothing', async () => {
    const { runner, adapter, ledger } = setup();
    const deep: Record<string, unknown> = {};
    let d = deep;
    for (let i = 0; i < 200; i++) d = (d.x = {}) as Record<string, unknown>;
    const cases: [string, unknown][] = [
      ['no.such.operation', { params: { ref: 'a' } }],
      ['records.create', null],
      ['records.create', { params: deep }],
      ['records.create', { params: { ref: 'b' }, runId: 42 }],
    ];
    for (const [op, input] of cases) {
      let returned: Promise<unknown> | undefined;
      expect(() => {
        returned = runner.run(adapter, op as never, input as never);
      }).not.toThrow();
      await expect(returned).rejects.toBeInstanceOf(Error);
    }
    expect(await ledger.list()).toEqual([]);
  });
});
