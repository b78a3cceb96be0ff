// The shared ledger suite from @retrysafe/testkit/ledger, run against a real PostgreSQL: one fresh schema per
// test (the suite asks for an empty ledger each time), all dropped at the end.
import { ledgerSuite } from '@retrysafe/testkit/ledger';
import { createPostgresLedger } from '../src/index.js';
import { databaseUrl, testSchema } from './pg-test-db.js';

const url = databaseUrl();

ledgerSuite({
  name: 'postgres',
  async create() {
    const schema = testSchema('suite');
    const ledger = createPostgresLedger({
      connectionString: url,
      schema,
      poolSize: 12,
      leaseClock: 'caller' /* the suite passes simulated times */,
    });
    await ledger.ready();
    return ledger;
  },
});
