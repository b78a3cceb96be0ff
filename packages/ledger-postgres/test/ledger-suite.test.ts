// The shared ledger suite from @retrysafe/testkit/ledger, run against a real PostgreSQL: one fresh schema per
// test (the suite asks for an empty ledger each time), all dropped at the end.
import { ledgerSuite } from '@retrysafe/testkit/ledger';
import { afterAll } from 'vitest';
import { createPostgresLedger } from '../src/index.js';
import { databaseUrl, dropSchema, freshSchema } from './pg-test-db.js';

const url = databaseUrl();
const schemas: string[] = [];

ledgerSuite({
  name: 'postgres',
  async create() {
    const schema = freshSchema('suite');
    schemas.push(schema);
    const ledger = createPostgresLedger({ connectionString: url, schema, poolSize: 12, leaseClock: 'caller' /* the suite passes simulated times */ });
    await ledger.ready();
    return ledger;
  },
});

afterAll(async () => {
  for (const s of schemas) await dropSchema(s);
});
