import { CreateTableCommand } from '@aws-sdk/client-dynamodb';
import type { BusinessOperationId } from '@retrysafe/contract';
import { claimOf } from '@retrysafe/testkit/ledger';
import { afterAll, it } from 'vitest';
import { createDynamoDbLedger } from '../src/index.js';
import { startDynalite } from './dynalite.js';

const db = await startDynalite();
afterAll(() => db.close());
const show = async (what: string, p: Promise<unknown>) =>
  console.log(what, '=>', await p.then((v) => JSON.stringify(v)?.slice(0, 200), (e) => `${e.name}: ${e.message}`));

it('probe', async () => {
  const admin = db.client();
  const l1 = createDynamoDbLedger({ table: 'nope-table', client: db.client() });
  await show('missing claim', l1.claim(claimOf('a' as BusinessOperationId)));
  await show('missing list', l1.list());
  await show('missing recover', l1.recoverCandidates(Date.now()));
  await admin.send(new CreateTableCommand({ TableName: 'wrongkey', BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }] }));
  const l2 = createDynamoDbLedger({ table: 'wrongkey', client: db.client() });
  await show('wrongkey claim', l2.claim(claimOf('a' as BusinessOperationId)));
  await show('wrongkey get', l2.get('a' as BusinessOperationId));
  await admin.send(new CreateTableCommand({ TableName: 'noindex', BillingMode: 'PAY_PER_REQUEST', AttributeDefinitions: [{ AttributeName: 'id', AttributeType: 'S' }], KeySchema: [{ AttributeName: 'id', KeyType: 'HASH' }] }));
  const l3 = createDynamoDbLedger({ table: 'noindex', client: db.client() });
  await show('noindex claim', l3.claim(claimOf('a' as BusinessOperationId)));
  await show('noindex recover', l3.recoverCandidates(Date.now()));
  await show('noindex handoffs', l3.list({ states: ['handed-off'] }));
});
