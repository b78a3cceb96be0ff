// What a clean operation costs: the runner on this ledger makes two writes (the claim that creates the
// operation already dispatched, then `succeeded` with its receipt) and no read. The capacity units are
// the ones DynamoDB's API reports for each request (ReturnConsumedCapacity: TOTAL), as dynalite computes them.
import type { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createRunner } from '@retrysafe/core';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { afterAll, expect, it } from 'vitest';
import { createDynamoDbLedger } from '../src/index.js';
import { startDynalite } from './dynalite.js';

const db = await startDynalite();
afterAll(() => db.close());

/** Asks every request for its consumed capacity and notes it, by command. */
function metered(client: DynamoDBClient) {
  const used: Array<{ command: string; units: number }> = [];
  client.middlewareStack.add(
    (next, context) => async (args) => {
      (args.input as { ReturnConsumedCapacity?: string }).ReturnConsumedCapacity = 'TOTAL';
      const out = await next(args);
      const units =
        (out.output as { ConsumedCapacity?: { CapacityUnits?: number } }).ConsumedCapacity?.CapacityUnits ?? 0;
      used.push({ command: context.commandName ?? '?', units });
      return out;
    },
    { step: 'initialize', name: 'meterCapacity' },
  );
  return used;
}

it('a clean operation is one PutItem and one UpdateItem, no read: its write units as the API reports them', async () => {
  const client = db.client();
  const used = metered(client);
  const ledger = createDynamoDbLedger({ table: await db.table('capacity'), client });
  const provider = createSandboxProvider(REPLAYING_BEHAVIOUR);
  const runner = createRunner({ ledger, owner: 'w-clean' });
  const r = await runner.run(createSandboxAdapter({ provider }), 'records.create', {
    params: { ref: 'order-1001', amount: 4200, currency: 'eur' },
  });
  expect(r.status).toBe('done');
  expect(used.map((u) => u.command)).toEqual(['PutItemCommand', 'UpdateItemCommand']);
  const writeUnits = used.reduce((sum, u) => sum + u.units, 0);
  // The number the README states: the claim's item is under 1 KB, the final one (with its receipt) under 2 KB.
  expect(used.map((u) => u.units)).toEqual([1, 2]);
  expect(writeUnits).toBe(3);
  console.log(
    `dynamodb clean operation: ${used.map((u) => `${u.command} ${u.units} WCU`).join(', ')}; ${writeUnits} write units, 0 read units`,
  );
  await ledger.close();
  client.destroy();
});
