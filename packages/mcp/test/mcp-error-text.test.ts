/**
 * A ledger that fails answers the agent with its error text: DynamoDB's refusal names the role session (often a
 * person's address), a driver's may quote a connection string. The agent sees that text blanked, as receipts are.
 */
import { LedgerError } from '@retrysafe/contract';
import { createMemoryLedger, createRunner } from '@retrysafe/core';
import { createSandboxAdapter, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { describe, expect, it } from 'vitest';
import { createRetrysafeMcpServer } from '../src/index.js';
import { clientOf } from './fence-helpers.js';

const WHO = 'assumed-role/AWSReservedSSO_Admin_0f1e/jane.doe@example.com';
const refused = () =>
  Promise.reject(
    new LedgerError(`failed: User: arn:aws:sts::123456789012:${WHO} is not authorized (postgres://app:s3cr3t-pw@db/x)`),
  );

describe('the status and hand-off lookups of a ledger that fails', () => {
  it('tell the agent why without the person or the credential', async () => {
    const ledger = createMemoryLedger();
    ledger.get = refused;
    ledger.list = refused;
    const adapter = createSandboxAdapter({ baseUrl: 'http://127.0.0.1:9', behaviour: REPLAYING_BEHAVIOUR });
    const client = await clientOf(
      createRetrysafeMcpServer({ runner: createRunner({ ledger }), ledger, adapters: [adapter] }),
    );
    // A ledger that fails is the server's error (a protocol error), not the agent's input.
    const status = await client
      .callTool({ name: 'retrysafe_status', arguments: { businessOperationId: 'x-1' } })
      .catch((e: Error) => e.message);
    const handoffs = await client
      .callTool({ name: 'retrysafe_handoffs', arguments: {} })
      .catch((e: Error) => e.message);
    const seen = JSON.stringify([status, handoffs]);
    expect(seen).toContain('is not authorized');
    for (const leak of ['jane.doe', 's3cr3t-pw']) expect(seen).not.toContain(leak);
  });
});

describe('a result the agent is shown, by the tool and by the status lookup', () => {
  it("has the provider's client token and the runner's declared field blanked", async () => {
    const ledger = createMemoryLedger();
    const base = createSandboxAdapter({ baseUrl: 'http://127.0.0.1:9', behaviour: REPLAYING_BEHAVIOUR });
    const result = { id: 'pi_1', client_secret: 'pi_1_secret_Zx81', voucher: 'voucher-8812-secret' };
    const adapter = { ...base, doExecute: async () => ({ kind: 'succeeded', result, providerRef: 'pi_1' }) as const };
    const server = createRetrysafeMcpServer({
      runner: createRunner({ ledger, redact: { fields: ['voucher'] } }),
      ledger,
      adapters: [adapter],
    });
    const client = await clientOf(server);
    const done = await client.callTool({ name: 'sandbox_records_create', arguments: { ref: 'm-1' } });
    const id = (done.structuredContent as { businessOperationId: string }).businessOperationId;
    const status = await client.callTool({ name: 'retrysafe_status', arguments: { businessOperationId: id } });
    for (const answer of [done, status]) {
      expect(answer.structuredContent).toMatchObject({ result: { id: 'pi_1', client_secret: '[redacted]' } });
      expect(JSON.stringify(answer)).not.toContain('voucher-8812-secret');
    }
  });
});
