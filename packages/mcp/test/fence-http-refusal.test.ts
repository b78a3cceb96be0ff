// A Streamable HTTP upstream that refuses the POST of a tools/call (401/403: its token expired, or lacks a scope)
// never ran the tool, and refuses the same call again: a rejection, handed off after one call, not looked up.
import { StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { describe, expect, it } from 'vitest';
import { fenceAdapter } from './fence-helpers.js';

describe('an upstream HTTP 401/403 on the call itself', () => {
  it.each([
    [401, 'authentication'],
    [403, 'permission'],
  ])('%i ⇒ rejected (%s): one upstream call, then a handoff', async (status, reason) => {
    let calls = 0;
    const adapter = fenceAdapter({}, async () => {
      calls++;
      throw new StreamableHTTPError(status, `Error POSTing to endpoint: {"error":"invalid_token"}`);
    });
    const packets: { reason: string; explanation: string }[] = [];
    const runner = createRunner({ ledger: createMemoryLedger(), handoff: { send: (p) => void packets.push(p) } });
    const r = await runner.run(adapter, 'create_order', { params: { customer: 'cus_1', ref: `PO-${status}` } });
    expect(r.status).toBe('handed-off');
    expect(packets).toMatchObject([{ reason: 'rejected' }]);
    expect(packets[0]!.explanation).toContain(reason);
    expect(calls).toBe(1);
  });
});
