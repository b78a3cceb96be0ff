// The two statements the PostgreSQL ledger (@retrysafe/ledger-postgres) sends for a clean operation, as
// its own connections send them: the claim, born `dispatched` (10 parameters), and the completion on the
// remembered row version, with the operation's one receipt and the deferred commit (11 parameters).
// `test/ledger-statements.test.ts` captures what the ledger really sends and compares (whitespace aside),
// so a change to the ledger's statements fails there until this copy follows.
// Used by the bench's `layout` mode (the ledger's table and statements driven by hand, content prebuilt).

const COLUMNS = `business_operation_id, provider, operation, intent_fingerprint, params_fingerprint, params, provider_key,
           state, fence, lease_owner, lease_expires_at, created_at, updated_at, attempt_count, first_dispatched_at`;

/** `ops` is the quoted table, e.g. `"schema".retrysafe_operations`. */
export const LEDGER_STATEMENTS = {
  /** $1 id, $2 provider, $3 operation, $4 intent fingerprint, $5 params fingerprint, $6 params (json text), $7 provider key, $8 lease owner, $9 lease ms, $10 now (ms). */
  claim: (ops) => `INSERT INTO ${ops} (${COLUMNS})
         VALUES ($1, $2, $3, $4, $5, $6::json, $7, 'dispatched', 1, $8, (extract(epoch from now()) * 1000)::bigint + $9::bigint, $10, $10, 1, $10)
         ON CONFLICT (business_operation_id) DO NOTHING RETURNING lease_expires_at, xmin`,
  /** $1 state, $2 now, $3 last outcome, $4 result (json text), $5 provider ref, $6 id, $7 fence, $8 receipt count, $9 receipt (json text), $10 chain head, $11 the claim's xmin. */
  complete: (ops) => `UPDATE ${ops} SET state = $1, updated_at = $2, last_outcome = $3, result = $4::json, provider_ref = $5, lease_owner = NULL, lease_expires_at = NULL, receipts = coalesce(left(receipts, -1) || ',', '[') || $9::text || ']', receipt_head = $10, receipt_count = $8
       WHERE business_operation_id = $6 AND fence = $7 AND state NOT IN ('succeeded', 'rejected', 'handed-off', 'abandoned') AND receipt_count + 1 = $8::integer AND xmin = $11::xid RETURNING xmin, set_config('synchronous_commit', 'off', true) AS deferred_commit`,
};
