import { createMemoryLedger, createRunner, exportReceiptsJsonl } from '@retrysafe/core';
import { startFaultProxy } from '@retrysafe/testkit';
import { closeAfterTest } from '@retrysafe/testkit/close-after-test';
import { describe, expect, it } from 'vitest';
import { propertyValidationError } from '../src/sandbox/hubspot-errors-shapes.js';
import { adapter, order, sb, ticket } from './helpers.js';

// HubSpot's validation message quotes the value it refused (developers.hubspot.com/changelog/breaking-change-enhanced-
// validations-for-non-string-properties-in-hubspots-crmobject-apis: `"{{input_value}}" includes leading or trailing
// whitespace.`): a property value is personal data whatever the property is called, on every operation that sends it.
const VALUE = 'Jane Roe, Flat 4 ';

describe('a property value HubSpot quotes in its validation message', () => {
  for (const [op, params] of [
    ['objects.upsert', { ...order('R-1'), properties: { ...order('R-1').properties, buyer: VALUE } }],
    ['tickets.create', ticket('R-2', { hs_ticket_category: VALUE })],
  ] as const) {
    it(`${op}: never reaches the receipts, the packet or the RunResult`, async () => {
      const s = await sb();
      const body = propertyValidationError([
        {
          name: 'buyer',
          error: 'LEADING_TRAILING_WHITESPACE',
          message: `"${VALUE}" includes leading or trailing whitespace.`,
        },
      ]);
      const p = closeAfterTest(
        await startFaultProxy({ target: s.url, faults: [{ kind: 'status', status: 400, body }] }),
      );
      const ledger = createMemoryLedger();
      const r = await createRunner({ ledger }).run(adapter(p.url), op, { params });
      expect(r.status).toBe('handed-off');
      expect(JSON.stringify(r) + (await exportReceiptsJsonl(ledger))).not.toContain('Jane Roe');
    });
  }
});
