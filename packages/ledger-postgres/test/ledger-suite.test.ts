// The shared ledger suite from @retrysafe/testkit/ledger, run against a real PostgreSQL: one fresh schema per
// test (the suite asks for an empty ledger each time), all dropped at the end.
import { ledgerSuite } from '@retrysafe/testkit/ledger';
import pg from 'pg';
import { createPostgresLedger } from '../src/index.js';
import { databaseUrl, testSchema } from './pg-test-db.js';

const url = databaseUrl();
let schema = '';

ledgerSuite({
  name: 'postgres',
  async create() {
    schema = testSchema('suite');
    const ledger = createPostgresLedger({
      connectionString: url,
      schema,
      poolSize: 12,
      leaseClock: 'caller' /* the suite passes simulated times */,
    });
    await ledger.ready();
    return ledger;
  },
  async corrupt(_, id) {
    // The json columns refuse text that does not parse: a packet without its lists is what cannot be read.
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query(`UPDATE "${schema}".retrysafe_operations SET handoff = '{}' WHERE business_operation_id = $1`, [
      id,
    ]);
    await client.end();
  },
});
