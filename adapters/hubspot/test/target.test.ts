import { businessOperationId, InvalidIntentError, InvalidParamsError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { agentRunner, agentTools, callAgentTool } from '@retrysafe/core/agent';
import { describe, expect, it } from 'vitest';
import { defaultObjectTypes } from '../src/sandbox/index.js';
import { adapter, sb, TOKEN } from './helpers.js';

// contacts.update's idProperty selects the contact: `101` by record id and `101` by a unique customer number are two
// contacts, so two operations; a call that leaves idProperty out keeps the id it always had.
const [contacts, ...others] = defaultObjectTypes();
const withNumber = {
  ...contacts!,
  properties: [...contacts!.properties, 'customer_number'],
  unique: [...contacts!.unique, 'customer_number'],
};

/** A sandbox holding one contact, Ada, and a runner on a fresh ledger. */
async function withAda() {
  const s = await sb();
  const c = s.seed('contacts', { email: 'ada@example.test' });
  return { s, c, runner: createRunner({ ledger: createMemoryLedger() }), a: adapter(s.url) };
}

describe('contacts.update: the contact idProperty names is part of the intent', () => {
  it('the same value by record id and by a unique property updates both contacts', async () => {
    const s = await sb({ objectTypes: [withNumber, ...others] });
    const byId = s.seed('contacts', { email: 'ada@example.test' });
    const byNumber = s.seed('contacts', { email: 'bob@example.test', customer_number: byId.id });
    const runner = createRunner({ ledger: createMemoryLedger() });
    const a = adapter(s.url);
    const properties = { lifecyclestage: 'customer' };
    const first = await runner.run(a, 'contacts.update', { params: { contactId: byId.id, properties } });
    const second = await runner.run(a, 'contacts.update', {
      params: { contactId: byId.id, idProperty: 'customer_number', properties },
    });
    expect(second.businessOperationId).not.toBe(first.businessOperationId);
    expect(second).toMatchObject({ status: 'done', result: { id: byNumber.id } });
    const stages = s.records('contacts').map((r) => r.properties.lifecyclestage);
    expect(stages).toEqual(['customer', 'customer']);
  });

  it('left out (or undefined) it is the id it always was: a repeat is the same operation, not a second PATCH', async () => {
    const { s, c, runner, a } = await withAda();
    const params = { contactId: c.id, properties: { lifecyclestage: 'customer' } };
    const first = await runner.run(a, 'contacts.update', { params });
    expect(first.businessOperationId).toBe(businessOperationId('hubspot.contacts.update', { contactId: c.id }));
    const again = await runner.run(a, 'contacts.update', { params: { ...params, idProperty: undefined } });
    expect(again.businessOperationId).toBe(first.businessOperationId);
    expect(s.writes('contacts')).toBe(1);
  });

  it('a contact by email (or hs_object_id) is read as its record id: one operation, and an email of no contact is refused unsent', async () => {
    const { s, c, runner, a } = await withAda();
    const set = (by: { contactId: string; idProperty?: string }) =>
      runner.run(a, 'contacts.update', { params: { ...by, properties: { jobtitle: 'A' } } });
    const byId = await set({ contactId: c.id });
    const byEmail = await set({ contactId: 'ada@example.test', idProperty: 'email' });
    const byObjectId = await set({ contactId: c.id, idProperty: 'hs_object_id' });
    expect(byEmail.businessOperationId).toBe(byId.businessOperationId);
    expect(byObjectId.businessOperationId).toBe(byId.businessOperationId);
    const nobody = set({ contactId: 'nobody@example.test', idProperty: 'email' });
    await expect(nobody).rejects.toSatisfy(InvalidIntentError.isInstance);
    expect(s.writes('contacts')).toBe(3);
  });

  it('by record id only as HubSpot writes one (digits, no leading zero): another spelling of contact 101 would be a second operation on it, refused unsent', async () => {
    const { s, c, runner, a } = await withAda();
    for (const by of [{}, { idProperty: 'hs_object_id' }])
      for (const contactId of [`0${c.id}`, ` ${c.id}`, `${c.id} `, `+${c.id}`]) {
        const params = { contactId, ...by, properties: { jobtitle: 'A' } };
        const err = await runner.run(a, 'contacts.update', { params }).catch((e: unknown) => e);
        expect(InvalidParamsError.isInstance(err), contactId).toBe(true);
      }
    expect(s.requests.length).toBe(0);
  });

  it('sends by the record id read before the claim: an email that passes to another contact before the send never updates that one', async () => {
    const s = await sb();
    const ada = s.seed('contacts', { email: 'ada@example.test' });
    const bob = s.seed('contacts', { email: 'bob@example.test' });
    const a = adapter(s.url);
    const patch = (id: string, email: string) =>
      fetch(`${s.url}/crm/v3/objects/contacts/${id}`, {
        method: 'PATCH',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({ properties: { email } }),
      });
    // Read as contact ada, then (before the claim's send) ada's email passes to bob.
    const moving: typeof a = {
      ...a,
      async doResolveIntent(...args) {
        const read = await a.doResolveIntent!(...args);
        await patch(ada.id, 'ada.old@example.test');
        await patch(bob.id, 'ada@example.test');
        return read;
      },
    };
    const runner = createRunner({ ledger: createMemoryLedger() });
    const params = { contactId: 'ada@example.test', idProperty: 'email', properties: { jobtitle: 'CTO' } };
    const done = await runner.run(moving, 'contacts.update', { params });
    expect(done.businessOperationId).toBe(businessOperationId('hubspot.contacts.update', { contactId: ada.id }));
    expect(done).toMatchObject({ status: 'done', result: { id: ada.id } });
    const titles = s.records('contacts').map((r) => [r.id, r.properties.jobtitle]);
    expect(titles).toEqual([
      [ada.id, 'CTO'],
      [bob.id, undefined],
    ]);
  });

  it('a refusal says only what HubSpot answered: no such contact (404), a read the token may not make (403), or a token HubSpot refuses (401)', async () => {
    const s = await sb();
    const runner = createRunner({ ledger: createMemoryLedger() });
    const a = adapter(s.url);
    const set = (contactId: string) =>
      runner.run(a, 'contacts.update', { params: { contactId, idProperty: 'email', properties: { jobtitle: 'A' } } });
    const nobody = await set('nobody@example.test').catch((e: unknown) => e);
    expect(InvalidIntentError.isInstance(nobody)).toBe(true);
    expect((nobody as InvalidIntentError).reason).toMatch(/no contact/);
    expect((nobody as InvalidIntentError).reason).not.toMatch(/contacts\.read/);
    s.seed('contacts', { email: 'ada@example.test' });
    s.denyScope('contacts');
    const denied = await set('ada@example.test').catch((e: unknown) => e);
    expect(InvalidIntentError.isInstance(denied)).toBe(true);
    expect((denied as InvalidIntentError).reason).toMatch(/crm\.objects\.contacts\.read.*record id/);
    // A token HubSpot does not accept (401) lacks no scope: a new scope would not help.
    const expired = adapter(s.url, { accessToken: 'pat-na1-expired' });
    const params = { contactId: 'ada@example.test', idProperty: 'email', properties: { jobtitle: 'A' } };
    const refused = await runner.run(expired, 'contacts.update', { params }).catch((e: unknown) => e);
    expect(InvalidIntentError.isInstance(refused)).toBe(true);
    expect((refused as InvalidIntentError).reason).toMatch(/refused the token/);
    expect((refused as InvalidIntentError).reason).not.toMatch(/contacts\.read/);
    expect(s.writes('contacts')).toBe(0);
  });

  it('only contacts.update resolves: an invalid ticket or upsert is answered with its id', async () => {
    const s = await sb();
    const a = adapter(s.url);
    expect(Object.entries(a.operations).map(([n, op]) => [n, op.resolvesIntent === true])).toEqual([
      ['contacts.update', true],
      ['objects.upsert', false],
      ['tickets.create', false],
    ]);
    const agent = agentRunner(createRunner({ ledger: createMemoryLedger() }));
    const calls = {
      hubspot_tickets_create: { ref: 'case-1', properties: { subject: 'S' } },
      hubspot_objects_upsert: { objectType: '2-1', ref: 'order-1', properties: {} },
    };
    for (const tool of agentTools([a], Object.keys(calls))) {
      const answer = await callAgentTool(agent, tool, calls[tool.name as keyof typeof calls]);
      expect(answer).toMatchObject({ status: 'invalid-input', businessOperationId: expect.any(String) });
      expect(answer.message).not.toMatch(/resolves/);
    }
  });
});
