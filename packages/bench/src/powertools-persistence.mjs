// Persistence layers for AWS Powertools idempotency on the same stores the retrysafe ledgers use
// (Powertools ships DynamoDB and Redis/Valkey layers only; both need services this bench does not
// run). Each follows the DynamoDB layer's conditions (lib/esm/persistence/DynamoDBPersistenceLayer.js):
// put succeeds when the key is absent, expired, or INPROGRESS past its in-progress expiry; otherwise
// IdempotencyItemAlreadyExistsError carrying the existing record.
import { IdempotencyItemAlreadyExistsError, IdempotencyItemNotFoundError } from '@aws-lambda-powertools/idempotency';
import { BasePersistenceLayer, IdempotencyRecord } from '@aws-lambda-powertools/idempotency/persistence';

export const TABLE_SQL = (name) => `CREATE TABLE IF NOT EXISTS ${name} (
  id TEXT PRIMARY KEY, status TEXT NOT NULL, expiration BIGINT, in_progress_expiration BIGINT, data TEXT, validation TEXT)`;

/**
 * The PostgreSQL layer's two statements of a clean call: put the INPROGRESS record ($1 id, $2 status, $3 expiry s,
 * $4 in-progress expiry ms, $5 payload hash, $6 now s, $7 now ms), then store the response ($1 id, $2 status,
 * $3 data, $4 expiry s).
 */
export const POSTGRES_STATEMENTS = Object.freeze({
  put: (
    t,
  ) => `INSERT INTO ${t} AS t (id, status, expiration, in_progress_expiration, validation) VALUES ($1, $2, $3, $4, $5)
        ON CONFLICT (id) DO UPDATE SET status = excluded.status, expiration = excluded.expiration,
          in_progress_expiration = excluded.in_progress_expiration, validation = excluded.validation, data = NULL
        WHERE t.expiration < $6 OR (t.status = 'INPROGRESS' AND t.in_progress_expiration IS NOT NULL AND t.in_progress_expiration < $7)
        RETURNING id`,
  update: (t) => `UPDATE ${t} SET status = $2, data = $3, expiration = $4 WHERE id = $1`,
});

function toRecord(row) {
  return new IdempotencyRecord({
    idempotencyKey: row.id,
    status: row.status,
    expiryTimestamp: row.expiration == null ? undefined : Number(row.expiration),
    inProgressExpiryTimestamp: row.in_progress_expiration == null ? undefined : Number(row.in_progress_expiration),
    responseData: row.data == null ? undefined : JSON.parse(row.data),
    payloadHash: row.validation ?? undefined,
  });
}

/** Powertools persistence on node:sqlite (same file and pragmas as the SQLite ledger under test). */
export class SqlitePersistenceLayer extends BasePersistenceLayer {
  #put;
  #get;
  #update;
  #delete;
  constructor(db, table = 'powertools_idempotency') {
    super();
    db.exec(TABLE_SQL(table));
    this.#put = db.prepare(`INSERT INTO ${table} (id, status, expiration, in_progress_expiration, validation)
      VALUES (@id, @status, @expiration, @inProgressExpiration, @validation)
      ON CONFLICT (id) DO UPDATE SET status = excluded.status, expiration = excluded.expiration,
        in_progress_expiration = excluded.in_progress_expiration, validation = excluded.validation, data = NULL
      WHERE ${table}.expiration < @nowS OR (${table}.status = 'INPROGRESS' AND ${table}.in_progress_expiration IS NOT NULL AND ${table}.in_progress_expiration < @nowMs)`);
    this.#get = db.prepare(`SELECT * FROM ${table} WHERE id = ?`);
    this.#update = db.prepare(
      `UPDATE ${table} SET status = @status, data = @data, expiration = @expiration WHERE id = @id`,
    );
    this.#delete = db.prepare(`DELETE FROM ${table} WHERE id = ?`);
  }
  async _putRecord(record) {
    const now = Date.now();
    const info = this.#put.run({
      id: record.idempotencyKey,
      status: record.getStatus(),
      expiration: record.expiryTimestamp ?? null,
      inProgressExpiration: record.inProgressExpiryTimestamp ?? null,
      validation: this.isPayloadValidationEnabled() ? (record.payloadHash ?? null) : null,
      nowS: now / 1000,
      nowMs: now,
    });
    if (info.changes === 0) {
      const row = this.#get.get(record.idempotencyKey);
      throw new IdempotencyItemAlreadyExistsError(
        `Failed to put record for already existing idempotency key: ${record.idempotencyKey}`,
        row ? toRecord(row) : undefined,
      );
    }
  }
  async _getRecord(key) {
    const row = this.#get.get(key);
    if (!row) throw new IdempotencyItemNotFoundError('Item does not exist in persistence store');
    return toRecord(row);
  }
  async _updateRecord(record) {
    this.#update.run({
      id: record.idempotencyKey,
      status: record.getStatus(),
      data: record.responseData === undefined ? null : JSON.stringify(record.responseData),
      expiration: record.expiryTimestamp ?? null,
    });
  }
  async _deleteRecord(record) {
    this.#delete.run(record.idempotencyKey);
  }
}

/** Powertools persistence on PostgreSQL through one pg client (one worker = one connection, like the raw pattern). */
export class PostgresPersistenceLayer extends BasePersistenceLayer {
  #client;
  #table;
  constructor(client, table) {
    super();
    this.#client = client;
    this.#table = table;
  }
  static async createTable(client, table) {
    await client.query(TABLE_SQL(table));
  }
  async _putRecord(record) {
    const now = Date.now();
    const t = this.#table;
    const res = await this.#client.query({
      name: `pt-put:${t}`,
      text: POSTGRES_STATEMENTS.put(t),
      values: [
        record.idempotencyKey,
        record.getStatus(),
        record.expiryTimestamp ?? null,
        record.inProgressExpiryTimestamp ?? null,
        this.isPayloadValidationEnabled() ? (record.payloadHash ?? null) : null,
        Math.floor(now / 1000),
        now,
      ],
    });
    if (res.rowCount === 0) {
      const existing = await this.#client.query({
        name: `pt-get:${t}`,
        text: `SELECT * FROM ${t} WHERE id = $1`,
        values: [record.idempotencyKey],
      });
      throw new IdempotencyItemAlreadyExistsError(
        `Failed to put record for already existing idempotency key: ${record.idempotencyKey}`,
        existing.rows[0] ? toRecord(existing.rows[0]) : undefined,
      );
    }
  }
  async _getRecord(key) {
    const t = this.#table;
    const res = await this.#client.query({
      name: `pt-get:${t}`,
      text: `SELECT * FROM ${t} WHERE id = $1`,
      values: [key],
    });
    if (!res.rows[0]) throw new IdempotencyItemNotFoundError('Item does not exist in persistence store');
    return toRecord(res.rows[0]);
  }
  async _updateRecord(record) {
    const t = this.#table;
    await this.#client.query({
      name: `pt-update:${t}`,
      text: POSTGRES_STATEMENTS.update(t),
      values: [
        record.idempotencyKey,
        record.getStatus(),
        record.responseData === undefined ? null : JSON.stringify(record.responseData),
        record.expiryTimestamp ?? null,
      ],
    });
  }
  async _deleteRecord(record) {
    const t = this.#table;
    await this.#client.query({
      name: `pt-delete:${t}`,
      text: `DELETE FROM ${t} WHERE id = $1`,
      values: [record.idempotencyKey],
    });
  }
}
