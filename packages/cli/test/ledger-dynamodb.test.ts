// `retrysafe ledger` on a DynamoDB ledger named in a config file ({ ledger: { dynamodb: { table, region,
// endpoint } } }), against dynalite on a loopback port; the credentials come from the environment only.

import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { CreateTableCommand, ListTablesCommand } from '@aws-sdk/client-dynamodb';
import { createRunner } from '@retrysafe/core';
import { createDynamoDbLedger } from '@retrysafe/ledger-dynamodb';
import { createSandboxAdapter, createSandboxProvider, REPLAYING_BEHAVIOUR } from '@retrysafe/sandbox';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startLocalDynamo } from '../../mcp/test/local-dynamo.js';
import { cli, tempDir } from './helpers.js';

const dir = tempDir('ledger-dynamodb');
const config = join(dir, 'retrysafe.json');
const env = { AWS_ACCESS_KEY_ID: 'test', AWS_SECRET_ACCESS_KEY: 'test', AWS_REGION: undefined, AWS_PROFILE: undefined };
const ids: string[] = [];
let dynamo: Awaited<ReturnType<typeof startLocalDynamo>> | undefined;

beforeAll(async () => {
  const { endpoint, client } = (dynamo = await startLocalDynamo('retrysafe-cli'));
  const ledger = createDynamoDbLedger({ table: 'retrysafe-cli', client });
  const adapter = createSandboxAdapter({ provider: createSandboxProvider({ ...REPLAYING_BEHAVIOUR }) });
  const runner = createRunner({ ledger, owner: 'cli-test' });
  for (const ref of ['order-1', 'order-2'])
    ids.push((await runner.run(adapter, 'records.create', { params: { ref, amount: 5 } })).businessOperationId);
  await ledger.close();
  writeFileSync(
    config,
    JSON.stringify({
      ledger: { dynamodb: { table: 'retrysafe-cli', region: 'local', endpoint } },
      adapters: { sandbox: { baseUrl: 'http://127.0.0.1:9/', timeoutMs: 2000, behaviour: REPLAYING_BEHAVIOUR } },
    }),
  );
});
afterAll(() => dynamo?.close());

it('ledger ls lists the operations of a DynamoDB ledger named in the config', async () => {
  const r = await cli(['ledger', 'ls', '--config', config, '--json'], { cwd: dir, env });
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  const rows = JSON.parse(r.stdout) as Array<{ businessOperationId: string; state: string }>;
  expect(rows.map((x) => x.businessOperationId).sort()).toEqual([...ids].sort());
  expect(rows.every((x) => x.state === 'succeeded')).toBe(true);
  const open = await cli(['ledger', 'ls', '--config', config, '--state', 'handed-off', '--json'], { cwd: dir, env });
  expect(JSON.parse(open.stdout)).toEqual([]);
});

it('a config naming a table that does not exist, or one keyed otherwise, is exit 2, saying so; no table is created', async () => {
  await dynamo!.client.send(
    new CreateTableCommand({
      TableName: 'other-keys',
      BillingMode: 'PAY_PER_REQUEST',
      AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
      KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
    }),
  );
  const raw = JSON.parse(readFileSync(config, 'utf8'));
  for (const [table, said, args] of [
    ['no-such-table', /table no-such-table does not exist/, ['ledger', 'resolve', 'op-1', '--abandon']],
    ['other-keys', /table other-keys is not keyed as the ledger needs/, ['ledger', 'handoffs']],
  ] as const) {
    const other = join(dir, `${table}.json`);
    writeFileSync(other, JSON.stringify({ ...raw, ledger: { dynamodb: { ...raw.ledger.dynamodb, table } } }));
    const r = await cli([...args, '--config', other], { cwd: dir, env });
    expect(r.stderr).toMatch(said);
    expect(r.code).toBe(2);
  }
  const tables = (await dynamo!.client.send(new ListTablesCommand({}))).TableNames;
  expect(tables?.sort()).toEqual(['other-keys', 'retrysafe-cli']);
});
