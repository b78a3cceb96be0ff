// The shared ledger suite against dynalite: one fresh table per test (the suite asks for an empty
// ledger each time), all in one in-memory server started here.
import { ledgerSuite } from '@retrysafe/testkit/ledger';
import { afterAll } from 'vitest';
import { createDynamoDbLedger } from '../src/index.js';
import { startDynalite } from './dynalite.js';

const db = await startDynalite();
afterAll(() => db.close());

ledgerSuite({
  name: 'dynamodb',
  create: async () => createDynamoDbLedger({ table: await db.table('suite'), client: db.client() }),
});
