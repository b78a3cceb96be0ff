// The DynamoDB ledger's side of `pnpm bench`: dynalite (DynamoDB in JavaScript, in memory) on a
// loopback port in the bench process, a fresh table per measurement, the official client in each worker.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createDynamoDbLedger, ensureTable } from '@retrysafe/ledger-dynamodb';
import dynalite from 'dynalite';

const client = (endpoint) =>
  new DynamoDBClient({ endpoint, region: 'local', credentials: { accessKeyId: 'bench', secretAccessKey: 'bench' } });

export async function startDynalite() {
  const server = dynalite({ createTableMs: 0 });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${server.address().port}`;
  const admin = client(endpoint);
  let n = 0;
  return {
    endpoint,
    /** A new empty table with the ledger's index. */
    async table() {
      const table = `bench-${++n}`;
      await ensureTable(admin, table);
      return table;
    },
    close: () => (admin.destroy(), new Promise((resolve) => server.close(resolve))),
  };
}

/** The ledger a worker's runner writes to. */
export const dynamoDbLedger = (cfg) => createDynamoDbLedger({ table: cfg.table, client: client(cfg.endpoint) });
