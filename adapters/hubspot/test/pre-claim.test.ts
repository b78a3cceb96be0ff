import { InvalidParamsError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { afterEach, describe, expect, it } from 'vitest';
import type { HubSpotSandbox } from '../src/sandbox/index.js';
import { adapter, sandbox, ticket } from './helpers.js';

// The adapter's own checks (here: the id property is the adapter's, set from the business-operation
// id) run before the claim through OperationSpec.checkParams: no row, no request (issue 16).
let sb: HubSpotSandbox | undefined;
afterEach(async () => {
  await sb?.close();
  sb = undefined;
});

describe('HubSpot params refused before the claim', () => {
  it('a ticket that sets the adapter’s id property is an InvalidParamsError: no ledger row, no request; the corrected call creates one ticket', async () => {
    sb = await sandbox();
    const a = adapter(sb.url);
    const idProperty = 'retrysafe_operation_id'; // the adapter's default idProperty
    const ledger = createMemoryLedger();
    const runner = createRunner({ ledger });
    const bad = ticket('case-1', { [idProperty]: 'mine' });
    const err = await runner.run(a, 'tickets.create', { params: bad }).catch((e) => e);
    expect(InvalidParamsError.isInstance(err)).toBe(true);
    expect((err as InvalidParamsError).fields[0]!.message).toMatch(/adapter's id property/);
    expect(await ledger.list()).toEqual([]);
    expect(sb.requests.length).toBe(0);
    const ok = await runner.run(a, 'tickets.create', { params: ticket('case-1') });
    expect(ok.status).toBe('done');
    expect(sb.count('tickets')).toBe(1);
  });
});
