// The shared ledger suite against dynalite: one fresh table per test (the suite asks for an empty
// ledger each time), all in one in-memory server started here.

import { UpdateItemCommand } from '@aws-sdk/client-dynamodb';
import { ledgerSuite } from '@retrysafe/testkit/ledger';
import { afterAll } from 'vitest';
import { createDynamoDbLedger } from '../src/index.js';
import { startDynalite } from './dynalite.js';

const db = await startDynalite();
afterAll(() => db.close());

let table = '';
ledgerSuite({
  name: 'dynamodb',
  async create() {
    table = await db.table('suite');
    return createDynamoDbLedger({ table, client: db.client() });
  },
  async corrupt(_, id) {
    const client = db.client();
    const cut = { ':t': { S: '{"businessOperationId":' } };
    const edit = { TableName: table, Key: { id: { S: id } }, UpdateExpression: 'SET #r = :t' };
    await client.send(
      new UpdateItemCommand({ ...edit, ExpressionAttributeNames: { '#r': 'record' }, ExpressionAttributeValues: cut }),
    );
    client.destroy();
  },
});
