import { operationParamsErrors } from '@retrysafe/contract/provider';
import { paramsErrors } from '@retrysafe/core/internal';
import { describe, expect, it } from 'vitest';
import { adapter } from './helpers.js';

// The params schema is the one definition of what each HubSpot operation accepts (plus the id-property
// rule, which depends on an option): the runner refuses these before the claim, the frame on every
// attempt. One row per rule the adapter used to hand-check.
const a = adapter('http://127.0.0.1:9');
const ticketProps = { subject: 's', hs_pipeline: '0', hs_pipeline_stage: '1' };
const valid = {
  'contacts.update': { contactId: '1', properties: { firstname: 'Ada' } },
  'objects.upsert': { objectType: '2-100', ref: 'o-1', properties: { amount: '3' } },
  'tickets.create': { ref: 'case-1', properties: ticketProps },
} as const;
const cases: [operation: keyof typeof valid, why: string, params: unknown][] = [
  ['contacts.update', 'params not an object', []],
  ['contacts.update', 'blank contact id', { contactId: '  ', properties: { firstname: 'Ada' } }],
  ['contacts.update', 'an unexpected param', { ...valid['contacts.update'], extra: 1 }],
  ['contacts.update', 'no properties', { contactId: '1', properties: {} }],
  ['contacts.update', 'a property name HubSpot does not have', { contactId: '1', properties: { 'first name': 'Ada' } }],
  ['objects.upsert', 'object type with a path', { objectType: '2-100/x', ref: 'o-1', properties: { amount: '3' } }],
  [
    'objects.upsert',
    'object type by name (the id is its one spelling)',
    { objectType: 'p100_orders', ref: 'o-1', properties: { amount: '3' } },
  ],
  [
    'objects.upsert',
    'object type id with a leading zero',
    { objectType: '2-0100', ref: 'o-1', properties: { amount: '3' } },
  ],
  ['objects.upsert', 'blank object type', { objectType: ' ', ref: 'o-1', properties: { amount: '3' } }],
  [
    'objects.upsert',
    'object type a dot segment (the URL would resolve to another path)',
    { objectType: '..', ref: 'o-1', properties: { amount: '3' } },
  ],
  ['contacts.update', 'contact id a dot segment', { contactId: '..', properties: { firstname: 'Ada' } }],
  ['contacts.update', 'contact id a single dot', { contactId: '.', properties: { firstname: 'Ada' } }],
  // HubSpot gets strings only: 3 beside '3' would be two business operations (two records) for one value sent.
  ['objects.upsert', 'a number property value', { objectType: '2-100', ref: 'o-1', properties: { amount: 3 } }],
  ['contacts.update', 'a boolean property value', { contactId: '1', properties: { opted_in: true } }],
  ['objects.upsert', 'a nested property value', { objectType: '2-100', ref: 'o-1', properties: { amount: { n: 1 } } }],
  [
    'objects.upsert',
    "the adapter's id property",
    { objectType: '2-100', ref: 'o-1', properties: { retrysafe_operation_id: 'mine' } },
  ],
  ['objects.upsert', 'no ref (the record it names)', { objectType: '2-100', properties: { amount: '3' } }],
  ['tickets.create', 'blank ref', { ref: ' ', properties: ticketProps }],
  ['tickets.create', 'no pipeline stage', { ref: 'x', properties: { subject: 's', hs_pipeline: '0' } }],
  ['tickets.create', 'blank subject', { ref: 'x', properties: { ...ticketProps, subject: ' ' } }],
  [
    'tickets.create',
    "the adapter's id property",
    { ref: 'x', properties: { ...ticketProps, retrysafe_operation_id: 'mine' } },
  ],
];

describe('HubSpot params schemas', () => {
  it.each(Object.entries(valid))('%s accepts valid params', (name, params) => {
    const op = a.operations[name as keyof typeof valid];
    expect(paramsErrors(op, params)).toEqual([]);
    expect(operationParamsErrors(op, params)).toEqual([]);
  });
  it.each(cases)('%s refuses: %s', (name, _why, params) => {
    const op = a.operations[name];
    expect(paramsErrors(op, params)).not.toEqual([]);
    expect(operationParamsErrors(op, params)).not.toEqual([]);
  });
});
