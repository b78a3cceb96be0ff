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

describe('contacts.update that changes the unique value it is addressed by', () => {
  it('is an InvalidParamsError before the claim (a repeat could no longer find the contact); by record id it runs and repeats', async () => {
    sb = await sandbox();
    const c = sb.seed('contacts', { email: 'old@example.test' });
    const a = adapter(sb.url);
    const ledger = createMemoryLedger();
    const runner = createRunner({ ledger });
    const moving = { contactId: 'old@example.test', idProperty: 'email', properties: { email: 'new@example.test' } };
    const err = await runner.run(a, 'contacts.update', { params: moving }).catch((e) => e);
    expect(InvalidParamsError.isInstance(err)).toBe(true);
    expect((err as InvalidParamsError).fields).toEqual([
      { path: 'properties.email', message: expect.stringMatching(/record id/) },
    ]);
    expect(await ledger.list()).toEqual([]);
    expect(sb.requests.length).toBe(0);
    // Only the letter case changed: whether HubSpot finds a contact by email regardless of case is not documented.
    const recased = { ...moving, properties: { email: 'Old@Example.test' } };
    const caseErr = await runner.run(a, 'contacts.update', { params: recased }).catch((e) => e);
    expect(InvalidParamsError.isInstance(caseErr)).toBe(true);
    expect((caseErr as InvalidParamsError).fields[0]!.message).toMatch(
      /only its letter case.*not documented.*record id/,
    );
    expect(sb.requests.length).toBe(0);
    // The same value it is addressed by moves nothing.
    const same = { ...moving, properties: { email: 'old@example.test', firstname: 'Ada' } };
    expect(await runner.run(a, 'contacts.update', { params: same })).toMatchObject({ status: 'done' });
    const byId = { contactId: c.id, properties: { email: 'new@example.test' } };
    const first = await runner.run(a, 'contacts.update', { params: byId });
    const again = await runner.run(a, 'contacts.update', { params: byId });
    expect(again).toMatchObject({ status: 'done', businessOperationId: first.businessOperationId });
    expect(sb.writes('contacts')).toBe(2);
  });
});
