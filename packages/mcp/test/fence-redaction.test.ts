/**
 * An upstream tool's error text often repeats the arguments it was called with ("unknown sku …", "cannot create an
 * order for <customer>"). The fence keeps that text in receipts, the handoff packet, log lines and the answer to the
 * host, so the argument values in it are blanked there, as an adapter's `sensitiveFields` are.
 */
import { createMemoryLedger, createRunner, exportReceiptsJsonl, type LogEntry } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { createFenceAdapter, parseFenceConfig } from '../src/index.js';
import { fenceAdapter } from './fence-helpers.js';

const CUSTOMER = 'Jane Roe';
const LINE = 'insulin pen refill, 3 boxes';

describe("a fenced tool's error text that repeats the call's arguments", () => {
  it('keeps the text but not the argument values: RunResult, receipts, packet and log lines', async () => {
    const seen: string[] = [];
    const adapter = fenceAdapter({}, async () => ({
      isError: true,
      content: [{ type: 'text', text: `cannot create an order for ${CUSTOMER} (lines: ${LINE}): credit hold` }],
    }));
    const ledger = createMemoryLedger();
    const packets: unknown[] = [];
    const logs: LogEntry[] = [];
    const runner = createRunner({
      ledger,
      logger: (e) => logs.push(e),
      handoff: { send: async (p) => void packets.push(p) },
    });
    const r = await runner.run(adapter, 'create_order', {
      params: { customer: CUSTOMER, ref: 'PO-77', lines: [LINE] },
    });
    expect(r.status).toBe('handed-off');
    seen.push(JSON.stringify(r), await exportReceiptsJsonl(ledger), JSON.stringify(packets), JSON.stringify(logs));
    const all = seen.join('\n');
    expect(all).toContain('credit hold');
    expect(all).not.toContain(CUSTOMER);
    expect(all).not.toContain('insulin');
  });

  const properties = {
    ref: { type: 'string' },
    quantity: { type: 'integer' },
    express: { type: 'boolean' },
    recipient: { type: 'object', properties: { name: { type: 'string' } } },
  };
  it.each([
    ['listed', { type: 'object', properties }],
    ['a model under $defs (a Python tool)', { type: 'object', $defs: { Ship: { properties } }, $ref: '#/$defs/Ship' }],
  ])(
    'blanks every argument but numbers and flags, which stay readable (the runner writes its own counts and waits): %s',
    async (_, inputSchema) => {
      const config = parseFenceConfig({
        name: 'shop',
        ledger: './unused.db',
        tools: { ship: { kind: 'send', intent: ['ref'], toolErrors: 'rejected' } },
      });
      const adapter = createFenceAdapter({
        config,
        client: {
          callTool: async () => ({
            isError: true,
            content: [{ type: 'text', text: `cannot ship 1500 units to ${CUSTOMER} under S-4411` }],
          }),
        },
        tools: [{ name: 'ship', inputSchema: inputSchema as { type: 'object' } }],
      });
      const ledger = createMemoryLedger();
      const r = await createRunner({ ledger }).run(adapter, 'ship', {
        params: { ref: 'S-4411', quantity: 1500, express: true, recipient: { name: CUSTOMER } },
      });
      expect(r.status).toBe('handed-off');
      const receipts = await exportReceiptsJsonl(ledger);
      expect(receipts).toContain('cannot ship 1500 units to [redacted] under [redacted]');
    },
  );
});
