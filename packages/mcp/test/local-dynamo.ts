// A local DynamoDB for the CLI's and the MCP server's DynamoDB-ledger tests: dynalite on a loopback port.
import type { AddressInfo } from 'node:net';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { ensureTable } from '@retrysafe/ledger-dynamodb';
// @ts-expect-error dynalite ships no types
import dynalite from 'dynalite';

/** Starts dynalite with `table` created; `close` stops both the client and the server. */
export async function startLocalDynamo(table: string) {
  const server = dynalite({ createTableMs: 0 });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const endpoint = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const client = new DynamoDBClient({
    endpoint,
    region: 'local',
    credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  });
  await ensureTable(client, table);
  const close = () => {
    client.destroy();
    return new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return { endpoint, client, close };
}
